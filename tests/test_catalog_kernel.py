"""A second engine through the catalog: Java Delta Kernel 4.4.0 (``delta-kernel-unitycatalog``)
appending to a catalog-managed table beside two Delta Spark drivers, through the same Unity Catalog
server, released at one barrier (helpers.catalog.kernel_writer). Checked from storage and the
catalog (helpers.catalog.race.check_table), never from what a writer reports.

The server is the real one (``make uc-server``; ``make test`` builds it first); the tables are
created by a Delta Spark driver of their own, as notebook 15 creates them. The last tests give the
Kernel writer rivals by hand (a staged commit the catalog ratifies, published or not, as another
writer leaves it), to reach on every run what the race reaches only in some: a winner the catalog
ratified that nobody has published yet.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid

import pytest

from helpers import config
from helpers.catalog import kernel_writer, race, rest, server, tables

SPARK_WRITERS = 2
KERNEL_WRITERS = 1
BATCHES = 2
WRITERS = SPARK_WRITERS + KERNEL_WRITERS

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def uc(tmp_path_factory):
    if not server.built():
        pytest.fail(f"{server.CRATE} is not built: run `make uc-server` (make test does it first).")
    with server.start(tmp_path_factory.mktemp("uc-kernel")) as running:
        yield running


@pytest.fixture(scope="module")
def created(uc):
    """Two tables: ``orders`` for the race, ``rivals`` for the rivals made by hand."""
    return kernel_writer.create_in_a_driver(uc.uri, "orders", "rivals")


@pytest.fixture(scope="module")
def raced(uc, created):
    catalog = rest.UnityCatalog(uc.uri)
    table_id, location = created["orders"]
    race = kernel_writer.run_race(
        catalog,
        "orders",
        location,
        table_id,
        spark_writers=SPARK_WRITERS,
        kernel_writers=KERNEL_WRITERS,
        batches_per_writer=BATCHES,
        run_dir=uc.root / "race",
    )
    print(race.check.summary())
    print(json.dumps(race.results.get("k1", {}).get("appends"), indent=1))
    return race


def test_every_writer_of_both_engines_appended_every_batch_once(raced):
    assert raced.failed == {}
    assert raced.check.problems == []
    assert sorted(raced.check.rows) == sorted(
        (writer, batch) for writer, batches in raced.batches.items() for batch in batches
    )
    assert set(raced.check.rows.values()) == {10}


def test_one_commit_per_version_in_storage_and_the_catalog_all_published(raced):
    versions = list(range(1 + WRITERS * BATCHES))
    assert raced.check.versions == versions
    assert raced.check.published == versions
    assert raced.check.catalog.latest_version == versions[-1]
    # each version after 0 is one of its staged commits, byte for byte (check_table's rule)
    assert sorted(raced.check.ratified) == versions[1:]


def test_each_engine_wrote_its_own_commits(raced):
    engines = kernel_writer.engines(raced)
    kernel = sorted(v for v, info in engines.items() if info.startswith("Kernel-4.4.0/"))
    spark = sorted(v for v, info in engines.items() if "Delta-Lake/4.4.0" in info)
    assert len(kernel) == KERNEL_WRITERS * BATCHES, engines
    assert len(spark) == SPARK_WRITERS * BATCHES, engines
    assert [a["version"] for a in raced.results["k1"]["appends"]] == kernel


def test_the_kernel_writer_lost_a_version_to_spark_at_the_catalog_and_committed_after(raced):
    first = raced.results["k1"]["appends"][0]
    # it asked for the version after the one it read, which a Spark driver had already been given
    assert first["rival_version"] > first["read_version"]
    assert first["attempts"] + first["rebuilds"] >= 2, first
    assert first["version"] > first["read_version"] + 1, first
    assert raced.check.losers, "the refused staged commit stays in _staged_commits/"


def test_a_kernel_writer_of_another_table_id_is_refused_by_the_catalog(uc, raced):
    """The committer names the table by its catalog id: a wrong id is refused before any write."""
    location = raced.check.catalog.location
    before = tables.log_listing(location)
    spec = {
        "uri": uc.uri,
        "table_id": "00000000-0000-0000-0000-000000000000",
        "table": "orders",
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


def ratify_a_rival(catalog, table_id: str, location: str, version: int, *, publish: bool) -> str:
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
    catalog.ratify(tables.CATALOG, tables.SCHEMA, "rivals", table_id, version, name, len(body), now)
    if publish:
        shutil.copyfile(log / "_staged_commits" / name, log / f"{version:020d}.json")
    return name


def append_behind_rivals(uc, created, batch: int, rivals: list[bool]) -> dict:
    """One Kernel append to ``rivals`` from a snapshot read before ``rivals`` (published or not, in
    order) were ratified; its report."""
    catalog = rest.UnityCatalog(uc.uri)
    table_id, location = created["rivals"]
    spec = {
        "uri": uc.uri,
        "table_id": table_id,
        "table": "rivals",
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
        ratify_a_rival(catalog, table_id, location, ready["version"] + offset, publish=publish)
    java.stdin.write("go\n")
    java.stdin.flush()
    events = [json.loads(line) for line in java.stdout]
    assert java.wait() == 0, events
    append = events[0]
    print(json.dumps(append, indent=1))
    return {"read": ready["version"], **append}


def test_behind_one_rival_not_yet_published_kernel_reads_again_and_publishes_it(uc, created):
    append = append_behind_rivals(uc, created, 41, [False])
    assert append["version"] == append["read"] + 2
    # Kernel's conflict check could not read the winner (ConcurrentWriteException): read again
    assert append["rebuilds"] == 1 and append["kernel_errors"] == []
    check = race.check_table(rest.UnityCatalog(uc.uri), "rivals", {("k1", 41): 10})
    assert check.problems == []
    # Kernel published every ratified commit up to its own, the rival's too
    assert check.published == list(range(append["version"] + 1))


def test_behind_a_published_rival_and_one_not_yet_kernel_440_stops_on_its_own_check(uc, created):
    """Refused twice, the first winner published and the second not: Kernel 4.4.0's conflict check
    lists published commits from the version it read, finds none newer than the first winner, and
    stops on its precondition. Nothing of it landed; the writer reads again and commits."""
    append = append_behind_rivals(uc, created, 42, [True, False])
    first_try = append["read"] + 1
    stuck = first_try + 1  # its second attempt, after the published rival
    assert append["kernel_errors"] == [
        (
            f"java.lang.IllegalArgumentException: New commit version {stuck} should be greater than "
            f"the previous commit attempt version {stuck}."
        )
    ]
    assert append["version"] == append["read"] + 3
    check = race.check_table(rest.UnityCatalog(uc.uri), "rivals", {("k1", 41): 10, ("k1", 42): 10})
    assert check.problems == []
