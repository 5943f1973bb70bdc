"""A second engine through the catalog: Java Delta Kernel 4.4.0 (``delta-kernel-unitycatalog``)
appending to a catalog-managed table through a Unity Catalog server (helpers.catalog.kernel_writer).
Checked from storage and the catalog (helpers.catalog.race.check_table), never from what a writer
reports.

The race of one Kernel writer beside two Delta Spark drivers runs in notebook 15 (section 9), with
its checks; here it is repeated twice, small (helpers.catalog.kernel_runs), its retries counted
and checked against storage, and the verdict shown to rest on every run. The server is the real one (``make uc-server``; ``make test``
builds it first); the tables are created by a Delta Spark driver of their own, as notebook 15
creates them. These tests give the Kernel writer rivals by hand (a staged commit the catalog
ratifies, published or not, as another writer leaves it), to reach on every run what the race
reaches only in some: a winner the catalog ratified that nobody has published yet. Each test has a
table of its own (the repetition, one per run).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid

import pytest

from helpers.catalog import kernel_runs, kernel_writer, race, rest, server, server_build, tables
from helpers.ground import config

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def uc(tmp_path_factory):
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )
    with server.start(tmp_path_factory.mktemp("uc-kernel")) as running:
        yield running


@pytest.fixture(scope="module")
def created(uc):
    """A table per test: ``wrong_id``, ``behind_one``, ``behind_two``, and ``repeat_1`` and
    ``repeat_2`` for the repeated race's runs (one driver creates them all)."""
    return kernel_writer.create_in_a_driver(
        uc.uri, "wrong_id", "behind_one", "behind_two", *REPEATS
    )


REPEATS = ("repeat_1", "repeat_2")


