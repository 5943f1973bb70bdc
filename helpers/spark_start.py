"""What makes a Spark driver start quickly the second time: two caches, both under ``.cache/``.

A Spark JVM pays twice at every start for things that never change between runs:

* **Ivy resolution.** ``spark.jars.packages`` makes ``spark-submit`` resolve the Maven
  coordinates again at every start (reading every POM in the Ivy cache), although the answer is
  the same jar files each time. The first session for a set of packages records the jars Spark
  resolved (Spark puts them in ``spark.jars``) in ``.cache/ivy/resolved/<hash>.jars``; later
  sessions pass those files as ``spark.jars`` and skip Ivy. A listed jar that has gone missing
  sends the session back to Ivy.
* **Class loading.** A driver loads some 20,000 classes (Spark, Scala, Hadoop, the AWS SDK,
  Delta) and verifies them. A HotSpot class-data-sharing archive (AppCDS, JDK 13+) stores them
  parsed and verified; every JVM then maps it instead. ``make install`` builds it once
  (:func:`build_class_archive`: one driver does a local Delta round trip and sets up S3A and ABFS,
  then exits and the JVM writes ``.cache/spark-cds/<java + Spark versions>.jsa``). A JVM of
  another Java or Spark version finds no archive under its own name and starts as before; a JVM
  that rejects the archive logs why in its Spark log and starts as before.

Measured on the 2-core machine, a writer's driver (start + ``DeltaLog.forTable`` on S3):
about 25 s with Ivy and no archive, 20 s without Ivy, 12 s without Ivy and with the archive.
``WORKBOOK_SPARK_CDS=0`` turns the archive off (for comparing, or if a JVM misbehaves with it).

And one thing a driver leaves behind: in local mode it copies every jar it was given (about
700 MB while the AWS SDK came as one bundle; about 55 MB since the workbook asks for its modules) into a scratch folder, which it deletes only when its JVM shuts
down cleanly. A writer's JVM killed with its process left them in the system's temporary
folder, 46 GB of them on one machine here. Each session now keeps its scratch in
``.state/spark/<pid of its Python>/`` (``spark.local.dir``), and a new session first removes
the folders of processes that are gone (:func:`scratch_dir`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers import config
from helpers.writers.protocol import process_alive

RESOLVED_DIR = config.CACHE_DIR / "ivy" / "resolved"
ASKED_PACKAGES = "spark.workbook.jars.packages"
"""The session setting that keeps the packages a session asked for, when its jars replaced them."""
ARCHIVE_DIR = config.CACHE_DIR / "spark-cds"
SCRATCH_DIR = config.STATE_DIR / "spark"
DRIVER_JVM_OPTIONS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-XX:ReservedCodeCacheSize=240m",
)
"""A driver here is short-lived and its tables are small, so the JVM's defaults for a server (the
C2 compiler, G1's concurrent threads) cost more CPU than they save: one driver making 30 appends,
a DELETE and an OPTIMIZE on a local table used 89 and 108 CPU-seconds with the defaults, 61 and
64 with these (2 cores, Java 17). On a 2-core machine running several drivers at once, CPU is
the wall clock.

