"""A catalog that fails, and what Delta Spark 4.4.0 makes of it: each failure made at a known point
by a proxy in front of the Unity Catalog server, then the table read from storage and from the
catalog (:func:`helpers.catalog.race.check_table`), never from what a writer was told.

The proxy is the workbook's commit gate (:class:`helpers.runs.commitgate.CommitGate`) put in front of the
server instead of the S3 emulator: every request passes unchanged, and :class:`CatalogGate` acts
only on Delta's ``add-commit`` requests (the POST that asks the catalog to ratify a staged commit),
counted from 1 as they arrive:

* :meth:`CatalogGate.lose_answer`: the n-th is sent to the server, which decides it, and its answer
  is replaced by HTTP 502, as a proxy says when its connection to the server breaks on the way
  back, or (``drop=True``) the client's connection is closed without a word
  (:class:`~helpers.runs.gate_http.AnswerDropped`), as a network that loses the answer does;
  ``then`` runs first (e.g. :func:`kill_client`, which kills the process that sent it);
* :meth:`CatalogGate.restart_at`: the server is stopped as the n-th arrives (so it gets 502 and
  never reaches the server) and started again on the same store; requests meanwhile wait;
* :meth:`CatalogGate.after_status`: ``then`` runs after the k-th answer with a given status (429).

One function per scenario, each returning an :class:`Outcome` (what the writers were told, what
the gate saw, versions in storage and in the catalog, rows per batch, the check's problems):

    outcome = failures.lost_answer(spark, job, folder)   # (a) the catalog's yes is lost
    outcome = failures.killed_before_publish(spark, job, folder)   # (b) ratified, unpublished
    outcome = failures.commit_cap(spark, job, folder)    # (b) ten unpublished commits, then 429
    outcome = failures.restarted(spark, job, folder, persistent=False)  # (c) restarted
    outcome.summary()

``spark`` is the driver that creates tables (:func:`helpers.catalog.tables.spark_session` with
``creates_tables=True``, the one step that needs Spark's testing flag); ``job`` is a driver
without it (:class:`helpers.catalog.driver.Job`), which makes every append a scenario measures.
Each scenario points both at a server and a gate of its own. The racing drivers are :mod:`helpers.catalog.writer` processes (:func:`race.run_race`).
The records are in :mod:`helpers.catalog.failure_records`, the server kept in SQLite in
:mod:`helpers.catalog.persistent_server`, the log read and written by hand in
:mod:`helpers.catalog.log_by_hand`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

from helpers.catalog import log_by_hand, persistent_server, race, rest, server, tables
from helpers.catalog.driver import Job
from helpers.catalog.failure_records import AddCommit, Outcome
from helpers.catalog.tables import COLUMNS
from helpers.catalog.writer import ROWS_PER_BATCH
from helpers.delta import delta_log
from helpers.runs import commitgate
from helpers.runs.gate_http import AnswerDropped

LOST_ANSWER_STATUS = 502
"""What the gate answers in place of a lost answer: a bad gateway, as a proxy says when the
connection to the server breaks."""
IDEMPOTENCY_CHECK = "spark.databricks.delta.commit.idempotencyCheck.enabled"
"""Delta 4.4.0's setting (internal, default false) that takes a winning commit carrying the
writer's own ``txnId`` for its own (:mod:`helpers.lost_answer.catalog_path` measures it here)."""
CAP = 10
"""olai-uc-server 0.0.11 holds at most this many ratified commits not reported published (then 429)."""


