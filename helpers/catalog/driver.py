"""A Delta Spark driver as a team's job runs one: in a process and a JVM of its own, without Spark's
testing flag, taking one command at a time from the process that started it.

Notebook 15's own driver creates the catalog-managed tables, which Delta Spark 4.4.0 does only
with Spark's testing flag (:data:`helpers.catalog.tables.TESTING_FLAG`). Everything that measures
what a team would meet (an append whose answer is lost, the next writer after a failure) runs here
instead, step by step as the notebook asks::

    with driver.Job(folder) as job:          # its JVM starts, and refuses if testing is on
        job.configure(tables.URI_KEY, gate.endpoint)   # a session setting (None unsets it)
        job.open("orders", location)          # the name, in its own session catalog
        job.append("orders", "a", 1)          # "success", or the first line of Delta's error
        job.count("orders")                   # rows a reader by name sees

The process is ``<python> -m helpers.catalog.driver REPLY_FD``: commands come as JSON lines on its
stdin, each answer goes back as one JSON line on the pipe ``REPLY_FD``, and everything the process
or its JVM prints goes to files under ``folder``. It refuses to start when Spark would run as a
test (:func:`helpers.catalog.writer.testing_flag`: the JVM's ``spark.testing`` property or the
``SPARK_TESTING`` environment variable, the two that Spark's ``Utils.isTesting`` reads).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Self

from helpers.catalog.tables import COLUMNS, SCHEMA
from helpers.catalog.writer import ROWS_PER_BATCH, batch_rows, refuse_testing, testing_flag
from helpers.ground import config, eras

ANSWER_TIMEOUT_S = 900.0
"""How long a command may take before the job is taken for hung: Delta's own retries of a failing
catalog take minutes (its back-off), and the machine may be loaded."""


class JobError(RuntimeError):
    """The driver process failed, refused to start, or stopped answering; the message says why."""


def first_line(error: Exception) -> str:
    """What a job is told when Delta raises: the line naming the exception, else the first line."""
    lines = str(getattr(error, "desc", None) or error).strip().splitlines() or [repr(error)]
    cause = next((line for line in lines if "Exception:" in line), lines[0])
    return cause.lstrip(": ")[:400]


class Job:
    """The driver process, seen from the process that started it (:mod:`helpers.catalog.driver`)."""

    def __init__(self, folder: Path, uri: str = "http://127.0.0.1:1/") -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        read_end, write_end = os.pipe()
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        with open(folder / "job.out", "wb") as out, open(folder / "job.err", "wb") as err:
            self.process = eras.start_in_era(
                eras.CURRENT,
                ["-m", "helpers.catalog.driver", str(write_end), uri],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=env,
                pass_fds=(write_end,),
                start_new_session=True,
            )
        os.close(write_end)
        self._answers = os.fdopen(read_end, "r")
        started = self._answer("start")
        self.pid: int = started["pid"]
        self.testing_flag: str | None = started["testing_flag"]

    def _answer(self, what: str) -> dict:
        import select

        ready, _, _ = select.select([self._answers], [], [], ANSWER_TIMEOUT_S)
        line = self._answers.readline() if ready else ""
        if not line:
            self.close()
            tail = (self.folder / "job.err").read_text(errors="replace")[-1500:]
            raise JobError(
                f"the Spark job gave no answer to {what} (see {config.shown(self.folder)}/job.err):"
                f"\n{tail}"
            )
        answer = json.loads(line)
        if "refused" in answer:
            self.close()
            raise JobError(answer["refused"])
        return answer

    def call(self, command: str, **fields) -> dict:
        """Send one command and wait for its answer."""
        self.process.stdin.write((json.dumps({"command": command, **fields}) + "\n").encode())
        self.process.stdin.flush()
        return self._answer(command)

    def configure(self, key: str, value: str | None) -> None:
        """A session setting of the job's Spark session; None unsets it."""
        self.call("set", key=key, value=value)

    def open(self, name: str, location: str) -> None:
        """Name the catalog's table ``name`` (at ``location``) in the job's session catalog."""
        self.call("open", name=name, location=location)

    def append(
        self,
        name: str,
        writer: str,
        batch: int,
        options: dict[str, str] | None = None,
        rows: int = ROWS_PER_BATCH,
    ) -> str:
        """Append one batch as ``writer`` (its first ``rows`` rows), with the write's ``options``
        (``txnAppId``, ``txnVersion``): ``success`` or what Delta raised (:func:`first_line`)."""
        return self.call(
            "append", name=name, writer=writer, batch=batch, options=options or {}, rows=rows
        )["told"]

    def count(self, name: str) -> int:
        """The rows of ``default.<name>`` that a reader by name sees now."""
        return self.call("count", name=name)["rows"]

    def close(self) -> None:
        """End the job (its JVM with it)."""
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._answers.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- the driver process ------------------------------------------------------------------------------


def execute(spark, command: dict) -> dict:
    """One command, run in the job's session: its answer."""
    from helpers.catalog import tables

    kind = command["command"]
    if kind == "set":
        if command["value"] is None:
            spark.conf.unset(command["key"])
        else:
            spark.conf.set(command["key"], command["value"])
        return {}
    if kind == "open":
        tables.forget(spark, command["name"])
        tables.open_table(spark, command["name"], COLUMNS, command["location"])
        return {}
    if kind == "count":
        return {"rows": spark.table(f"{SCHEMA}.{command['name']}").count()}
    if kind == "append":
        rows = batch_rows(command["writer"], command["batch"])[: command["rows"]]
        frame = spark.createDataFrame(rows, COLUMNS)
        try:
            frame.writeTo(f"{SCHEMA}.{command['name']}").options(**command["options"]).append()
        except Exception as error:  # noqa: BLE001 - what the job is told is the measurement
            return {"told": first_line(error)}
        return {"told": "success"}
    raise ValueError(f"unknown command {kind!r}: one of set, open, count, append")


def serve(reply_fd: int, uri: str) -> None:
    """The driver process: start the session, refuse if Spark runs as a test, then answer each
    command from stdin until it closes."""
    from helpers.catalog import tables

    answers = os.fdopen(reply_fd, "w")

    def answer(fields: dict) -> None:
        answers.write(json.dumps(fields) + "\n")
        answers.flush()

    spark = tables.spark_session(
        uri, app_name="catalog-job", extra_conf={"spark.master": "local[1]"}
    )
    try:
        refuse_testing(spark)
    except RuntimeError as refusal:
        answer({"refused": str(refusal)})
        return
    answer({"pid": os.getpid(), "testing_flag": testing_flag(spark)})
    for line in sys.stdin:
        try:
            answer(execute(spark, json.loads(line)))
        except Exception as error:  # noqa: BLE001 - the caller is told, then the job goes on
            answer({"refused": f"{type(error).__name__}: {first_line(error)}"})
    spark.stop()


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
