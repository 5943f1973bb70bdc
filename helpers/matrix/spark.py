"""Delta Spark as a conflict-matrix engine: a Spark era's pyspark (the kernel's 4.4.0, or 3.3.2 in its
own environment) with that release's Delta jars.

Every operation is Delta Spark's public API (:meth:`DeltaSpark.run`): ``df.write.format("delta")``
in mode append or overwrite (``replaceWhere``, ``txnAppId``/``txnVersion``), ``DeltaTable.delete``,
``update``, ``merge``, ``optimize().executeCompaction()`` / ``executeZOrderBy``, and SQL for
``VACUUM ... RETAIN 0 HOURS`` (``vacuum_retained``: ``VACUUM`` with no RETAIN clause, the default 7
days) and ``ALTER TABLE ... ADD COLUMNS`` / ``SET TBLPROPERTIES``, with the
rows, predicates and base table of :mod:`helpers.matrix.operations`, as the delta-rs engine uses them.

**How B commits from a stale snapshot.** Delta Spark reads the latest snapshot when an operation
starts, so a snapshot cannot be opened early and used later as delta-rs's can. B's commit is held
instead (:meth:`DeltaSpark.run_held`): B starts in a thread of this driver, reads version N, writes
its data files and calls the log store to write ``N+1.json``; there it waits
(``workbook.matrix.CommitHold``, ``helpers/spark/java/workbook/matrix/``) and signals that it waits. A then
runs to its own commit of ``N+1.json``; B is released, finds the file taken, and Delta Spark's own
conflict checker decides: refuse (``ConcurrentAppendException``...) or commit at N+2. The order is
forced by two latches, never by a sleep.

Why a log store on local disk rather than the commit gate on S3 (``helpers.runs.commitgate``): the gate
holds a PUT, and on S3 Delta Spark's ``S3SingleDriverLogStore`` writes a commit file under a
per-path JVM lock (is ``N.json`` free? then PUT); with A and B in one driver, a PUT held at the gate
keeps that lock, and A's commit of the same ``N.json`` would wait behind B forever. A hold placed in
the log store *before* its write holds no lock, works on every store (a subclass of each log store:
``HeldHDFSLogStore`` for local paths, ``HeldS3SingleDriverLogStore`` for ``s3a://``, so the S3
confirmation runs the same way), and needs no proxy. One more lock had to go: with a log store whose
partial writes may be visible (HDFSLogStore says so) Delta Spark takes the table's snapshot lock
around a commit, which the held B would keep; the session sets
``spark.databricks.delta.commitLock.enabled=false``. That lock only orders the commits of threads of
one driver; two writers of the matrix stand for two drivers, which never share it.

Where the hold cannot give B an older snapshot, the engine does as the delta-rs engine does: VACUUM
(``vacuum``: OPTIMIZE, then VACUUM) is held at its OPTIMIZE's commit, and its VACUUM runs from the
latest table after that commit, as delta-rs's reloads after its compaction. A held B has already
read its files when A commits, so a B that delta-rs refuses for a file A's VACUUM deleted
(``missing data file``) here meets Delta Spark's conflict checker instead; and an A that VACUUMs
with no retention deletes the files the held B wrote and has not committed yet (no snapshot names
them), as it would those of any writer in flight.

**The other interleaving** (``delta-spark-4.4+b-files-after``): the hold is armed at B's data files
instead (``CommitHold.armAtData``): B reads version N from the log, and the first data file it opens
or creates under the table waits (``workbook.matrix.HeldLocalFileSystem``, the session's
``fs.file.impl``: Hadoop's local file system, every call its own but that wait) until A has
committed. B reads and writes its data files after A's commit, as a delta-rs B does, and a VACUUM as
A cannot delete them. (Held at its first file created instead, B's reads raced A's VACUUM: whether
it met a deleted file or the conflict checker first changed from run to run with the order its task
read the files.) Only pairs whose B writes data files race it (a DELETE of every row and a metadata
change write none).

The oracle reads every table (:meth:`DeltaSpark.read`) with the kernel's deltalake, the reader of
the workbook's auditor (:mod:`helpers.runs.audit`): a Spark query per table cost a third of the Spark
engine's time here (0.3 s against 0.01 s). :meth:`DeltaSpark.create_base` checks that both readers
read the base table alike, and a mixed pair compares tables read by both engines anyway.

The checked retries (``retry_checked``...) need the version of an application's transaction as the
table holds it; Delta Spark has no public API for it (its ``txnAppId``/``txnVersion`` options do
that check inside the write: ``retry_txn``), so they are reported not available.

One SparkSession serves every pair of a process (:func:`session`), built by
:func:`helpers.spark.sessions.spark_session` with the held log stores on its class path.
"""

from __future__ import annotations

from pathlib import Path

