"""The catalog down for minutes while two writers append and a reader reads: what each is told,
when each recovers, and whether anything is committed twice or lost.

    found = outage.measure(folder, outage_s=180, batches_per_writer=4, read_every_s=5)
    print(found.summary()); found.to_dict()     # the record to keep, JSON-able

The catalog is olai-uc-server kept in SQLite (:mod:`helpers.catalog.persistent_server`), so it comes
back with every table and ratified commit, behind :class:`OutageGate` (the catalog's gate,
:class:`~helpers.catalog.failures.CatalogGate`, logging every request with its client). Two Delta
Spark drivers (a process and a JVM each, :func:`helpers.catalog.race.run_drivers`, without Spark's
testing flag) append their batches one after another by name, and rerun an append told an error
after ``rerun_wait_s``, as a job's scheduler reruns a failed task; a third reads the table by name
every ``read_every_s`` (its snapshot's version and rows, or the error). The catalog goes down as
the ``down_at``-th add-commit arrives (so that a writer is caught committing; the request is the
outage's first), for ``outage_s``; then the server starts again on the same SQLite file. Only the
driver that creates the table has the testing flag.

``how="503"`` (the default): the server is stopped and the gate answers every request ``503
Service Unavailable``, as a load balancer in front of a catalog with no healthy server does; a team
reaches a hosted catalog through one, and so every request of the outage reaches the gate and is
counted. ``how="refused"``: the server is stopped and the gate stops listening and closes its
connections, as on a host whose server stopped; the gate sees none of the outage's requests.

By the sources both take one path. Unity Catalog's Java client 0.6.0 tries a call 3 times
(:data:`~helpers.catalog.outage_record.CLIENT_TRIES`) on a 5xx answer or a refused connection (a
``SocketException``), sleeping about 0.5, 1 and 2 s (±50 % at random) after each failed try, the
last included (``HttpRetryHandler``, ``JitterDelayRetryPolicy``); Delta's
``UCDeltaTokenBasedRestClient`` makes anything but 400, 404 and 409 an ``IOException`` (lines
960-990). Then Delta 4.4.0 (tag ``v4.4.0``):

* a commit: ``UCCommitCoordinatorClient.commitImpl`` (storage/.../uccommitcoordinator/, lines
  456-527) sends the same add-commit again after an ``IOException``, up to 15 times, sleeping
  ``min(100 ms << n, 60 s)`` between
  (:func:`~helpers.catalog.outage_record.delta_attempt_starts`): 402.3 s of sleep, about 458 s
  with the client's tries; then ``OptimisticTransaction.doCommitRetryIteratively`` (lines
  2774-2860) commits again with a new staged file, up to ``maxNonConflictCommitAttempts`` = 10
  more times. A commit on its way lands at the first attempt after the catalog is back; its
  writer hears nothing for up to about 84 minutes;
* a read, or an append before its commit: the snapshot asks the catalog once (``getCommits``, a
  ``loadTable`` GET, lines 844-858), which Delta does not retry: an error after the client's tries.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
import threading
import time
from pathlib import Path

from helpers.catalog import failures, log_by_hand, persistent_server, race, rest, tables, writer
from helpers.catalog.outage_record import ADD_COMMIT, LOAD, REPORT, Outage
from helpers.runs.gate_http import AnswerDropped
from helpers.writers.processes import run_at_barrier
from helpers.writers.protocol import spec_process_main

OUTAGE_S = 180.0
HOW = ("503", "refused")
TABLE = "outage"
MODULE = "helpers.catalog.outage"
UNAVAILABLE = (503, "Service Unavailable", [("Content-Type", "text/plain")], b"no server\n")
"""What the gate answers during a ``503`` outage."""


class OutageError(RuntimeError):
    """The outage could not be made as asked (the message says why)."""


def request_kind(method: str, path: str, body: bytes | None) -> tuple[str, int | None]:
    """What a request to the catalog is (an add-commit POST, a POST that only reports what is
    published, a loadTable GET, else its method and path), and the version an add-commit asks."""
    if path.startswith(rest.DELTA) and "/tables/" in path and method in ("GET", "POST"):
        for update in json.loads(body or b"{}").get("updates", []):
            if update.get("action") == "add-commit":
                return ADD_COMMIT, int(update["commit"]["version"])
        return (LOAD if method == "GET" else REPORT), None
    return f"{method} {path.split('?', 1)[0]}", None


class OutageGate(failures.CatalogGate):
    """The catalog's gate, which also logs every request (:attr:`requests`: time, the client's
    pid and its parents', kind, version, status) and takes the catalog down (:meth:`go_down`, or
    by itself once armed, :meth:`down_at`) and back (:meth:`come_back`) on the same SQLite store."""

    def __init__(self, uc) -> None:
        self.requests: list[dict] = []
        self.went_down = threading.Event()
        self.began: float | None = None
        self._armed: tuple[str, int] | None = None
        self._connections: set[socket.socket] = set()
        self._clients: dict[int, list[int]] = {}
        self.down: str | None = None
        super().__init__(uc)

    def down_at(self, how: str, number: int) -> None:
        """Go down ``how`` as the ``number``-th add-commit arrives (it is the outage's first
        request); :attr:`began` is its time, :attr:`went_down` set."""
        self._armed = (how, number)

    def go_down(self, how: str, began: float | None = None) -> None:
        """Take the catalog down ``how`` (:data:`HOW`) now; :attr:`began` (``began``, else now)
        is when the outage began, and :attr:`went_down` is set."""
        if how == "refused":
            self._server.shutdown()  # its serving loop ends: no connection is accepted
            self._server.socket.close()
        self.down, self.began = how, began or time.time()
        self.uc.stop()
        self.went_down.set()
        with self._lock:
            open_ones = list(self._connections) if how == "refused" else []
        for connection in open_ones:  # as the server's own close when it stops
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def come_back(self) -> float:
        """Start the server on the same store and forward again; return when the gate did."""
        self.uc = persistent_server.start_on_store(self.uc.root)
        self.upstream_port = int(self.uc.uri.rsplit(":", 1)[1])
        if self.down == "refused":
            listener = self._server
            listener.socket = socket.socket(listener.address_family, listener.socket_type)
            listener.server_bind()  # the same port: HTTPServer reuses the address
            listener.server_activate()
            threading.Thread(target=listener.serve_forever, args=(0.02,), daemon=True).start()
        self.down = None
        return time.time()

    def forward(self, method, path, headers, body):
        record = {"t": time.time(), "client": self._client()}
        record["kind"], record["version"] = request_kind(method, path, body)
        with self._lock:
            self.requests.append(record)
            arrived = sum(r["kind"] == ADD_COMMIT for r in self.requests)
        if self._armed and record["kind"] == ADD_COMMIT and arrived == self._armed[1]:
            self.go_down(self._armed[0], began=record["t"])
        if self.down:  # 503, or a request already on its way when connections were closed
            record["status"] = UNAVAILABLE[0] if self.down == "503" else None
            if self.down == "503":
                return UNAVAILABLE
            raise AnswerDropped(0, "the catalog is down")  # its connection closes unanswered
        record["status"] = 502  # the gate's own answer if the server gives none
        answer = super().forward(method, path, headers, body)
        record["status"] = answer[0]
        return answer

    def logged(self) -> list[dict]:
        """The requests seen so far (a copy)."""
        with self._lock:
            return [dict(r) for r in self.requests]

    def _client(self) -> list[int]:
        """The pid of the process whose request this thread serves and its parents' (a driver's
        JVM, then its Python), found once per connection (a port's lookup takes tens of ms)."""
        import psutil

        port = self._local.client[1]
        if port not in self._clients:
            pid, parents = self.client_pid(), []
            with contextlib.suppress(psutil.Error):
                parents = [p.pid for p in psutil.Process(pid).parents()[:2]] if pid else []
            self._clients[port] = [pid, *parents]
        return self._clients[port]

    def _handler_class(self):
        base, gate = super()._handler_class(), self

        class Handler(base):
            def setup(self) -> None:  # each open connection, closed when the gate refuses
                super().setup()
                with gate._lock:
                    gate._connections.add(self.connection)

            def finish(self) -> None:
                with gate._lock:
                    gate._connections.discard(self.connection)
                super().finish()

        return Handler


# -- the drivers: python -m helpers.catalog.outage SPEC_JSON_FILE ----------------------------------


def _write(spark, spec: dict, result: dict) -> None:
    """Append each batch by name, rerun after ``rerun_wait_s`` until told success (at most
    ``max_attempts`` times); each attempt recorded with what Delta told it."""
    from helpers.catalog.driver import first_line

    for batch in spec["batches"]:
        for attempt in range(1, spec["max_attempts"] + 1):
            start, told = time.time(), "success"
            frame = spark.createDataFrame(writer.batch_rows(spec["process"], batch), tables.COLUMNS)
            try:
                frame.writeTo(f"{tables.SCHEMA}.{spec['table']}").append()
            except Exception as error:  # noqa: BLE001 - what the writer is told is the measurement
                told = first_line(error)
            done = {"batch": batch, "attempt": attempt, "start": start, "end": time.time()}
            result["appends"].append({**done, "told": told})
            if told == "success":
                break
            time.sleep(spec["rerun_wait_s"])
    tables.wait_published(rest.UnityCatalog(spec["uri"]), spec["table"])


def _read(spark, spec: dict, result: dict) -> None:
    """Read the table by name every ``read_every_s`` until the stop file exists, and once more:
    the rows and the version of the snapshot read, or the error."""
    from helpers.catalog.driver import first_line

    stop, result["reads"] = Path(spec["stop_file"]), []
    while True:
        last, read = stop.exists(), {"start": time.time()}
        try:
            frame = spark.table(f"{tables.SCHEMA}.{spec['table']}")
            read["rows"] = frame.count()
            scan = frame._jdf.queryExecution().analyzed().collectLeaves().apply(0)
            read["version"] = scan.relation().location().version()  # the snapshot it read
        except Exception as error:  # noqa: BLE001 - what the reader sees is the measurement
            read["error"] = first_line(error)
        read["end"] = time.time()
        result["reads"].append(read)
        if last:
            return
        until = time.monotonic() + spec["read_every_s"]
        while time.monotonic() < until and not stop.exists():
            time.sleep(0.1)


def job(spec: dict) -> dict:
    """One driver process (``job``: ``write`` or ``read``): its session without the testing flag
    and the table read once (:func:`~helpers.catalog.writer.table_session`), the barrier, work."""
    result = writer.new_result(spec)
    work = _write if spec["job"] == "write" else _read
    return run_at_barrier(
        spec,
        result,
        lambda: writer.table_session(spec, result, "catalog-outage"),
        lambda spark: work(spark, spec, result),
    )


# -- the outage, beside the drivers ----------------------------------------------------------------


class _Schedule(threading.Thread):
    """Up again ``outage_s`` after the gate went down; the reader is told to stop once every
    writer has its result."""

    def __init__(self, gate: OutageGate, outage_s: float, run_dir: Path, writers) -> None:
        super().__init__(name="catalog-outage", daemon=True)
        self.gate, self.outage_s, self.run_dir = gate, outage_s, run_dir
        self.writers, self.cancelled = list(writers), threading.Event()
        self.ended = self.error = None

    def _writers_done(self) -> bool:
        return all((self.run_dir / f"{w}.result.json").exists() for w in self.writers)

    def run(self) -> None:
        try:
            while not self.gate.went_down.wait(0.2):
                if self.cancelled.is_set() or self._writers_done():
                    return
            # the outage's length: the scenario, not a check
            self.cancelled.wait(max(0.0, self.gate.began + self.outage_s - time.time()))
            self.ended = self.gate.come_back()
            while not (self.cancelled.is_set() or self._writers_done()):
                time.sleep(0.2)
        except BaseException as error:  # noqa: BLE001 - raised again by finish()
            self.error = error
        finally:
            if self.gate.down:
                self.ended = self.gate.come_back()
            (self.run_dir / "stop-reading").touch()

    def finish(self) -> None:
        self.cancelled.set()
        self.join()
        if self.error is not None:
            raise OutageError(f"the outage failed: {self.error!r}") from self.error


def measure(
    root: Path,
    *,
    how: str = "503",
    outage_s: float = OUTAGE_S,
    batches_per_writer: int = 4,
    read_every_s: float = 5.0,
    rerun_wait_s: float = 5.0,
    down_at: int = 3,
    spark=None,
) -> Outage:
    """Two writers and a reader through the catalog, down ``how`` for ``outage_s`` from the
    ``down_at``-th add-commit (the module's text). ``spark`` creates the table, the one
    step with Spark's testing flag (a driver made here if None). ``root`` is emptied first."""
    if how not in HOW:
        raise OutageError(f"how must be one of {HOW}, not {how!r}")
    shutil.rmtree(root, ignore_errors=True)
    run_dir = root / "drivers"
    with OutageGate(persistent_server.start_persistent(root / "uc")) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        spark = spark or tables.spark_session(gate.endpoint, creates_tables=True, app_name="outage")
        spark.conf.set(tables.URI_KEY, gate.endpoint)
        tables.forget(spark, TABLE)
        shared = {"module": MODULE, "table": TABLE, "rerun_wait_s": rerun_wait_s}
        shared["location"] = tables.create(spark, catalog, TABLE, tables.COLUMNS).location
        batches = {f"w{n}": writer.batches_of(n, batches_per_writer) for n in (1, 2)}
        shared["max_attempts"] = 2 + math.ceil(2 * outage_s / rerun_wait_s)  # reruns outlast it
        specs = {w: {**shared, "job": "write", "batches": b} for w, b in batches.items()}
        stop = str(run_dir / "stop-reading")
        specs["reader"] = {**shared, "job": "read", "read_every_s": read_every_s, "stop_file": stop}
        gate.down_at(how, down_at)
        schedule = _Schedule(gate, outage_s, run_dir, batches)
        schedule.start()
        try:
            results, _ = race.run_drivers(catalog, specs, run_dir, "2 writers and a reader")
        finally:
            schedule.finish()
        if gate.began is None:
            raise OutageError(f"the writers ended before they sent {down_at} add-commits")
        expected = {(w, b): writer.ROWS_PER_BATCH for w, bs in batches.items() for b in bs}
        check = race.check_table(catalog, TABLE, expected)
        twice = log_by_hand.added_again(catalog, TABLE)
        return _record(how, outage_s, schedule, gate, results, check, twice)


def _record(how, outage_s, schedule, gate, results, check, twice) -> Outage:
    """The record: times from the outage's start, each request's client named, each problem."""
    zero = gate.began
    names = {r["pid"]: name for name, r in results.items() if r.get("pid")}
    names[os.getpid()] = "workbook"

    def moved(entry: dict, *keys: str) -> dict:
        return {**entry, **{k: round(entry[k] - zero, 3) for k in keys if k in entry}}

    requests = [
        {**moved(r, "t"), "client": next((names[p] for p in r["client"] if p in names), "other")}
        for r in gate.logged()
    ]
    writers = {
        w: [moved(a, "start", "end") for a in results[w].get("appends", [])] for w in ("w1", "w2")
    }
    problems = [
        f"{w}: {r.get('error') or 'no result'}" for w, r in results.items() if not r or r["error"]
    ]
    problems += [
        f"{w}: a batch never told success"
        for w, a in writers.items()
        if a and a[-1]["told"] != "success"
    ]
    problems += check.problems + [f"versions {v} all add {path}" for path, v in twice.items()]
    if check.unpublished:
        problems.append(f"versions {check.unpublished} ratified, not published")
    table = {
        "published": check.published,
        "latest": check.catalog.latest_version,
        "rows": {f"{w}/{b}": n for (w, b), n in sorted(check.rows.items())},
        "added_again": twice,
    }
    reads = [moved(r, "start", "end") for r in results["reader"].get("reads", [])]
    flags = {name: r.get("testing_flag") for name, r in results.items()}
    down_s = round(schedule.ended - zero, 2)
    return Outage(how, outage_s, down_s, writers, reads, requests, flags, table, problems)


if __name__ == "__main__":
    spec_process_main(MODULE, job)
