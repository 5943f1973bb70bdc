"""Several append jobs in ONE Spark driver, raced on purpose, and what the log says about them.

Delta Spark's default S3 log store (``S3SingleDriverLogStore``) takes a lock inside the driver's
JVM around "is ``N.json`` free? then write it". Jobs of one driver (threads of one SparkSession)
therefore take turns at each commit file, and a job that finds its version taken checks for
conflicts and retries at the next one. To show that on every run, not only when timing allows,
the jobs must really meet: all of them must have read the same snapshot before any commit lands.
This module makes that happen by design:

* :class:`DataFirstGate`, the commit gate (:mod:`helpers.runs.commitgate`) with one more way to hold:
  :meth:`DataFirstGate.hold_until_data` holds every PUT of a table's commit file until that
  table's Parquet data files have all been written (answered ``200`` by the store). A Delta Spark
  append reads its snapshot before it writes its data file, so once every job's data file is in,
  every job has read the version the table had before the first commit;
* :func:`append_jobs` starts one thread per batch in the kernel's driver, lines them up on a
  barrier, and appends each batch as one Parquet file (``coalesce(1)``) with the workbook's tags
  in ``userMetadata``;
* :func:`commit_infos` reads every commit file's ``commitInfo`` straight from the store: the
  ``readVersion`` each commit was made from and ``isBlindAppend``, the evidence that jobs which
  read one version committed at different versions.

Usage::

    gate = DataFirstGate()
    spark = sessions.spark_session("s3", extra_conf={"spark.hadoop.fs.s3a.endpoint": gate.endpoint})
    gate.hold_until_data(uri, data_files=4, max_wait_s=120)
    jobs = append_jobs(spark, uri, batches=[1, 2, 3, 4], on_error=gate.open)
    gate.open()
    commit_infos(uri)      # version, readVersion, isBlindAppend, writer_id, batch, ...
    gate.data_first_log()  # the data-file PUTs and the commit PUTs, in the order they reached the store
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from urllib.parse import unquote, urlparse

from helpers.delta import delta_log, landing
from helpers.delta.delta_log import BATCH_TAG, WRITER_TAG, commit_tags
from helpers.runs import commitgate
from helpers.spark import releases
from helpers.stores import storage
from helpers.writers.protocol import COMMITTED, FAILED, one_line

RELEASED_BY_DATA = "data files written"
RELEASED_BY_MAX_WAIT = "max_wait_s"
RELEASED_BY_OPEN = "open"


@dataclass
class GateEvent:
    """A data-file PUT or a commit-file PUT of the held table, as it reached the store."""

    order: int
    """Position among the table's PUTs answered by the store (1 = first answered)."""
    kind: str
    """``data`` (a Parquet file) or ``commit`` (``_delta_log/N.json``)."""
    file: str
    status: int | None
    held: bool = False
    """Whether the gate made this commit PUT wait for the data files."""
    released_by: str | None = None
    """For a held commit PUT: ``data files written``, ``max_wait_s`` (the safety limit passed) or ``open``."""
    data_files_before: int = 0
    """Data files the store had accepted when this PUT was sent on."""