from helpers.matrix import layouts
from helpers.matrix import operations as ops
from helpers.spark import sessions

HOLD_TIMEOUT_S = 240.0
"""A safety limit only: how long B may take to reach its commit before the pair is abandoned."""
_SESSION = None
_ENGINE_INFO: list[str] = []
"""The ``engineInfo`` of the base tables made in this process (one JVM: one value)."""
_C1_ONLY = "-XX:TieredStopAtLevel=1"
SECOND_TIER_FROM_PAIRS = 100
"""A driver given at least this many pairs (the full matrix: several hundred in one process) lives
for minutes and gains from the second compiler tier that short-lived drivers leave out
(:data:`helpers.spark.spark_start.DRIVER_JVM_OPTIONS`): 36 pairs took 50 s with it, 65 s without. A
short run spends more compiling than it saves: notebook 13's 16 Delta Spark pairs took 111
CPU-seconds (64 s) with it and 71 (57 s) without, and a test's 5 pairs 104 and 60 (2 cores,
2026-11-26)."""


def session_conf() -> dict[str, str]:
    """The matrix's additions to the workbook's session settings (each with its reason)."""
    from helpers.matrix import engines

    java = sessions.driver_java_options()
    if engines.pairs_in_this_process >= SECOND_TIER_FROM_PAIRS:
        java = " ".join(o for o in java.split() if o != _C1_ONLY)
    return {
        # the held log stores (compiled from helpers/spark/java/ with the DynamoDB log store's jar)
        "spark.jars": str(sessions.log_store_jar()),
        "spark.delta.logStore.file.impl": "workbook.matrix.HeldHDFSLogStore",
        "spark.delta.logStore.s3a.impl": "workbook.matrix.HeldS3SingleDriverLogStore",
        # the other interleaving's hold at B's first data file (local paths only); on the driver's own
        # class path, as spark-submit reads local files through it before spark.jars are loaded
        "spark.hadoop.fs.file.impl": "workbook.matrix.HeldLocalFileSystem",
        "spark.driver.extraClassPath": str(boot_jar()),
        # the held B must not keep a lock A needs (see the module's text)
        "spark.databricks.delta.commitLock.enabled": "false",
        # VACUUM RETAIN 0 HOURS, for this session only
        "spark.databricks.delta.retentionDurationCheck.enabled": "false",
        # speed: some 1,000 operations on 12-row tables in one driver. Code generation compiles
        # every query (interpreted: about 25% less time per operation); adaptive execution only
        # re-plans; one partition is enough. The second compiler tier only for a long run
        # (SECOND_TIER_FROM_PAIRS).
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.shuffle.partitions": "1",
        "spark.databricks.delta.snapshotPartitions": "1",
        "spark.driver.extraJavaOptions": java,
    }


BOOT_CLASSES = ("workbook/matrix/CommitHold", "workbook/matrix/HeldLocalFileSystem")


def boot_jar() -> Path:
    """The hold and the held local file system alone, from the log stores' jar
    (:func:`helpers.spark.sessions.log_store_jar`), for the driver's own class path: the file system is
    needed before ``spark.jars`` are loaded, and the held log stores must stay beside Delta's storage
    jar, where they find ``HDFSLogStore``. One ``CommitHold`` class serves both: a class loader asks
    its parent first, so the log stores' jar finds the driver's copy."""
    import os
    import zipfile

    source = sessions.log_store_jar()
    jar = source.with_name("workbook-matrix-boot.jar")
    if jar.is_file() and jar.stat().st_mtime >= source.stat().st_mtime:
        return jar
    partial = jar.with_suffix(f".{os.getpid()}.tmp")
    with zipfile.ZipFile(source) as whole, zipfile.ZipFile(partial, "w") as boot:
        for name in whole.namelist():
            if name.startswith(BOOT_CLASSES):
                boot.writestr(name, whole.read(name))
    partial.replace(jar)
    return jar


def session():
    """This process's SparkSession for the matrix (built on first use, then shared)."""
    global _SESSION
    if _SESSION is None:
        from helpers.matrix import engines

        name = (
            "conflict-matrix"
            if engines.this_process == "spark"
            else f"conflict-matrix-{engines.this_process}"
        )
        _SESSION = sessions.spark_session("local", "s3", app_name=name, extra_conf=session_conf())
    return _SESSION


def location(path: str) -> str:
    """What Delta Spark is given for a table of the matrix: an absolute path, or ``s3a://``."""
    if path.startswith("s3://"):
        return "s3a://" + path.removeprefix("s3://")
    if path.startswith("s3a://"):
        return path
    return str(Path(path).resolve())


