"""Delta Spark as a conflict-matrix engine: the kernel's pyspark with the workbook's Delta jars.

Every operation is Delta Spark's public API (:meth:`DeltaSpark.run`): ``df.write.format("delta")``
in mode append or overwrite (``replaceWhere``, ``txnAppId``/``txnVersion``), ``DeltaTable.delete``,
``update``, ``merge``, ``optimize().executeCompaction()`` / ``executeZOrderBy``, and SQL for
``VACUUM ... RETAIN 0 HOURS`` and ``ALTER TABLE ... ADD COLUMNS`` / ``SET TBLPROPERTIES``, with the
rows, predicates and base table of :mod:`helpers.matrix.operations`, as the delta-rs engine uses them.

**How B commits from a stale snapshot.** Delta Spark reads the latest snapshot when an operation
starts, so a snapshot cannot be opened early and used later as delta-rs's can. B's commit is held
instead (:meth:`DeltaSpark.run_held`): B starts in a thread of this driver, reads version N, writes
its data files and calls the log store to write ``N+1.json``; there it waits
(``workbook.matrix.CommitHold``, ``helpers/java/workbook/matrix/``) and signals that it waits. A then
runs to its own commit of ``N+1.json``; B is released, finds the file taken, and Delta Spark's own
conflict checker decides: refuse (``ConcurrentAppendException``...) or commit at N+2. The order is
forced by two latches, never by a sleep.

Why a log store on local disk rather than the commit gate on S3 (``helpers.commitgate``): the gate
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

The oracle reads every table (:meth:`DeltaSpark.read`) with the kernel's deltalake, the reader of
the workbook's auditor (:mod:`helpers.audit`): a Spark query per table cost a third of the Spark
engine's time here (0.3 s against 0.01 s). :meth:`DeltaSpark.create_base` checks that both readers
read the base table alike, and a mixed pair compares tables read by both engines anyway.

The checked retries (``retry_checked``...) need the version of an application's transaction as the
table holds it; Delta Spark has no public API for it (its ``txnAppId``/``txnVersion`` options do
that check inside the write: ``retry_txn``), so they are reported not available.

One SparkSession serves every pair of a process (:func:`session`), built by
:func:`helpers.sessions.spark_session` with the held log stores on its class path.
"""

from __future__ import annotations

import threading
from pathlib import Path

from helpers import config, sessions
from helpers.matrix import operations as ops

