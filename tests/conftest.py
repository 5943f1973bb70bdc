"""Shared fixtures: the emulators (started if they do not answer), unique table names and a headless
Chromium (``browser``, one per test file); and the order in which `make test` hands files to its workers."""

from __future__ import annotations

import uuid

import pytest

from helpers.jupyter import lab_check, workbook


@pytest.fixture(scope="session")
def stores():
    """S3 (versioned bucket), DynamoDB (lock table) and Azure Blob (container), ready to use."""
    from helpers.stores import services, storage

    services.require("s3", "dynamodb", "azure")
    storage.ensure_bucket()
    storage.ensure_lock_table()
    storage.ensure_container()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """A headless Chromium (Debian's ``chromium`` and ``chromium-driver``), quit after its test file."""
    try:
        chromium, driver = lab_check.browser_binaries()
    except lab_check.LabCheckError as error:
        pytest.fail(f"the answer page is tested in Chromium: {error}")
    session = lab_check.headless_browser(
        chromium, driver, tmp_path_factory.mktemp("chromium-profile")
    )
    yield session
    session.quit()


@pytest.fixture
def free_port():
    """A function that returns a port nothing listens on (on 127.0.0.1)."""
    from helpers.ground import local_processes

    return local_processes.free_port


@pytest.fixture
def private_services(monkeypatch, tmp_path):
    """Point both services at spare ports and a private state folder; stop whatever the test started."""
    from helpers.ground import config, local_processes
    from helpers.stores import services

    monkeypatch.setattr(config, "STATE_DIR", tmp_path / "state")
    monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(local_processes.free_port()))
    monkeypatch.setenv("WORKBOOK_AZURITE_PORT", str(local_processes.free_port()))
    yield
    services.down(quiet=True)


@pytest.fixture
def table_name(request) -> str:
    """A table name no earlier run used: the test's name plus a uuid."""
    return f"test-{request.node.name[:40].replace('[', '-').replace(']', '')}-{uuid.uuid4().hex[:8]}".lower()


# `make test` runs pytest-xdist with three workers, one file (one notebook) at a time each, in the
# order below (`--dist loadfile --no-loadscope-reorder`). xdist gives each worker one file, then a
# second to any worker with at most two tests left: so 09 and 12 start at once on a worker each
# (with TEST_WORKERS=2, 12 queues behind the trivial file), and the other worker takes everything
# else meanwhile; the rest follow, slowest first. Notebook 15, now the longest, waits for one of
# the first: started first, beside 09 and 13 (three files of Spark drivers at once on 2 cores), it
# took 450 s instead of 370 s and the run was no shorter (seconds: a warm `make test` on the
# 2-core machine, 2026-11-28, three files at once).
RUN_FIRST = (
    "notebooks/09_spark_multi_cluster_s3.ipynb",  # ~210 s: 8 Spark drivers
    "tests/test_preflight.py",  # < 1 s: queues behind 09 with two workers, so keep it trivial
    "notebooks/12_torture.ipynb",  # ~140 s: the delta-rs protocols' bounded torture subset (emulators of its own)
    "notebooks/13_conflict_matrix.ipynb",  # ~150 s: pairs raced in deltalake 1.6.6 and Delta Spark, and the full matrix's anomalies again
    "notebooks/10_small_files.ipynb",  # ~115 s: Spark maintenance on a twin table
    "notebooks/15_catalog_managed_tables.ipynb",  # ~370 s: Spark drivers and Java Delta Kernel through Unity Catalog servers, on local disk, Azurite and S3
    "notebooks/14_many_producers.ipynb",  # ~60 s: producers, the committer, kills, and Spark's foreachBatch
    "tests/test_copy_safe.py",  # the copy cells run against the emulators, Spark's among them
    "notebooks/08_s3_conditional_writes_today.ipynb",
    "notebooks/00_environment_check.ipynb",
    "notebooks/11_commit_throughput.ipynb",  # the benchmark's small run: writer processes on moto and Azurite
    "tests/test_lessons_follow_parameters.py",
    "tests/test_privacy.py",  # Daft writers and notebook 00 under the no-egress hook
    "tests/test_driver_jobs.py",  # the gate's data-first hold, with boto3
    "notebooks/01_local_delta_table.ipynb",
    "tests/test_sessions.py",
    "notebooks/02_azure_adls_writes.ipynb",
)


