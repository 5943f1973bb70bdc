"""helpers.catalog.failures: a catalog that fails at a known point, and Delta Spark 4.4.0 through it.

The server is the real one (``make uc-server``). These tests check the proxy's rules and the
server's stores without Spark. Every scenario with Delta Spark (a lost answer, a writer killed
between ratify and publish, ten unpublished commits then 429, a restart in memory and in SQLite)
runs in notebook 15's appendix B, with its checks read from storage and the catalog; none is run
again here.
"""

from __future__ import annotations

import json

import pytest

from helpers.catalog import failures, persistent_server, rest, server, server_build, tables


@pytest.fixture(scope="module")
def built():
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )


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
    uc = persistent_server.start_persistent(tmp_path) if persistent else server.start(tmp_path)
    with failures.CatalogGate(uc) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        catalog.create_schema(tables.CATALOG, tables.SCHEMA)
        gate.restart_at(1)
        assert _ratify_unknown(catalog).status == 502  # the server was stopped as it arrived
        assert gate.uc.uri != uc.uri and uc.process.poll() is not None
        listed = catalog.call("GET", f"{rest.API}/catalogs").get("catalogs", [])
        catalogs = [c["name"] for c in listed]
    assert catalogs == ([tables.CATALOG] if persistent else [])