HOLD_TIMEOUT_S = 240.0
"""A safety limit only: how long B may take to reach its commit before the pair is abandoned."""
_SESSION = None
_C1_ONLY = "-XX:TieredStopAtLevel=1"
SECOND_TIER_FROM_PAIRS = 100
"""A driver given at least this many pairs (the full matrix: several hundred in one process) lives
for minutes and gains from the second compiler tier that short-lived drivers leave out
(:data:`helpers.spark_start.DRIVER_JVM_OPTIONS`): 36 pairs took 50 s with it, 65 s without. A
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
        # the held log stores (compiled from helpers/java/ with the DynamoDB log store's jar)
        "spark.jars": str(sessions.log_store_jar()),
        "spark.delta.logStore.file.impl": "workbook.matrix.HeldHDFSLogStore",
        "spark.delta.logStore.s3a.impl": "workbook.matrix.HeldS3SingleDriverLogStore",
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


def session():
    """This process's SparkSession for the matrix (built on first use, then shared)."""
    global _SESSION
    if _SESSION is None:
        _SESSION = sessions.spark_session("local", "s3", app_name="conflict-matrix", extra_conf=session_conf())
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
        self.name = name
        self.spark = session()
        import pyspark

        self.version = f"{config.DELTA_JARS_VERSION} (Spark {pyspark.__version__})"

    # -- the interface ----------------------------------------------------------------------
    def unavailable(self, op: str) -> str | None:
        if op in ("retry_checked", "retry_checked_stale"):
            return ("Delta Spark has no public API that reads an application's transaction version "
                    "(txnAppId/txnVersion check it inside the write: retry_txn)")
        return None

    def create_base(self, path: str) -> None:
        where = location(path)
        for batch in ops.BASE_BATCHES:
            self._frame([(i, 10 * i) for i in batch]).write.format("delta").mode("append").save(where)
        self._table(where).delete(ops.BASE_DELETE)
        engine_info = self._commit_info(path, 0).get("engineInfo", "")
        if engine_info:  # e.g. "Apache-Spark/4.2.0 Delta-Lake/4.4.0": what the JVM really runs
            self.version = engine_info
        from helpers.matrix import classify

        if not classify.same(self.read(path), self.read_with_spark(path)):  # the oracle's reader must agree
            raise RuntimeError(f"deltalake and Delta Spark read the base table differently: {self.read(path)} "
                               f"!= {self.read_with_spark(path)}")

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
        if op in ("append", "retry"):
            self._write(where, ops.APPEND_ROWS, "append")
        elif op in ("append_txn", "retry_txn"):
            before = self._latest(path)
            self._write(where, ops.APPEND_ROWS, "append", txnAppId=ops.APP_ID, txnVersion=str(ops.APP_VERSION))
            if self._latest(path) == before:
                return f"skipped by Delta Spark: the log already holds txnVersion >= {ops.APP_VERSION} of {ops.APP_ID!r}"
        elif op == "overwrite":
            self._write(where, ops.OVERWRITE_ROWS, "overwrite")
        elif op == "replace_where":
            self._write(where, ops.REPLACE_ROWS, "overwrite", replaceWhere=ops.REPLACE_PREDICATE)
        elif op == "delete":
            self._table(where).delete(ops.DELETE_PREDICATE)
        elif op == "update":
            self._table(where).update(ops.UPDATE_PREDICATE, dict(ops.UPDATE_SET))
        elif op == "merge":
            (self._table(where).alias("t").merge(self._frame(ops.MERGE_SOURCE).alias("s"), ops.MERGE_CONDITION)
             .whenMatchedUpdate(set={"value": "s.value"})
             .whenNotMatchedInsert(values={"id": "s.id", "value": "s.value"})
             .execute())
        elif op == "optimize":
            self._table(where).optimize().executeCompaction()
        elif op == "zorder":
            self._table(where).optimize().executeZOrderBy(*ops.ZORDER_COLUMNS)
        elif op == "vacuum":
            self._table(where).optimize().executeCompaction()
            self.spark.sql(f"VACUUM delta.`{where}` RETAIN {ops.VACUUM_RETENTION_HOURS} HOURS")
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
        hold.arm(where)
        outcome: dict = {}

        def b() -> None:
            try:
                outcome["note"] = self.run(op, where, path)
            except BaseException as error:  # noqa: BLE001  (handed to the caller's thread)
                outcome["error"] = error
            finally:
                hold.abandon(where)

        thread = threading.Thread(target=b, name=f"matrix-held-{op}", daemon=True)
        thread.start()
        try:
            if not hold.awaitHeld(where, int(HOLD_TIMEOUT_S * 1000)):
                raise TimeoutError(f"{op} reached no commit within {HOLD_TIMEOUT_S:.0f} s")
            held = hold.heldFile(where)
            first()
        finally:
            hold.release(where)
        thread.join()
        return {"note": outcome.get("note"), "held_at": held, "error": outcome.get("error")}

    # -- helpers ----------------------------------------------------------------------------
    def _frame(self, rows):
        """A DataFrame of (id, value) rows (bigint) in one partition: each write makes one data file,
        as delta-rs's do. Written as SQL ``VALUES``, a relation of the JVM's own: no Python worker
        process unpickles the rows (``createDataFrame`` of a list starts some)."""
        values = ", ".join(f"({int(i)}, {int(v)})" for i, v in rows)
        return self.spark.sql(f"SELECT CAST(id AS BIGINT) AS id, CAST(value AS BIGINT) AS value "
                              f"FROM VALUES {values} AS source(id, value)").coalesce(1)

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
