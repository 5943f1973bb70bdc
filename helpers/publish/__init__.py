"""Publishing a run: a full run of this machine, from ``build/``, made the committed one in
``data/``, and every page rendered from ``data/`` written again (``make publish RUN=...``).

``kinds`` (each kind of run: the checks it must pass, where it goes in ``data/``, what else shows
it) and ``__main__`` (the command). A run itself never writes under ``data/``.

Imports: the answer page (:mod:`helpers.page`), the runs it publishes and every layer below them.
"""
