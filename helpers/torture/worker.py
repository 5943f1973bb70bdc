"""One torture process: a writer (or a Spark driver with writer threads) that works through its
operations on the contended table, journaling each one, until it is done or killed.

Started by :mod:`helpers.torture.protocol_run` in the protocol's era, from the workbook's folder::

    <era python> -m helpers.torture.worker SPEC_JSON_FILE

Each writer's operations are planned in advance (:func:`helpers.torture.plan.operations`):
appends of one batch of ten rows, deletes of a batch the same writer appended and saw
acknowledged, and compactions (OPTIMIZE), the operations the notebooks teach. Every commit is
tagged ``workbook.writer`` / ``workbook.batch`` (the operation's number) and ``workbook.op`` /
``workbook.target`` (which batch a delete removes), so the checker finds each operation in the
log by its tags alone.

The journal is the writer's word, kept where a SIGKILL cannot take it back: one JSON line per
event, written with ``os.write`` before the next step, ``start`` before the library is called
and ``ack`` or ``fail`` after it returned. An operation with a ``start`` and nothing after was in
flight when the process died. Whether any operation really is in the table is decided from
storage (:mod:`helpers.torture.check`), never from this journal.

A failure that names an endpoint that no longer answers (a service restarted under the run) is
recorded, and the writer waits for that endpoint to answer again before its next operation, so
a run outlives a restart. A spec with ``"tables"`` instead reads each table and reports its rows
per batch, VACUUMs it if asked and reads again (:func:`read_tables`, the checker's readers).

Standard library, pyarrow and the engine's library only: this module runs in the writer eras.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import traceback
import urllib.error
import urllib.request

from helpers.bench.worker import DeltalakeAppender, SparkAppender, batch_table
from helpers.delta import landing
from helpers.delta.delta_log import BATCH_TAG, TAG_PREFIX, WRITER_TAG
from helpers.ground.local_processes import process_alive
from helpers.writers.protocol import gone_file, one_line, spec_process_main, wait_at_barrier

OP_TAG = TAG_PREFIX + "op"
TARGET_TAG = TAG_PREFIX + "target"
APPEND, DELETE, COMPACT = "append", "delete", "compact"
SERVICE_WAIT_S = 600.0
"""How long a writer waits for a service that stopped answering before it gives up (a hang, not a pace)."""
ENDPOINT = re.compile(r"\b(127\.0\.0\.1|localhost):(\d+)")
OPEN_ATTEMPTS = 40
OPEN_RETRY_S = 0.5
REPAIR_RACE = re.compile(r"version \d+ already exists")
"""deltalake 1.5.1 opening a table whose newest DynamoDB item is incomplete (a writer killed after
its claim) repairs it: it copies the staged file to ``N.json``. When other writers repair the same
item at once, every copy but one is refused, and 1.5.1 takes a refusal for an error while the
staged file is still there (the winner deletes it a moment later): the open fails with "version N
already exists". A process started again after a kill meets this at its open; it tries again
(each try journaled as ``open_retry``), up to :data:`OPEN_ATTEMPTS` times, so a table that stays
wedged (:mod:`helpers.torture.wedge`) still fails the run."""
"""A loopback endpoint in an error (the library's URL, or the emulator a gate in between names)."""


def tags(writer: str, op: int, kind: str, target: int | None) -> dict[str, str]:
    found = {WRITER_TAG: writer, BATCH_TAG: str(op), OP_TAG: kind}
    if target is not None:
        found[TARGET_TAG] = str(target)
    return found


def id_range(batch: int) -> str:
    """The SQL predicate that selects one batch's rows."""
    ids = landing.batch_ids(batch)
    return f"id >= {ids.start} AND id < {ids.stop}"


class DeltalakeOperations(DeltalakeAppender):
    """delta-rs: append, delete and compact against the writer's refreshed ``DeltaTable``."""

    def operate(self, writer: str, op: int, kind: str, target: int | None) -> None:
        from deltalake import CommitProperties, write_deltalake

        table = self.tables[writer]
        table.update_incremental()
        properties = CommitProperties(
            custom_metadata=tags(writer, op, kind, target),
            max_commit_retries=self.spec.get("max_commit_retries"),
        )
        if kind == APPEND:
            write_deltalake(table, batch_table(op), mode="append", commit_properties=properties)
        elif kind == DELETE:
            table.delete(id_range(target), commit_properties=properties)
        else:
            table.optimize.compact(commit_properties=properties)


class SparkOperations(SparkAppender):
    """Delta Spark: each writer thread has its own session (``newSession``: one SparkContext, its
    own settings), so the ``userMetadata`` a delete or an OPTIMIZE commits with is that writer's."""

    USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"

    def __init__(self, spec: dict) -> None:
        super().__init__(spec)
        self.sessions = {w: self.spark.newSession() for w in spec["writers"]}

    def operate(self, writer: str, op: int, kind: str, target: int | None) -> None:
        from delta.tables import DeltaTable

        session = self.sessions[writer]
        session.conf.set(
            self.USER_METADATA, json.dumps(tags(writer, op, kind, target), sort_keys=True)
        )
        if kind == APPEND:
            session.createDataFrame(batch_table(op)).write.format("delta").mode("append").save(
                self.uri
            )
        elif kind == DELETE:
            DeltaTable.forPath(session, self.uri).delete(id_range(target))
        else:
            DeltaTable.forPath(session, self.uri).optimize().executeCompaction()


ENGINES = {"deltalake": DeltalakeOperations, "spark": SparkOperations}


def deltalake_read(table: dict) -> dict:
    """Open the table (a DynamoDB log store finishes incomplete items on the way), read its rows per
    batch; with ``vacuum``, VACUUM with no retention and read again."""
    from deltalake import DeltaTable

    def rows() -> dict[int, int]:
        found = DeltaTable(table["table_uri"], storage_options=dict(table["storage_options"]))
        return landing.rows_per_batch(
            found.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        )

    result = {"table_uri": table["table_uri"], "rows_by_batch": rows()}
    if table.get("vacuum"):
        opened = DeltaTable(table["table_uri"], storage_options=dict(table["storage_options"]))
        # full: also the files no commit ever added (the default removes only files the log removed)
        opened.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True)
        result["rows_after_vacuum"] = rows()
    return result


