"""The conflict matrix: every ordered pair of write operations, raced deterministically.

For operations A and B on a small table of known content, two snapshots are opened at one
version, A commits, then B runs from its stale snapshot: the order is forced by construction,
not by a clock. The same two operations also run serially, A then B and B then A, on fresh
copies; the race is then classed against those serial results, row by row and by the log:

* **refused**: B raised (its error class named) and the table equals A's result alone;
* **serializable**: B committed and the table equals one serial order;
* **anomaly**: B committed and the table equals neither (duplicated rows, a lost update,
  resurrected rows, a file removed twice, a broken log).

Each result is set against Delta's documented write-conflict table (``data/delta_write_conflicts.csv``).
``python -m helpers.matrix`` (``make matrix``) runs every engine and writes
``build/matrix/<name>/matrix.csv`` and one grid picture per engine.

Modules, one job each: :mod:`~helpers.matrix.operations` (the catalogue), :mod:`~helpers.matrix.engines`
(the engine interface and register), :mod:`~helpers.matrix.deltars` (delta-rs, every era),
:mod:`~helpers.matrix.pairs` (the pair runner), :mod:`~helpers.matrix.worker` (one engine's process),
:mod:`~helpers.matrix.classify` (the oracle's verdict), :mod:`~helpers.matrix.documented` (the docs'
table and the comparison), :mod:`~helpers.matrix.run` (every engine's workers),
:mod:`~helpers.matrix.tidy` (the CSV's rows), :mod:`~helpers.matrix.outputs` (the CSV, its meta and
the grids, written), :mod:`~helpers.matrix.plots` (the grids).

Imports: the torture run's and the probe's layer and every layer below it.
"""