class DeltaSpark:
    """The matrix's engine interface (:mod:`helpers.matrix.engines`) on Delta Spark."""

    def __init__(self, name: str) -> None:
        from helpers.matrix import engines

        spec = engines.ENGINES.get(name)
        self.name = name
        self.layout = layouts.LAYOUTS[spec.layout if spec else layouts.SHARED_FILES.name]
        self.hold_at_data = bool(spec and spec.held_interleaving)
        self.results_name = spec.base_of if self.hold_at_data else name
        """Whose "alone" and serial results this engine's are (its other interleaving's: the same)."""
        self.spark = session()

    @property
    def version(self) -> str:
        """What the JVM really runs, as its first commit says (``Apache-Spark/4.2.0 Delta-Lake/4.4.0``),
        once any engine of this process has made a base table; until then the pinned versions."""
        if _ENGINE_INFO:
            return _ENGINE_INFO[-1]
        from helpers.spark import releases

        return f"{releases.running().delta_version} (Spark {releases.spark_version()})"

    # -- the interface ----------------------------------------------------------------------
    def unavailable(self, op: str) -> str | None:
        if op in ("retry_checked", "retry_checked_stale"):
            return (
                "Delta Spark has no public API that reads an application's transaction version "
                "(txnAppId/txnVersion check it inside the write: retry_txn)"
            )
        return None

    def create_base(self, path: str) -> None:
        where = location(path)
        for batch in self.layout.base:
            writer = self._frame(batch).write.format("delta").mode("append")
            if self.layout.partition_by:
                writer = writer.partitionBy(*self.layout.partition_by)
            writer.save(where)
        self._table(where).delete(self.layout.base_delete)
        engine_info = self._commit_info(path, 0).get("engineInfo", "")
        if engine_info:  # e.g. "Apache-Spark/4.2.0 Delta-Lake/4.4.0": what the JVM really runs
            _ENGINE_INFO.append(engine_info)
        from helpers.matrix import classify

        if not classify.same(
            self.read(path), self.read_with_spark(path)
        ):  # the oracle's reader must agree
            raise RuntimeError(
                f"deltalake and Delta Spark read the base table differently: {self.read(path)} "
                f"!= {self.read_with_spark(path)}"
            )

    def open(self, path: str) -> str:
        """Delta Spark takes its snapshot when an operation starts: the handle is the location."""
        return location(path)

    def read(self, path: str) -> dict:
        """The table's contents for the oracle, read with the kernel's deltalake (see the module's text)."""
        from helpers.matrix.deltars import read_table

        return read_table(path)

    def read_with_spark(self, path: str) -> dict:
        """The same contents as Delta Spark reads them (a query and DESCRIBE DETAIL)."""
        where = location(path)
        frame = self.spark.read.format("delta").load(where)
        columns = list(frame.columns)
        rows = [[row[c] for c in columns] for row in frame.collect()]
        detail = self._table(where).detail().collect()[0]
        return {"columns": columns, "properties": dict(detail["properties"] or {}), "rows": rows}

    def run(self, op: str, handle, path: str) -> str | None:
        """Run ``op`` on the table as it is when the operation starts; raises what Delta Spark
        raises (a Java exception py4j does not translate as :func:`java_error`). Returns a note when
        the write chose to do nothing (a retry its txnAppId skipped)."""
        from py4j.protocol import Py4JJavaError

        try:
            return self._run(op, location(path), path)
        except Py4JJavaError as error:
            raise java_error(error) from None

    def _run(self, op: str, where: str, path: str) -> str | None:
        layout, op = self.layout.for_op(
            op
        )  # a second job on a part of its own: its rows and predicates
        if op in ("append", "retry"):
            self._write(where, layout.append_rows, "append")
        elif op in ("append_txn", "retry_txn"):
            before = self._latest(path)
            self._write(
                where,
                layout.append_rows,
                "append",
                txnAppId=ops.APP_ID,
                txnVersion=str(ops.APP_VERSION),
            )
            if self._latest(path) == before:
                return f"skipped by Delta Spark: the log already holds txnVersion >= {ops.APP_VERSION} of {ops.APP_ID!r}"
        elif op == "overwrite":
            self._write(where, layout.overwrite_rows, "overwrite")
        elif op == "replace_where":
            self._write(
                where, layout.replace_rows, "overwrite", replaceWhere=layout.replace_predicate
            )
        elif op == "delete":
            self._table(where).delete(layout.delete_predicate)
        elif op == "delete_all":
            self._table(where).delete()
        elif op == "update":
            self._table(where).update(layout.update_predicate, dict(ops.UPDATE_SET))
        elif op == "merge":
            inserted = {column: f"s.{column}" for column in layout.columns}
            (
                self._table(where)
                .alias("t")
                .merge(self._frame(layout.merge_source).alias("s"), layout.merge_condition)
                .whenMatchedUpdate(set={"value": "s.value"})
                .whenNotMatchedInsert(values=inserted)
                .execute()
            )
        elif op == "optimize":
            self._table(where).optimize().executeCompaction()
        elif op == "zorder":
            self._table(where).optimize().executeZOrderBy(*ops.ZORDER_COLUMNS)
        elif op == "vacuum":
            self._table(where).optimize().executeCompaction()
            self.spark.sql(f"VACUUM delta.`{where}` RETAIN {ops.VACUUM_RETENTION_HOURS} HOURS")
        elif op == "vacuum_retained":  # no RETAIN clause: the table's default, 7 days
            self._table(where).optimize().executeCompaction()
            self.spark.sql(f"VACUUM delta.`{where}`")
        elif op == "add_column":
            name, kind = ops.ADDED_COLUMN
            self.spark.sql(f"ALTER TABLE delta.`{where}` ADD COLUMNS ({name} {kind})")
        elif op == "set_property":
            key, value = ops.PROPERTY
            self.spark.sql(f"ALTER TABLE delta.`{where}` SET TBLPROPERTIES ('{key}' = '{value}')")
        else:
            raise ValueError(f"unknown operation {op!r}")
        return None

    def run_held(self, op: str, path: str, first) -> dict:
        """Run ``op`` as B of a race: B starts now, reads the table, writes its files and is held
        just before its commit file; then ``first()`` (A, by any engine) runs to its commit; then B
        goes on and Delta Spark's conflict checker decides. Returns B's ``note``, ``held_at`` (the
        commit file B was held at; None if B ended without reaching a commit, and then ``first()``
        ran after it) and ``error`` (what B raised, or None). Raises TimeoutError if B neither
        reached a commit nor ended within :data:`HOLD_TIMEOUT_S` (``first()`` then did not run)."""
        hold = self.spark._jvm.workbook.matrix.CommitHold
        where = location(path)
        if self.hold_at_data:  # B's data files after A's commit (see the module's text)
            hold.armAtData(where)
        else:
            hold.arm(where)

        def wait_held() -> str | None:
            if not hold.awaitHeld(where, int(HOLD_TIMEOUT_S * 1000)):
                raise TimeoutError(f"{op} reached no commit within {HOLD_TIMEOUT_S:.0f} s")
            return hold.heldFile(where)

        from helpers.matrix import engines

        return engines.race_held(
            op,
            lambda: self.run(op, where, path),
            wait_held,
            lambda: hold.release(where),
            lambda: hold.abandon(where),
            first,
        )

    # -- helpers ----------------------------------------------------------------------------
    def _frame(self, rows):
        """A DataFrame of the layout's rows ((id, value) bigint, and a string ``part`` if it has one)
        in one partition: each write makes one data file, as delta-rs's do. Written as SQL ``VALUES``,
        a relation of the JVM's own: no Python worker process unpickles the rows (``createDataFrame``
        of a list starts some)."""
        columns = self.layout.columns
        values = ", ".join(
            "(" + ", ".join(f"'{v}'" if isinstance(v, str) else str(int(v)) for v in row) + ")"
            for row in rows
        )
        selected = ", ".join(
            f"CAST({c} AS {'STRING' if c == 'part' else 'BIGINT'}) AS {c}" for c in columns
        )
        return self.spark.sql(
            f"SELECT {selected} FROM VALUES {values} AS source({', '.join(columns)})"
        ).coalesce(1)

    def _table(self, where: str):
        from delta.tables import DeltaTable

        return DeltaTable.forPath(self.spark, where)

    def _write(self, where: str, rows, mode: str, **options: str) -> None:
        writer = self._frame(rows).write.format("delta").mode(mode)
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(where)

    @staticmethod
    def _latest(path: str) -> int | None:
        from helpers.matrix import stores

        versions = stores.for_location(path).versions(path)
        return versions[-1] if versions else None

    @staticmethod
    def _commit_info(path: str, version: int) -> dict:
        from helpers.matrix import stores

        return stores.for_location(path).commit_info(path, version)


def java_error(error) -> Exception:
    """A Java exception py4j hands over as ``Py4JJavaError`` ("An error occurred while calling
    o5703.save"), as an exception named after the Java exception at the root of its causes, whose
    message is that exception's first line (``FileNotFoundException: ... part-00000-....parquet``)."""
    throwable = error.java_exception
    while throwable.getCause() is not None and throwable.getCause() != throwable:
        throwable = throwable.getCause()
    name = throwable.getClass().getSimpleName() or "JavaError"
    message = str(throwable.getMessage() or throwable.toString()).strip().splitlines()
    return type(name, (RuntimeError,), {})(message[0] if message else name)


def engine(name: str) -> DeltaSpark:
    """The Delta Spark engine (one session per process, shared by every engine built here)."""
    return DeltaSpark(name)