def spark_read(spark, table: dict) -> dict:
    """The same with Delta Spark (its DynamoDB log store, if the session has it, finishes incomplete items)."""
    from delta.tables import DeltaTable

    def rows() -> dict[int, int]:
        return landing.rows_per_batch(
            [
                r.id
                for r in spark.read.format("delta").load(table["table_uri"]).select("id").collect()
            ]
        )

    result = {"table_uri": table["table_uri"], "rows_by_batch": rows()}
    if table.get("vacuum"):
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        DeltaTable.forPath(spark, table["table_uri"]).vacuum(
            0.0
        )  # what it removed is counted in storage by the checker
        result["rows_after_vacuum"] = rows()
    return result


def read_tables(spec: dict) -> dict:
    """The checker's reader: each of ``spec["tables"]`` read (and vacuumed) with ``spec["engine"]``."""
    if spec["engine"] == "spark":
        from helpers.spark import sessions

        spark = sessions.spark_session(*spec["spark_stores"], app_name=f"torture-{spec['process']}")
        return {
            "library": f"Spark {spark.version}",
            "tables": [spark_read(spark, t) for t in spec["tables"]],
        }
    import deltalake

    return {
        "library": f"deltalake {deltalake.__version__}",
        "tables": [deltalake_read(t) for t in spec["tables"]],
    }


class Journal:
    """Append-only JSON lines, each written whole with one ``os.write`` (shared by a process's threads)."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.lock = threading.Lock()

    def write(self, **event) -> None:
        line = (json.dumps({**event, "t": time.time()}) + "\n").encode()
        with self.lock:
            os.write(self.fd, line)


FOUND_IN_ERROR = "error"
"""``service_down_found``: the error message named the endpoint that was down."""
FOUND_BY_PROBE = "probe"
"""``service_down_found``: the message named none; asking the process's endpoints found it (:func:`unanswered_behind`)."""


def unanswered_endpoint(message: str) -> tuple[str, int] | None:
    """The loopback endpoint an error names, if nothing listens there now (the service is down)."""
    for host, port in ENDPOINT.findall(message):
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
        except OSError:
            return host, int(port)
    return None


def unanswered_behind(endpoints: list[tuple[str, int]]) -> tuple[str, int] | None:
    """For a DynamoDB error that names no endpoint: ask the process's own endpoints. One that does
    not answer is down; so is the emulator behind a gate that answers 502 saying it did not.
    deltalake 1.5.1's lock client names the service and never where it is: "error in DynamoDb",
    "unable to complete entry ... failure to write to DynamoDb", "dynamodb client failed to delete
    log entry". A commit conflict is not asked about. The journal says which way the endpoint was
    found (``found``: ``error`` or ``probe``), so the checker can tell a message that names it from
    one that does not."""
    for host, port in endpoints:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}/", timeout=10):
                pass
        except urllib.error.HTTPError as answer:
            if answer.code == 502:
                down = unanswered_endpoint(answer.read().decode("utf-8", "replace"))
                if down is not None:
                    return down
        except OSError:
            return host, port
    return None