With the first compiler tier only, Java sizes its code cache at 48 MB instead of 240 MB, and a
driver that lives for minutes fills it ("CodeCache is full. Compiler has been disabled"). The JVM
then cannot make the method-handle adapters Spark's tasks need: a task failed with
``java.lang.InternalError: no such method: MethodHandle.linkToStatic``, Spark's handler for an
uncaught error stopped the JVM, and the torture run's writer threads of that driver failed every
operation left with "Connection refused" (seen in a ``make test`` run: 55 of its operations). The
reservation is address space; the JVM commits what it compiles."""


# ---------------------------------------------------------------------------------------------
# Jars resolved once
# ---------------------------------------------------------------------------------------------


def _resolved_file(packages: str, excludes: str) -> Path:
    digest = hashlib.sha256(f"{packages}\n{excludes}".encode()).hexdigest()[:16]
    return RESOLVED_DIR / f"{digest}.jars"


def resolved_jars(packages: str, excludes: str) -> list[str] | None:
    """The jar files Spark resolved for these packages last time, or None (not yet, or one is gone)."""
    if not packages:
        return []
    try:
        jars = _resolved_file(packages, excludes).read_text().split()
    except OSError:
        return None
    return jars if jars and all(Path(jar.removeprefix("file:")).is_file() for jar in jars) else None


def remember_resolved_jars(launch: dict[str, str], conf: dict[str, str], running_jars: str) -> None:
    """After a session started with ``launch`` (from :func:`launch_conf`): if Ivy resolved its
    packages this time, record the jars it found, i.e. the running ``spark.jars`` less the ones
    ``conf`` asked for by path."""
    packages = launch.get("spark.jars.packages", "")
    if not packages:
        return
    own = set(filter(None, conf.get("spark.jars", "").split(",")))
    own |= {Path(jar).resolve().as_uri() for jar in own}
    jars = [jar for jar in filter(None, running_jars.split(",")) if jar not in own]
    if not jars:
        return
    target = _resolved_file(packages, launch.get("spark.jars.excludes", ""))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    tmp.write_text("\n".join(jars) + "\n")
    os.replace(tmp, target)


def launch_conf(conf: dict[str, str]) -> dict[str, str]:
    """The settings a session is started with: ``conf`` with its packages replaced by the jars
    resolved for them before (when known). :data:`ASKED_PACKAGES` keeps what was asked."""
    packages, excludes = conf.get("spark.jars.packages", ""), conf.get("spark.jars.excludes", "")
    launch = dict(conf, **{ASKED_PACKAGES: packages})
    jars = resolved_jars(packages, excludes)
    if packages and jars is not None:
        launch.pop("spark.jars.packages")
        launch.pop("spark.jars.excludes", None)
        launch["spark.jars"] = ",".join(filter(None, [*jars, conf.get("spark.jars", "")]))
    launch.setdefault("spark.local.dir", str(scratch_dir()))
    return launch


def scratch_dir() -> Path:
    """This process's Spark scratch folder, ``.state/spark/<pid>/`` (see the module's text), after
    removing the folders of processes that no longer run."""
    if SCRATCH_DIR.is_dir():
        for folder in SCRATCH_DIR.iterdir():
            if (
                folder.name.isdigit()
                and int(folder.name) != os.getpid()
                and not process_alive(int(folder.name))
            ):
                shutil.rmtree(folder, ignore_errors=True)
    return SCRATCH_DIR / str(os.getpid())


# ---------------------------------------------------------------------------------------------
# The class-data archive
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _java_version() -> str:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (done.stderr or done.stdout).strip()


def class_archive() -> Path:
    """Where the archive of this Java and this Spark lives (it may not exist yet)."""
    import pyspark

    # the JVM checks the class path it was built with: a copy of the workbook elsewhere gets its own
    # and the options it was built with (a collector of another kind cannot map it)
    key = hashlib.sha256(
        f"{_java_version()}\n{pyspark.__file__}\n{config.DELTA_JARS_VERSION}\n{DRIVER_JVM_OPTIONS}".encode()
    ).hexdigest()[:12]
    return ARCHIVE_DIR / f"spark-{pyspark.__version__}-{key}.jsa"


def class_archive_options() -> list[str]:
    """JVM options that map the archive, if it exists and is wanted ([] otherwise)."""
    if os.environ.get("WORKBOOK_SPARK_CDS", "1") == "0":
        return []
    archive = class_archive()
    return [f"-XX:SharedArchiveFile={archive}"] if archive.is_file() else []


def build_class_archive() -> Path | None:
    """Build the archive (in a separate Python process, whose driver writes it as its JVM exits);
    return its path, or None if the JVM could not write one (the reason is in its Spark log)."""
    archive = class_archive()
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "helpers.spark_start", "build-archive", str(archive)],
        cwd=config.ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        print(
            f"warning: no class-data archive ({done.stderr.strip()[-600:]}); Spark starts without it",
            file=sys.stderr,
        )
        return None
    for stale in ARCHIVE_DIR.glob(
        "*.jsa"
    ):  # archives of an earlier Java, Spark or set of options (about 200 MB each)
        if stale != archive:
            stale.unlink()
    return archive if archive.is_file() else None


def _archive_workload(archive: Path) -> None:
    """Start a driver that dumps its classes at exit, use what the notebooks and writers use, exit."""
    import tempfile

    from pyspark import SparkContext

    from helpers import sessions, tables

    tmp = archive.with_name(f".{archive.name}.tmp-{os.getpid()}")
    options = sessions.driver_java_options(f"-XX:ArchiveClassesAtExit={tmp}", archive=False)
    spark = sessions.spark_session(
        "local",
        "s3",
        "azure",
        app_name="class-archive",
        extra_conf={"spark.driver.extraJavaOptions": options},
    )
    with tempfile.TemporaryDirectory(prefix="class-archive-") as folder:
        spark.range(10).selectExpr(
            "CAST(id AS INT) AS id", "CAST(id AS STRING) AS name"
        ).write.format("delta").save(folder)
        spark.range(5).selectExpr("CAST(id AS INT) AS id", "'x' AS name").write.format(
            "delta"
        ).mode("append").save(folder)
        spark.read.format("delta").load(folder).count()
        spark.sql(f"DESCRIBE HISTORY delta.`{folder}`").collect()
        jvm = spark._jvm
        jvm.org.apache.spark.sql.delta.DeltaLog.forTable(
            spark._jsparkSession, folder
        ).unsafeVolatileSnapshot().version()
        hadoop = spark._jsc.hadoopConfiguration()
        for uri in (tables.s3_uri("class-archive", scheme="s3a"), tables.abfs_uri("class-archive")):
            try:  # set up the file systems' clients; no request is sent
                jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(uri), hadoop)
            except Exception:  # noqa: BLE001  (a store that needs the network is simply not archived)
                pass
    spark.stop()
    gateway = SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is not None:  # the driver exits at end of input, and writes the archive as it exits
        process.stdin.close()
        process.wait(timeout=600)
    if tmp.is_file() and tmp.stat().st_size > 0:
        os.replace(tmp, archive)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "build-archive":
        _archive_workload(Path(sys.argv[2]))
    else:
        print("usage: python -m helpers.spark_start build-archive PATH", file=sys.stderr)
        sys.exit(2)
