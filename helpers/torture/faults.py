"""The faults a torture run injects: a writer SIGKILLed at a chosen step of its commit, and a
service stopped and started again under the writers.

A :class:`KillGate` stands between one writer process and the store (its own port; the
process's S3, DynamoDB or Azure endpoint points at it). It forwards every request unchanged and
follows the process's commit step by step, as the store sees it: data files written, the commit
staged in a temporary file, a version claimed (and whether the store accepted the claim), the
DynamoDB item marked complete. It starts unarmed; once armed with a :class:`KillTicket` (one
planned kill: a point of :data:`helpers.torture.plan.KILL_POINTS`, :meth:`KillGate.arm`), it
kills the process's whole process group (the Python writer and, for Spark, its JVM) at that
point, if no other gate took the ticket first. The run offers each planned kill to the running
writers' gates at once (:meth:`helpers.torture.protocol_run.ProtocolRun._offer_kill`), one kill
at a time, spread over the run, so kills come under contention and late as well as early, and a
planned kill is made as long as a writer reaches its point again (offered to one writer, a kill at
``claimed`` was lost when that writer's last operations all lost their races):

* ``data-written``: the first request that stages or claims a commit after data files were
  written, before it reaches the store;
* ``staged``: a claim after a staged commit file, before it reaches the store;
* ``claimed``: a claim the store accepted, after the store answered and before the writer hears;
* ``copied``: the request marking the process's own DynamoDB item complete (the version it
  claimed last; not an item it finishes for another writer), before it reaches the store;
* ``before-cleanup`` (:data:`BEFORE_CLEANUP`; not one of the run's kill points): the delete of a
  staged commit file, after it was copied to ``N.json``, before the delete reaches the store.

A killed writer never sees an answer; the request it was sending either reached the store
whole or not at all, which is exactly a crash between two steps.

The gates also keep service restarts out of two spans of a commit (:class:`StopWindows`): a claim
awaiting its answer, where a lost answer makes deltalake commit one operation twice
(``findings/deltalake-lost-commit-response-commits-twice``, shown on purpose by its reproducer),
and, for deltalake's DynamoDB log store, the gap between its copy of a staged commit to ``N.json``
and its delete of the staged file, which deltalake 1.5.1 cannot repair (``helpers/torture/wedge.py``
shows it). No kill point lies in either, and a restart never lands in one by chance. For
deltalake's DynamoDB log store they also hold a reader's repair of a commit its writer is still
making (:mod:`helpers.torture.repair_hold`).
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import threading
import time
from html import unescape
from urllib.parse import parse_qs, unquote, urlparse

from helpers.bench.meter import claim_of_request, classify, header_value
from helpers.delta import delta_log, integrity
from helpers.runs.commitgate import CommitGate
from helpers.runs.gate_log import parse_lock_request


class Killed(ConnectionAbortedError):
    """The gate killed the process whose request this was."""


def step_of(method: str, path: str, headers, body: bytes | None, claim_style: str) -> str | None:
    """Which step of a commit a request is: ``data``, ``staged``, ``claim``, ``mark`` (a lock
    item written other than by a claim: marked complete), or None (reads, and everything else)."""
    if claim_of_request(method, path, headers, body, claim_style) is not None:
        return "claim"
    lock = parse_lock_request(header_value(headers, "x-amz-target") or "", body, "")
    if lock is not None:
        return "mark"
    if classify(method, path, headers, 200, is_claim=False) == "data write":
        return "data"
    key = unquote(urlparse(path).path)
    if method == "PUT" and delta_log.LOG_DIR in key:
        name = key.split(delta_log.LOG_DIR, 1)[1]
        if integrity.KNOWN_LOG_FILES["staged file"].match(name):
            return "staged"
    return None


BEFORE_CLEANUP = "before-cleanup"
"""The kill point between a DynamoDB log store's copy to ``N.json`` and its delete of the staged
file: deltalake 1.5.1 cannot repair a commit stopped there (:mod:`helpers.torture.wedge`)."""

COMMIT_FILE = re.compile(r"\d{20}\.json")


def copy_completion(method: str, path: str, headers) -> bool:
    """A request that finishes copying a staged commit to ``N.json``: a multipart upload's
    completion, or a one-request copy (``x-amz-copy-source``)."""
    parsed = urlparse(path)
    key = unquote(parsed.path)
    if delta_log.LOG_DIR not in key or not COMMIT_FILE.fullmatch(key.rsplit("/", 1)[-1]):
        return False
    query = parsed.query
    if method == "POST" and "uploadId=" in query:
        return True
    return (
        method == "PUT"
        and "partNumber=" not in query
        and header_value(headers, "x-amz-copy-source") is not None
    )


def staged_name(key: str) -> str | None:
    """The staged commit file's name (``_commit_<uuid>.json.tmp``) if ``key`` (a path, URL-quoted
    or not; a DynamoDB item's ``tempPath``) names one, else None."""
    name = unquote(key).rsplit("/", 1)[-1]
    return name if integrity.KNOWN_LOG_FILES["staged file"].match(name) else None


