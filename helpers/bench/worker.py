"""One benchmark process: open the table, wait at the barrier, make M appends back to back per
writer, and record each commit's first try, finish and outcome.

Started by :mod:`helpers.bench.one_run` in the era's Python, from the workbook's folder::

    <era python> -m helpers.bench.worker SPEC_JSON_FILE

A process holds one writer (``writers: ["w1"]``), or several that share it as threads
(``spark-threads``: one Spark driver, a pool of writer threads). Everything before the barrier
(imports, the JVM, building the data, opening the table) is setup and stays out of the figures;
its duration is in the result as ``setup_s``. Setup ends with one append to a scratch table of
the process's own (``warm_up_uri``), so the first measured commit does not pay for loading code
(Delta Spark's first append in a fresh JVM takes seconds; later ones a fraction of that). After ``go`` each writer loops: refresh its view of
the table, append one batch of ten rows tagged ``workbook.writer`` / ``workbook.batch``, note the
time. The library's own retries are left at their defaults (or the spec's ``max_commit_retries``):
what is measured is the protocol as shipped. The record is what the writer saw; whether its
commits are really in the table is decided from storage by :mod:`helpers.bench.stats`.

Standard library, pyarrow and the engine's library only: this module runs in the writer eras.
"""

from __future__ import annotations

import json
import os
import threading
import time
import traceback

from helpers.delta import landing
from helpers.writers.protocol import (
    BATCH_TAG,
    COMMITTED,
    FAILED,
    T_PROCESS_START,
    WRITER_TAG,
    WriterSpec,
    engine_class,
    gone_file,
    one_line,
    spec_process_main,
    wait_at_barrier,
)


def batch_table(batch: int):
    """The ten rows of a batch, built in memory (no landing file: a thousand of them would be noise)."""
    import pyarrow as pa

    return pa.Table.from_pylist(landing.landing_rows(batch), schema=landing.landing_schema())


def tags(writer: str, batch: int) -> dict[str, str]:
    """The commit's tags: whose commit it is, which batch (the same keys the writer processes use)."""
    return {WRITER_TAG: writer, BATCH_TAG: str(batch)}


class DeltalakeAppender:
    """delta-rs: refresh the writer's ``DeltaTable`` (incrementally), then ``write_deltalake``."""

    def __init__(self, spec: dict) -> None:
        import deltalake

        from helpers.writers.deltalake_engine import open_delta_table

        self.version = f"deltalake {deltalake.__version__}"
        self.spec = spec
        self.tables = {
            w: open_delta_table(spec["table_uri"], spec["storage_options"]) for w in spec["writers"]
        }

    def warm_up(self, uri: str, data) -> None:
        from deltalake import write_deltalake

        write_deltalake(
            uri, data, mode="append", storage_options=dict(self.spec["storage_options"])
        )

    def append(self, writer: str, batch: int, data) -> None:
        from deltalake import CommitProperties, write_deltalake

        table = self.tables[writer]
        table.update_incremental()
        properties = CommitProperties(
            custom_metadata=tags(writer, batch),
            max_commit_retries=self.spec.get("max_commit_retries"),
        )
        write_deltalake(table, data, mode="append", commit_properties=properties)


class SparkAppender:
    """Delta Spark: ``df.write.format("delta").mode("append")`` with the tags as ``userMetadata``;
    the session is the Spark writer engine's (same jars, endpoint, log store and settings)."""

    def __init__(self, spec: dict) -> None:
        engine = engine_class("spark")()
        self.writer_spec = WriterSpec(
            writer_id=spec["writers"][0],
            era=spec["era"],
            table_uri=spec["table_uri"],
            landing_file="-",
            result_path=spec["result_path"],
            engine="spark",
            storage_options=dict(spec["storage_options"]),
            max_commit_retries=spec.get("max_commit_retries"),
        )
        engine.load(self.writer_spec)
        self.spark, self.version, self.uri = engine.spark, engine.version, spec["table_uri"]

    def warm_up(self, uri: str, data) -> None:
        self.spark.createDataFrame(data).write.format("delta").mode("append").save(uri)

    def append(self, writer: str, batch: int, data) -> None:
        metadata = json.dumps(tags(writer, batch), sort_keys=True)
        self.spark.createDataFrame(data).write.format("delta").mode("append").option(
            "userMetadata", metadata
        ).save(self.uri)


APPENDERS = {"deltalake": DeltalakeAppender, "spark": SparkAppender}


def writer_loop(appender, writer: str, batches: list[int], data: dict, commits: list[dict]) -> None:
    """Append each batch in turn; one record per commit, failures included (the loop goes on)."""
    for batch in batches:
        record = {"writer": writer, "batch": batch, "t_first_try": time.time()}
        try:
            appender.append(
                writer, batch, data[batch]
            )  # which version it became is read from storage afterwards
            record["outcome"] = COMMITTED
        except Exception as error:  # a failed commit is a figure, not the end of the run
            record.update(
                outcome=FAILED,
                error_class=type(error).__name__,
                error_message=one_line(str(error), 400),
            )
        record["t_done"] = time.time()
        commits.append(record)


def run(spec: dict) -> dict:
    """Set up, wait at the barrier, append; return the process's record (never raises)."""
    result = {
        "process": spec["process"],
        "writers": spec["writers"],
        "pid": os.getpid(),
        "t_process_start": T_PROCESS_START,
        "commits": [],
        "error": None,
    }
    ready = False
    try:
        appender = APPENDERS[spec["engine"]](spec)
        result["library"] = appender.version
        data = {b: batch_table(b) for batches in spec["batches"].values() for b in batches}
        appender.warm_up(spec["warm_up_uri"], next(iter(data.values())))
        result["t_ready"] = time.time()
        result["setup_s"] = result["t_ready"] - T_PROCESS_START
        ready = True
        result["t_go"] = wait_at_barrier(
            spec["barrier_dir"], spec["process"], None, spec["runner_pid"]
        )
        threads = [
            threading.Thread(
                target=writer_loop,
                args=(appender, w, spec["batches"][w], data, result["commits"]),
                name=w,
            )
            for w in spec["writers"]
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        result["t_end"] = time.time()
    except Exception as error:
        result["error"] = f"{type(error).__name__}: {one_line(str(error), 600)}"
        result["traceback"] = traceback.format_exc()[-3000:]
        if not ready:
            gone_file(spec["barrier_dir"], spec["process"]).touch()
    return result


if __name__ == "__main__":
    spec_process_main("helpers.bench.worker", run)
