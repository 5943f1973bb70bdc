"""The one-page answer to "is it safe to write to this Delta table from two jobs at once?".

``answer`` (the decision table, as data), ``answer_matrix`` (the conflict matrix's side of it),
``answer_settings`` (a paragraph per setting), ``boundaries`` (from which release on), and the page
rendered: ``answer_page`` (``docs/answer.md``) and ``answer_html`` (``docs/answer.html``).

Imports: the lab's runs (:mod:`helpers.matrix`, :mod:`helpers.producers`, :mod:`helpers.catalog`)
and every layer below them.
"""
