"""The committer: one process takes the staged files producers handed over and commits them in
batches, each batch ONE delta-rs transaction that adds its files, exactly once across restarts
and lost answers.

    <python> -m helpers.producers.committer SPEC_JSON_FILE

Each batch carries ``Transaction(app_id, batch)`` (an idempotent-write id: a ``txn`` action in the
commit), and before its first commit, and again after any error, the committer refreshes its table and
asks ``transaction_version(app_id)``: a batch the table already holds is not committed again. Once a
commit was answered, the next batch cannot be in the table (this process numbers the batches and
only it commits with its ``app_id``), so the committer does not ask: deltalake 1.6.6 reads every
commit since the last checkpoint to answer ``transaction_version``, a cost that grows with the log. On
start it reads the same from the table: the last batch that landed and the files it holds, so a
committer killed mid-commit and started again goes on with the next batch, and a file the table
holds is never offered twice. :func:`commit_batch` is the whole protocol; notebook 14 writes it out
as the call to copy.

Each loop lists at most ``max_files`` waiting markers (:mod:`helpers.producers.queue`; on S3 and
Azure the next listing is under way while the batch commits) and, once the table holds a batch,
takes its markers off the queue (deleted when the pass through the queue ends): a listing reads
only markers not yet taken, so a commit costs the same however long the queue. The refresh before
each commit is the one the check needs (deltalake 1.6.6's ``create_write_transaction`` leaves the
``DeltaTable`` at the version it read, so without ``update_incremental`` the next commit would meet
its own last one as a concurrent transaction with the same ``txn``); a refresh reads every commit
since the last checkpoint, which :data:`CHECKPOINT_EVERY` bounds.

The API: ``DeltaTable.create_write_transaction(add_actions, mode="append", schema=...)``, which
commits add actions for Parquet files already written in the table's folder (deltalake 1.x; no
data is written by the commit). ``deltalake.transaction.create_table_with_add_actions`` does the
same for a table it creates, and ``write_deltalake`` writes the data itself, so a committer could
not batch other processes' files with it.

``idempotent: false`` in the spec makes the counter-example of notebook 14: no transaction id and
no check, only the batch's tag in ``commitInfo``.

Standard library, pyarrow and deltalake only (runs in the current era's Python).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from helpers.producers import layout, queue
from helpers.writers import processes
from helpers.writers.protocol import T_PROCESS_START, one_line, spec_process_main

POLL_S = 0.005
COMMIT_TRIES = 5
"""Tries per batch (the first and up to four after errors, each after asking the table)."""
CHECKPOINT_EVERY: int | None = None
"""The committer's own checkpoint, every so many of its commits (None: only the table's, each
``delta.checkpointInterval`` commits, 100 by default). Its refresh reads every commit since the last
checkpoint, so this bounds it, whatever the table's age; the committer is its table's only writer,
so it may checkpoint as often as it likes. ``make producers`` measures each choice (its
``limit_variants``, :mod:`helpers.producers.serial_limit`)."""
FIX_PATCH = Path(__file__).parent / "patches" / "create-write-transaction-set-state.patch"
"""The proposed fix of deltalake 1.6.6's ``create_write_transaction`` (one ``set_state`` with the
commit's snapshot), which ``make deltalake-fix`` builds."""


def commit_batch(
    table, app_id: str, batch: int, files: list[tuple[str, int, int]], ask_first: bool = True
) -> str:
    """Commit ``files`` ([(path relative to the table, bytes, rows)], Parquet files already in the
    table's folder) as ONE transaction carrying ``Transaction(app_id, batch)``, unless the table
    already holds that batch. ``ask_first=False`` only when this process's last commit was answered
    (``transaction_version`` reads the log since the last checkpoint). Returns ``"committed"`` or ``"landed already"``."""
    from deltalake import CommitProperties, Transaction
    from deltalake.transaction import AddAction

    table.update_incremental()  # the latest table: a batch that landed before (a lost answer, a restart) is in it
    if ask_first and (table.transaction_version(app_id) or 0) >= batch:
        return "landed already"
    now_ms = int(time.time() * 1000)
    adds = [
        AddAction(path, size, {}, now_ms, True, json.dumps({"numRecords": rows}))
        for path, size, rows in files
    ]
    table.create_write_transaction(
        adds,
        mode="append",
        schema=table.schema(),
        commit_properties=CommitProperties(
            app_transactions=[Transaction(app_id, batch)],
            custom_metadata={"workbook.writer": app_id, "workbook.batch": str(batch)},
        ),
    )
    return "committed"


def commit_blindly(table, app_id: str, batch: int, files: list[tuple[str, int, int]]) -> str:
    """The counter-example: the same commit with no transaction id and no check."""
    from deltalake import CommitProperties
    from deltalake.transaction import AddAction

    now_ms = int(time.time() * 1000)
    adds = [
        AddAction(path, size, {}, now_ms, True, json.dumps({"numRecords": rows}))
        for path, size, rows in files
    ]
    table.create_write_transaction(
        adds,
        mode="append",
        schema=table.schema(),
        commit_properties=CommitProperties(
            custom_metadata={"workbook.writer": app_id, "workbook.batch": str(batch)}
        ),
    )
    return "committed"


