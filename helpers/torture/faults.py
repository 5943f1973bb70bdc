"""The faults a torture run injects: a writer SIGKILLed at a chosen step of its commit, and a
service stopped and started again under the writers.

A :class:`KillGate` stands between one writer process and the store (its own port; the
process's S3, DynamoDB or Azure endpoint points at it). It forwards every request unchanged and
follows the process's commit step by step, as the store sees it: data files written, the commit
staged in a temporary file, a version claimed (and whether the store accepted the claim), the
DynamoDB item marked complete. It starts unarmed; once armed with a point
(:data:`helpers.torture.plan.KILL_POINTS`, :meth:`KillGate.arm`: the run arms one gate at a time,
spread over the run, so kills come under contention and late as well as early), it kills the
process's whole process group (the Python writer and, for Spark, its JVM) at that point:

* ``data-written``: the first request that stages or claims a commit after data files were
  written, before it reaches the store;
* ``staged``: a claim after a staged commit file, before it reaches the store;
* ``claimed``: a claim the store accepted, after the store answered and before the writer hears;
* ``copied``: the request marking the process's own DynamoDB item complete (the version it
  claimed last; not an item it finishes for another writer), before it reaches the store.

A killed writer never sees an answer; the request it was sending either reached the store
whole or not at all, which is exactly a crash between two steps.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from urllib.parse import unquote, urlparse

from helpers import delta_log, integrity
from helpers.bench.meter import claim_of_request, classify, header_value
from helpers.commitgate import CommitGate, parse_lock_request


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


class KillGate(CommitGate):
    """A gate that kills its writer process at the point it is armed with (see the module's
    text); unarmed, a plain pass-through."""

    def __init__(self, upstream: str, *, claim_style: str) -> None:
        super().__init__(upstream)
        self.claim_style = claim_style
        self.point: str | None = None
        self.pgid: int | None = None
        self.killed: dict | None = None
        self._state = threading.Lock()
        self._data_written = self._staged = False
        self._own_claim: int | None = None
        """The version of this process's last accepted claim (its own lock item, for ``copied``)."""
        self._server.handle_error = lambda request, client: None  # a killed writer's dropped connection is expected

    def arm(self, point: str) -> None:
        """Kill the process at ``point`` of its commit, from now on (the one under way, if it has
        not passed that step yet)."""
        with self._state:
            self.point = point

    def _kill(self, step: str, path: str) -> None:
        """Kill the process group (once); every later request of it is refused."""
        if self.killed is None:
            self.killed = {"point": self.point, "step": step, "t": time.time(), "path": unquote(urlparse(path).path)}
            if self.pgid is not None:
                try:
                    os.killpg(self.pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        raise Killed(f"killed at {self.point}")

    def _marks_own_item(self, headers, body) -> bool:
        lock = parse_lock_request(header_value(headers, "x-amz-target") or "", body, "")
        return lock is not None and self._own_claim is not None and lock.version == self._own_claim

    def forward(self, method: str, path: str, headers, body):
        step = step_of(method, path, headers, body, self.claim_style)
        with self._state:
            if self.killed is not None:
                raise Killed("the process was killed")
            armed = self.point is not None
            if armed and ((self.point == "data-written" and step in ("staged", "claim") and self._data_written)
                          or (self.point == "staged" and step == "claim" and self._staged)
                          or (self.point == "copied" and step == "mark" and self._marks_own_item(headers, body))):
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
                    self._own_claim = claim_of_request(method, path, headers, body, self.claim_style)[0]
                    if armed and self.point == "claimed":
                        self._kill(step, path)
        return answer

