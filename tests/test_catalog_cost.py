"""helpers.catalog.cost: what a commit through the catalog costs, in requests counted by kind at the
gate in front of the server, and in latency beside the same table without the catalog.

The counting and the record are checked without Spark: each request's kind, a commit's requests
told apart by the commit POST, the gate logging requests to a real server (``make uc-server``),
the record's figures, its JSON form and its problems, each shown on a crafted break. One test runs
the command line small (a few commits, one job without Spark's testing flag) and holds its counts,
never its durations; it is heavy (two JVMs), left to ``make test-heavy``.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.catalog import cost, cost_record, rest, server, server_build, tables
from helpers.ground import config

VERSION_ZERO = [
    {
        "protocol": {
            "readerFeatures": ["catalogManaged", "deletionVectors"],
            "writerFeatures": ["catalogManaged", "deletionVectors", "rowTracking"],
        }
    },
    {
        "metaData": {
            "configuration": {
                "io.unitycatalog.tableId": "an-id",
                "delta.rowTracking.materializedRowIdColumnName": "_row-id-col-x",
                "delta.enableRowTracking": "true",
            }
        }
    },
]
TABLE = f"{rest.DELTA}/catalogs/spark_catalog/schemas/default/tables/orders"
ADD_COMMIT = json.dumps({"updates": [{"action": "add-commit", "commit": {"version": 3}}]}).encode()


def test_the_reference_table_has_the_features_of_version_zero_but_the_catalogs():
    assert cost.same_features(VERSION_ZERO) == {
        "delta.feature.deletionVectors": "supported",
        "delta.feature.rowTracking": "supported",
        "delta.enableRowTracking": "true",
    }
    assert cost.reference_names("t") == ["t", *(f"t_reference_{n}" for n in range(1, 7))]


# ---------------------------------------------------------------------------------------------
# Counting: each request's kind, and a commit's requests
# ---------------------------------------------------------------------------------------------


def test_each_request_is_counted_by_its_kind():
    published = json.dumps(
        {"updates": [{"action": "set-latest-backfilled-version", "latest-published-version": 2}]}
    ).encode()
    assert [
        cost.request_kind(method, path, body)
        for method, path, body in [
            ("GET", TABLE, None),
            ("GET", TABLE + "?x=1", None),
            ("POST", TABLE, ADD_COMMIT),
            ("POST", TABLE, published),
            ("POST", f"{rest.API}/temporary-table-credentials", b"{}"),
            ("GET", f"{TABLE}/credentials", None),
            ("POST", f"{rest.DELTA}/catalogs/spark_catalog/schemas/default/staging-tables", b"{}"),
            ("GET", f"{rest.API}/metastore_summary", None),
        ]
    ] == [
        cost_record.TABLE_GET,
        cost_record.TABLE_GET,
        cost_record.COMMIT,
        cost_record.TABLE_POST,
        cost_record.CREDENTIALS,
        cost_record.CREDENTIALS,
        cost_record.OTHER,
        cost_record.OTHER,
    ]


def test_a_commit_s_gets_before_its_post_are_refreshes_and_after_it_publication():
    get, post = cost_record.TABLE_GET, cost_record.COMMIT
    assert cost.commit_window([get, get, post, get]) == {
        cost_record.REFRESH: 2,
        cost_record.COMMIT: 1,
        cost_record.PUBLISH: 1,
    }
    assert cost.commit_window([get, get, post, get, get]) == {
        cost_record.REFRESH: 2,
        cost_record.COMMIT: 1,
        cost_record.PUBLISH: 2,
    }
    assert cost.commit_window([get, cost_record.OTHER]) == {
        cost_record.REFRESH: 1,
        cost_record.OTHER: 1,
    }


def test_the_gate_logs_each_request_it_passes_to_the_server(tmp_path):
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )
    with server.start(tmp_path) as uc, cost.RequestLog(uc.uri) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        catalog.create_schema(tables.CATALOG, tables.SCHEMA)  # a catalog, a schema
        staged = catalog.stage(tables.CATALOG, tables.SCHEMA, "orders")
        with pytest.raises(rest.CatalogError):  # reserved, not registered: no table yet
            catalog.table(tables.CATALOG, tables.SCHEMA, "orders")
        with pytest.raises(rest.CatalogError):
            catalog.ratify(
                tables.CATALOG,
                tables.SCHEMA,
                "orders",
                staged.table_id,
                1,
                f"{1:020d}.00000000-0000-0000-0000-000000000000.json",
                1,
                1,
            )
        first, second = gate.take(), gate.take()
    assert first == [
        cost_record.OTHER,
        cost_record.OTHER,
        cost_record.OTHER,
        cost_record.TABLE_GET,
        cost_record.COMMIT,
    ]
    assert second == []


# ---------------------------------------------------------------------------------------------
# The record
# ---------------------------------------------------------------------------------------------

WINDOW = {cost_record.REFRESH: 2, cost_record.COMMIT: 1, cost_record.PUBLISH: 1}
CHECKPOINT = {cost_record.REFRESH: 2, cost_record.COMMIT: 1, cost_record.PUBLISH: 2}


def record(**changed) -> cost_record.CommitCost:
    """A sound record of 10 counted commits (the last at a checkpoint) and 4 timed per table."""
    fields = {
        "seconds": {
            cost_record.CATALOG_MANAGED: [0.5, 0.7, 0.6, 2.0],
            cost_record.SAME_FEATURES: [0.2, 0.3, 0.25, 1.0],
            cost_record.DEFAULTS: [0.2, 0.2, 0.2, 0.2],
        },
        "commit_requests": [WINDOW] * 9 + [CHECKPOINT],
        "commit_versions": list(range(2, 12)),
        "read_requests": [{cost_record.TABLE_GET: 2}] * 3,
        "start_requests": {cost_record.REFRESH: 4, cost_record.COMMIT: 1},
        "reference_requests": 0,
        "timed_phase_requests": 0,
        "rows_read": dict.fromkeys(
            (cost_record.CATALOG_MANAGED, cost_record.SAME_FEATURES, cost_record.DEFAULTS), 110
        ),
        "last_versions": dict.fromkeys(
            (cost_record.CATALOG_MANAGED, cost_record.SAME_FEATURES, cost_record.DEFAULTS), 16
        ),
        "testing_flag": None,
        "machine": {"cpus": 2, "memory_gib": 7.8, "system": "Linux x86_64", "python": "3.11"},
        "load": [3.0, 4.0],
        "versions": {"Delta Spark": "4.4.0"},
        "date": "2026-12-07T12:00:00+00:00",
    }
    return cost_record.CommitCost(**{**fields, **changed})


def test_the_record_gives_each_table_s_median_p99_and_the_ratio_of_medians():
    figures = record()
    assert figures.table()[0] == {
        "table": cost_record.CATALOG_MANAGED,
        "commits timed": 4,
        "median (s)": 0.65,
        "p99 (s)": 1.961,
        "median / no catalog's": 2.36,
    }
    assert cost_record.p99([float(n) for n in range(1, 101)]) == pytest.approx(99.01)
    assert cost_record.p99([0.5]) == 0.5


def test_the_record_counts_requests_per_commit_and_per_read():
    assert [tuple(row.values()) for row in record().requests_table()] == [
        (cost_record.REFRESH, 2.0, "2, 2", 0.0),
        (cost_record.COMMIT, 1.0, "1, 1", 0.0),
        (cost_record.PUBLISH, 1.1, "1, 2", 0.0),
        (cost_record.TABLE_GET, 0.0, "0, 0", 2.0),
    ]
    assert list(record().requests_table()[0]) == [
        "request",
        "per commit",
        "fewest, most in a commit",
        "per read",
    ]
    summary = record().summary()
    assert (
        "10 commits counted, 4.10 requests each to the catalog (4 requests in 9, 5 requests in 1)"
        in summary
    )
    assert "3 reads by name counted, 2.00 requests each" in summary
    assert "catalog-managed over no catalog, medians: 2.36" in summary and "No problems." in summary


def test_the_record_reads_back_from_its_json_form():
    figures = record()
    assert cost_record.CommitCost.from_dict(json.loads(json.dumps(figures.to_dict()))) == figures


def test_a_sound_record_has_no_problem_and_each_break_is_named():
    assert record().problems() == []
    two_posts = {cost_record.REFRESH: 2, cost_record.COMMIT: 2}
    breaks = {
        "commit POSTs per counted commit": {"commit_requests": [WINDOW] * 9 + [two_posts]},
        "requests for the other tables": {"reference_requests": 1},
        "requests while timed": {"timed_phase_requests": 4},
        "commits timed per table": {
            "seconds": {**record().seconds, cost_record.DEFAULTS: [0.2, 0.2, 0.2]}
        },
        "last versions": {"last_versions": {**record().last_versions, cost_record.DEFAULTS: 15}},
        "rows read per table": {"rows_read": dict.fromkeys(record().rows_read, 100)},
        "the job's testing flag": {"testing_flag": "SPARK_TESTING=1"},
    }
    for named, changed in breaks.items():
        found = record(**changed).problems()
        assert len(found) == 1 and named in found[0], (named, found)
        assert "Problems: " in record(**changed).summary()


# ---------------------------------------------------------------------------------------------
# A small run, counted: one job without the testing flag (two JVMs: heavy)
# ---------------------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.heavy
def test_a_small_run_counts_four_requests_per_commit_and_two_per_read(tmp_path):
    """Delta Spark 4.4.0 through the catalog, by its sources (helpers.catalog.cost's text): two
    snapshot refreshes, the commit POST and publication's getCommits per commit below a
    checkpoint; two refreshes per read by name; nothing from the tables without the catalog."""
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )
    done = subprocess.run(
        [sys.executable, "-m", "helpers.catalog.cost", "--root", str(tmp_path / "cost")]
        + ["--commits", "3", "--counted", "3", "--reads", "2"],
        cwd=config.ROOT,
        env=config.without_telemetry(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    found = cost_record.CommitCost.from_dict(
        json.loads((tmp_path / "cost" / "cost.json").read_text())
    )
    assert found.problems() == []
    assert found.testing_flag is None
    assert found.commit_requests == [WINDOW] * 3
    assert found.commit_versions == [2, 3, 4]
    assert found.read_requests == [{cost_record.TABLE_GET: 2}] * 2
    assert {kind: len(values) for kind, values in found.seconds.items()} == {
        cost_record.CATALOG_MANAGED: 3,
        cost_record.SAME_FEATURES: 3,
        cost_record.DEFAULTS: 3,
    }
    assert cost_record.CREDENTIALS not in found.start_requests