class DataFirstGate(commitgate.CommitGate):
    """A :class:`helpers.runs.commitgate.CommitGate` that can also hold a table's commit PUTs until its
    data files are written. Everything else (routing, the commit log, ``hold``) is the gate's own.

    It wraps :meth:`CommitGate.forward`, the one place every request passes,
    and decides nothing the store decides: it only delays commit PUTs.
    """

    def __init__(self, upstream: str | None = None, *, port: int = 0) -> None:
        self._data_lock = threading.Lock()
        self._data_prefix: str | None = None
        self._data_needed = 0
        self._data_written = 0
        self._data_in = threading.Event()
        self._data_reason: str | None = None
        self._data_max_wait_s = 0.0
        self._events: list[GateEvent] = []
        super().__init__(upstream, port=port)

    # -- the public side ---------------------------------------------------------------------------

    def hold_until_data(self, table_uri: str, data_files: int, *, max_wait_s: float) -> None:
        """Hold every PUT of a commit file of ``table_uri`` (``s3://`` or ``s3a://``) until
        ``data_files`` Parquet files under it have been answered ``200``; then let every held and
        later PUT through. ``max_wait_s`` is a safety limit only (a job that died before writing
        its data file): a commit PUT released by it is logged ``released_by="max_wait_s"``, which
        a notebook's checks refuse. Clears :meth:`data_first_log`. Raises GateError for a bad argument."""
        if isinstance(data_files, bool) or not isinstance(data_files, int) or data_files < 1:
            raise commitgate.GateError(
                f"data_files must be a whole number >= 1, not {data_files!r}."
            )
        if not max_wait_s > 0:
            raise commitgate.GateError(f"max_wait_s must be positive, not {max_wait_s!r}.")
        parsed = urlparse(table_uri)
        if parsed.scheme not in ("s3", "s3a") or not parsed.netloc:
            raise commitgate.GateError(
                f"The gate holds S3 tables (s3:// or s3a://), not {table_uri!r}."
            )
        with self._data_lock:
            self._data_prefix = f"{parsed.netloc}/{parsed.path.strip('/')}/"
            self._data_needed, self._data_written, self._data_max_wait_s = (
                data_files,
                0,
                float(max_wait_s),
            )
            self._data_in = threading.Event()
            self._data_reason = None
            self._events = []

    def held_for_data(self) -> int:
        """How many commit PUTs wait for data files right now."""
        with self._data_lock:
            return sum(1 for e in self._events if e.held and e.released_by is None)

    def open(self) -> None:
        """Disarm both holds: the gate's own and the data-file hold (waiting PUTs go on)."""
        self._release_data(RELEASED_BY_OPEN)
        with self._data_lock:
            self._data_prefix = None
        super().open()

    def data_first_log(self):
        """The held table's data-file and commit-file PUTs as a pandas DataFrame, in the order the
        store answered them: order, kind, file, status, held, released_by, data_files_before."""
        import pandas as pd

        with self._data_lock:
            rows = [asdict(e) for e in self._events]
        frame = pd.DataFrame(rows, columns=list(GateEvent.__dataclass_fields__))
        frame = frame.sort_values("order", kind="stable").reset_index(drop=True)
        for column in ("order", "status", "data_files_before"):
            frame[column] = frame[column].astype("Int64")
        return frame

    # -- holding ---------------------------------------------------------------------------------------

    def _release_data(self, reason: str) -> None:
        with self._data_lock:
            if self._data_reason is None:
                self._data_reason = reason
            self._data_in.set()

    def _kind(self, method: str, path: str) -> str | None:
        """``data`` or ``commit`` for a PUT under the held table, else None."""
        if method != "PUT" or self._data_prefix is None:
            return None
        key = unquote(urlparse(path).path).lstrip("/")
        if not key.startswith(self._data_prefix):
            return None
        relative = key[len(self._data_prefix) :]
        if delta_log.commit_version(relative) is not None:
            return "commit"
        if delta_log.is_data_file(relative):
            return "data"
        return None

    def forward(self, method: str, path: str, headers, body):
        with self._data_lock:
            kind = self._kind(method, path)
            if kind is None:
                event = None
            else:
                event = GateEvent(
                    order=0,
                    kind=kind,
                    file=unquote(urlparse(path).path).rsplit("/", 1)[-1],
                    status=None,
                )
                event.held = kind == "commit" and not self._data_in.is_set()
                self._events.append(event)
            arrived = time.monotonic()
        if event is not None and event.held:
            left = self._data_max_wait_s - (time.monotonic() - arrived)
            if not self._data_in.wait(max(left, 0.0)):
                self._release_data(RELEASED_BY_MAX_WAIT)
            with self._data_lock:
                event.released_by = self._data_reason
        if event is not None:
            with self._data_lock:
                event.data_files_before = self._data_written
        answer = super().forward(method, path, headers, body)
        if event is not None:
            with self._data_lock:
                event.status = answer[0]
                event.order = 1 + sum(1 for e in self._events if e.order)
                if kind == "data" and answer[0] == 200:
                    self._data_written += 1
                    done = self._data_written >= self._data_needed
                else:
                    done = False
            if done:
                self._release_data(RELEASED_BY_DATA)
        return answer


# ---------------------------------------------------------------------------------------------
# The jobs
# ---------------------------------------------------------------------------------------------


def job_tags(job_id: str, batch: int) -> str:
    """A job's ``userMetadata``: the workbook tags as JSON, as the Spark writer process puts them
    (so :func:`helpers.delta.delta_log.commit_tags` and the auditor read them back)."""
    return json.dumps({WRITER_TAG: job_id, BATCH_TAG: str(batch)}, sort_keys=True)


