"""The lost-answer gate: a :class:`~helpers.runs.commitgate.CommitGate` that forwards every request
unchanged, except one per table: the first commit request of the chosen version (1, the first
commit after the table was created) that the store *accepts*. That one reaches the store, which
applies it; then the gate closes the writer's connection without passing the answer on
(:class:`~helpers.runs.gate_http.AnswerDropped`), as a dropped connection, a restarted proxy or a
timeout does. What the writer's client does next (send it again, give up) is its own business.

The commit request is one of :data:`KINDS`:

* ``conditional-put``: a PUT of ``_delta_log/N.json`` with ``If-None-Match`` (S3 and Azure; a
  conditional copy of a staged file counts);
* ``put``: an unconditional PUT of ``_delta_log/N.json`` (Delta Spark's default S3 log store, and
  the S3DynamoDBLogStore's copy of its staged commit to ``N.json``);
* ``dynamodb-claim``: a conditional ``PutItem`` of the lock item of ``N.json``: how deltalake's
  DynamoDB log store and Delta Spark's S3DynamoDBLogStore claim a version.

Usage::

    with LostAnswerGate("conditional-put", upstream=...) as gate:
        options = gate.route(tables.s3_storage_options())
        ...                                  # writers commit through the gate
        gate.dropped                         # [(table key, version)], in order
"""

from __future__ import annotations

import threading
from urllib.parse import unquote, urlparse

from helpers.bench.meter import claim_of_request, header_value
from helpers.delta import delta_log
from helpers.runs.commitgate import CommitGate, GateError
from helpers.runs.gate_http import AnswerDropped
from helpers.runs.gate_log import parse_lock_request

KINDS = ("conditional-put", "put", "dynamodb-claim")
FIRST_APPEND = 1
"""The version whose answer is lost: the first commit after the table's creation (version 0)."""


def table_of_commit_path(path: str) -> str:
    """The table a commit file's request path names: everything before ``/_delta_log/``."""
    return unquote(urlparse(path).path).strip("/").split("/" + delta_log.LOG_DIR.rstrip("/"))[0]


class LostAnswerGate(CommitGate):
    """Drops the answer to the first accepted ``kind`` request of version ``version`` per table."""

    def __init__(self, kind: str, upstream: str | None = None, *, version: int = FIRST_APPEND):
        if kind not in KINDS:
            raise GateError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}.")
        super().__init__(upstream)
        self.kind, self.version = kind, version
        self._dropping = threading.Lock()
        self.dropped: list[tuple[str, int]] = []
        """(table, version) of every answer dropped, in order: the table as the request named it
        (``bucket/path`` on S3, ``account/container/path`` on Azure, the lock item's ``tablePath``)."""

    def _commit(self, method: str, path: str, headers, body) -> tuple[str, int] | None:
        """(table, version) if this request is a commit request of the gate's kind, else None."""
        if self.kind == "dynamodb-claim":
            lock = parse_lock_request(header_value(headers, "x-amz-target") or "", body, "")
            if lock is None or lock.operation != "PutItem" or not lock.conditional:
                return None
            return lock.table_path.rstrip("/"), lock.version
        if self.kind == "conditional-put":
            claim = claim_of_request(method, path, headers, body, "object")
            return None if claim is None else (table_of_commit_path(path), claim[0])
        version = delta_log.commit_version(unquote(urlparse(path).path))
        if method != "PUT" or version is None or header_value(headers, "if-none-match"):
            return None
        return table_of_commit_path(path), version

    def forward(self, method: str, path: str, headers, body):
        answer = super().forward(method, path, headers, body)
        commit = self._commit(method, path, headers, body)
        if commit is None or commit[1] != self.version or answer[0] >= 300:
            return answer
        with self._dropping:
            if commit in self.dropped:
                return answer
            self.dropped.append(commit)
        raise AnswerDropped(answer[0], f"the store accepted {path}; its answer was dropped")
