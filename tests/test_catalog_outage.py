"""helpers.catalog.outage: the catalog down while two writers append and a reader reads.

The gate's two ways of being down are checked against the real server (``make uc-server``, kept
in SQLite) without Spark; the record's judgement on crafted results; then one short outage (20 s)
with three Delta Spark drivers without the testing flag (heavy: about a minute and a half).
"""

from __future__ import annotations

import http.client
import json
import os
from collections import Counter
from types import SimpleNamespace

import pytest
from test_catalog_failures import _ratify_unknown

from helpers.catalog import outage, persistent_server, rest, server, server_build, tables
from helpers.catalog.outage_record import ADD_COMMIT, LOAD, Outage, delta_attempt_starts
from helpers.catalog.race import CatalogCheck

CATALOGS = f"{rest.API}/catalogs"


@pytest.fixture(scope="module")
def built():
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )


def test_delta_s_back_off_by_its_source():
    starts = delta_attempt_starts()
    # 16 attempts of one add-commit: the client's 3 tries (3.5 s of sleep on average), then
    # Delta's min(100 ms << n, 60 s), which alone sums to 402.3 s
    assert len(starts) == 16
    assert starts[:6] == [0.0, 3.6, 7.3, 11.2, 15.5, 20.6]
    assert starts[9:12] == [82.6, 137.3, 200.8]
    assert round(starts[-1] - 15 * 3.5, 1) == 402.3


def test_each_request_to_the_catalog_is_named_by_kind():
    table = f"{rest.DELTA}/catalogs/spark_catalog/schemas/default/tables/outage"
    commit = {"updates": [{"action": "add-commit", "commit": {"version": 4}}]}
    report = {
        "updates": [{"action": "set-latest-backfilled-version", "latest-published-version": 3}]
    }
    assert outage.request_kind("GET", table, None) == (LOAD, None)
    assert outage.request_kind("POST", table, json.dumps(commit).encode()) == (ADD_COMMIT, 4)
    assert outage.request_kind("POST", table, json.dumps(report).encode()) == (outage.REPORT, None)
    assert outage.request_kind("GET", CATALOGS + "?max_results=5", None) == (
        f"GET {CATALOGS}",
        None,
    )


def test_while_down_the_gate_answers_503_and_the_catalog_comes_back_from_sqlite(built, tmp_path):
    first = persistent_server.start_persistent(tmp_path)
    with outage.OutageGate(first) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        catalog.create_schema(tables.CATALOG, tables.SCHEMA)
        gate.go_down("503")
        with pytest.raises(rest.CatalogError) as down:
            catalog.call("GET", CATALOGS)
        stopped = first.process.poll() is not None
        gate.come_back()
        listed = [c["name"] for c in catalog.call("GET", CATALOGS).get("catalogs", [])]
        seen = [(r["kind"], r["status"]) for r in gate.requests]
        clients = {r["client"][0] for r in gate.requests}
    assert down.value.status == 503 and stopped
    assert listed == [tables.CATALOG]  # the same SQLite file, after the restart
    assert seen[-2:] == [(f"GET {CATALOGS}", 503), (f"GET {CATALOGS}", 200)]
    assert clients == {os.getpid()}


def test_while_down_the_gate_refuses_connections_and_closes_open_ones(built, tmp_path):
    with outage.OutageGate(persistent_server.start_persistent(tmp_path)) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        catalog.create_schema(tables.CATALOG, tables.SCHEMA)
        kept = http.client.HTTPConnection(*gate.endpoint.removeprefix("http://").split(":"))
        kept.request("GET", CATALOGS)
        answer = kept.getresponse()
        assert (answer.status, bool(answer.read())) == (200, True)
        before = len(gate.requests)
        gate.go_down("refused")
        with pytest.raises(rest.CatalogError) as refused:
            catalog.call("GET", CATALOGS)
        with pytest.raises(OSError):  # the connection kept alive before is closed
            kept.request("GET", CATALOGS)
            kept.getresponse().read()
        logged = len(gate.requests) - before
        gate.come_back()
        listed = [c["name"] for c in catalog.call("GET", CATALOGS).get("catalogs", [])]
    assert refused.value.status is None and "refused" in str(refused.value).lower()
    assert logged == 0  # the gate saw none of the refused requests
    assert listed == [tables.CATALOG]


@pytest.mark.parametrize("how", outage.HOW)
def test_armed_the_gate_goes_down_as_the_chosen_add_commit_arrives(built, tmp_path, how):
    first = persistent_server.start_persistent(tmp_path)
    with outage.OutageGate(first) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        gate.down_at(how, 2)
        answers = [_ratify_unknown(catalog).status for _ in range(2)]
        stopped, began, second = first.process.poll() is not None, gate.began, gate.requests[-1]
        gate.come_back()
    # the first reaches the server (no such table: 404), the second never does
    assert answers == [404, 503 if how == "503" else None]
    assert stopped and gate.went_down.is_set() and began == second["t"]
    assert (second["kind"], second["status"]) == (ADD_COMMIT, 503 if how == "503" else None)


