"""Spark's part of ``make install``: the jars every store needs, fetched into ``.cache/ivy`` (and
those no session asks for any more removed), the DynamoDB log store compiled, and the JVMs'
class-data archive built (:mod:`helpers.spark.spark_start` says what it is and when a driver uses it).

    python -m helpers.spark.install fetch-jars    # make install
    python -m helpers.spark.install conf          # the Spark settings of a session on every store
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from helpers.ground import config
from helpers.spark import sessions
from helpers.spark.spark_start import ARCHIVE_DIR, class_archive

UNUSED_JARS = ("software.amazon.awssdk", "bundle")
"""(group, artifact) of jars earlier releases of the workbook fetched and no session asks for now:
the AWS SDK v2 bundle (686 MB, stored twice), replaced by :data:`AWS_SDK_V2_MODULES`."""


def prune_unused_jars() -> int:
    """Delete :data:`UNUSED_JARS` from the Ivy cache (its copy in ``jars/`` and its cache folder);
    return the bytes freed. A checkout installed before the SDK modules replaced the bundle keeps
    it otherwise."""
    import shutil

    group, artifact = UNUSED_JARS
    ivy = config.CACHE_DIR / "ivy"
    targets = [*ivy.glob(f"jars/{group}_{artifact}-*.jar"), ivy / "cache" / group / artifact]
    freed = 0
    for target in targets:
        if target.is_dir():
            freed += sum(f.stat().st_size for f in target.rglob("*") if f.is_file())
            shutil.rmtree(target)
        elif target.is_file():
            freed += target.stat().st_size
            target.unlink()
    return freed


def build_class_archive() -> Path | None:
    """Build the archive (in a separate Python process, whose driver writes it as its JVM exits);
    return its path, or None if the JVM could not write one (the reason is in its Spark log)."""
    archive = class_archive()
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "helpers.spark.install", "build-archive", str(archive)],
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

    from helpers.stores import tables

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.spark.install")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser(
        "fetch-jars",
        help="download the Spark jars of every store into .cache/ivy, compile the DynamoDB "
        "log store, and build the JVMs' class-data archive",
    )
    sub.add_parser(
        "conf", help="print the Spark settings of a session on every store (keys masked)"
    )
    args = parser.parse_args(argv)
    try:
        if args.action == "fetch-jars":
            # locally "dynamodb" needs no download: its class is compiled here, from the jars fetched for "s3"
            stores = (
                sessions.SPARK_STORES
                if config.profile() == "cloud"
                else tuple(s for s in sessions.SPARK_STORES if s != "dynamodb")
            )
            seconds = sessions.fetch_jars(*stores)
            print(f"Spark jars for {', '.join(stores)} ready in .cache/ivy ({seconds:.0f} s)")
            freed = prune_unused_jars()
            if freed:
                print(
                    f"Removed from .cache/ivy what no session asks for any more: {freed // 2**20} MiB"
                )
            if config.profile() == "local":
                print(f"DynamoDB log store compiled: {config.shown(sessions.log_store_jar())}")
            # the archive is the kernel's Spark's (make install); another era's drivers start without one
            archive = build_class_archive() if sessions.running().in_kernel else None
            if archive is not None:
                print(
                    f"Class-data archive for Spark's JVMs: {config.shown(archive)} ({archive.stat().st_size // 2**20} MiB)"
                )
        else:
            for key, value in config.masked(sessions.spark_conf(*sessions.SPARK_STORES)).items():
                print(f"{key}={value}")
    except (sessions.SessionError, config.ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "build-archive":
        _archive_workload(Path(sys.argv[2]))
    else:
        sys.exit(main())
