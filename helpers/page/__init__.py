"""The one-page answer to "is it safe to write to this Delta table from two jobs at once?".

``answer`` (the decision table, as data: each cell resolved), its ``answer_rows`` (the settings),
``answer_columns`` (the races), ``answer_sections`` (the notebook sections cited), ``answer_evidence``
(what decides a cell), ``answer_engines`` (the releases and the mixed run), ``answer_matrix`` (the
conflict matrix's side of it), ``answer_settings`` (a paragraph per setting), ``boundaries`` (from which
release on), and the page rendered: ``answer_page`` (``docs/answer.md``, with its ``answer_table`` and
``answer_advice``) and ``answer_html`` (``docs/answer.html``).

Imports: the lab's runs (:mod:`helpers.matrix`, :mod:`helpers.producers`, :mod:`helpers.catalog`)
and every layer below them.
"""