class CatalogGate(commitgate.CommitGate):
    """The commit gate in front of a Unity Catalog server (see the module's text)."""

    def __init__(self, uc: server.UCServer) -> None:
        self.uc = uc
        self._rules: dict[int, tuple[str, Callable[[], None] | None]] = {}
        self._status_rule: tuple[int, int, Callable[[], None]] | None = None
        self._status_seen = 0
        self._add_commits: list[AddCommit] = []
        self._up = threading.Event()
        self._up.set()
        super().__init__(uc.uri)
        reported = self._server.handle_error

        def handle_error(request, client_address) -> None:  # a killed client is no error
            if not isinstance(sys.exc_info()[1], ConnectionError):
                reported(request, client_address)

        self._server.handle_error = handle_error

    # -- arming ----------------------------------------------------------------------------------

    def lose_answer(
        self, number: int, then: Callable[[], None] | None = None, *, drop: bool = False
    ) -> None:
        """Send the ``number``-th add-commit to the server, then answer its client 502 instead of
        the server's answer, or with ``drop`` close its connection without an answer; ``then()``
        runs first."""
        self._rules[number] = ("drop" if drop else "lose", then)

    def restart_at(self, number: int) -> None:
        """Stop the server as the ``number``-th add-commit arrives (its client gets 502), start it
        again on the same folder and store, and send every later request to it."""
        self._rules[number] = ("restart", None)

    def after_status(self, status: int, count: int, then: Callable[[], None]) -> None:
        """Run ``then()`` once, after the ``count``-th add-commit the server answers ``status``."""
        self._status_rule, self._status_seen = (status, count, then), 0

    @property
    def add_commits(self) -> list[AddCommit]:
        with self._lock:
            return list(self._add_commits)

    # -- forwarding ------------------------------------------------------------------------------

    def forward(self, method, path, headers, body):
        self._up.wait()  # a request that comes while the server restarts waits for it
        update = _add_commit(method, path, body)
        if update is None:
            return super().forward(method, path, headers, body)
        with self._lock:
            record = AddCommit(len(self._add_commits) + 1, *update)
            self._add_commits.append(record)
            action, then = self._rules.get(record.number, (None, None))
        if action == "restart":
            self._restart()
            record.answered = LOST_ANSWER_STATUS
            raise ConnectionError("the catalog was stopped as this request arrived")
        answer = super().forward(method, path, headers, body)
        record.status = record.answered = answer[0]
        if action in ("lose", "drop"):
            if then is not None:
                then()
            if action == "drop":
                record.answered = None  # no answer at all
                raise AnswerDropped(answer[0], "the catalog's answer was dropped")
            record.answered = LOST_ANSWER_STATUS
            raise ConnectionError("the catalog's answer was lost on its way back")
        if self._status_rule and answer[0] == self._status_rule[0]:
            self._status_seen += 1
            if self._status_seen == self._status_rule[1]:
                self._status_rule[2]()
        return answer

    def _restart(self) -> None:
        self._up.clear()
        try:
            self.uc.stop()
            self.uc = persistent_server.start_on_store(self.uc.root)
            self.upstream_port = int(self.uc.uri.rsplit(":", 1)[1])
        finally:
            self._up.set()

    def _handler_class(self):
        base, gate = super()._handler_class(), self

        class Handler(base):
            def _handle(self) -> None:  # the client's address, for kill_client
                gate._local.client = self.client_address
                super()._handle()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

        return Handler

    def client_pid(self) -> int | None:
        """The process whose request this handler thread serves (None if it is gone)."""
        import psutil

        client = getattr(self._local, "client", None)
        gate = self._server.server_address[1]
        for connection in psutil.net_connections(kind="tcp"):  # a JVM's socket may be IPv6
            if (
                client
                and connection.laddr
                and connection.raddr
                and connection.laddr.port == client[1]
                and connection.raddr.port == gate
            ):
                return connection.pid
        return None

    def close(self) -> None:
        super().close()
        self.uc.stop()


def _add_commit(method: str, path: str, body: bytes | None) -> tuple[int | None, int | None] | None:
    """(version, reported published version) of an add-commit request, or None for any other."""
    if method != "POST" or not path.startswith(rest.DELTA) or not body or b"add-commit" not in body:
        return None
    updates = json.loads(body).get("updates", [])
    version = published = None
    for update in updates:
        if update.get("action") == "add-commit":
            version = int(update["commit"]["version"])
        elif update.get("action") == "set-latest-backfilled-version":
            published = int(update["latest-published-version"])
    return version, published


