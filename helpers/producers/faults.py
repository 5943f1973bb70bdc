"""The committer's faults, injected between it and the store: a lost answer, and a kill mid-commit.

* :class:`LostAnswerGate`: a :class:`~helpers.runs.commitgate.CommitGate` that, once armed, lets the next
  commit claim (the conditional write of ``_delta_log/N.json``) reach the store, and when the store
  has accepted it, answers the committer ``502 Bad Gateway`` instead of the store's answer: what a
  proxy or load balancer that lost the store's answer says. The committer's HTTP client sends the
  claim again, the store refuses it (the version exists), and deltalake takes its own commit for
  another writer's (``findings/deltalake-lost-commit-response-commits-twice``, notebook 12 appendix B).
* The kill mid-commit is the torture run's :class:`helpers.torture.faults.KillGate` armed at
  ``claimed``: the store accepted the commit, the committer is SIGKILLed before it hears.
"""

from __future__ import annotations

import threading

from helpers.bench.meter import claim_of_request
from helpers.runs.commitgate import CommitGate
from helpers.torture.faults import KillGate

__all__ = ["KillGate", "LostAnswerGate", "LostAnswer"]


class LostAnswer(ConnectionAbortedError):
    """The gate dropped the store's answer to an accepted claim (the committer is told 502)."""


class LostAnswerGate(CommitGate):
    """A pass-through gate that drops the answer to the next ``count`` accepted commit claims once armed."""

    def __init__(self, upstream: str | None = None) -> None:
        super().__init__(upstream)
        self._armed = 0
        self._state = threading.Lock()
        self.dropped: list[str] = []
        """The paths whose answer was dropped, in order."""
        self._server.handle_error = lambda request, client: None

    def drop_next(self, count: int = 1) -> None:
        with self._state:
            self._armed = count

    def forward(self, method: str, path: str, headers, body):
        answer = super().forward(method, path, headers, body)
        if answer[0] < 300 and claim_of_request(method, path, headers, body, "object") is not None:
            with self._state:
                if self._armed > 0:
                    self._armed -= 1
                    self.dropped.append(path)
                    raise LostAnswer(f"the store accepted {path}; its answer was dropped")
        return answer
