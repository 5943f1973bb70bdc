"""A second engine through the catalog: Java Delta Kernel 4.4.0 appending to a catalog-managed
table with Kernel's own Unity Catalog committer (``io.delta:delta-kernel-unitycatalog:4.4.0``),
beside Delta Spark drivers, through the same server.

    <python> -m helpers.catalog.kernel_writer SPEC_JSON_FILE

The writer is a small Java program, ``workbook.kernel.KernelAppender`` (``helpers/catalog/java/``),
run with ``java -cp`` by a Python process of the race (:func:`run`), which lines it up at the
race's barrier as :mod:`helpers.catalog.writer` lines up a Spark driver: the Java process loads the
table's snapshot from the catalog and says ``ready``; once the barrier opens it is told ``go`` on
its standard input and appends its batches, each one commit of 10 rows ``(id, writer, batch)``
(:func:`helpers.catalog.writer.batch_rows`), and reports each on its standard output, with every
retry it made after a conflict (:func:`retry_counts`).

Every step of a commit is Kernel's: ``UCCatalogManagedClient.loadSnapshot`` (the catalog's
ratified commits, published or not), a transaction whose committer is ``UCCatalogManagedCommitter``
(stage under ``_delta_log/_staged_commits/``, then ``add-commit`` through Delta's own
``UCDeltaTokenBasedRestClient``, the REST client Delta Spark uses), Kernel's conflict check, and
``Snapshot.publish``. Kernel does not publish by itself, so the writer publishes after each commit.

Each append's ``retries`` lists the attempts the catalog refused, in order, each ``{"by", "tried",
"refusal", "raised", "next"}``: ``by`` is ``kernel`` when Kernel 4.4.0 retried by itself inside
``Transaction.commit`` (the refusal is a retryable conflict and its conflict check read the
published winner: ``TransactionImpl.commitWithRetry``), ``appender`` when the transaction raised
(``ConcurrentWriteException`` when the winner is not yet published, ``ConflictChecker``'s
delta#7402; or 4.4.0's ``IllegalArgumentException``, the finding
``delta-kernel-uc-rebase-behind-an-unpublished-commit``) and the appender read the table from the
catalog again. ``tried`` is the version refused, ``refusal`` the committer's
``CommitFailedException`` (the catalog's 409), ``raised`` what the transaction threw (None for
Kernel's own retry), ``next`` the version the next attempt asked for; the append's ``version`` is
the one it got. They are counted from Kernel's own report of each commit attempt
(``UcCommitTelemetry``, sent to the engine's metrics reporters), not inferred from timing.

:func:`run_race` races one or more Kernel writers beside Delta Spark drivers
(:mod:`helpers.catalog.writer`) at one barrier, and checks the table with
:func:`helpers.catalog.race.check_table`, from storage and the catalog.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers.catalog.race import CatalogCheck, Race, check_table, run_drivers
from helpers.catalog.tables import CATALOG, SCHEMA
from helpers.catalog.writer import ROWS_PER_BATCH, batches_of, new_result
from helpers.ground import config, eras
from helpers.spark import java_build
from helpers.writers import processes
from helpers.writers.processes import run_at_barrier
from helpers.writers.protocol import one_line, spec_process_main

KERNEL_VERSION = config.DELTA_JARS_VERSION
"""Delta Kernel's release: Delta's own, the one Delta Spark's jars bring along."""
JAVA_DIR = Path(__file__).with_name("java")
JAVA_SOURCES = sorted(JAVA_DIR.rglob("*.java"))
MAIN_CLASS = "workbook.kernel.KernelAppender"
KERNEL_JARS = (
    f"io.delta_delta-kernel-api-{KERNEL_VERSION}.jar",
    f"io.delta_delta-kernel-defaults-{KERNEL_VERSION}.jar",
    f"io.delta_delta-kernel-unitycatalog-{KERNEL_VERSION}.jar",
    f"io.delta_delta-storage-{KERNEL_VERSION}.jar",
    "io.unitycatalog_unitycatalog-client-*.jar",
    "io.unitycatalog_unitycatalog-hadoop-*.jar",
    "com.fasterxml.jackson.datatype_jackson-datatype-jdk8-*.jar",
)
"""The jars the writer needs beyond pyspark's own (Hadoop's client, Parquet, Jackson): Kernel's
three, Delta's storage jar (the Unity Catalog REST client) and Unity Catalog's client jars. All are
dependencies of Delta Spark, fetched with it into the Ivy cache (``make install``)."""
JVM_OPTIONS = ("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


class KernelWriterError(RuntimeError):
    """The Kernel writer could not be built or started, or it reported an error (its message)."""


def classpath() -> list[Path | str]:
    """The writer's classpath: its own jar, pyspark's jars, then :data:`KERNEL_JARS` from the Ivy
    cache (fetched with Delta Spark's jars if the cache lacks them)."""
    from helpers.spark import sessions

    jars_dir = config.CACHE_DIR / "ivy" / "jars"

    def found() -> list[Path]:
        return [match for pattern in KERNEL_JARS for match in sorted(jars_dir.glob(pattern))[-1:]]

    if len(found()) < len(KERNEL_JARS):
        sessions.fetch_jars("local")
    if len(found()) < len(KERNEL_JARS):
        raise KernelWriterError(
            f"{', '.join(KERNEL_JARS)} not all in {config.shown(jars_dir)} after fetching Delta "
            "Spark's jars; run `make install`."
        )
    return [f"{sessions.pyspark_jars_dir()}/*", *found()]


def kernel_jar() -> Path:
    """The jar of ``workbook.kernel.KernelAppender``, compiled from ``helpers/catalog/java/`` with
    the JDK's javac the first time it is needed (and again when the source changes)."""

    return java_build.compile_jar(
        config.BUILD_DIR / "jars" / "workbook-kernel-appender.jar",
        JAVA_SOURCES,
        classpath,
        JAVA_DIR,
        KernelWriterError,
    )


def command(spec: dict) -> list[str]:
    """The Java command line of the writer of ``spec``."""
    from helpers.spark import sessions

    return [
        "java",
        *JVM_OPTIONS,
        *sessions.proxy_java_options(),
        "-cp",
        os.pathsep.join(map(str, [kernel_jar(), *classpath()])),
        MAIN_CLASS,
        spec["uri"],
        spec["table_id"],
        spec.get("catalog", CATALOG),
        spec.get("schema", SCHEMA),
        spec["table"],
        spec["location"],
        spec["process"],
        ",".join(map(str, spec["batches"])),
        *(["wait-for-a-rival"] if spec.get("wait_for_a_rival") else []),
    ]


def retry_counts(appends: list[dict]) -> dict[str, int]:
    """How many retries of these appends (a Kernel writer's reports) were Kernel's own
    (``kernel``) and how many the appender's loop (``appender``)."""
    retries = [retry for append in appends for retry in append.get("retries", [])]
    return {by: sum(r["by"] == by for r in retries) for by in ("kernel", "appender")}


def _next_event(java: subprocess.Popen, stderr_path: Path) -> dict:
    """The next JSON line the Java process prints; its error, or its end, as KernelWriterError."""
    line = java.stdout.readline()
    if not line:
        java.wait()
        raise KernelWriterError(
            f"the Kernel writer exited with code {java.returncode} without a word; "
            f"its stderr: {processes.stderr_tail(stderr_path)}"
        )
    event = json.loads(line)
    if event["event"] == "error":
        raise KernelWriterError(
            f"{event['class']}: {one_line(event['message'], 800)}"
            + (f" (cause: {one_line(event['cause'], 400)})" if event.get("cause") else "")
        )
    return event


def start(spec: dict, stderr_path: Path) -> tuple[subprocess.Popen, int]:
    """Start the Java writer of ``spec`` (its stderr to ``stderr_path``) and wait until it has read
    the table; return the process and the version it read."""
    with open(stderr_path, "wb") as err:
        java = subprocess.Popen(
            command(spec),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=config.ROOT,
        )
    ready = _next_event(java, stderr_path)
    if ready["event"] != "ready":
        java.kill()
        raise KernelWriterError(f"the Kernel writer said {ready} before it was ready")
    return java, ready["version"]


def go(java: subprocess.Popen, stderr_path: Path, appends: list[dict]) -> None:
    """Tell a writer :func:`start` started to append; add each append it reports to ``appends`` as
    it comes (a failure keeps those before it), and wait for its exit."""
    java.stdin.write("go\n")
    java.stdin.flush()
    while (event := _next_event(java, stderr_path))["event"] != "done":
        appends.append({k: v for k, v in event.items() if k != "event"})
    java.wait()


def run(spec: dict) -> dict:
    result = new_result(spec, engine=f"Delta Kernel {KERNEL_VERSION}")
    stderr_path = Path(spec["result_path"]).with_suffix(".java.err")

    def prepare() -> subprocess.Popen:
        java, result["read_version"] = start(spec, stderr_path)
        return java

    def work(java: subprocess.Popen) -> None:
        go(java, stderr_path, result["appends"])
        result["retries"] = retry_counts(result["appends"])

    return run_at_barrier(spec, result, prepare, work)


def run_race(
    catalog,
    name: str,
    location: str,
    table_id: str,
    *,
    spark_writers: int,
    kernel_writers: int = 1,
    batches_per_writer: int,
    run_dir: Path,
    wait_for_a_rival: bool = True,
) -> Race:
    """Race ``spark_writers`` Delta Spark drivers (``w1``, ``w2``, ...) and ``kernel_writers``
    Delta Kernel writers (``k1``, ...), each appending ``batches_per_writer`` batches to the
    catalog's table ``name`` (at ``location``, the catalog's id ``table_id``), released together at
    one barrier; return the race with :func:`helpers.catalog.race.check_table`'s checks. As
    :func:`helpers.catalog.race.run_race`, with Kernel writers among the drivers.

    ``wait_for_a_rival``: each Kernel writer's first commit waits, with its snapshot read before
    the barrier, until the catalog has ratified another writer's commit. Kernel starts in a second
    and Spark's first append takes several, so without it Kernel's commits would all land before
    Spark's first and only Spark would ever lose a version; with it, Kernel asks for a version
    already given on every run."""
    writers = [("w", "helpers.catalog.writer", n) for n in range(1, spark_writers + 1)] + [
        ("k", "helpers.catalog.kernel_writer", n) for n in range(1, kernel_writers + 1)
    ]
    batches, specs = {}, {}
    for number, (prefix, module, n) in enumerate(writers, start=1):
        writer = f"{prefix}{n}"
        batches[writer] = batches_of(number, batches_per_writer)
        specs[writer] = {
            "module": module,
            "table": name,
            "table_id": table_id,
            "location": location,
            "batches": batches[writer],
            "try_path_write": False,
            "wait_for_a_rival": wait_for_a_rival and prefix == "k",
        }
    kernel_jar()  # compiled once here, not by each writer at once
    results, seconds = run_drivers(
        catalog, specs, run_dir, f"{spark_writers} Spark + {kernel_writers} Kernel"
    )
    expected = {(w, b): ROWS_PER_BATCH for w, bs in batches.items() for b in bs}
    return Race(batches, results, check_table(catalog, name, expected), seconds)


CREATE_SCRIPT = """
import json, sys
from helpers.catalog import rest, tables
from helpers.catalog.tables import COLUMNS
uri, names = sys.argv[1], sys.argv[2:]
spark = tables.spark_session(uri, creates_tables=True, app_name="catalog-create")
created = {}
for name in names:
    staged = tables.create(spark, rest.UnityCatalog(uri), name, COLUMNS)
    created[name] = [staged.table_id, staged.location]
print(json.dumps(created))
"""


def create_in_a_driver(uri: str, *names: str) -> dict[str, tuple[str, str]]:
    """Create the catalog-managed tables ``default.<name>`` (:data:`~helpers.catalog.tables.COLUMNS`)
    through the server at ``uri`` as notebook 15 does (:func:`helpers.catalog.tables.create`), in one
    Delta Spark driver of their own, so that the caller starts no JVM; return name -> (table id,
    location)."""
    done = subprocess.run(
        [str(eras.python_for(eras.CURRENT)), "-c", CREATE_SCRIPT, uri, *names],
        check=False,
        capture_output=True,
        text=True,
        cwd=config.ROOT,
        env=config.without_telemetry(dict(os.environ, PYTHONDONTWRITEBYTECODE="1")),
    )
    if done.returncode != 0:
        raise KernelWriterError(
            f"the driver that creates {', '.join(names)} failed: {done.stderr.strip()[-1500:]}"
        )
    created = json.loads(done.stdout.strip().splitlines()[-1])
    return {name: (table_id, location) for name, (table_id, location) in created.items()}


def engine_of(folder: Path, staged_name: str) -> str:
    """The ``engineInfo`` of the staged commit ``staged_name`` of the table in ``folder`` (Kernel's
    commits name ``Kernel-<release>/...``, Delta Spark's ``Apache-Spark/... Delta-Lake/...``)."""
    from helpers.delta import delta_log

    body = (folder / "_delta_log" / "_staged_commits" / staged_name).read_bytes()
    info, _, _ = delta_log.read_commit(body)
    return str(info.get("engineInfo", ""))


def engines(race: Race | CatalogCheck) -> dict[int, str]:
    """Version -> the ``engineInfo`` of the table's commit at that version (:func:`engine_of`): which
    engine won each version after 0, for a race or its check."""
    from helpers.catalog.tables import local_path

    check = race.check if isinstance(race, Race) else race
    folder = local_path(check.catalog.location)
    return {version: engine_of(folder, name) for version, name in check.ratified.items()}


if __name__ == "__main__":
    spec_process_main("helpers.catalog.kernel_writer", run)
