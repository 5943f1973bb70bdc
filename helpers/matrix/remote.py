"""A conflict-matrix engine in another process: delta-rs of an era the kernel does not import.

The kernel has Delta Spark and deltalake 1.6.6 side by side; deltalake 1.5.1 (the last releases with
the DynamoDB log store) lives in an era's environment of its own. To race it against Delta Spark on
one table, the pair runner (:class:`helpers.matrix.pairs.Runner`, in the Spark process) is given a
:class:`RemoteEngine`: an object with the engine interface (:mod:`helpers.matrix.engines`) whose
every call is one JSON line to a child process and one JSON line back. The child
(``python -m helpers.matrix.remote ENGINE``, started in the era's Python by
:func:`helpers.ground.eras.start_in_era`, as :mod:`helpers.matrix.worker` is) builds the era's engine
(:mod:`helpers.matrix.deltars`) and keeps each snapshot it opens, by number: ``open`` returns the
number, and ``run`` later commits from that snapshot, stale by then. So the discipline of the
matrix holds across the two processes: A commits, then B commits from its older snapshot.

Paths: the runner names S3 tables ``s3://``; the child gives them to delta-rs as ``s3a://``, the
scheme Delta Spark uses, so both DynamoDB log stores key the table's items by the same
``tablePath`` (:func:`for_delta_rs`). The child reads its S3 and lock settings from its environment
(``AWS_*``, ``DELTA_DYNAMO_TABLE_NAME``: :func:`helpers.stores.tables.s3_storage_options`).

:meth:`RemoteEngine.read` reads in this process, with the kernel's deltalake, as every table of the
matrix is read (one reader for the oracle).
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import threading
import traceback

CALL_TIMEOUT_S = 600.0
"""A bound against a hung child only (a call takes well under a second to a few seconds)."""


def for_delta_rs(path: str) -> str:
    """``s3a://bucket/prefix`` for ``s3://bucket/prefix`` (Delta Spark's scheme); a local path as it is."""
    return "s3a://" + path.removeprefix("s3://") if path.startswith("s3://") else path


class RemoteError(RuntimeError):
    """The child died, answered nothing, or failed outside an operation."""


def _error_type(name: str) -> type:
    """An exception class named as the child's (``CommitFailedError``...), for the oracle's records."""
    return type(name, (RuntimeError,), {})


class RemoteEngine:
    """The engine ``name`` (an era of :data:`helpers.matrix.engines.ENGINES`) in a child process."""

    def __init__(
        self,
        name: str,
        era: str | None = None,
        env: dict[str, str] | None = None,
        python: str | None = None,
    ) -> None:
        """``python``: an interpreter outside the eras (a release measured once, not pinned here)."""
        from helpers.ground import config, eras

        self.name = name
        self._lock = threading.Lock()
        args = ["-u", "-m", "helpers.matrix.remote", name]
        pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "text": True}
        if python:
            self._process = subprocess.Popen(
                [python, *args],
                cwd=config.ROOT,
                env=config.without_telemetry(env),
                stderr=subprocess.DEVNULL,
                **pipes,
            )
        else:
            self._process = eras.start_in_era(
                era or name, args, stderr=subprocess.DEVNULL, env=env, **pipes
            )
        self.version = self._call("version")

    def _call(self, method: str, *args):
        with self._lock:
            if self._process.poll() is not None:
                raise RemoteError(f"{self.name}: its process ended ({self._process.returncode})")
            self._process.stdin.write(json.dumps({"call": method, "args": args}) + "\n")
            self._process.stdin.flush()
            while True:
                line = self._process.stdout.readline()
                if not line:
                    raise RemoteError(f"{self.name}: its process ended during {method}")
                if line.startswith("{"):
                    break
        answer = json.loads(line)
        if "raised" in answer:
            raise _error_type(answer["raised"]["class"])(answer["raised"]["message"])
        if "broken" in answer:
            raise RemoteError(f"{self.name}: {method}: {answer['broken']}")
        return answer["result"]

    # -- the engine interface -----------------------------------------------------------------
    def unavailable(self, op: str) -> str | None:
        return self._call("unavailable", op)

    def create_base(self, path: str) -> None:
        self._call("create_base", path)

    def open(self, path: str) -> int:
        """The number of a snapshot the child loaded now."""
        return self._call("open", path)

    def run(self, op: str, handle, path: str) -> str | None:
        """``op`` from snapshot ``handle`` (one the child opened; a fresh one if None)."""
        return self._call("run", op, handle, path)

    def read(self, path: str) -> dict:
        from helpers.matrix.deltars import read_table

        return read_table(path)

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.stdin.close()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


# -- the child ------------------------------------------------------------------------------------


def serve(name: str, lines=sys.stdin, out=sys.stdout) -> int:
    """Answer calls (one JSON line each) until stdin closes. An operation's exception is an answer
    (``raised``: the oracle's refusal); anything else that goes wrong is ``broken``."""
    import deltalake

    from helpers.matrix import deltars

    engine = deltars.engine(name)
    handles: dict[int, object] = {}
    numbers = itertools.count(1)

    def call(method: str, args: list):
        if method == "version":
            return deltalake.__version__
        if method == "unavailable":
            return engine.unavailable(args[0])
        if method == "create_base":
            return engine.create_base(for_delta_rs(args[0]))
        if method == "open":
            number = next(numbers)
            handles[number] = engine.open(for_delta_rs(args[0]))
            return number
        if method == "run":
            op, number, path = args
            where = for_delta_rs(path)
            handle = handles.pop(number) if number is not None else engine.open(where)
            return engine.run(op, handle, where)
        raise ValueError(f"unknown call {method!r}")

    for line in lines:
        request = json.loads(line)
        try:
            answer = {"result": call(request["call"], request.get("args", []))}
        except Exception as error:  # noqa: BLE001  (a refusal is a result; the parent decides)
            if request["call"] in ("run", "create_base"):
                answer = {"raised": {"class": type(error).__name__, "message": str(error)}}
            else:
                answer = {
                    "broken": f"{type(error).__name__}: {error} {traceback.format_exc()[-800:]}"
                }
        print(json.dumps(answer, default=str), file=out, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1]))