class _Unrefreshed:
    """The committer's table when it leaves out the refresh after an answered commit (spec
    ``refresh: false``): only right with a deltalake whose ``create_write_transaction`` moves the
    ``DeltaTable`` to the version it committed (the fix of :data:`FIX_PATCH`); 1.6.6 as released
    leaves it at the version it read, and the next commit meets the last one as a concurrent
    transaction. Every other call goes to the table."""

    def __init__(self, table) -> None:
        self._table = table

    def update_incremental(self) -> None:
        return None

    def __getattr__(self, name: str):
        return getattr(self._table, name)


def table_files(table) -> set[str]:
    """The data files the table's current state holds, relative to its folder."""
    actions = table.get_add_actions(flatten=True)
    return {str(p) for p in actions.column("path").to_pylist()}


class Committer:
    """The loop: list up to ``max_files`` ready markers, commit those not yet in the table as batch n+1,
    then take their markers off the queue (:mod:`helpers.producers.queue`)."""

    def __init__(self, spec: dict) -> None:
        from deltalake import DeltaTable

        self.spec = spec
        self.app_id = layout.app_id(spec["committer"])
        self.idempotent = spec.get("idempotent", True)
        self.max_files = int(spec.get("max_files", 1000))
        self.refresh = spec.get("refresh", True)
        self.checkpoint_every = spec.get("checkpoint_every", CHECKPOINT_EVERY)
        self.table = DeltaTable(spec["table_uri"], storage_options=dict(spec["storage_options"]))
        self.fs = layout.filesystem(spec["table_uri"], spec["storage_options"])
        self.batch = self.table.transaction_version(self.app_id) or 0  # the last batch that landed
        self.taken = table_files(self.table)
        self.answered = False
        """Was this process's last commit answered? Until then (a start, an error) each try asks the table first."""
        self.queue = queue.open_queue(spec["table_uri"], spec["storage_options"])

    def one_batch(self, staged: list[layout.Staged]) -> dict:
        self.batch += 1
        files = [(s.data_path, s.size, s.rows) for s in staged]
        record = {
            "batch": self.batch,
            "files": len(files),
            "rows": sum(s.rows for s in staged),
            "t_start": time.time(),
            "errors": [],
            "staged": [[s.producer, s.seq] for s in staged],
        }
        for attempt in range(1, COMMIT_TRIES + 1):
            try:
                if self.idempotent:
                    table = (
                        self.table
                        if self.refresh or not self.answered
                        else _Unrefreshed(self.table)
                    )
                    record["outcome"] = commit_batch(
                        table, self.app_id, self.batch, files, ask_first=not self.answered
                    )
                else:
                    record["outcome"] = commit_blindly(self.table, self.app_id, self.batch, files)
                self.answered = True
                break
            except Exception as error:  # the answer may be wrong: the next try asks the table first
                self.answered = False
                record["errors"].append(f"{type(error).__name__}: {one_line(str(error), 300)}")
                if not self.idempotent or attempt == COMMIT_TRIES:
                    raise
        record["attempts"] = attempt
        if self.checkpoint_every and self.batch % self.checkpoint_every == 0:
            # of the version the table object holds (with 1.6.6 as released, the one before this
            # commit, which the next refresh reads on top of); one that fails costs only speed
            try:
                self.table.create_checkpoint()
                record["checkpoint"] = True
            except Exception as error:
                record["errors"].append(
                    f"checkpoint: {type(error).__name__}: {one_line(str(error), 300)}"
                )
        record["t_done"] = time.time()
        self.taken.update(path for path, _, _ in files)
        return record

    def run(self, stop_file: Path, commits: list[dict], max_commits: int | None = None) -> None:
        """Commit what waits until ``stop_file`` exists and a whole pass finds nothing waiting; or,
        with ``max_commits``, return once this call has made that many commits (the pass goes on
        at the next call: the markers it took are deleted when it ends)."""
        made = 0
        try:
            while max_commits is None or made < max_commits:
                stopping = (
                    stop_file.exists()
                )  # before the listing: a marker written before the stop is in this pass
                listed = self.queue.waiting(self.max_files)
                if not listed:
                    if self.queue.from_start:  # a whole pass found nothing waiting
                        if stopping:
                            break
                        time.sleep(POLL_S)
                    continue
                landed = [
                    s for s in listed if s.data_path in self.taken
                ]  # a killed run's batch: the table holds it
                pending = [s for s in listed if s.data_path not in self.taken]
                if pending:
                    commits.append(self.one_batch(pending))
                    made += 1
                self.queue.take(
                    landed + pending
                )  # only now: the table holds every one of these files
            else:
                return
        except BaseException:
            self.queue.settle()
            raise
        self.queue.settle()


def run(spec: dict) -> dict:
    result = {
        "process": spec["process"],
        "pid": os.getpid(),
        "t_process_start": T_PROCESS_START,
        "commits": [],
        "error": None,
    }

    def prepare() -> Committer:
        committer = Committer(spec)
        result["started_after_batch"] = committer.batch
        return committer

    def work(committer: Committer) -> None:
        try:
            committer.run(Path(spec["stop_file"]), result["commits"])
        finally:
            result["markers_listed"], result["listings"] = (
                committer.queue.listed,
                committer.queue.listings,
            )
            result["cpu_s"] = sum(os.times()[:2])

    return processes.run_at_barrier(spec, result, prepare, work)


if __name__ == "__main__":
    spec_process_main("helpers.producers.committer", run)