def _is_staged(key: str) -> bool:
    return delta_log.LOG_DIR in key and staged_name(key) is not None


def staged_cleanup(method: str, path: str, body: bytes | None = None) -> bool:
    """The delete of a staged commit file, which ends a copy's window: a ``DELETE`` of it, or a
    multi-object delete (``POST ?delete``, as deltalake 1.5.1 sends it) that names it."""
    parsed = urlparse(path)
    if method == "DELETE":
        return _is_staged(unquote(parsed.path))
    if method == "POST" and "delete" in parse_qs(parsed.query, keep_blank_values=True):
        return any(
            _is_staged(unescape(key))
            for key in re.findall(r"<Key>([^<]*)</Key>", (body or b"").decode("utf-8", "replace"))
        )
    return False


class StopWindows:
    """The spans of the writers' commits in which a service must not stop, gate by gate:

    * a claim awaiting its answer: if the store applied the claim and stopped before answering,
      the writer's HTTP client sends the claim again, the store refuses it (the version now
      exists) and deltalake commits the same operation again at the next version
      (``findings/deltalake-lost-commit-response-commits-twice``);
    * a copy of a staged commit to ``N.json`` awaiting the delete of the staged file, which
      deltalake 1.5.1 cannot repair (:mod:`helpers.torture.wedge`).

    :meth:`closed` holds new windows back and waits until none is open, so a service is stopped
    between commits' steps, never inside one of these. A gate may have several open at once (a
    Spark driver's threads share its gate)."""

    CLAIM, COPY = "claim", "copy"

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held = False
        self._open: collections.Counter = collections.Counter()

    def enter(self, gate: "KillGate", kind: str) -> None:
        """Called by a gate before it forwards a claim or a copy's completion; waits while a stop is being made."""
        with self._changed:
            while self._held:
                self._changed.wait()
            # a claim is left once per enter (the same call); a copy's window is one per gate, closed by its cleanup
            self._open[(id(gate), kind)] = (
                self._open[(id(gate), kind)] + 1 if kind == self.CLAIM else 1
            )

    def leave(self, gate: "KillGate", kind: str) -> None:
        with self._changed:
            key = (id(gate), kind)
            if self._open[key] > 0:
                self._open[key] -= 1
            self._changed.notify_all()

    @contextlib.contextmanager
    def closed(self, alive):
        """While the block runs, no claim awaits its answer and no copy its cleanup, and none
        begins. ``alive(gate_id)``: whether the process behind a gate still runs (a dead one's
        windows are closed for it)."""
        with self._changed:
            self._held = True
            while any(count and alive(gate) for (gate, _), count in self._open.items()):
                self._changed.wait(timeout=0.1)  # to look at the processes again, not a deadline
        try:
            yield
        finally:
            with self._changed:
                self._held = False
                self._changed.notify_all()


class KillTicket:
    """One planned kill, offered to several gates at once: the first gate to reach ``point`` takes
    it and kills its process; to the others it is spent."""

    def __init__(self, point: str) -> None:
        self.point = point
        self.taken_by: KillGate | None = None
        self._lock = threading.Lock()

    def take(self, gate: KillGate) -> bool:
        """Whether ``gate`` may kill: it takes the ticket, or had taken it."""
        with self._lock:
            if self.taken_by is None:
                self.taken_by = gate
            return self.taken_by is gate

    def open_to(self, gate: KillGate) -> bool:
        """Whether ``gate`` may still take the ticket."""
        with self._lock:
            return self.taken_by is None or self.taken_by is gate


