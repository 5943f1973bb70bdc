"""Keeping a repair of a live commit out of the torture run (deltalake 1.5.1's DynamoDB log store).

deltalake 1.5.1 moves a claimed commit to ``N.json`` in three steps: a conditional copy of its
staged file, the staged file's delete, the lock item marked complete. A process that reads the
lock table in between finds the item incomplete and "repairs" it with the same copy. When that
copy lands first, the writer's own copy is refused: it reports a failure for an append that is
in the log (``findings/deltalake-dynamodb-repair-of-a-live-commit``, notebook 12's Appendix C),
and if the staged file disappears under its retries, it claims ``N+1`` with it and leaves a
complete item with no ``N+1.json``, which fails every later commit
(``findings/deltalake-dynamodb-reclaim-after-a-refused-copy``). Their reproducers show both on
purpose; in a torture run they struck by chance, about once in seven runs of notebook 12 on a
loaded machine, and took the protocol's table out of service for the rest of the run.

The torture measures what kills and restarts do to a commit, so a :class:`RepairHold` holds
another process's copy of a staged file while the writer that staged it is still moving it
(from its claim until its next request that is not part of the move: the copy to ``N.json``,
the staged file's delete, the item's mark, whatever their answers), and lets it go at once when
that writer dies. A repair of a killed writer's commit, the recovery the kill points test, is
therefore never held for long. The gates count what they held (:attr:`RepairHold.held`).

    hold = RepairHold(alive=lambda gate: ...)   # shared by a protocol's gates
    hold.before(gate, method, path, headers, body)   # may wait
    hold.after(gate, method, path, headers, body, status)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlparse

from helpers.bench.meter import COPY_SOURCE_HEADERS, claim_of_request, header_value
from helpers.delta import delta_log
from helpers.runs.gate_log import parse_lock_request
from helpers.torture.faults import staged_cleanup, staged_name

RECHECK_S = 0.1
"""How often a held copy looks again whether its writer still lives (not a deadline: it waits
for as long as the writer moves its commit)."""


@dataclass(frozen=True)
class _Move:
    staged: str
    """The staged file's name (``_commit_<uuid>.json.tmp``)."""
    version: int


def copy_source(headers) -> str | None:
    """The staged file a copy request reads from, or None for any other request."""
    source = next((v for h in COPY_SOURCE_HEADERS if (v := header_value(headers, h))), None)
    return staged_name(urlparse(source).path) if source else None


def _marks(move: _Move, headers, body) -> bool:
    """Does the request mark the move's lock item complete?"""
    lock = parse_lock_request(header_value(headers, "x-amz-target") or "", body, "")
    return lock is not None and lock.operation == "UpdateItem" and lock.version == move.version


class RepairHold:
    """The moves under way, gate by gate, and the copies of their staged files held meanwhile."""

    def __init__(self, alive: Callable[[object], bool]) -> None:
        self.alive = alive
        """Whether the process behind a gate still runs."""
        self.held = 0
        """Copies held until their writer's move was over."""
        self._changed = threading.Condition()
        self._moves: dict[int, _Move] = {}
        self._owners: dict[str, object] = {}

    def _end(self, gate) -> None:
        move = self._moves.pop(id(gate), None)
        if move is not None:
            self._owners.pop(move.staged, None)
            self._changed.notify_all()

    @staticmethod
    def _part_of(move: _Move, method: str, path: str, headers, body) -> bool:
        key = unquote(urlparse(path).path)
        if key.rsplit("/", 1)[-1] == delta_log.commit_file_name(move.version):
            return True  # the copy to N.json: its upload, its part, its completion or abort
        return staged_cleanup(method, path, body) or _marks(move, headers, body)

    def before(self, gate, method: str, path: str, headers, body) -> None:
        """Called by a gate before it forwards a request: ends its move if the request is not part
        of it, starts one at a claim, and waits while the request copies another live writer's
        staged file that it is still moving."""
        with self._changed:
            move = self._moves.get(id(gate))
            if move is not None and not self._part_of(move, method, path, headers, body):
                self._end(gate)
            claim = claim_of_request(method, path, headers, body, "dynamodb")
            staged = staged_name(claim[1]) if claim and claim[0] is not None and claim[1] else None
            if staged is not None:
                self._end(gate)
                self._moves[id(gate)] = _Move(staged, claim[0])
                self._owners[staged] = gate
            source = copy_source(headers)
            counted = False
            while source is not None:
                owner = self._owners.get(source)
                if owner is None or owner is gate or not self.alive(owner):
                    break
                if not counted:
                    self.held, counted = self.held + 1, True
                self._changed.wait(timeout=RECHECK_S)

    def after(self, gate, method: str, path: str, headers, body, status: int | None) -> None:
        """Called by a gate once a request was answered (``status`` None: it never was): a
        refused claim starts no move, and the mark of the item ends one."""
        with self._changed:
            move = self._moves.get(id(gate))
            if move is None:
                return
            claim = claim_of_request(method, path, headers, body, "dynamodb")
            if claim is not None and (status is None or status >= 300):
                self._end(gate)
                return
            if _marks(move, headers, body):
                self._end(gate)
