"""helpers.catalog.failures: a catalog that fails at a known point, and Delta Spark 4.4.0 through it.

The server is the real one (``make uc-server``). The first tests check the proxy's rules and the
server's stores without Spark; the rest run each scenario with Delta Spark (one driver of this
module's own that creates the tables, and racing driver processes) and assert what storage and the
catalog hold, read by :func:`helpers.catalog.race.check_table`.
"""

from __future__ import annotations

import json
import os

import pytest

from helpers.catalog import failures, rest, server, tables


@pytest.fixture(scope="module")
def built():
    if not server.built():
        pytest.fail(f"{server.CRATE} is not built: run `make uc-server` (make test does it first).")


def _ratify_unknown(catalog: rest.UnityCatalog) -> rest.CatalogError:
    """An add-commit for a table the catalog does not have: the server answers 404."""
    with pytest.raises(rest.CatalogError) as refused:
        catalog.ratify(
            tables.CATALOG,
            tables.SCHEMA,
            "nowhere",
            "00000000-0000-0000-0000-000000000000",
            1,
            f"{1:020d}.00000000-0000-0000-0000-000000000000.json",
            1,
            1,
        )
    return refused.value


# ---------------------------------------------------------------------------------------------
# The proxy and the stores, without Spark
# ---------------------------------------------------------------------------------------------


def test_the_gate_sends_the_request_and_loses_only_the_answer_it_was_told_to(built, tmp_path):
    seen = []
    with failures.CatalogGate(server.start(tmp_path)) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        gate.lose_answer(2, then=lambda: seen.append("then"))
        first, second, third = (_ratify_unknown(catalog) for _ in range(3))
        commits = gate.add_commits
    assert (first.status, second.status, third.status) == (404, 502, 404)
    assert [(c.number, c.version, c.status, c.answered) for c in commits] == [
        (1, 1, 404, 404),
        (2, 1, 404, 502),
        (3, 1, 404, 404),
    ]
    assert seen == ["then"]


def test_an_add_commit_is_read_from_delta_s_request_body():
    body = json.dumps(
        {
            "updates": [
                {"action": "add-commit", "commit": {"version": 7}},
                {"action": "set-latest-backfilled-version", "latest-published-version": 5},
            ]
        }
    ).encode()
    path = f"{rest.DELTA}/catalogs/c/schemas/s/tables/t"
    assert failures._add_commit("POST", path, body) == (7, 5)
    assert failures._add_commit("GET", path, None) is None
    assert failures._add_commit("POST", f"{rest.API}/catalogs", b'{"name": "add-commit"}') is None


@pytest.mark.parametrize("persistent", [False, True])
def test_a_restart_keeps_the_catalog_only_in_sqlite(built, tmp_path, persistent):
    uc = failures.start_persistent(tmp_path) if persistent else server.start(tmp_path)
    with failures.CatalogGate(uc) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        catalog.create_schema(tables.CATALOG, tables.SCHEMA)
        gate.restart_at(1)
        assert _ratify_unknown(catalog).status == 502  # the server was stopped as it arrived
        assert gate.uc.uri != uc.uri and uc.process.poll() is not None
        listed = catalog.call("GET", f"{rest.API}/catalogs").get("catalogs", [])
        catalogs = [c["name"] for c in listed]
    assert catalogs == ([tables.CATALOG] if persistent else [])


# ---------------------------------------------------------------------------------------------
# Delta Spark 4.4.0 through the failing catalog
# ---------------------------------------------------------------------------------------------


heavy = pytest.mark.skipif(
    os.environ.get("CATALOG_FAILURES") != "all",
    reason="a racing driver's JVM or more (45-100 s each): `make catalog-failures` runs it",
)


@pytest.fixture(scope="module")
def spark(built, tmp_path_factory):
    with server.start(tmp_path_factory.mktemp("uc-boot")) as boot:
        session = tables.spark_session(boot.uri, creates_tables=True, app_name="catalog-failures")
        yield session


@pytest.mark.spark
def test_a_lost_answer_is_committed_twice_and_read_once(spark, tmp_path):
    outcome = failures.lost_answer(spark, tmp_path)
    print(outcome.summary())
    assert outcome.told == {"append of batch 1": "success"}
    assert [(c.version, c.status, c.answered) for c in outcome.add_commits] == [
        (1, 200, 502),
        (1, 409, 409),
        (2, 200, 200),
    ]
    assert outcome.published == [0, 1, 2] and outcome.catalog_latest == 2
    assert outcome.rows == {"a/1": 10} and outcome.problems == []
    assert outcome.facts["rows Spark reads"] == 10
    assert (
        sorted(outcome.facts["data files added by more than one version"].values()) == [[1, 2]] * 2
    )
    assert outcome.facts["rows per batch after it"] == {"a/1": 20}  # a blind rerun adds it again


@pytest.mark.spark
@heavy
def test_a_writer_killed_after_ratify_is_published_by_the_next(spark, tmp_path):
    outcome = failures.killed_before_publish(spark, tmp_path)
    print(outcome.summary())
    assert outcome.facts["killed"] == 1
    assert (
        outcome.facts["before_the_next_writer"]
        == "published [0], ratified not published [1], problems []"
    )
    assert outcome.told["next writer"] == "success"
    assert outcome.published == [0, 1, 2] and outcome.unpublished == []
    assert outcome.rows == {"next/1": 10, "w1/11": 10} and outcome.problems == []


@pytest.mark.spark
@heavy
def test_ten_unpublished_commits_stop_delta_until_they_are_published(spark, tmp_path):
    outcome = failures.commit_cap(spark, tmp_path)
    print(outcome.summary())
    assert all(outcome.told[f"append {b}"] == "success" for b in range(1, failures.CAP + 1))
    assert outcome.facts["held_unpublished"] == list(range(1, failures.CAP + 1))
    refused = [c for c in outcome.add_commits if c.status == 429]
    assert len(refused) == 3 and {(c.version, c.reported_published) for c in refused} == {(11, 0)}
    assert outcome.facts["published_while_w1_retried"] == [0]
    assert outcome.facts["published_by_hand"] == list(range(1, failures.CAP + 1))
    assert outcome.told[f"append {failures.CAP + 1} after publication"] == "success"
    assert outcome.published == list(range(failures.CAP + 2)) and outcome.problems == []


@pytest.mark.spark
def test_a_catalog_in_memory_forgets_the_table_at_a_restart(spark, tmp_path):
    outcome = failures.restarted(spark, tmp_path, persistent=False)
    print(outcome.summary())
    assert outcome.told["append of batch 1"] != "success"
    assert outcome.facts["the table after the restart"] == "HTTP 404"
    assert outcome.published == [0]


@pytest.mark.spark
@heavy
def test_a_catalog_in_sqlite_restarted_mid_race_loses_nothing(spark, tmp_path):
    outcome = failures.restarted(spark, tmp_path, persistent=True)
    print(outcome.summary())
    assert outcome.told == {"w1": "success", "w2": "success"}
    assert [c.answered for c in outcome.add_commits].count(502) == 1
    assert len(outcome.rows) == 6 and set(outcome.rows.values()) == {10}
    assert outcome.problems == [] and outcome.catalog_latest >= 6
