"""Many producers, one table, with Spark (notebook 14 §5): a Structured Streaming query whose
``foreachBatch`` appends each micro-batch to a Delta table with Delta's idempotent-write options
``txnAppId`` / ``txnVersion``, killed mid-batch and restarted.

    <python> -m helpers.producers.spark_stream SPEC_JSON_FILE

The query reads a folder of Parquet input files (the producers' files: :func:`stage_inputs`
writes them with :mod:`helpers.producers.layout`'s rows), ``files_per_batch`` files per
micro-batch, and keeps its progress in a checkpoint folder: ``offsets/<id>`` when a batch is
planned, ``commits/<id>`` once its sink (the ``foreachBatch`` function) has returned. A batch
planned and not done is run again, with the same id and the same files, when the query starts
again from that checkpoint. :func:`append_batch` is the call to copy: the batch id is the
``txnVersion``, so Delta skips a replayed batch its log already holds (no commit at all).

Each micro-batch is written twice, from the same DataFrame: with :func:`append_batch` to the
idempotent table, and with :func:`append_blindly` (the same write without the two options) to the
blind table, the counter-example. On ``kill_at_batch`` the process SIGKILLs its process group
(itself and its JVM) after both writes and before the checkpoint records the batch as done.
:func:`kill_and_restart` runs the two processes and reads from storage what each table holds.

The driver is the workbook's Spark session (``helpers.spark.sessions.spark_session``) on local disk, with
the small settings of a Spark writer process (``SparkEngine.DEFAULT_CONF``: ``local[1]``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers.producers import layout

APP_ID = "workbook-stream"
BLIND_ID = "workbook-stream-blind"
"""The blind table's writer tag (its writes carry no transaction id)."""
SCHEMA = "id BIGINT, producer INT, seq INT, payload STRING"
RUN_TIMEOUT_S = 300.0


# -- the calls to copy (notebook 14 §5 writes them out; tests compare the two) ------------------------


def append_batch(batch, batch_id: int, table_uri: str, app_id: str) -> None:
    """Append one micro-batch as ONE commit carrying ``txn(app_id, batch_id)``; Delta Spark writes
    nothing if the table's ``txn`` for ``app_id`` is already at ``batch_id`` or later."""
    (
        batch.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", batch_id)
        .option(
            "userMetadata", json.dumps({"workbook.writer": app_id, "workbook.batch": str(batch_id)})
        )
        .save(table_uri)
    )


def append_blindly(batch, batch_id: int, table_uri: str, app_id: str) -> None:
    """The counter-example: the same append without ``txnAppId`` / ``txnVersion``."""
    (
        batch.write.format("delta")
        .mode("append")
        .option(
            "userMetadata", json.dumps({"workbook.writer": app_id, "workbook.batch": str(batch_id)})
        )
        .save(table_uri)
    )


def start_stream(spark, inbox: str, schema: str, files_per_batch: int, checkpoint: str, each_batch):
    """Start the query: the Parquet files in ``inbox``, ``files_per_batch`` per micro-batch, each
    handed to ``each_batch(batch, batch_id)``; it stops once every file there is done."""
    return (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", files_per_batch)
        .parquet(inbox)
        .writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )


# -- the driver process ---------------------------------------------------------------------------


def note(path: str, event: dict) -> None:
    """Append one event to the process's events file, flushed to the disk (it must outlive a SIGKILL)."""
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(event) + "\n")
        out.flush()
        os.fsync(out.fileno())


