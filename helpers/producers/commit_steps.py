"""The process that commits and times each step, one request at a time, for
:mod:`helpers.producers.profile` (a commit step by step, and its cost against the queue's length)
and :func:`helpers.producers.scenarios.at_the_limit` (the committer alone in turns with one writer
appending alone). Its requests pass the runner's request meter; a meter in this process would wait
on a deltalake call that holds the GIL.

    <python> -m helpers.producers.commit_steps SPEC_JSON_FILE

* :func:`measure`: each of ``spec["runs"]``: files staged (:func:`stage`), then commits by the
  committer as it is (:mod:`helpers.producers.queue`: one bounded listing, the markers taken off
  after the commit), by the committer as it was (the whole ``_queue/ready/`` listed and sorted each
  time, markers left for clean-up), or plain appends (``update_incremental`` and
  ``write_deltalake``, the benchmark's serial-limit writer), each step timed.
* :func:`alternate` (``spec["mode"] == "limit"``): the committer alone on staged files and one
  writer appending alone, in turns; :func:`rates` turns its blocks into commits/s.

The markers waiting beyond the files the measurement commits are markers only on Azure and S3
(their data files are never written: a commit here takes the first names, which the stores list
in name order, and a listing reads names, never data); on local disk, where a listing's order is
the file system's, every marker names a data file written beside it.
"""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helpers.producers import committer, layout, producer, queue
from helpers.producers.run import Table

STEPS = ("list", "refresh", "transaction_version", "build actions", "commit", "take off the queue")
APPEND_STEPS = ("refresh", "write and commit")
STAGE_THREADS = 16


def stage(table: Table, producer_number: int, seqs, *, data: bool = True) -> list[layout.Staged]:
    """Producer ``producer_number``'s files ``seqs``, handed over (from a few threads); with
    ``data=False`` only their markers (names a listing reads; nothing to commit)."""
    fs = layout.filesystem(table.uri, table.options)

    def one(seq: int) -> layout.Staged:
        if data:
            return producer.produce(fs, producer_number, seq, table.rows)
        staged = layout.Staged(producer_number, seq, layout.new_token(), table.rows, 0)
        layout.touch(fs, staged.marker_path)
        return staged

    with ThreadPoolExecutor(STAGE_THREADS) as pool:
        return list(pool.map(one, list(seqs)))


class _Clock:
    """When each named step of one commit started and how long it took."""

    def __init__(self) -> None:
        self.steps: dict[str, list[float]] = {}

    def step(self, name: str, call):
        started = time.time()
        value = call()
        self.steps[name] = [started, time.time() - started]
        return value


