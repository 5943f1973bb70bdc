"""Delta Spark's lost commit answers, measured again: one trial of each path and remedy of
:mod:`helpers.lost_answer.spark_paths` (two Spark drivers, a gate each, against moto), every one
with its answer dropped and each (path, remedy) coming to the outcome the committed run shows.
About 70 s on 2 cores (tests/conftest.py HEAVY)."""

from __future__ import annotations

import collections

from helpers.ground import config
from helpers.lost_answer import spark_paths, trials


def worst_by_cell(records: list[trials.Trial]) -> dict[tuple[str, str], str]:
    """The worst outcome of each (path, remedy) of Delta Spark's paths among ``records``."""
    names = {path.name for path in spark_paths.PATHS}
    cells = collections.defaultdict(list)
    for record in records:
        if record.path in names:
            cells[(record.path, record.remedy)].append(record.outcome)
    return {cell: trials.worst(outcomes) for cell, outcomes in cells.items()}


def committed_worst() -> dict[tuple[str, str], str]:
    """The committed run's worst outcomes of Delta Spark's cells."""
    return worst_by_cell(trials.read_csv())


def test_delta_spark_meets_a_lost_commit_answer_as_the_committed_run_shows(stores, tmp_path):
    measured = spark_paths.run(tmp_path, count=1, progress=lambda line: None)
    cells = {(path.name, remedy) for path in spark_paths.PATHS for remedy in path.remedies}
    assert len(measured) == len(cells)
    undropped = [f"{t.path} {t.remedy} #{t.trial}" for t in measured if not t.dropped]
    assert not undropped, f"the gate dropped no commit answer in {undropped}"
    assert {t.release for t in measured} == {config.DELTA_JARS_VERSION}
    found = worst_by_cell(measured)
    assert set(found) == cells
    differing = {
        cell: (outcome, committed_worst()[cell])
        for cell, outcome in found.items()
        if outcome != committed_worst()[cell]
    }
    assert not differing, (
        f"(path, remedy): (this run's worst, the committed run's) {differing}; trials: "
        + "; ".join(f"{t.path} {t.remedy} #{t.trial}: {t.outcome} ({t.steps})" for t in measured)
    )
