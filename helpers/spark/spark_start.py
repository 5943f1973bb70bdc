"""A Spark driver's start: quick the second time (two caches, both under ``.cache/``), logged to a
file of its own, and a failure to start explained.

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
  (:func:`helpers.spark.install.build_class_archive`: one driver does a local Delta round trip and sets up S3A and ABFS,
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

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.ground import config
from helpers.ground.local_processes import process_alive

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


def spark_log_file(app_name: str) -> Path:
    """Where the JVM of a session writes its console output (Ivy resolution, Spark warnings)."""
    return config.STATE_DIR / "logs" / f"spark-{app_name}.log"


@contextlib.contextmanager
def output_to(log_file: Path):
    """Point this process's stdout/stderr file descriptors at a log file while the JVM starts: the
    JVM inherits them, so its console output lands in the log instead of notebook cells."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(log_file, "ab") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)


def explain_start_failure(error: Exception, log_file: Path) -> str:
    text = str(error)
    try:
        log = log_file.read_text(errors="replace")[-20000:]
    except OSError:
        log = ""
    if "unresolved dependency" in log or "download failed" in log.lower():
        return (
            "Spark could not download its jars from Maven Central (see "
            f"{config.shown(log_file)}). Check the network; behind a proxy, set HTTPS_PROXY=http://<proxy>:<port> "
            "(the workbook passes it to Java); "
            "or run `make prefetch` where the network works and bring .cache/ivy along."
        )
    tail = "\n".join(log.strip().splitlines()[-15:])
    return f"Spark did not start: {text[:600]}\nLast lines of {config.shown(log_file)}:\n{tail}"