class _StepTimes:
    """Every duration of each named step, in order (a clock for many commits)."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {}

    def step(self, name: str, call):
        started = time.time()
        value = call()
        self.seconds.setdefault(name, []).append(time.time() - started)
        return value


class _TimedTable:
    """The committer's ``DeltaTable``, its three calls to the store timed as steps of the profile,
    so the profile times :func:`helpers.producers.committer.commit_batch` itself, unchanged."""

    STEPS = {
        "update_incremental": "refresh",
        "transaction_version": "transaction_version",
        "create_write_transaction": "commit",
        "create_checkpoint": "checkpoint",
    }

    def __init__(self, table, clock: _Clock) -> None:
        self._table, self._clock = table, clock

    def __getattr__(self, name: str):
        call = getattr(self._table, name)
        step = self.STEPS.get(name)
        if step is None:
            return call
        return lambda *args, **kwargs: self._clock.step(step, lambda: call(*args, **kwargs))


def _commit_once(
    table,
    app_id: str,
    batch: int,
    listed,
    *,
    keep,
    take: int,
    q,
    clock: _Clock,
    listed_markers: list[int],
    ask: bool = True,
) -> list[layout.Staged]:
    """One committer commit (:func:`helpers.producers.committer.commit_batch`) of the first ``take``
    staged files that ``listed()`` returns and ``keep`` keeps, timed step by step. "build actions"
    is the rest of ``commit_batch``'s time, between its question (or refresh) and its commit; a
    question not asked is a step of no time."""
    staged = clock.step("list", listed)
    listed_markers.append(len(staged))
    staged = [s for s in staged if keep(s)][:take]
    files = [(s.data_path, s.size, s.rows) for s in staged]
    outcome = committer.commit_batch(_TimedTable(table, clock), app_id, batch, files, ask_first=ask)
    if outcome != "committed":
        raise RuntimeError(
            f"batch {batch} is in the table already: the measurement's table is not fresh"
        )
    steps = clock.steps
    if "transaction_version" not in steps:
        steps["transaction_version"] = [sum(steps["refresh"]), 0.0]
    asked = sum(steps["transaction_version"])
    steps["build actions"] = [asked, steps["commit"][0] - asked]
    clock.step("take off the queue", (lambda: q.take(staged)) if q is not None else (lambda: None))
    return staged


def _committer_commits(
    uri: str, options: dict, *, commits: int, files: int, before: bool, first_batch: int = 1
) -> list[dict]:
    """``commits`` commits of ``files`` files each, by the committer as it is or (``before``) as it was."""
    from deltalake import DeltaTable

    delta = DeltaTable(uri, storage_options=dict(options))
    app_id = layout.app_id("profile")
    taken = {str(p) for p in delta.get_add_actions(flatten=True).column("path").to_pylist()}
    fs, q = layout.filesystem(uri, options), queue.open_queue(uri, options)
    records = []
    for batch in range(first_batch, first_batch + commits):
        clock, listed = _Clock(), []
        staged = _commit_once(
            delta,
            app_id,
            batch,
            # as it was: every marker listed, then those the table holds left out; as it is: the
            # queue's next batch, the markers taken off after the commit
            (lambda: layout.ready(fs)) if before else (lambda: q.waiting(files)),
            keep=lambda s: s.data_path not in taken,
            take=files,
            q=None if before else q,
            clock=clock,
            listed_markers=listed,
            ask=before or batch == first_batch,  # as the committer: once answered, it does not ask
        )
        taken.update(s.data_path for s in staged)
        records.append({"batch": batch, "markers_listed": listed[0], "steps": clock.steps})
    q.settle()
    return records


def _appends(uri: str, options: dict, *, commits: int, rows: int) -> list[dict]:
    from deltalake import DeltaTable, write_deltalake

    delta = DeltaTable(uri, storage_options=dict(options))
    records = []
    for seq in range(1, commits + 1):
        clock = _Clock()
        clock.step("refresh", delta.update_incremental)
        clock.step(
            "write and commit",
            lambda: write_deltalake(delta, layout.file_rows(9, seq, rows), mode="append"),
        )
        records.append({"batch": seq, "markers_listed": 0, "steps": clock.steps})
    return records


def alternate(spec: dict) -> dict:
    """The committer alone against one writer appending alone, in turns in one process (so the
    machine's load falls on both alike): ``spec["rounds"]`` rounds, each a block of
    ``spec["block"]`` commits of the committer (:class:`helpers.producers.committer.Committer`, as it
    runs, on the staged files of ``spec["uri"]``) and a block of as many plain appends to
    ``spec["append_uri"]``, which goes first alternating; one warm-up commit of each first. Returns
    each block: its kind, when it started, and when each of its commits ended."""
    from deltalake import DeltaTable, write_deltalake

    from helpers.producers import committer as committer_module

    mine = committer_module.Committer(
        {
            "committer": "limit",
            "table_uri": spec["uri"],
            "storage_options": spec["options"],
            "max_files": spec["files"],
            "refresh": spec.get("refresh", True),
            "checkpoint_every": spec.get("checkpoint_every", committer_module.CHECKPOINT_EVERY),
        }
    )
    plain = DeltaTable(spec["append_uri"], storage_options=dict(spec["append_options"]))
    stop = Path(spec["run_dir"]) / "limit.stop"  # never written: each block ends by its count
    seq = 0

    committed: list[dict] = []

    def committer_block(n: int) -> list[float]:
        commits: list[dict] = []
        mine.run(stop, commits, max_commits=n)
        committed.extend(commits)
        return [c["t_done"] for c in commits]

    def append_block(n: int) -> list[float]:
        nonlocal seq
        done = []
        for _ in range(n):
            seq += 1
            plain.update_incremental()
            write_deltalake(plain, layout.file_rows(9, seq, spec["rows"]), mode="append")
            done.append(time.time())
        return done

    committer_block(1), append_block(1)  # warm-up: first requests, first imports
    times = _StepTimes()  # the committer's steps from here on
    mine.table = _TimedTable(mine.table, times)
    blocks = []
    for turn in range(spec["rounds"]):
        order = (
            (("committer", committer_block), ("plain append", append_block))
            if turn % 2 == 0
            else (("plain append", append_block), ("committer", committer_block))
        )
        for kind, block in order:
            started = time.time()
            blocks.append({"kind": kind, "t_start": started, "t_done": block(spec["block"])})
    stop.touch()
    mine.run(stop, [])  # the queue's end: nothing waits, the pass's markers go
    errors = [e for c in committed for e in c["errors"]]
    return {
        "blocks": blocks,
        "commits": mine.batch,
        "steps": times.seconds,
        "errors": errors,
        "deltalake": _deltalake_build(),
    }


def _deltalake_build() -> str:
    """The deltalake this process imported: its version, and where from when not the workbook's
    own environment (a build of :data:`helpers.producers.committer.FIX_PATCH`)."""
    import deltalake

    where = Path(deltalake.__file__).resolve()
    own = Path(sys.prefix).resolve() in where.parents
    return deltalake.__version__ + ("" if own else f" ({where.parent.parent.name})")


def rates(blocks: list[dict]) -> dict[str, float]:
    """Commits/s of each kind over its blocks: commits over the time from each block's start to its last commit."""
    found = {}
    for kind in dict.fromkeys(b["kind"] for b in blocks):
        mine = [b for b in blocks if b["kind"] == kind and b["t_done"]]
        seconds = sum(b["t_done"][-1] - b["t_start"] for b in mine)
        found[kind] = sum(len(b["t_done"]) for b in mine) / seconds if seconds > 0 else float("nan")
    return found


def measure(spec: dict) -> dict:
    """What one profile process does (in the process :func:`run_profile` starts): ``spec["runs"]``
    is a list of {uri, options (direct), routed (through the meter), variant, staged, waiting, commits, files}."""
    records = []
    for one in spec["runs"]:
        table = Table(
            spec["backend"], one["uri"], one["options"], Path(spec["run_dir"]), rows=spec["rows"]
        )
        if one.get("stage"):
            stage(table, 1, range(1, one["stage"] + 1))
            if one["waiting"] > one["stage"]:
                stage(
                    table,
                    2,
                    range(1, one["waiting"] - one["stage"] + 1),
                    data=spec["backend"] == "local",
                )
        for variant, first in one["variants"]:
            if variant == "plain append":
                found = _appends(
                    one["uri"], one["routed"], commits=one["commits"], rows=spec["rows"]
                )
            else:
                found = _committer_commits(
                    one["uri"],
                    one["routed"],
                    commits=one["commits"],
                    files=one["files"],
                    before=variant != "committer",
                    first_batch=first,
                )
            records += [{**r, "variant": variant, "waiting": one["waiting"]} for r in found]
    return {"records": records}


def main(argv: list[str] | None = None) -> int:
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    found = alternate(spec) if spec.get("mode") == "limit" else measure(spec)
    Path(spec["result_path"]).write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
