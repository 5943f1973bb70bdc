"""The one-page answer to "is it safe to write to this Delta table from two jobs at once?".

``decision`` (the decision table, as data: each cell resolved), its rows (``table_rows``, with
``deltalake_rows``: a setting and a release range each), ``columns`` (the races), ``notebook_sections`` (the
notebook sections cited), ``evidence`` (what decides a cell), ``engine_names`` (the releases and the mixed run),
``matrix_verdicts`` (the conflict matrix's verdicts and their rule), ``boundaries`` (from which release on),
``findings`` (which finding applies to which setting and release, and its words), ``retry_advice`` (the retries
to set), ``setting_paragraphs`` (a paragraph per setting), and the pages rendered: ``markdown_page``
(``docs/answer.md``, with its ``table`` and ``advice``) and ``html_page`` (``docs/answer.html``, each choice
resolved by ``shown``).

Imports: the lab's runs (:mod:`helpers.matrix`, :mod:`helpers.producers`, :mod:`helpers.catalog`)
and every layer below them.
"""