def kill_own_group() -> None:
    """SIGKILL this process and, when it leads its process group (started in a session of its own), its JVM with it."""
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def run(spec: dict) -> dict:
    if spec.get("mode") == "throughput":
        return measure(spec)
    from helpers.spark import sessions
    from helpers.writers.protocol import one_line
    from helpers.writers.spark_engine import SparkEngine

    result = {"process": spec["process"], "pid": os.getpid(), "error": None}
    try:
        spark = sessions.spark_session(
            "local", app_name=f"stream-{spec['process']}", extra_conf=SparkEngine.DEFAULT_CONF
        )
        note(
            spec["events_path"], {"process": spec["process"], "event": "session", "t": time.time()}
        )

        def each_batch(batch, batch_id: int) -> None:
            batch.persist()
            rows = batch.count()
            append_batch(batch, batch_id, spec["idempotent_uri"], APP_ID)
            append_blindly(batch, batch_id, spec["blind_uri"], BLIND_ID)
            batch.unpersist()
            killing = batch_id == spec.get("kill_at_batch")
            note(
                spec["events_path"],
                {
                    "process": spec["process"],
                    "event": "batch",
                    "batch": batch_id,
                    "rows": rows,
                    "killing": killing,
                    "t": time.time(),
                },
            )
            if killing:
                kill_own_group()

        start_stream(
            spark, spec["inbox"], SCHEMA, spec["files_per_batch"], spec["checkpoint"], each_batch
        ).awaitTermination()
    except Exception as error:  # recorded: the runner reports it
        result["error"] = f"{type(error).__name__}: {one_line(str(error), 600)}"
    return result


def measure(spec: dict) -> dict:
    """The query's commits/s against one writer appending alone, in one driver: a block of
    ``spec["block"]`` plain appends (``df.write`` of ``spec["rows"]`` rows), the query over every
    staged file (``files_per_batch`` per micro-batch, each one :func:`append_batch`), another block
    of plain appends; one warm-up append first. Returns when each batch and each append ended."""
    from helpers.spark import sessions
    from helpers.writers.spark_engine import SparkEngine

    spark = sessions.spark_session(
        spec["store"], app_name="stream-throughput", extra_conf=SparkEngine.DEFAULT_CONF
    )
    rows = layout.file_rows(9, 1, spec["rows"]).to_pylist()
    frame = spark.createDataFrame(rows, SCHEMA)
    blocks: list[dict] = []

    def appends(n: int) -> None:
        started, done = time.time(), []
        for _ in range(n):
            frame.write.format("delta").mode("append").save(spec["plain_uri"])
            done.append(time.time())
        blocks.append({"kind": "plain append", "t_start": started, "t_done": done})

    frame.write.format("delta").mode("append").save(spec["plain_uri"])  # warm-up
    appends(spec["block"])
    batches: list[float] = []

    def each_batch(batch, batch_id: int) -> None:
        append_batch(batch, batch_id, spec["table_uri"], APP_ID)
        batches.append(time.time())

    started = time.time()
    start_stream(
        spark, spec["inbox"], SCHEMA, spec["files_per_batch"], spec["checkpoint"], each_batch
    ).awaitTermination()
    blocks.append({"kind": "foreachBatch", "t_start": started, "t_done": batches})
    appends(spec["block"])
    return {"process": spec["process"], "pid": os.getpid(), "error": None, "blocks": blocks}