def append_jobs(
    spark, table_uri: str, batches: Sequence[int], *, on_error: Callable[[], None] | None = None
):
    """Append each landing batch to ``table_uri`` from its own thread of ``spark``'s driver (job
    ``j1`` appends ``batches[0]``, ...), all released together by a barrier once every job has
    built its DataFrame. Each batch is written as one Parquet file. Returns a pandas DataFrame,
    one row per job: job_id, batch, outcome (``committed`` / ``failed``, as the job saw it),
    error_class, error_message. A job that fails breaks the barrier and calls ``on_error`` (e.g.
    ``gate.open``) so the others are not held for it."""
    import pandas as pd

    if not batches:
        raise ValueError("append_jobs needs at least one batch.")
    barrier = threading.Barrier(len(batches))
    results: list[dict] = [{} for _ in batches]

    def job(index: int, batch: int) -> None:
        job_id = f"j{index + 1}"
        row = results[index]
        row.update(job_id=job_id, batch=batch, outcome=FAILED, error_class=None, error_message=None)
        try:
            frame = releases.arrow_frame(spark, landing.batch(batch)).coalesce(1)
            barrier.wait()
            (
                frame.write.format("delta")
                .mode("append")
                .option("userMetadata", job_tags(job_id, batch))
                .save(table_uri)
            )
            row["outcome"] = COMMITTED
        except BaseException as error:  # noqa: BLE001  (recorded, and the others are let go)
            barrier.abort()
            row.update(error_class=type(error).__name__, error_message=one_line(str(error), 400))
            if on_error is not None:
                on_error()

    threads = [
        threading.Thread(target=job, args=(i, b), name=f"delta-job-{i + 1}")
        for i, b in enumerate(batches)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return pd.DataFrame(
        results, columns=["job_id", "batch", "outcome", "error_class", "error_message"]
    )


JOBS_IN_ERA_TIMEOUT_S = 900.0
"""A safety limit only: how long a driver of another Spark era may take, its JVM's start included."""


def append_jobs_in(
    spark_era: str,
    table_uri: str,
    batches: Sequence[int],
    *,
    s3_endpoint: str,
    on_error: Callable[[], None] | None = None,
):
    """:func:`append_jobs` in one driver of ``spark_era`` (:data:`helpers.ground.eras.SPARK_ERAS`)
    whose S3A client sends its requests to ``s3_endpoint`` (the gate): this process's own session
    when this process runs that era, else a driver of its own in a child process started in the
    era's Python (``on_error`` is then called if any job failed). Same result as :func:`append_jobs`."""
    import pandas as pd

    from helpers.ground import eras

    if eras.spark_era(spark_era).in_kernel:
        spark = _one_driver(s3_endpoint, spark_era)
        return append_jobs(spark, table_uri, batches, on_error=on_error)
    spec = {"table_uri": table_uri, "batches": list(batches), "s3_endpoint": s3_endpoint}
    done = eras.run_in_era(
        spark_era,
        ["-m", "helpers.runs.driver_jobs", json.dumps(spec)],
        timeout=JOBS_IN_ERA_TIMEOUT_S,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("[")]
    if done.returncode != 0 or not lines:
        if on_error is not None:
            on_error()
        raise RuntimeError(
            f"the {spark_era} driver's jobs did not finish (exit {done.returncode}): "
            f"{one_line(done.stderr, 600)}"
        )
    jobs = pd.DataFrame(json.loads(lines[-1]))
    if on_error is not None and (jobs["outcome"] != COMMITTED).any():
        on_error()
    return jobs


def _one_driver(s3_endpoint: str, spark_era: str | None = None):
    """The session of :func:`append_jobs_in`'s one driver, in this process."""
    from helpers.spark import sessions

    return sessions.spark_session(
        "s3",
        app_name="09-one-driver",
        extra_conf={"spark.hadoop.fs.s3a.endpoint": s3_endpoint},
        spark_era=spark_era,
    )


def _jobs_of_a_child(spec: dict) -> None:
    """The child's side of :func:`append_jobs_in`: its driver, its jobs, their rows on stdout."""
    spark = _one_driver(spec["s3_endpoint"])
    jobs = append_jobs(spark, spec["table_uri"], spec["batches"])
    spark.stop()
    print(json.dumps(jobs.to_dict(orient="records")), flush=True)


# ---------------------------------------------------------------------------------------------
# The log
# ---------------------------------------------------------------------------------------------


def commit_infos(table_uri: str):
    """Every commit file's ``commitInfo``, read from the store (not from any engine), as a pandas
    DataFrame sorted by version: version, operation, readVersion (the snapshot the commit was
    made from; None if the writer did not record it), isBlindAppend, isolationLevel, engine,
    writer_id, batch (the workbook tags)."""
    import pandas as pd

    store = storage.table_store(table_uri)
    rows = []
    for version, body in delta_log.commit_files(store):
        info, _, _ = delta_log.read_commit(body)
        tags = commit_tags(info)
        rows.append(
            {
                "version": version,
                "operation": info.get("operation"),
                "readVersion": info.get("readVersion"),
                "isBlindAppend": info.get("isBlindAppend"),
                "isolationLevel": info.get("isolationLevel"),
                "engine": info.get("engineInfo") or info.get("clientVersion"),
                "writer_id": tags.get(WRITER_TAG),
                "batch": tags.get(BATCH_TAG),
            }
        )
    columns = [
        "version",
        "operation",
        "readVersion",
        "isBlindAppend",
        "isolationLevel",
        "engine",
        "writer_id",
        "batch",
    ]
    frame = pd.DataFrame(rows, columns=columns).sort_values("version").reset_index(drop=True)
    for column in ("readVersion", "batch"):
        frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    return frame


if __name__ == "__main__":
    import sys

    _jobs_of_a_child(json.loads(sys.argv[1]))
