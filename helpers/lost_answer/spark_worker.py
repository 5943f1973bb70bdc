"""One Delta Spark driver's trials of a lost commit answer, behind a gate of its own: for each table
of the spec, create it (one row, version 0), then append three rows the way the trial's remedy
says, and record what the job was told, each step it took, and whether the gate dropped an answer
for that table. Whether the append is in the table is decided afterwards from storage
(:mod:`helpers.lost_answer.spark_paths`), never from this record.

Started by :mod:`helpers.lost_answer.spark_paths` in the kernel's Python (the only one with pyspark)::

    python -m helpers.lost_answer.spark_worker SPEC_JSON_FILE RESULT_JSON_FILE

The spec: ``log_store`` (``default`` or ``dynamodb``), ``conf`` (Spark settings added to the
session's), and ``trials``, a list of ``{"table_uri", "fault", "remedy", "app_id"}`` in order. One
JVM runs them all: its start is most of a driver's cost. A line ``trial <n>/<total> ...`` is
printed as each ends.
"""

from __future__ import annotations

import json
import sys

from helpers.ground import config, eras
from helpers.lost_answer.gate import LostAnswerGate
from helpers.lost_answer.trials import APPENDED_ROWS, LATER_ROWS
from helpers.spark import sessions
from helpers.stores import tables
from helpers.writers.protocol import WriterSpec, one_line, write_json_atomically
from helpers.writers.spark_engine import SparkEngine

IDEMPOTENCY_CHECK = "spark.databricks.delta.commit.idempotencyCheck.enabled"
"""Delta 4.4.0's check (``OptimisticTransaction.detectIdempotentSelfCommit``; internal, default false)."""
TXN_VERSION = 1
"""The append's place in its job's sequence (``txnVersion``)."""
APPENDED = tuple(range(1, APPENDED_ROWS + 1))
LATER = tuple(range(10, 10 + LATER_ROWS))


def session_options(log_store: str, gate: LostAnswerGate) -> dict[str, str]:
    """The delta-rs style storage options of the log store, S3 (and DynamoDB) routed through ``gate``."""
    dynamodb = log_store == "dynamodb"
    options = tables.s3_storage_options(locking_provider="dynamodb" if dynamodb else None)
    return gate.route(options, dynamodb=dynamodb)


def spark_session(log_store: str, gate: LostAnswerGate, conf: dict[str, str]):
    """The driver's session, built as the Spark writer engine builds its own
    (:class:`helpers.writers.spark_engine.SparkEngine`), from the gate's options."""
    spec = WriterSpec(
        writer_id=f"lost-answer-{log_store}",
        era=eras.CURRENT,
        table_uri="s3a://-/-",
        landing_file="-",
        result_path="-",
        storage_options={**session_options(log_store, gate), **conf},
        engine="spark",
    )
    return sessions.spark_session(
        *SparkEngine.stores(spec),
        app_name=SparkEngine.app_name(spec),
        extra_conf=SparkEngine.session_conf(spec),
    )


def error_text(error: BaseException) -> str:
    """``<class>: <message>`` of the Java exception behind a PySpark error (of the Python one when
    there is none), on one line, without Py4J's "An error occurred while calling o123.save"."""
    java = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    if java is None:
        return f"{type(error).__name__}: {one_line(str(error), 160)}"
    return f"{java.getClass().getName()}: {one_line(str(java.getMessage()), 160)}"


def delta_release(spark) -> str:
    """The Delta Spark release the driver runs: its jar's ``Implementation-Version``."""
    delta_log = spark._jvm.org.apache.spark.sql.delta.DeltaLog._java_lang_class
    return str(delta_log.getPackage().getImplementationVersion())


class Job:
    """One trial's append, with ``remedy`` (:data:`helpers.lost_answer.trials.REMEDIES`)."""

    def __init__(self, spark, uri: str, remedy: str, app_id: str) -> None:
        self.spark, self.uri, self.remedy, self.app_id = spark, uri, remedy, app_id
        self.steps: list[str] = []

    def _append(self) -> bool:
        """One ``df.write ... save``; its answer is one step. True if it returned."""
        write = (
            self.spark.createDataFrame([(i,) for i in APPENDED], "id long")
            .coalesce(1)
            .write.format("delta")
            .mode("append")
        )
        if self.remedy == "txn-app-id":
            write = write.option("txnAppId", self.app_id).option("txnVersion", TXN_VERSION)
        try:
            write.save(self.uri)
        except Exception as error:  # noqa: BLE001 - what the job is told is the measurement
            self.steps.append(f"append: {error_text(error)}")
            return False
        self.steps.append("append: returned")
        return True

    def later(self) -> None:
        """The next plain append to the table, after the procedure: its answer is one step (whether
        it committed is read from storage)."""
        try:
            self.spark.createDataFrame([(i,) for i in LATER], "id long").coalesce(1).write.format(
                "delta"
            ).mode("append").save(self.uri)
            self.steps.append("later append: returned")
        except Exception as error:  # noqa: BLE001 - the table may refuse every later write
            self.steps.append(f"later append: {error_text(error)}")

    def run(self) -> str:
        """The whole procedure; returns what it concluded: ``success`` or ``failed``."""
        self.spark.conf.set(IDEMPOTENCY_CHECK, str(self.remedy == "idempotency-check").lower())
        if self._append():
            return "success"
        # the rerun: Delta skips a txnVersion the table holds
        if self.remedy == "txn-app-id" and self._append():
            return "success"
        return "failed"


def requests_seen(gate: LostAnswerGate, uri: str) -> list[str]:
    """What reached the store for the table's commits after version 0: its commit-file requests,
    then its lock-item writes, each in order, with the store's answer (the dropped one's too)."""
    files = gate.commit_requests(uri)
    locks = gate.lock_requests(uri)
    return [
        f"{r.method} {r.file} {r.status}{' conditional' if r.conditional else ''}"
        for r in files.itertuples()
        if r.version >= 1
    ] + [
        f"{r.operation} {r.file_name} {r.status}{' conditional' if r.conditional else ''}"
        for r in locks.itertuples()
        if r.version >= 1
    ]


def create(spark, uri: str) -> None:
    spark.createDataFrame([(0,)], "id long").coalesce(1).write.format("delta").save(uri)


def main(spec_path: str, result_path: str) -> None:
    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    planned = spec["trials"]
    results = []
    with LostAnswerGate(planned[0]["fault"], config.s3_emulator_endpoint()) as gate:
        spark = spark_session(spec["log_store"], gate, spec.get("conf", {}))
        for number, trial in enumerate(planned, 1):
            gate.kind = trial["fault"]  # one gate, one JVM: the paths of a log store take turns
            create(spark, trial["table_uri"])
            job = Job(spark, trial["table_uri"], trial["remedy"], trial["app_id"])
            told = job.run()
            job.later()
            name = trial["table_uri"].split("://", 1)[1]
            dropped = any(table.endswith(name) for table, _ in gate.dropped)
            results.append(
                {
                    "told": told,
                    "steps": "; ".join(job.steps),
                    "dropped": dropped,
                    "requests": requests_seen(gate, trial["table_uri"]),
                }
            )
            print(
                f"trial {number}/{len(planned)} {trial['fault']} {trial['remedy']}: {told}"
                f"{'' if dropped else ' (no answer dropped)'}",
                flush=True,
            )
        release = delta_release(spark)
        spark.stop()
    write_json_atomically({"release": release, "trials": results}, result_path)


if __name__ == "__main__":
    main(*sys.argv[1:3])
