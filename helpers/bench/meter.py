"""The request meter: the commit gate, holding nothing, timing every request a benchmark's writers
send to the emulator, and counting each commit's claims of a version at the store's door.

Why at the door: no library says how many times it tried a commit (deltalake 1.x writes
``num_retries: 0`` into a commit file built before its retries), and Delta Spark keeps no
count at all. What every protocol does send is one *claim* per attempt, which the store accepts
or refuses:

* ``object`` claims (S3 conditional put, Azure): a PUT of ``_delta_log/N.json`` with
  ``If-None-Match: *``, carrying the commit (its commitInfo has the writer's tags), or a
  conditional copy onto ``N.json`` from a staged file whose PUT the meter saw;
* ``dynamodb`` claims (delta-rs's and Spark's DynamoDB log stores): a conditional ``PutItem`` of
  the lock item ``(tablePath, fileName=N.json)`` naming the staged file in ``tempPath``.

Every request is also put in one of :data:`KINDS` with its duration, which is the breakdown of
a commit's time: data writes, log reads, claims (accepted or refused), finishing (staging,
copying, marking the lock item complete) and other. Seconds are summed per request, so a writer's
requests sent in parallel (delta-rs reads the commits it lost to concurrently) add up to more
than the time they took together. The meter is a Python proxy and adds its own
latency to each request; the benchmark measures that too (``helpers.bench.probe``) and runs the
serial limit through the same meter, so ratios compare like with like.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlparse

from helpers.delta import delta_log
from helpers.ground import config
from helpers.runs import audit
from helpers.runs.commitgate import CommitGate, GateError
from helpers.runs.gate_log import parse_lock_request

CLAIM_STYLES = ("object", "dynamodb")
KINDS = ("data write", "log read", "claim accepted", "claim refused", "commit finish", "other")
COPY_SOURCE_HEADERS = ("x-amz-copy-source", "x-ms-copy-source")


def upstream(backend: str) -> str:
    """The emulator a meter for ``backend`` (``s3`` or ``azure``) stands in front of."""
    return config.azurite_endpoint() if backend == "azure" else config.s3_emulator_endpoint()


def column(prefix: str, kind: str) -> str:
    """The results column of a request kind: ``column("s", "log read")`` is ``s_log_read`` (seconds
    per commit), ``column("n", "log read")`` is ``n_log_read`` (requests per commit)."""
    return f"{prefix}_{kind.replace(' ', '_')}"


OUTSIDE_REQUESTS = "s_outside_requests"
"""Seconds per commit a writer spent outside requests (:func:`helpers.bench.stats.outside_requests_per_commit`)."""
BREAKDOWN_COLUMNS = {
    **{kind: column("s", kind) for kind in KINDS},
    "outside requests": OUTSIDE_REQUESTS,
}
"""Where a commit's time goes: part -> the results column holding its seconds per commit."""


@dataclass(frozen=True)
class Request:
    """One request as the meter saw it."""

    t_start: float
    seconds: float
    method: str
    key: str
    """The object's path without the query ('' for DynamoDB, which is ``POST /``)."""
    kind: str
    status: int


@dataclass(frozen=True)
class Claim:
    """One claim of a commit version, attributed to the commit (writer, batch) whose content it carried."""

    version: int | None
    writer: str | None
    batch: int | None
    accepted: bool