def test_a_kernel_writer_of_another_table_id_is_refused_by_the_catalog(uc, created):
    """The committer names the table by its catalog id: a wrong id is refused before any write."""
    _, location = created["wrong_id"]
    before = tables.log_listing(location)
    spec = {
        "uri": uc.uri,
        "table_id": "00000000-0000-0000-0000-000000000000",
        "table": "wrong_id",
        "location": location,
        "process": "k9",
        "batches": [91],
    }
    done = subprocess.run(
        kernel_writer.command(spec),
        check=False,
        input="go\n",
        capture_output=True,
        text=True,
        cwd=config.ROOT,
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 1, done.stderr[-2000:]
    assert events[-1]["event"] == "error"
    assert "UUID mismatch" in events[-1]["message"] + str(events[-1].get("cause")), events[-1]
    assert tables.log_listing(location) == before


def test_the_command_line_names_the_catalogs_table_and_waits_only_when_asked():
    spec = {
        "uri": "http://127.0.0.1:1",
        "table_id": "t",
        "table": "orders",
        "location": "file:///x",
        "process": "k1",
        "batches": [31, 32],
    }
    line = kernel_writer.command(spec)
    assert line[line.index(kernel_writer.MAIN_CLASS) + 1 :] == [
        "http://127.0.0.1:1",
        "t",
        "spark_catalog",
        "default",
        "orders",
        "file:///x",
        "k1",
        "31,32",
    ]
    assert kernel_writer.command({**spec, "wait_for_a_rival": True})[-1] == "wait-for-a-rival"
    jars = line[line.index("-cp") + 1]
    for name in (
        "delta-kernel-api-4.4.0",
        "delta-kernel-unitycatalog-4.4.0",
        "unitycatalog-client",
    ):
        assert name in jars


# ---------------------------------------------------------------------------------------------
# Rivals made by hand: a commit the catalog ratified, published or not yet
# ---------------------------------------------------------------------------------------------


def ratify_a_rival(
    catalog, table: str, table_id: str, location: str, version: int, *, publish: bool
) -> str:
    """Stage a commit of no rows (its commitInfo only) for ``version``, have the catalog ratify it,
    and publish it or not: what another writer leaves. Returns its staged file's name."""
    now = int(time.time() * 1000)
    body = (
        json.dumps(
            {
                "commitInfo": {
                    "inCommitTimestamp": now,
                    "timestamp": now,
                    "operation": "WRITE",
                    "operationParameters": {},
                    "isBlindAppend": True,
                    "engineInfo": "a rival made by hand",
                }
            }
        )
        + "\n"
    )
    log = tables.local_path(location) / "_delta_log"
    name = f"{version:020d}.{uuid.uuid4()}.json"
    (log / "_staged_commits").mkdir(exist_ok=True)
    (log / "_staged_commits" / name).write_text(body)
    catalog.ratify(tables.CATALOG, tables.SCHEMA, table, table_id, version, name, len(body), now)
    if publish:
        shutil.copyfile(log / "_staged_commits" / name, log / f"{version:020d}.json")
    return name


def append_behind_rivals(uc, created, table: str, batch: int, rivals: list[bool]) -> dict:
    """One Kernel append to ``table`` from a snapshot read before ``rivals`` (published or not, in
    order) were ratified; its report."""
    catalog = rest.UnityCatalog(uc.uri)
    table_id, location = created[table]
    spec = {
        "uri": uc.uri,
        "table_id": table_id,
        "table": table,
        "location": location,
        "process": "k1",
        "batches": [batch],
    }
    java = subprocess.Popen(
        kernel_writer.command(spec),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=config.ROOT,
    )
    ready = json.loads(java.stdout.readline())
    assert ready["event"] == "ready", ready
    for offset, publish in enumerate(rivals, start=1):
        ratify_a_rival(
            catalog, table, table_id, location, ready["version"] + offset, publish=publish
        )
    java.stdin.write("go\n")
    java.stdin.flush()
    events = [json.loads(line) for line in java.stdout]
    assert java.wait() == 0, events
    append = events[0]
    print(json.dumps(append, indent=1))
    return {"read": ready["version"], **append}


def test_behind_one_rival_not_yet_published_kernel_reads_again_and_publishes_it(uc, created):
    append = append_behind_rivals(uc, created, "behind_one", 41, [False])
    assert append["version"] == append["read"] + 2
    # Kernel's conflict check could not read the winner (ConcurrentWriteException): the appender
    # read again; Kernel did not retry by itself
    refused = append["read"] + 1
    assert [
        (r["by"], r["tried"], r["raised"].split(":")[0], r["next"]) for r in append["retries"]
    ] == [("appender", refused, "io.delta.kernel.exceptions.ConcurrentWriteException", refused + 1)]
    assert append["rebuilds"] == 1
    check = race.check_table(rest.UnityCatalog(uc.uri), "behind_one", {("k1", 41): 10})
    assert check.problems == []
    # Kernel published every ratified commit up to its own, the rival's too
    assert check.published == list(range(append["version"] + 1))


def test_behind_a_published_rival_and_one_not_yet_kernel_440_stops_on_its_own_check(uc, created):
    """Refused twice, the first winner published and the second not: Kernel 4.4.0's conflict check
    lists published commits from the version it read, finds none newer than the first winner, and
    stops on its precondition. Nothing of it landed; the writer reads again and commits."""
    append = append_behind_rivals(uc, created, "behind_two", 42, [True, False])
    first_try = append["read"] + 1
    stuck = first_try + 1  # its second attempt, after the published rival
    kernels, appenders = append["retries"]
    # Kernel retried by itself after reading the published winner, then stopped on its check
    assert (kernels["by"], kernels["tried"], kernels["raised"], kernels["next"]) == (
        "kernel",
        first_try,
        None,
        stuck,
    )
    assert (appenders["by"], appenders["tried"], appenders["raised"], appenders["next"]) == (
        "appender",
        stuck,
        (
            f"java.lang.IllegalArgumentException: New commit version {stuck} should be greater than "
            f"the previous commit attempt version {stuck}."
        ),
        stuck + 1,
    )
    assert append["version"] == append["read"] + 3
    check = race.check_table(rest.UnityCatalog(uc.uri), "behind_two", {("k1", 42): 10})
    assert check.problems == []
    assert check.published == list(range(append["version"] + 1))


# ---------------------------------------------------------------------------------------------
# The race repeated: Kernel's retries counted, a verdict on every run
# ---------------------------------------------------------------------------------------------


def test_the_race_repeated_twice_counts_kernels_retries_and_checks_every_run(uc, created, tmp_path):
    """Two runs, small: one Spark job (a JVM for both runs) and a Kernel writer per run. Kernel's
    first commit waits for a rival, so every run has at least one retry, and each retry Kernel
    reported is one of its staged commits that lost its version in storage."""
    record = kernel_runs.repeat_race(
        uc.uri,
        tmp_path,
        runs=2,
        spark_writers=1,
        batches_per_writer=2,
        created={name: created[name] for name in REPEATS},
    )
    print(record.summary())
    assert record.passed, record.summary()
    assert [run.table for run in record.runs] == list(REPEATS)
    assert record.testing_flags == {"w1": None}  # the Spark job measured without the flag
    for run in record.runs:
        assert run.problems == []
        assert run.commits == {kernel_runs.SPARK: 2, kernel_runs.KERNEL: 2}
        assert len(run.retries) >= 1 and len(run.retries) == run.kernel_losers
        for retry in run.retries:
            assert retry["by"] in ("kernel", "appender")
            assert "409" in retry["refusal"]  # the catalog refused the version
            assert (retry["raised"] is None) == (retry["by"] == "kernel")
            assert retry["next"] > retry["tried"]
    assert sum(record.retry_counts.values()) == sum(len(run.retries) for run in record.runs)
    assert record.commits == {kernel_runs.SPARK: 4, kernel_runs.KERNEL: 4}
    assert json.loads(json.dumps(record.to_dict()))["passed"] is True
    assert record.summary().endswith("Verdict: every run without a problem.")


def a_run(run: int, problems: list[str]) -> kernel_runs.KernelRun:
    retries = [
        {"batch": 31, "by": "kernel", "tried": 1, "refusal": "409", "raised": None, "next": 2},
        {"batch": 32, "by": "appender", "tried": 4, "refusal": "409", "raised": "CWE", "next": 5},
    ]
    return kernel_runs.KernelRun(
        run, f"t{run}", {"Delta Spark": 4, "Delta Kernel": 2}, retries, 2, problems, 1.0
    )


def test_the_verdict_rests_on_every_run():
    """One run with a problem among clean ones fails the whole record; no run at all fails too."""
    clean = kernel_runs.KernelRaces(2, 2, [a_run(1, []), a_run(2, []), a_run(3, [])])
    assert clean.passed
    assert clean.retry_counts == {"kernel": 3, "appender": 3}
    assert clean.commits == {"Delta Spark": 12, "Delta Kernel": 6}
    broken = kernel_runs.KernelRaces(
        2, 2, [a_run(1, []), a_run(2, ["batch 21 of w2: 20 rows"]), a_run(3, [])]
    )
    assert not broken.passed
    assert "Verdict: failed; runs with problems: [2]." in broken.summary()
    assert "  - batch 21 of w2: 20 rows" in broken.summary()
    assert json.loads(json.dumps(broken.to_dict()))["passed"] is False
    assert not kernel_runs.KernelRaces(2, 2, []).passed


def test_kernels_reports_are_checked_against_storage():
    """A version Kernel claims that storage gives another engine, or a refused attempt that left no
    staged commit, is a problem of the run."""
    appends = [{"version": 2, "retries": [{"by": "kernel"}]}, {"version": 4, "retries": []}]
    owners = {1: "Delta Spark", 2: "Delta Kernel", 3: "Delta Spark", 4: "Delta Kernel"}
    assert kernel_runs.disagreements(appends, owners, kernel_losers=1) == []
    assert kernel_runs.disagreements(appends, {**owners, 4: "Delta Spark"}, 1) == [
        "Kernel reported versions [2, 4]; storage has its commits at [2]"
    ]
    assert kernel_runs.disagreements(appends, owners, kernel_losers=0) == [
        (
            "Kernel reported 1 refused attempts; storage holds 0 of its staged commits that lost "
            "their version"
        )
    ]


def test_retries_are_counted_by_who_made_them():
    appends = [
        {"retries": [{"by": "kernel"}, {"by": "appender"}]},
        {"retries": [{"by": "kernel"}]},
        {},
    ]
    assert kernel_writer.retry_counts(appends) == {"kernel": 2, "appender": 1}
    assert kernel_runs.engine_name("Kernel-4.4.0/workbook-kernel-appender") == kernel_runs.KERNEL
    assert kernel_runs.engine_name("Apache-Spark/4.2.0 Delta-Lake/4.4.0") == kernel_runs.SPARK