def throughput(
    store: str = "local",
    name: str = "producers/spark-throughput",
    *,
    producers: int = 8,
    files: int = 40,
    rows: int = 10,
    files_per_batch: int = 10,
    block: int = 8,
) -> dict:
    """Spark's form measured as the committer is: ``producers`` x ``files`` staged Parquet files
    through the query, ``files_per_batch`` per micro-batch, against one writer appending alone in
    the same driver (:func:`measure`), on local disk. Returns commits/s of each (from the first batch's planning to the last commit, so the
    query's planning counts; a block of appends from its start) and their ratio."""
    from helpers.producers import check
    from helpers.producers.commit_steps import rates
    from helpers.producers.run import ProducersError
    from helpers.stores import tables

    root = tables.local_table_path(*name.split("/"))
    shutil.rmtree(root, ignore_errors=True)
    expected = stage_inputs(root / "inbox", producers, files, rows)
    if store != "local":
        raise ProducersError(f"Spark's throughput is measured on local disk only, not {store!r}.")
    table_uri, plain_uri, options = str(root / "table"), str(root / "plain"), {}
    spec = {
        "mode": "throughput",
        "store": store,
        "inbox": str(root / "inbox"),
        "checkpoint": str(root / "checkpoint"),
        "files_per_batch": files_per_batch,
        "table_uri": table_uri,
        "plain_uri": plain_uri,
        "rows": rows,
        "block": block,
    }
    _, result, stderr = _driver(root, "throughput", spec)
    if result is None or result["error"]:
        raise ProducersError(f"The Spark driver failed: {result['error'] if result else stderr}")
    rate = rates(result["blocks"])
    verdict = check.exactly_once(table_uri, options, expected)
    return {
        "store": store,
        "micro_batches": len(result["blocks"][1]["t_done"]),
        "files_per_batch": files_per_batch,
        "foreach_batch_commits_per_s": rate["foreachBatch"],
        "plain_append_commits_per_s": rate["plain append"],
        "ratio_to_serial": rate["foreachBatch"] / rate["plain append"],
        "rows_per_s": rate["foreachBatch"] * files_per_batch * rows,
        "exactly_once": verdict.exactly_once,
    }


# -- the runner and what storage says -------------------------------------------------------------


def stage_inputs(inbox: Path, producers: int, files: int, rows: int) -> set[int]:
    """Write ``files`` Parquet input files per producer into ``inbox``; return every id they hold."""
    import pyarrow.parquet as pq

    inbox.mkdir(parents=True, exist_ok=True)
    for p in range(1, producers + 1):
        for s in range(1, files + 1):
            pq.write_table(layout.file_rows(p, s, rows), inbox / f"p{p:02d}-{s:08d}.parquet")
    return layout.expected_ids({p: files for p in range(1, producers + 1)}, rows)


def checkpoint_batches(checkpoint: Path) -> dict[str, list[int]]:
    """The batch ids a streaming checkpoint has planned (``offsets``) and recorded done (``commits``)."""

    def ids(folder: str) -> list[int]:
        where = checkpoint / folder
        return (
            sorted(int(f.name) for f in where.iterdir() if f.name.isdigit())
            if where.is_dir()
            else []
        )

    return {"offsets": ids("offsets"), "commits": ids("commits")}


def log_commits(table_uri: str) -> list[dict]:
    """Every commit of a table, from its commit files: version, the workbook batch tag, the
    ``txn`` actions (``appId:version``), the data files and rows it adds."""
    from helpers.delta import delta_log
    from helpers.runs import audit
    from helpers.stores import storage

    found = []
    for version, body in delta_log.commit_files(storage.table_store(table_uri)):
        commit = audit.parse_commit(version, body)
        actions = [json.loads(line) for line in body.decode("utf-8").splitlines() if line.strip()]
        txns = [a["txn"] for a in actions if "txn" in a]
        found.append(
            {
                "version": version,
                "batch": commit.batch,
                "txn": [f"{t['appId']}:{t['version']}" for t in txns],
                "files": len(commit.added),
                "rows": commit.rows_added,
            }
        )
    return found


def replayed(events: list[dict]) -> list[int]:
    """Batch ids that more than one process ran (a batch the checkpoint had not recorded done)."""
    runs: dict[int, set[str]] = {}
    for e in events:
        if e["event"] == "batch":
            runs.setdefault(e["batch"], set()).add(e["process"])
    return sorted(b for b, who in runs.items() if len(who) > 1)


@dataclass
class StreamRun:
    """What :func:`kill_and_restart` saw: the processes' exits and events, the checkpoint after the
    kill, and storage's account of both tables."""

    killed_exit: int | None
    restarted_exit: int | None
    kill_at_batch: int
    checkpoint_after_kill: dict[str, list[int]]
    events: list[dict]
    idempotent: object = None
    """:class:`helpers.producers.check.Verdict` of the idempotent table."""
    blind: object = None
    idempotent_commits: list[dict] = field(default_factory=list)
    blind_commits: list[dict] = field(default_factory=list)

    @property
    def replayed(self) -> list[int]:
        return replayed(self.events)

    def txn_commits(self, batch: int) -> list[int]:
        """Versions of the idempotent table whose ``txn`` is (APP_ID, ``batch``)."""
        return [c["version"] for c in self.idempotent_commits if f"{APP_ID}:{batch}" in c["txn"]]