def header_value(headers, name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def staged_name(path: str) -> str:
    """The last segment of an object path or URL: the staged file's name, unique per commit attempt
    (``_commit_<uuid>.json.tmp`` for delta-rs, ``N.json.<uuid>`` for Spark's log store)."""
    return unquote(urlparse(path).path).rstrip("/").rsplit("/", 1)[-1]


def decoded(headers, body: bytes | None) -> bytes | None:
    """The payload of a request: as sent, or unwrapped from the AWS SDK's ``aws-chunked`` encoding
    (``<hex size>[;chunk-signature=...]\r\n<data>\r\n`` ... ``0\r\n`` [trailers]), which S3A uses."""
    if not body or "aws-chunked" not in (header_value(headers, "content-encoding") or ""):
        return body
    out, at = bytearray(), 0
    while at < len(body):
        end = body.find(b"\r\n", at)
        if end < 0:
            break
        size = int(body[at:end].split(b";", 1)[0] or b"0", 16)
        if size == 0:
            break
        out += body[end + 2 : end + 2 + size]
        at = end + 2 + size + 2
    return bytes(out)


def tags_of(body: bytes | None) -> tuple[str | None, int | None]:
    """(writer, batch) from a commit's content (its commitInfo tags, read by the auditor); (None, None) if it has none."""
    if not body:
        return None, None
    try:
        commit = audit.parse_commit(-1, body)
    except (ValueError, UnicodeDecodeError):
        return None, None
    return commit.writer_id, commit.batch


def is_log_path(path: str, query: dict) -> bool:
    """Is this request about the table's log: a key under ``_delta_log/``, or a listing whose prefix is?"""
    prefix = (query.get("prefix") or [""])[0]
    return delta_log.LOG_DIR in path or delta_log.LOG_DIR.rstrip("/") in prefix


def claim_of_request(
    method: str, path: str, headers, body: bytes | None, claim_style: str
) -> tuple[int | None, str | None] | None:
    """If this request claims a commit version: (version, the staged file it names, or None when
    it carries the commit itself); else None. A claim is a conditional ``PutItem`` of a lock item
    (``dynamodb``; its ``tempPath`` is the staged file), or a PUT of ``N.json`` with
    ``If-None-Match`` (``object``; a copy names its source)."""
    if claim_style == "dynamodb":
        lock = parse_lock_request(header_value(headers, "x-amz-target") or "", body, "")
        if lock is None or lock.operation != "PutItem" or not lock.conditional:
            return None
        return lock.version, lock.temp_path or ""
    if method != "PUT" or header_value(headers, "if-none-match") is None:
        return None
    version = delta_log.commit_version(unquote(urlparse(path).path))
    if version is None:
        return None
    return version, next((v for h in COPY_SOURCE_HEADERS if (v := header_value(headers, h))), None)


def classify(method: str, target: str, headers, status: int, *, is_claim: bool) -> str:
    """The kind (:data:`KINDS`) of one request; ``is_claim`` says whether the meter counted it as a claim."""
    if is_claim:
        return "claim accepted" if status < 300 else "claim refused"
    parsed = urlparse(target)
    path, query = unquote(parsed.path), parse_qs(parsed.query)
    amz_target = header_value(headers, "x-amz-target") or ""
    if amz_target.startswith("DynamoDB_"):
        operation = amz_target.rsplit(".", 1)[-1]
        if operation in (
            "PutItem",
            "UpdateItem",
            "DeleteItem",
        ):  # a claim is counted above; these mark it complete
            return "commit finish"
        return "log read" if operation in ("GetItem", "Query") else "other"
    log = is_log_path(path, query)
    if method in ("GET", "HEAD"):
        return "log read" if log else "other"
    if method in ("PUT", "POST", "DELETE"):
        if log:
            return "commit finish"
        return (
            "data write" if path.endswith(".parquet") or "comp=block" in parsed.query else "other"
        )
    return "other"


class RequestMeter(CommitGate):
    """A :class:`~helpers.runs.commitgate.CommitGate` that never holds and records every request
    (:attr:`requests`) and every claim (:attr:`claims`). ``upstream``: the emulator (moto by
    default; :func:`upstream` names the one for a backend); ``claim_style``: one of :data:`CLAIM_STYLES`."""

    def __init__(self, upstream: str | None = None, *, claim_style: str = "object") -> None:
        if claim_style not in CLAIM_STYLES:
            raise GateError(f"claim_style must be one of {CLAIM_STYLES}, not {claim_style!r}.")
        super().__init__(upstream)
        self.claim_style = claim_style
        self._meter_lock = threading.Lock()
        self._staged: dict[str, tuple[str | None, int | None]] = {}
        self.requests: list[Request] = []
        self.claims: list[Claim] = []

    def reset(self) -> None:
        """Forget every request and claim (between runs)."""
        with self._meter_lock:
            self._staged.clear()
            self.requests.clear()
            self.claims.clear()
        self.clear_log()

    def forward(self, method: str, path: str, headers, body):
        claim = self._claim_of(method, path, headers, body)
        started = time.time()
        answer = super().forward(method, path, headers, body)
        seconds = time.time() - started
        status = answer[0]
        kind = classify(method, path, headers, status, is_claim=claim is not None)
        key = unquote(urlparse(path).path)
        with self._meter_lock:
            self.requests.append(Request(started, seconds, method, key, kind, status))
            if claim is not None:
                self.claims.append(Claim(claim[0], claim[1], claim[2], status < 300))
            if method == "PUT" and body and delta_log.LOG_DIR in key and status < 300:
                self._staged[staged_name(key)] = tags_of(decoded(headers, body))
        return answer

    def _claim_of(
        self, method: str, path: str, headers, body
    ) -> tuple[int | None, str | None, int | None] | None:
        """(version, writer, batch) if this request claims a commit version, else None."""
        claim = claim_of_request(method, path, headers, body, self.claim_style)
        if claim is None:
            return None
        version, staged = claim
        if staged is None:
            return (version, *tags_of(body))
        with self._meter_lock:
            return (version, *self._staged.get(staged_name(staged), (None, None)))

    # -- what the run reads back ----------------------------------------------------------------

    def attempts(self) -> dict[tuple[str, int], int]:
        """Claims per commit ``{(writer, batch): n}`` (claims whose content carried no tags are left out)."""
        counts: dict[tuple[str, int], int] = {}
        for claim in self.claims:
            if claim.writer is not None and claim.batch is not None:
                counts[(claim.writer, claim.batch)] = counts.get((claim.writer, claim.batch), 0) + 1
        return counts

    def seconds_by_kind(self, since: float = 0.0) -> dict[str, float]:
        """Request seconds summed per kind (every kind present, 0 if none), for requests started at or after ``since``."""
        totals = dict.fromkeys(KINDS, 0.0)
        for request in self.requests:
            if request.t_start >= since:
                totals[request.kind] += request.seconds
        return totals

    def count_by_kind(self, since: float = 0.0) -> dict[str, int]:
        counts = dict.fromkeys(KINDS, 0)
        for request in self.requests:
            if request.t_start >= since:
                counts[request.kind] += 1
        return counts

    def unattributed_claims(self) -> int:
        return sum(1 for c in self.claims if c.writer is None)
