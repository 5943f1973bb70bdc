"""The commit gate: a pass-through proxy in front of the S3 emulator that can hold back the PUTs
of Delta commit files, so that a race a fast loopback network makes rare happens on every run.

(Over 400 lines: the gate's holding, plus its two logs, of commit-file requests and of DynamoDB
lock-item writes, read at the one place that sees every request. Its HTTP side, the server and the
request handler, is :mod:`helpers.runs.gate_http`; the records it logs are
:mod:`helpers.runs.gate_log`.)

Two writers lose a commit when both check that ``_delta_log/N.json`` is free before either has
written it. On loopback the window between the check and the write is a few milliseconds, so
whether two Spark drivers collide is luck. The gate widens that window the way a slow network or
a paused JVM would, without touching any writer or the store:

* every request goes to the emulator unchanged (S3 and DynamoDB alike: moto serves both on one
  port), and every answer comes back unchanged;
* while the gate is armed with :meth:`CommitGate.hold`, a PUT (or copy) of a commit file
  ``.../_delta_log/<20 digits>.json`` waits until ``together`` PUTs of that same key are waiting,
  or ``max_wait_s`` has passed since the first of them arrived; then they go on to the emulator
  one at a time, in the chosen ``order``, each after the previous one was answered.

It decides nothing: which PUT the store accepts, and what it answers, is the emulator's business.
The gate also logs every HEAD and PUT of a commit file (key, client, status, whether the PUT
was conditional, with ``If-None-Match``, or a copy, how long it was held): the evidence for "who
checked, who wrote, and what the store answered". Options routed with ``dynamodb=True`` send the
DynamoDB log store's requests through the gate too, and it logs each write to a lock item
(``PutItem`` / ``UpdateItem`` / ``DeleteItem``: the item's ``tablePath``, ``fileName`` and
``tempPath``, whether it was conditional, and what DynamoDB answered): every claim of a commit
version, including the refused ones, which leave no item behind (:meth:`CommitGate.lock_requests`).

Usage::

    with CommitGate() as gate:                    # listens on 127.0.0.1:<free port>
        options = gate.route(s3_storage_options())  # the same options, S3 endpoint = the gate
        gate.hold(together=4)                       # the next commit PUTs meet at the gate
        run = run_writers(uri, options, n=4, engine="spark")
        gate.commit_requests(uri)                   # what reached the store, in order
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from urllib.parse import urlparse

from helpers.delta import delta_log
from helpers.ground import config
from helpers.runs import gate_http
from helpers.runs.gate_log import CommitRequest, LockRequest

ORDERS = ("arrival", "conditional-first", "unconditional-first")
SHUTDOWN_POLL_S = 0.02
"""How often the serving thread checks for close() (the standard 0.5 s made every close wait that long)."""


class GateError(RuntimeError):
    """The gate cannot do what was asked; the message says what to do."""


def staged_commit_writers(table_uri: str) -> dict[str, str]:
    """Which writer staged each temporary commit file of a table: ``{tempPath: writer id}``, with
    the path as a DynamoDB log store's claim names it (relative to ``_delta_log/``), and the writer
    from the ``workbook.writer`` tag in the file's own commitInfo. The log store deletes a staged
    file once its commit is complete, so the files are read from the bucket's object versions;
    raises GateError for a store that keeps none."""
    from helpers.delta.delta_log import WRITER_TAG, commit_tags
    from helpers.stores import storage

    found = storage.table_store(table_uri).versions(delta_log.LOG_DIR)
    if found is None:
        raise GateError(
            f"{table_uri} keeps no object versions, so its deleted staged commits cannot be read: "
            "use a bucket with versioning on (storage.ensure_bucket() makes one)."
        )
    writers = {}
    for version in found:
        if delta_log.commit_version(version.key) is not None or not version.key.startswith(
            delta_log.LOG_DIR
        ):
            continue
        try:
            writer = commit_tags(delta_log.read_commit(version.body)[0]).get(WRITER_TAG)
        except ValueError:  # a checkpoint, a checksum: not a staged commit
            continue
        if writer:
            writers[version.key[len(delta_log.LOG_DIR) :]] = writer
    return writers


def claims_per_writer(lock_requests, writer_of_staged: dict[str, str]):
    """Each writer's claims of a commit version, from :meth:`CommitGate.lock_requests`.

    A log store's writer claims version after version with the same staged commit file
    (``tempPath``) until DynamoDB accepts one. Each claim is attributed to the writer whose tag that
    file carries (``writer_of_staged``, from :func:`staged_commit_writers`): what the writer
    staged, not what the log says, so comparing ``won`` with the log's commits can fail. Returns a
    DataFrame indexed by writer id: ``claims`` (PutItems sent), ``refused``, ``first_claimed``
    (version) and ``won`` (the version of its accepted claim; <NA> if none); claims whose staged
    file is unknown are under writer id ``None``."""
    import pandas as pd

    puts = lock_requests[lock_requests["operation"] == "PutItem"]
    claims = puts.assign(
        writer_id=puts["temp_path"].map(writer_of_staged).astype(object),
        refused=puts["status"] != 200,
    )
    claims["writer_id"] = claims["writer_id"].where(claims["writer_id"].notna(), "None")
    claims["accepted"] = claims["version"].where(~claims["refused"])
    frame = claims.groupby("writer_id").agg(
        claims=("version", "size"),
        refused=("refused", "sum"),
        first_claimed=("version", "min"),
        won=("accepted", "max"),
    )
    frame["refused"] = frame["refused"].astype(int)
    frame["won"] = frame["won"].astype("Int64")
    return (
        frame if len(frame) else pd.DataFrame(columns=["claims", "refused", "first_claimed", "won"])
    )


@dataclass
class _Waiting:
    request: CommitRequest
    turn: threading.Event
    done: threading.Event


class _Group:
    """The commit PUTs of one key that are waiting together."""

    def __init__(self, key: str, first: float) -> None:
        self.key = key
        self.first = first
        self.waiting: list[_Waiting] = []
        self.released = False


def _http_target(endpoint: str) -> tuple[str, int]:
    target = urlparse(endpoint)
    if target.scheme != "http" or not target.hostname:
        raise GateError(f"The gate forwards to an http:// endpoint, not {endpoint!r}.")
    return target.hostname, target.port or 80


class CommitGate:
    """A proxy on ``127.0.0.1`` in front of the S3 emulator (see the module's text)."""

    def __init__(
        self, upstream: str | None = None, *, port: int = 0, dynamodb_upstream: str | None = None
    ) -> None:
        """``upstream``: the S3 emulator (default: the one ``WORKBOOK_S3_SERVER`` names);
        ``dynamodb_upstream``: where DynamoDB requests routed through the gate go (default: moto,
        which is ``upstream`` itself unless another server plays S3)."""
        if config.profile() != "local":
            raise GateError(
                "The commit gate sits in front of the local S3 emulator (plain http). With WORKBOOK_PROFILE=cloud "
                "there is no emulator to put it in front of; run the notebook's races on the local profile."
            )
        self.upstream_host, self.upstream_port = _http_target(
            upstream or config.s3_emulator_endpoint()
        )
        if dynamodb_upstream is None:  # moto plays DynamoDB, and S3 too unless another server does
            dynamodb_upstream = (
                (upstream or config.moto_endpoint())
                if config.s3_server() == "moto"
                else config.moto_endpoint()
            )
        self.dynamodb_host, self.dynamodb_port = _http_target(dynamodb_upstream)
        self._lock = threading.Lock()
        self._groups: dict[str, _Group] = {}
        self._requests: list[CommitRequest] = []
        self._lock_requests: list[LockRequest] = []
        self._together = 0
        self._max_wait_s = 0.0
        self._order = "arrival"
        self._version: int | None = None
        self._local = threading.local()
        try:
            self._server = gate_http.Server((config.LOCALHOST, port), self._handler_class())
        except OSError as error:
            raise GateError(
                f"The gate cannot listen on {config.LOCALHOST}:{port}: {error}. Pick another port (0 = any free one)."
            ) from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_S},
            name="commit-gate",
            daemon=True,
        )
        self._thread.start()

    # -- the public side ---------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        return f"http://{config.LOCALHOST}:{self._server.server_address[1]}"

    def route(self, storage_options: dict[str, str], *, dynamodb: bool = False) -> dict[str, str]:
        """The same storage options with the S3 endpoint (``AWS_ENDPOINT_URL``) pointed at the gate.
        DynamoDB keeps its own endpoint, unless ``dynamodb=True``: then its requests go through the
        gate as well, which logs the lock-item writes (:meth:`lock_requests`) and holds nothing."""
        if "AWS_ENDPOINT_URL" not in storage_options:
            raise GateError(
                "These storage options name no AWS_ENDPOINT_URL; build them with helpers.stores.tables.s3_storage_options()."
            )
        routed = {**storage_options, "AWS_ENDPOINT_URL": self.endpoint}
        if dynamodb:
            if "AWS_ENDPOINT_URL_DYNAMODB" not in storage_options:
                raise GateError(
                    "These storage options name no AWS_ENDPOINT_URL_DYNAMODB: build them with "
                    "helpers.stores.tables.s3_storage_options(locking_provider='dynamodb') to route the lock through the gate."
                )
            routed["AWS_ENDPOINT_URL_DYNAMODB"] = self.endpoint
        return routed

    def route_azure(self, storage_options: dict[str, str]) -> dict[str, str]:
        """Azure options with the blob endpoint pointed at the gate (Azurite's account path kept)."""
        if "azure_storage_endpoint" not in storage_options:
            raise GateError(
                "These Azure options name no azure_storage_endpoint; build them with helpers.stores.tables.azure_storage_options()."
            )
        account = urlparse(storage_options["azure_storage_endpoint"]).path
        return {**storage_options, "azure_storage_endpoint": self.endpoint + account}

    def hold(
        self,
        together: int,
        *,
        max_wait_s: float = 2.0,
        order: str = "arrival",
        version: int | None = None,
    ) -> None:
        """Arm the gate: hold each commit-file PUT until ``together`` PUTs of its key wait, or
        ``max_wait_s`` passed since the first; then send them on one by one in ``order``
        (``arrival``, ``conditional-first`` or ``unconditional-first``). ``version``: hold only
        the PUTs of that commit version (a retry at the next version then passes straight on)."""
        if isinstance(together, bool) or not isinstance(together, int) or together < 1:
            raise GateError(f"together must be a whole number >= 1, not {together!r}.")
        if order not in ORDERS:
            raise GateError(f"Unknown order {order!r}; choose from {', '.join(ORDERS)}.")
        if not max_wait_s > 0:
            raise GateError(f"max_wait_s must be positive, not {max_wait_s!r}.")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or version < 0
        ):
            raise GateError(
                f"version must be a commit version >= 0 or None (all), not {version!r}."
            )
        with self._lock:
            self._together, self._max_wait_s, self._order, self._version = (
                together,
                float(max_wait_s),
                order,
                version,
            )

    def open(self) -> None:
        """Disarm the gate: commit PUTs pass straight through again (those waiting are released)."""
        with self._lock:
            self._together = 0
            groups = [g for g in self._groups.values() if not g.released]
        for group in groups:
            self._release(group, "open")

    def waiting(self) -> int:
        """How many commit PUTs the gate holds right now (for stepping a race one writer at a time)."""
        with self._lock:
            return sum(len(g.waiting) for g in self._groups.values() if not g.released)

    def clear_log(self) -> None:
        with self._lock:
            self._requests.clear()
            self._lock_requests.clear()

    def lock_requests(self, table_uri: str | None = None):
        """The lock-item writes seen so far (of one table, if given, whichever trailing slash or
        ``s3``/``s3a`` scheme the log store wrote) as a pandas DataFrame in arrival order: operation,
        version, file_name, temp_path, conditional, status, error, client, lock_table, table_path."""
        import pandas as pd

        def key(path: str) -> str:
            return urlparse(path).netloc + "/" + urlparse(path).path.strip("/")

        with self._lock:
            chosen = [
                r
                for r in self._lock_requests
                if table_uri is None or key(r.table_path) == key(table_uri)
            ]
        rows = [
            {
                "operation": r.operation,
                "version": r.version,
                **{k: v for k, v in asdict(r).items() if k != "operation"},
            }
            for r in chosen
        ]
        columns = [
            "operation",
            "version",
            "file_name",
            "temp_path",
            "conditional",
            "status",
            "error",
            "client",
            "lock_table",
            "table_path",
        ]
        frame = pd.DataFrame(rows, columns=columns)
        for column in ("version", "status"):
            frame[column] = frame[column].astype("Int64")
        return frame

    def commit_requests(self, table_uri: str | None = None):
        """The commit-file requests seen so far (of one ``s3://`` / ``s3a://`` table, if given) as a
        pandas DataFrame in arrival order: method, file, version, client, conditional, copy, held_s,
        released_as (1 = first to reach the store), released_by, status, and the full key."""
        import pandas as pd

        prefix = None
        if table_uri is not None:
            parsed = urlparse(table_uri)
            prefix = f"{parsed.netloc}/{parsed.path.strip('/')}/{delta_log.LOG_DIR}"
        with self._lock:
            rows = [asdict(r) for r in self._requests if prefix is None or r.key.startswith(prefix)]
        frame = pd.DataFrame(rows, columns=list(CommitRequest.__dataclass_fields__))
        for column in ("released_as", "status"):
            frame[column] = frame[column].astype("Int64")
        frame.insert(1, "file", frame["key"].str.rsplit("/", n=1).str[-1])
        return frame.drop(columns=["t_arrived"]).reset_index(drop=True)

    def close(self) -> None:
        self.open()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> "CommitGate":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        which = "commit PUTs" if self._version is None else f"PUTs of commit {self._version}"
        state = (
            f"holding {which}, {self._together} together ({self._order}, max {self._max_wait_s:g} s)"
            if self._together
            else "open"
        )
        return f"CommitGate({state})"

    # -- holding -------------------------------------------------------------------------------------

    def _admit(self, request: CommitRequest) -> _Waiting | None:
        """Register a commit PUT; return its waiting slot, or None if the gate is open."""
        with self._lock:
            self._requests.append(request)
            if (
                not self._together
                or request.method != "PUT"
                or self._version not in (None, request.version)
            ):
                return None
            group = self._groups.get(request.key)
            new = group is None or group.released
            if new:
                group = self._groups[request.key] = _Group(request.key, request.t_arrived)
            slot = _Waiting(request, threading.Event(), threading.Event())
            group.waiting.append(slot)
            full = len(group.waiting) >= self._together
        if full:
            self._release(group, "together")
        elif new:  # the first to arrive starts the clock of its group
            timer = threading.Timer(self._max_wait_s, self._release, args=(group, "max_wait_s"))
            timer.daemon = True
            timer.start()
        return slot

    def _release(self, group: _Group, reason: str) -> None:
        with self._lock:
            if group.released:
                return
            group.released = True
            slots = list(group.waiting)
            order = self._order
        for slot in slots:
            slot.request.released_by = reason
        if order == "conditional-first":
            slots.sort(
                key=lambda s: not s.request.conditional
            )  # stable: arrival order within each kind
        elif order == "unconditional-first":
            slots.sort(key=lambda s: s.request.conditional)
        threading.Thread(target=self._send_in_turn, args=(slots,), daemon=True).start()

    @staticmethod
    def _send_in_turn(slots: list[_Waiting]) -> None:
        for position, slot in enumerate(slots, start=1):
            slot.request.released_as = position
            slot.turn.set()
            slot.done.wait(gate_http.UPSTREAM_TIMEOUT_S)

    # -- forwarding ----------------------------------------------------------------------------------

    def forward(self, method: str, path: str, headers: list[tuple[str, str]], body: bytes | None):
        """Send one request to the emulator on this thread's connection; return (status, reason, headers, body).
        Every request passes here, after the commit-file hold: a subclass that holds by another
        rule wraps this method (``helpers.runs.driver_jobs.DataFirstGate``)."""
        dynamodb = any(
            name.lower() == "x-amz-target" and value.startswith("DynamoDB")
            for name, value in headers
        )
        target = (
            (self.dynamodb_host, self.dynamodb_port)
            if dynamodb
            else (self.upstream_host, self.upstream_port)
        )
        return gate_http.send(self._local, target, method, path, headers, body)

    def _handler_class(self):
        """The class of the server's request handlers (a subclass of the gate may wrap its
        ``_handle``): see :class:`helpers.runs.gate_http.GateHandler`."""
        return gate_http.handler_class(self)
