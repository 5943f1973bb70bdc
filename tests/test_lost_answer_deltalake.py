"""deltalake's lost commit answer, measured again in every era and path the committed run holds
(one trial per remedy each, about a minute): every trial lost its answer at the gate, and what it
did, read from storage, is an outcome the committed run (``data/lost_answer.csv``) saw in that
cell, so the answer page's column still stands on what the libraries do."""

from __future__ import annotations

from collections import defaultdict

import pytest

from helpers.ground import eras
from helpers.lost_answer import deltalake_paths, trials


@pytest.fixture(scope="module")
def committed() -> dict[tuple[str, str, str], set[str]]:
    seen: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for t in trials.read_csv():
        seen[t.path, t.release, t.remedy].add(t.outcome)
    return seen


@pytest.mark.services
@pytest.mark.parametrize(
    "path, era",
    [(p, e) for p in deltalake_paths.PATHS for e in p.eras],
    ids=lambda x: getattr(x, "name", x),
)
def test_a_lost_answer_does_what_the_committed_run_saw(
    stores, tmp_path, table_name, committed, path, era
):
    # table_name is new each run: the emulators' state outlives pytest's numbered tmp folders
    found = deltalake_paths.run_one(path, era, tmp_path, table_name, 1)
    assert len(found) == len(deltalake_paths.remedies_of(era))
    for t in found:
        assert t.dropped, f"{t.path} {t.release} {t.remedy}: the gate dropped no answer"
        seen = committed[t.path, t.release, t.remedy]
        assert t.outcome in seen, (
            f"{t.path} {t.release} [{t.remedy}]: {t.outcome} ({t.steps}); the committed run saw "
            f"{sorted(seen) or 'nothing'}"
        )


def test_every_era_path_of_the_run_is_committed(committed):
    for path in deltalake_paths.PATHS:
        for era in path.eras:
            release = eras.era(era).deltalake_version
            for remedy in deltalake_paths.remedies_of(era):
                assert len(committed[path.name, release, remedy]) >= 1, (path.name, release, remedy)