# Tests that hold the evidence of a finding, a store or a harness rather than a lesson, and take
# minutes of Spark: marked `heavy`, so that `make test` (`-m "not heavy"`) keeps within its 10
# minutes and `make test-heavy` (`-m heavy`, which CI runs after make test) runs them. Run alone by
# path, they run. HEAVY's files are heavy whole; other files mark their heavy tests themselves.
HEAVY = (
    "tests/test_findings.py",  # each finding's reproducer, with the era it names
    "tests/test_spark_dynamodb_log_store.py",  # two Spark drivers against the unfinished-commit states
    "tests/test_catalog_object_storage.py",  # a driver with both stores' jars (the race is notebook 15's)
    "tests/test_writer_spark.py",  # Spark writer processes, and deltalake 1.5.1 taking its turn through Spark's lock table
    "tests/test_matrix_mixed.py",  # one mixed pair, deltalake 1.5.1 and a held Spark driver (`make matrix-mixed`'s evidence)
    "tests/test_bench_run.py",  # one Spark driver with writer threads, through the benchmark's request meter
    "tests/test_lost_answer_spark.py",  # two Spark drivers, one lost commit answer per path and remedy
    "tests/test_lost_answer_catalog.py",  # one Spark driver, a lost add-commit answer per remedy through the catalog
    "tests/test_lost_answer_deltalake.py",  # every deltalake era and path, one lost commit answer per remedy
    "tests/test_catalog_kernel.py",  # the Kernel race repeated twice, its retries counted
    "tests/test_catalog_maintenance.py",  # auto compaction, log cleanup and VACUUM in one driver
)
# `make test-heavy` hands its files to the workers longest first, so that no worker is left with a
# long file at the end (seconds: each file's heavy tests in `make test-heavy`, three workers on the
# 2-core machine, 2026-12-07; in alphabetical order the run ended on the DynamoDB log store's 55 s).
# A worker takes several heavy files in turn (--dist loadfile), in one process: a Spark session a
# file starts in that process stays for the next, with its jars (they are fixed when the JVM
# starts). The in-process sessions of these files are the catalog's on local disk; a file that needs
# other jars starts its driver in a child process (test_catalog_object_storage.py).
HEAVY_ORDER = (
    "tests/test_catalog_maintenance.py",  # 114 s
    "tests/test_spark_era.py",  # Delta Spark 3.3.2's two races of notebook 09, 4 JVMs (one heavy test)
    "tests/test_findings.py",  # 88 s
    "tests/test_catalog_cost.py",  # 79 s: a small cost run (one heavy test)
    "tests/test_catalog_kernel.py",  # 72 s
    "tests/test_catalog_outage.py",  # 64 s: a short outage (one heavy test)
    "tests/test_spark_dynamodb_log_store.py",  # 55 s
    "tests/test_lost_answer_spark.py",  # 54 s
    "tests/test_lost_answer_catalog.py",  # 36 s
    "tests/test_bench_run.py",  # 35 s
    "tests/test_lost_answer_deltalake.py",  # 32 s
    "tests/test_writer_spark.py",  # 27 s
    "tests/test_matrix_mixed.py",  # 25 s
    "tests/test_catalog_driver.py",  # 24 s: the job refusing the flag (two heavy tests)
    "tests/test_catalog_object_storage.py",  # about 15 s since notebook 15 holds the race
)


def pytest_collection_modifyitems(config, items):
    """Files in RUN_FIRST order, then HEAVY_ORDER's (the heavy run's), then the rest as collected;
    each file's own order is kept. The tests of HEAVY files are marked ``heavy``."""
    rank = {path: number for number, path in enumerate(RUN_FIRST + HEAVY_ORDER)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))
    for item in items:
        if item.nodeid.split("::", 1)[0] in HEAVY:
            item.add_marker(pytest.mark.heavy)


# tests/cluster/ runs notebook 09 on a standalone Spark cluster (`make cluster-check`): minutes of
# work beyond `make test`'s budget, so only `pytest --cluster` collects it (CI runs it after make test).
def pytest_addoption(parser):
    parser.addoption(
        "--cluster",
        action="store_true",
        help="collect tests/cluster/: notebook 09 on a standalone Spark cluster",
    )


def pytest_ignore_collect(collection_path, config):
    if (
        collection_path.name == "cluster"
        and collection_path.parent.name == "tests"
        and not config.getoption("--cluster")
    ):
        return True
    return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter):
    """Last, after the short summary: the service watch's sentence for each emulator a failure
    points at (``workbook.stopped_services``), as the notebook's running cell said it, so that a
    stopped moto is named in the terminal too, not only by a client's connection error."""
    result = yield
    failed = [*terminalreporter.stats.get("failed", []), *terminalreporter.stats.get("error", [])]
    for sentence in dict.fromkeys(
        s for r in failed for s in workbook.stopped_services(str(r.longrepr))
    ):
        terminalreporter.write_line(sentence, red=True, bold=True)
    return result