def kill_client(gate: CatalogGate, killed: list[int]) -> Callable[[], None]:
    """A ``then`` for :meth:`CatalogGate.lose_answer` / :meth:`CatalogGate.after_status`: SIGKILL the
    process group of the client whose request is being answered (a racing driver: its Python and
    its JVM), never this process's own; its pid is appended to ``killed``."""

    def kill() -> None:
        pid = gate.client_pid()
        if pid is None or pid == os.getpid():
            raise RuntimeError(f"the client of this request is not a process to kill ({pid})")
        group = os.getpgid(pid)
        if group == os.getpgid(0):
            os.kill(pid, signal.SIGKILL)
        else:
            os.killpg(group, signal.SIGKILL)
        killed.append(pid)

    return kill


# -------------------------------------------------------------------------------------------------
# The scenarios
# -------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def through_gate(spark, job: Job, root: Path, *, persistent: bool = False) -> Iterator[CatalogGate]:
    """A server of its own under ``root`` (emptied first), the gate in front of it, and both
    drivers (``spark``, which creates tables, and ``job``, which appends) committing through the
    gate until the block ends."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    uc = persistent_server.start_persistent(root) if persistent else server.start(root)
    gate = CatalogGate(uc)
    spark.conf.set(tables.URI_KEY, gate.endpoint)
    job.configure(tables.URI_KEY, gate.endpoint)
    try:
        yield gate
    finally:
        gate.close()


def fresh_table(spark, job: Job, catalog: rest.UnityCatalog, name: str) -> rest.StagedTable:
    """A new catalog-managed table ``default.<name>`` (:data:`COLUMNS`), created by ``spark`` (its
    name forgotten first) and named in ``job``'s session catalog."""
    tables.forget(spark, name)
    staged = tables.create(spark, catalog, name, COLUMNS)
    job.open(name, staged.location)
    return staged


def _outcome(
    scenario: str,
    gate: CatalogGate,
    name: str,
    expected: dict[tuple[str, int], int],
    told: dict[str, str],
    **facts,
) -> Outcome:
    catalog = rest.UnityCatalog(gate.endpoint)
    check = race.check_table(catalog, name, expected)
    return Outcome(
        scenario,
        told,
        gate.add_commits,
        check.published,
        check.catalog.latest_version,
        check.unpublished,
        {f"{w}/{b}": n for (w, b), n in sorted(check.rows.items())},
        check.problems,
        facts,
    )


def lost_answer(spark, job: Job, root: Path) -> Outcome:
    """(a) The catalog ratifies an append and its answer is lost (502 instead): what Delta told the
    writer and what the table holds; if told it failed, what a rerun does; then, whatever it was
    told, what a blind rerun of the append does."""
    name = "lost_answer"
    with through_gate(spark, job, root) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        fresh_table(spark, job, catalog, name)
        gate.lose_answer(1)
        told = {"append of batch 1": job.append(name, "a", 1)}
        if told["append of batch 1"] != "success":
            told["rerun of batch 1"] = job.append(name, "a", 1)
        tables.wait_published(catalog, name)
        outcome = _outcome("lost answer", gate, name, {("a", 1): ROWS_PER_BATCH}, told)
        outcome.facts["rows Spark reads"] = job.count(name)
        outcome.facts["data files added by more than one version"] = log_by_hand.added_again(
            catalog, name
        )
        outcome.facts["a blind rerun"] = job.append(name, "a", 1)
        tables.wait_published(catalog, name)
        again = race.check_table(catalog, name, {("a", 1): ROWS_PER_BATCH})
        outcome.facts["rows per batch after it"] = {
            f"{w}/{b}": n for (w, b), n in again.rows.items()
        }
        return outcome


def killed_before_publish(spark, job: Job, root: Path) -> Outcome:
    """(b) A racing driver killed once the catalog has ratified its first commit, before it hears
    so and so before it publishes; then the next writer (``job``) appends."""
    with through_gate(spark, job, root) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        staged = fresh_table(spark, job, catalog, "killed_writer")
        killed: list[int] = []
        gate.lose_answer(1, then=kill_client(gate, killed))
        raced = race.run_race(
            catalog,
            "killed_writer",
            staged.location,
            writers=1,
            batches_per_writer=2,
            run_dir=root / "race",
        )
        first = {("w1", 11): ROWS_PER_BATCH, ("w1", 12): 0}  # its second batch never appended
        before = race.check_table(catalog, "killed_writer", first)
        told = {"w1": raced.results["w1"].get("error") or "no result (killed)"}
        told["next writer"] = job.append("killed_writer", "next", 1)
        tables.wait_published(catalog, "killed_writer")
        return _outcome(
            "writer killed after ratify, before publish",
            gate,
            "killed_writer",
            {**first, ("next", 1): ROWS_PER_BATCH},
            told,
            killed=len(killed),
            before_the_next_writer=(
                f"published {before.published}, ratified not published {before.unpublished}, "
                f"problems {before.problems}"
            ),
        )