def service_down(
    message: str, endpoints: list[tuple[str, int]]
) -> tuple[tuple[str, int] | None, str | None]:
    """The endpoint a failed operation's error was due to, if it is down, and how it was found
    (:data:`FOUND_IN_ERROR` or :data:`FOUND_BY_PROBE`); ``(None, None)`` for any other failure."""
    down = unanswered_endpoint(message)
    if down is not None:
        return down, FOUND_IN_ERROR
    if "dynamodb" in message.lower():  # a lock client's error that does not say where
        down = unanswered_behind(endpoints)
        if down is not None:
            return down, FOUND_BY_PROBE
    return None, None


def wait_for(endpoint: tuple[str, int]) -> float:
    """Wait until the endpoint accepts connections; return the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < SERVICE_WAIT_S:
        try:
            socket.create_connection(endpoint, timeout=5).close()
            return time.monotonic() - started
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(
        f"{endpoint[0]}:{endpoint[1]} did not answer again within {SERVICE_WAIT_S:.0f} s"
    )


def writer_loop(
    engine,
    writer: str,
    ops: list[dict],
    deletable: list[int],
    journal: Journal,
    runner_pid: int,
    endpoints: list[tuple[str, int]],
) -> None:
    """Do each planned operation (``{"op": n, "kind": ...}``) in turn. A delete removes the newest
    batch in ``deletable`` (batches this writer appended and saw acknowledged, not deleted yet);
    with none there, the operation is an append instead. Stops early if the harness (``runner_pid``)
    is gone: nobody would check what it writes."""
    deletable = list(deletable)
    for planned in ops:
        if not process_alive(runner_pid):
            return
        kind, op = planned["kind"], planned["op"]
        target = None
        if kind == DELETE:
            if deletable:
                target = deletable.pop()
            else:
                kind = APPEND
        journal.write(event="start", writer=writer, op=op, kind=kind, target=target)
        try:
            engine.operate(writer, op, kind, target)
        except Exception as error:  # a failed operation is a figure; the writer goes on
            message = one_line(str(error), 600)
            down, found = service_down(message, endpoints)
            journal.write(
                event="fail",
                writer=writer,
                op=op,
                error_class=type(error).__name__,
                error=message,
                service_down=f"{down[0]}:{down[1]}" if down else None,
                service_down_found=found,
            )
            if down:
                journal.write(event="waited", writer=writer, op=op, seconds=wait_for(down))
            if target is not None:
                deletable.append(target)
            continue
        journal.write(event="ack", writer=writer, op=op)
        if kind == APPEND:
            deletable.append(op)


def open_engine(spec: dict, journal: Journal):
    """The process's engine, its table opened; tried again while the open meets :data:`REPAIR_RACE`."""
    for attempt in range(1, OPEN_ATTEMPTS + 1):
        try:
            return ENGINES[spec["engine"]](spec)
        except Exception as error:
            message = one_line(str(error), 600)
            if attempt == OPEN_ATTEMPTS or not REPAIR_RACE.search(message):
                raise
            journal.write(
                event="open_retry", process=spec["process"], attempt=attempt, error=message
            )
            time.sleep(OPEN_RETRY_S)


def run(spec: dict) -> dict:
    """Set up, wait at the barrier (first incarnation only), work; return the process's record."""
    result = {"process": spec["process"], "pid": os.getpid(), "error": None}
    ready = False
    try:
        if spec.get("tables"):
            result.update(read_tables(spec))
            return result
        journal = Journal(spec["journal_path"])
        engine = open_engine(spec, journal)
        result["library"] = engine.version
        endpoints = sorted(
            {
                (host, int(port))
                for host, port in ENDPOINT.findall(json.dumps(spec["storage_options"]))
            }
        )
        ready = True
        if spec.get("barrier_dir"):
            wait_at_barrier(spec["barrier_dir"], spec["process"], None, spec["runner_pid"])
        journal.write(event="go", process=spec["process"], pid=os.getpid())
        threads = [
            threading.Thread(
                target=writer_loop,
                name=w,
                args=(
                    engine,
                    w,
                    spec["operations"][w],
                    spec["deletable"][w],
                    journal,
                    spec["runner_pid"],
                    endpoints,
                ),
            )
            for w in spec["writers"]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {one_line(str(error), 600)}"
        result["traceback"] = traceback.format_exc()[-3000:]
        if not ready and spec.get("barrier_dir"):
            gone_file(spec["barrier_dir"], spec["process"]).touch()
    return result


if __name__ == "__main__":
    spec_process_main("helpers.torture.worker", run)