class KillGate(CommitGate):
    """A gate that kills its writer process at the point it is armed with (see the module's
    text); unarmed, a plain pass-through."""

    def __init__(
        self,
        upstream: str,
        *,
        claim_style: str,
        windows: StopWindows | None = None,
        repairs=None,
    ) -> None:
        super().__init__(upstream)
        self.claim_style = claim_style
        self.windows = windows
        self.repairs = repairs
        """A :class:`helpers.torture.repair_hold.RepairHold` shared by the protocol's gates, or None."""
        self.ticket: KillTicket | None = None
        self.pgid: int | None = None
        self.killed: dict | None = None
        self._state = threading.Lock()
        self._data_written = self._staged = False
        self._own_claim: int | None = None
        """The version of this process's last accepted claim (its own lock item, for ``copied``)."""
        self._server.handle_error = lambda request, client: (
            None
        )  # a killed writer's dropped connection is expected

    def arm(self, kill: KillTicket | str) -> None:
        """Kill the process at the ticket's point of its commit, from now on (the one under way, if
        it has not passed that step yet), unless another gate armed with the same ticket gets
        there first. A point alone is a ticket for this gate only."""
        with self._state:
            self.ticket = KillTicket(kill) if isinstance(kill, str) else kill

    @property
    def point(self) -> str | None:
        """The point this gate is armed with, while its ticket is open to it."""
        ticket = self.ticket
        return ticket.point if ticket is not None and ticket.open_to(self) else None

    def _kill(self, step: str, path: str) -> None:
        """Kill the process group (once); every later request of it is refused."""
        if self.killed is None:
            self.killed = {
                "point": self.ticket.point,
                "step": step,
                "t": time.time(),
                "path": unquote(urlparse(path).path),
            }
            if self.pgid is not None:
                try:
                    os.killpg(self.pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        raise Killed(f"killed at {self.ticket.point}")

    def _marks_own_item(self, headers, body) -> bool:
        lock = parse_lock_request(header_value(headers, "x-amz-target") or "", body, "")
        return lock is not None and self._own_claim is not None and lock.version == self._own_claim

    def forward(self, method: str, path: str, headers, body):
        if self.repairs is None:
            return self._forward_in_windows(method, path, headers, body)
        self.repairs.before(self, method, path, headers, body)
        status = None
        try:
            answer = self._forward_in_windows(method, path, headers, body)
            status = answer[0]
            return answer
        finally:
            self.repairs.after(self, method, path, headers, body, status)

    def _forward_in_windows(self, method: str, path: str, headers, body):
        if self.windows is None:
            return self._forward(
                method, path, headers, body, step_of(method, path, headers, body, self.claim_style)
            )
        step = step_of(method, path, headers, body, self.claim_style)
        opened = [
            kind
            for kind, opens in (
                (StopWindows.CLAIM, step == "claim"),
                (StopWindows.COPY, copy_completion(method, path, headers)),
            )
            if opens
        ]
        for kind in opened:
            self.windows.enter(self, kind)
        try:
            answer = self._forward(method, path, headers, body, step)
        except BaseException:
            for kind in opened:
                self.windows.leave(self, kind)
            raise
        if StopWindows.CLAIM in opened:
            self.windows.leave(self, StopWindows.CLAIM)
        if (StopWindows.COPY in opened and answer[0] >= 300) or staged_cleanup(method, path, body):
            self.windows.leave(self, StopWindows.COPY)
        return answer

    def _forward(self, method: str, path: str, headers, body, step: str | None):
        with self._state:
            if self.killed is not None:
                raise Killed("the process was killed")
            point = self.point
            if (
                (point == "data-written" and step in ("staged", "claim") and self._data_written)
                or (point == "staged" and step == "claim" and self._staged)
                or (point == "copied" and step == "mark" and self._marks_own_item(headers, body))
                or (point == BEFORE_CLEANUP and staged_cleanup(method, path, body))
            ) and self.ticket.take(self):
                self._kill(step, path)
        answer = super().forward(method, path, headers, body)
        with self._state:
            if step == "data":
                self._data_written = True
            elif step == "staged":
                self._staged = True
            elif step == "claim":
                if answer[0] < 300:
                    self._data_written = self._staged = False
                    self._own_claim = claim_of_request(
                        method, path, headers, body, self.claim_style
                    )[0]
                    if self.point == "claimed" and self.ticket.take(self):
                        self._kill(step, path)
        return answer