def _crafted(problems: bool) -> Outage:
    """The record of crafted results: with ``problems``, a writer never told success, a batch
    missing, a data file added by two versions and a ratified version not published."""
    request = {"t": 101.0, "client": [9001, 222], "kind": ADD_COMMIT, "version": 2, "status": 503}
    landed = {**request, "t": 121.0, "status": 200}
    gate = SimpleNamespace(logged=lambda: [request, landed], began=100.0)
    told = "CommitCoordinatorGetCommitsFailedException: ... (HTTP 503): no server"
    w1 = [{"batch": 11, "attempt": 1, "start": 99.0, "end": 121.5, "told": "success"}]
    w2 = [{"batch": 21, "attempt": 1, "start": 102.0, "end": 105.0, "told": told}]
    w2 += (
        []
        if problems
        else [{**w2[0], "attempt": 2, "start": 122.0, "end": 124.0, "told": "success"}]
    )
    read = {"start": 103.0, "end": 106.0, "error": told}
    results = {
        "w1": {"pid": 222, "appends": w1, "error": None, "testing_flag": None},
        "w2": {"pid": 333, "appends": w2, "error": None, "testing_flag": None},
        "reader": {"pid": 444, "reads": [read], "error": None, "testing_flag": None},
    }
    unpublished = [{"version": 3, "file-name": "x.json"}] if problems else []
    check = CatalogCheck(
        published=[0, 1, 2],
        staged={},
        catalog=rest.CatalogView("id", "file:///t", 3 if problems else 2, unpublished),
        ratified={3: "x.json"} if problems else {},
        rows=Counter({("w1", 11): 10, ("w2", 21): 0 if problems else 10}),
        read_versions={},
        problems=["batch 21 of w2: 0 rows in the table, 10 appended"] if problems else [],
    )
    twice = {"part-1.parquet": [1, 2]} if problems else {}
    schedule = SimpleNamespace(ended=120.0)
    return outage._record("503", 20.0, schedule, gate, results, check, twice)


def test_the_record_names_each_problem_it_is_shown():
    clean, broken = _crafted(problems=False), _crafted(problems=True)
    assert clean.problems == [] and clean.summary().endswith("No problems.")
    assert broken.problems == [
        "w2: a batch never told success",
        "batch 21 of w2: 0 rows in the table, 10 appended",
        "versions [1, 2] all add part-1.parquet",
        "versions [3] ratified, not published",
    ]
    assert "4 problem(s)" in broken.summary()
    # times from the outage's start, each request named by its client's parent (a driver's JVM)
    assert [(r["t"], r["client"]) for r in clean.requests] == [(1.0, "w1"), (21.0, "w1")]
    assert clean.recovery("w1") == {"landed": 21.0, "told": 21.5}
    assert clean.counted() == {f"w1 {ADD_COMMIT} 503": 1}
    assert Outage(**json.loads(json.dumps(clean.to_dict()))) == clean


@pytest.mark.heavy
def test_a_short_outage_with_two_writers_and_a_reader(built, tmp_path):
    found = outage.measure(
        tmp_path, outage_s=20, batches_per_writer=3, read_every_s=3, rerun_wait_s=3
    )
    shown = found.summary()
    assert found.problems == [], shown
    assert found.testing_flags == {"w1": None, "w2": None, "reader": None}
    # every batch in the table once, one published commit per version, the catalog's latest
    assert found.table["rows"] == {f"w{w}/{w}{b}": 10 for w in (1, 2) for b in (1, 2, 3)}, shown
    assert found.table["published"] == list(range(7)) and found.table["latest"] == 6, shown
    assert found.table["added_again"] == {}, shown
    # during the outage every request was answered 503 by the gate, none reached the server
    during = [r for r in found.requests if found.during(r["t"])]
    assert during and {r["status"] for r in during} == {503}, shown
    assert {r["kind"] for r in during} <= {ADD_COMMIT, LOAD}, shown
    for writer in ("w1", "w2"):
        # a commit on its way sends the same add-commit again (one version), and lands after
        assert len({r["version"] for r in found.add_commits(writer) if found.during(r["t"])}) <= 1
        assert found.recovery(writer)["landed"] >= found.down_s, shown
    # what an append or a read is told: the catalog's refusal of its snapshot, never more
    failed = [
        a["told"] for a in found.appends["w1"] + found.appends["w2"] if a["told"] != "success"
    ]
    failed += [r["error"] for r in found.reads if "error" in r]
    assert failed and all("Failed to load commits" in told for told in failed), shown
    before = [r["version"] for r in found.reads if r["end"] < 0]
    after = [r["version"] for r in found.reads if r["end"] >= found.down_s and "error" not in r]
    # (on a loaded machine the reader's first read may end only after the outage began)
    assert after and after[0] >= max(before, default=0), shown
