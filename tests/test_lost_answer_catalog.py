"""helpers.lost_answer.catalog_path: Delta Spark 4.4.0 through the Unity Catalog server (the real
one, ``make uc-server``) when the catalog's answer to ``add-commit`` is lost, with each remedy.

Heavy (tests/conftest.py HEAVY): one Spark driver, three trials. The gate's dropped answer is
checked first, without Spark.
"""

from __future__ import annotations

import collections

import pytest
from test_catalog_failures import _ratify_unknown

from helpers.catalog import failures, rest, server, server_build
from helpers.lost_answer import catalog_path, trials


def committed_worst() -> dict[str, str]:
    """Each remedy of this path: its worst outcome in the committed ``data/lost_answer.csv``."""
    committed = [t for t in trials.read_csv() if t.path == catalog_path.PATH]
    return {
        remedy: trials.worst(t.outcome for t in committed if t.remedy == remedy)
        for remedy in {t.remedy for t in committed}
    }


@pytest.fixture(scope="module")
def built():
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test-heavy does it first)."
        )


def test_the_gate_drops_the_connection_after_the_server_decided(built, tmp_path):
    with failures.CatalogGate(server.start(tmp_path)) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        gate.lose_answer(1, drop=True)
        answers = [_ratify_unknown(catalog).status for _ in range(2)]  # the server: 404
        commits = gate.add_commits
    assert answers == [None, 404]  # no answer at all, then the server's own
    assert [(c.number, c.status, c.answered) for c in commits] == [(1, 404, None), (2, 404, 404)]


def test_each_remedy_against_a_lost_add_commit_answer(built, tmp_path):
    seen: list[str] = []
    found = catalog_path.run(tmp_path, count=1, progress=seen.append)
    assert len(found) == len(seen) == len(catalog_path.REMEDIES)
    assert all(t.dropped for t in found), [t.steps for t in found if not t.dropped]
    worst = {
        remedy: trials.worst(t.outcome for t in found if t.remedy == remedy)
        for remedy in catalog_path.REMEDIES
    }
    assert worst == committed_worst(), [(t.remedy, t.outcome, t.steps) for t in found]
    once, twice = trials.APPENDED_ROWS, 2 * trials.APPENDED_ROWS
    by_remedy = collections.defaultdict(set)
    for t in found:
        steps = t.steps.split("; ")
        by_remedy[t.remedy].add(
            (t.told, t.commits, t.rows, t.later, *(s for s in steps if not s.startswith("add-")))
        )
    # the idempotency check and the rerun leave version 1 ratified, unpublished until the next append
    assert by_remedy == {
        trials.NO_REMEDY: {
            (
                "success",
                2,
                twice,
                True,
                "append: success",
                "published [0, 1, 2], ratified not published []",
                "later append: success",
                "then published [0, 1, 2, 3]",
            )
        },
        "idempotency-check": {
            (
                "success",
                1,
                once,
                True,
                "append: success",
                "published [0], ratified not published [1]",
                "later append: success",
                "then published [0, 1, 2]",
            )
        },
        "txn-app-id": {
            (
                "success",
                1,
                once,
                True,
                "append: DELTA_CONCURRENT_TRANSACTION",
                "rerun: success",
                "published [0], ratified not published [1]",
                "later append: success",
                "then published [0, 1, 2]",
            )
        },
    }