def _driver(folder: Path, name: str, spec: dict):
    from helpers.ground import eras
    from helpers.ground.progress import RunProgress
    from helpers.producers.run import ProducersError
    from helpers.writers import processes

    proc = processes.EraProcess(
        name=name,
        era=eras.CURRENT,
        module="helpers.producers.spark_stream",
        spec_path=folder / f"{name}.json",
        stdout_path=folder / f"{name}.out",
        stderr_path=folder / f"{name}.err",
    )
    result_path = folder / f"{name}.result.json"
    proc.spec_path.write_text(
        json.dumps({**spec, "process": name, "result_path": str(result_path)}, indent=1)
    )
    processes.launch([proc], new_session=True)
    try:
        processes.wait_for_exits(
            [proc], time.monotonic() + RUN_TIMEOUT_S, RunProgress(f"Spark driver {name}", 1)
        )
    finally:
        if processes.kill_stragglers([proc]):
            raise ProducersError(
                f"Spark driver {name} did not end within {RUN_TIMEOUT_S:.0f} s; it was stopped."
            )
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    return proc.process.poll(), result, processes.stderr_tail(proc.stderr_path)


def kill_and_restart(
    name: str = "notebook-14/spark",
    *,
    producers: int = 2,
    files: int = 3,
    rows: int = 10,
    files_per_batch: int = 2,
    kill_at_batch: int = 1,
) -> StreamRun:
    """Stage the input files, run the query in a Spark driver that SIGKILLs itself after writing
    batch ``kill_at_batch``, run it again from the same checkpoint, and read both tables from storage."""
    from helpers.producers import check
    from helpers.producers.run import ProducersError
    from helpers.stores import tables

    root = tables.local_table_path(*name.split("/"))
    shutil.rmtree(root, ignore_errors=True)
    expected = stage_inputs(root / "inbox", producers, files, rows)
    spec = {
        "inbox": str(root / "inbox"),
        "checkpoint": str(root / "checkpoint"),
        "files_per_batch": files_per_batch,
        "idempotent_uri": str(root / "idempotent"),
        "blind_uri": str(root / "blind"),
        "events_path": str(root / "events.jsonl"),
    }
    killed_exit, result, stderr = _driver(
        root, "driver-1", {**spec, "kill_at_batch": kill_at_batch}
    )
    if (
        result is not None and result["error"]
    ):  # it ended on its own, failed, instead of being killed
        raise ProducersError(f"The first Spark driver failed before its kill: {result['error']}")
    after_kill = checkpoint_batches(root / "checkpoint")
    restarted_exit, result, stderr = _driver(root, "driver-2", spec)
    if result is None or result["error"]:
        raise ProducersError(
            f"The restarted Spark driver failed: {result['error'] if result else stderr}"
        )
    events = [json.loads(line) for line in (root / "events.jsonl").read_text().splitlines()]
    return StreamRun(
        killed_exit=killed_exit,
        restarted_exit=restarted_exit,
        kill_at_batch=kill_at_batch,
        checkpoint_after_kill=after_kill,
        events=events,
        idempotent=check.exactly_once(spec["idempotent_uri"], {}, expected),
        blind=check.exactly_once(spec["blind_uri"], {}, expected),
        idempotent_commits=log_commits(spec["idempotent_uri"]),
        blind_commits=log_commits(spec["blind_uri"]),
    )


if __name__ == "__main__":
    from helpers.writers.protocol import spec_process_main

    spec_process_main("helpers.producers.spark_stream", run)