def commit_cap(spark, job: Job, root: Path, retries_seen: int = 3) -> Outcome:
    """(b) The 429 path: the catalog holds :data:`CAP` ratified commits nobody published
    (:func:`log_by_hand.ratify_unpublished`). A racing driver then appends: it is killed after its
    ``retries_seen``-th 429, with what its requests reported published. Then the ratified commits
    are published as Delta would (:func:`log_by_hand.publish`) and ``job`` appends."""
    with through_gate(spark, job, root) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        staged = fresh_table(spark, job, catalog, "commit_cap")
        log = tables.local_path(staged.location) / delta_log.LOG_DIR
        ratified = log_by_hand.ratify_unpublished(catalog, "commit_cap", CAP)
        held = catalog.table(tables.CATALOG, tables.SCHEMA, "commit_cap")
        killed: list[int] = []
        gate.after_status(429, retries_seen, kill_client(gate, killed))
        raced = race.run_race(
            catalog,
            "commit_cap",
            staged.location,
            writers=1,
            batches_per_writer=1,
            run_dir=root / "race",
        )
        told = {"w1": raced.results["w1"].get("error") or "no result (killed)"}
        published_meanwhile = log_by_hand.published_versions(log)
        by_hand = log_by_hand.publish(catalog, "commit_cap")
        told["next writer, after publication"] = job.append("commit_cap", "next", 1)
        tables.wait_published(catalog, "commit_cap")
        expected = {("next", 1): ROWS_PER_BATCH, ("w1", 11): 0}
        return _outcome(
            "ten unpublished commits, then 429",
            gate,
            "commit_cap",
            expected,
            told,
            ratified_by_hand=ratified,
            held_unpublished=[c["version"] for c in held.unpublished],
            killed_after_429s=len(killed),
            published_while_w1_retried=published_meanwhile,
            published_by_hand=by_hand,
        )


def restarted(spark, job: Job, root: Path, *, persistent: bool) -> Outcome:
    """(c) The catalog stopped as an add-commit arrives and started again, its catalog in memory
    (``persistent=False``: ``job`` appends once) or in SQLite (two racing drivers, three appends
    each, the server restarted at the third add-commit)."""
    with through_gate(spark, job, root, persistent=persistent) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        staged = fresh_table(spark, job, catalog, "restarted")
        if not persistent:
            gate.restart_at(1)
            told = {"append of batch 1": job.append("restarted", "a", 1)}
            try:
                catalog.table(tables.CATALOG, tables.SCHEMA, "restarted")
                known = "known"
            except rest.CatalogError as error:
                known = f"HTTP {error.status}"
            staged_files = sorted(
                p.name
                for p in (tables.local_path(staged.location) / race.STAGED_DIR).glob("*.json")
            )
            return Outcome(
                "catalog restarted, in memory",
                told,
                gate.add_commits,
                log_by_hand.published_versions(
                    tables.local_path(staged.location) / delta_log.LOG_DIR
                ),
                None,
                [],
                {},
                [],
                {
                    "the table after the restart": known,
                    "staged commits in storage": len(staged_files),
                },
            )
        gate.restart_at(3)
        raced = race.run_race(
            catalog,
            "restarted",
            staged.location,
            writers=2,
            batches_per_writer=3,
            run_dir=root / "race",
        )
        told = {w: r.get("error") or "success" for w, r in sorted(raced.results.items())}
        expected = {(w, b): ROWS_PER_BATCH for w, bs in raced.batches.items() for b in bs}
        flags = {w: r.get("testing_flag", "no result") for w, r in sorted(raced.results.items())}
        return _outcome(
            "catalog restarted, in SQLite",
            gate,
            "restarted",
            expected,
            told,
            testing_flags=flags,
        )
