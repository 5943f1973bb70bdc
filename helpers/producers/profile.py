"""Where a committer's commit goes, step by step, beside one plain append's; and a commit's cost
against the queue's length. One process of its own sends the requests, one at a time; on Azure and
S3 each passes the benchmark's request meter (:class:`helpers.bench.meter.RequestMeter`), held by
the runner (a meter in the same process would wait on a deltalake call that holds the GIL), which
counts the requests that started within each step.

    <python> -m helpers.producers.profile SPEC_JSON_FILE

* :func:`run_profile`, steps: ``commits`` commits of ``files`` staged files each, by the committer as it is
  (:mod:`helpers.producers.queue`: one bounded listing, the markers taken off after the commit),
  by the committer as it was (the whole ``_queue/ready/`` listed and sorted each time, markers left
  for clean-up), and ``commits`` plain appends (``update_incremental`` and ``write_deltalake``, the
  benchmark's serial-limit writer): seconds and requests per commit, for each step.
* :func:`alternate` (``spec["mode"] == "limit"``): the committer alone on staged files and one writer
  appending alone, in turns, for :func:`helpers.producers.scenarios.at_the_limit`.
* :func:`run_profile`, queue length: the same committer commits with 100, 1,000 and 10,000 markers waiting:
  seconds, requests and markers listed per commit, as it is and as it was.

The markers waiting beyond the files the measurement commits are markers only on Azure and S3
(their data files are never written: a commit here takes the first names, which the stores list
in name order, and a listing reads names, never data); on local disk, where a listing's order is
the file system's, every marker names a data file written beside it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from helpers.producers import layout, producer, queue
from helpers.producers.run import RUN_TIMEOUT_S, Table

STEPS = ("list", "refresh", "transaction_version", "build actions", "commit", "take off the queue")
APPEND_STEPS = ("refresh", "write and commit")
VARIANTS = {
    "committer": "the committer (a bounded listing, markers taken off)",
    "committer, before": "the committer as it was (the whole queue listed each commit)",
    "plain append": "one writer appending alone (update_incremental, write_deltalake)",
}
QUEUE_LENGTHS = (100, 1000, 10000)
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
    """One committer commit of the first ``take`` staged files that ``listed()`` returns and ``keep`` keeps, timed step by step."""
    from deltalake import CommitProperties, Transaction
    from deltalake.transaction import AddAction

    staged = clock.step("list", listed)
    listed_markers.append(len(staged))
    staged = [s for s in staged if keep(s)][:take]
    clock.step("refresh", table.update_incremental)
    landed = clock.step(
        "transaction_version", lambda: table.transaction_version(app_id) if ask else None
    )
    if (landed or 0) >= batch:
        raise RuntimeError(
            f"batch {batch} is in the table already: the measurement's table is not fresh"
        )
    now_ms = int(time.time() * 1000)
    adds = clock.step(
        "build actions",
        lambda: [
            AddAction(s.data_path, s.size, {}, now_ms, True, json.dumps({"numRecords": s.rows}))
            for s in staged
        ],
    )
    clock.step(
        "commit",
        lambda: table.create_write_transaction(
            adds,
            mode="append",
            schema=table.schema(),
            commit_properties=CommitProperties(
                app_transactions=[Transaction(app_id, batch)],
                custom_metadata={"workbook.writer": app_id, "workbook.batch": str(batch)},
            ),
        ),
    )
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
        if before:  # every marker listed, then those the table holds left out, as the committer did
            staged = _commit_once(
                delta,
                app_id,
                batch,
                lambda: layout.ready(fs),
                keep=lambda s: s.data_path not in taken,
                take=files,
                q=None,
                clock=clock,
                listed_markers=listed,
            )
            taken.update(s.data_path for s in staged)
        else:
            _commit_once(
                delta,
                app_id,
                batch,
                lambda: q.waiting(files),
                keep=lambda s: s.data_path not in taken,
                take=files,
                q=q,
                clock=clock,
                listed_markers=listed,
                ask=batch == first_batch,
            )  # as the committer: once answered, it does not ask
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
        }
    )
    plain = DeltaTable(spec["append_uri"], storage_options=dict(spec["append_options"]))
    stop = Path(spec["run_dir"]) / "limit.stop"  # never written: each block ends by its count
    seq = 0

    def committer_block(n: int) -> list[float]:
        commits: list[dict] = []
        mine.run(stop, commits, max_commits=n)
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
    return {"blocks": blocks, "commits": mine.batch}


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


def _summary(store: str, records: list[dict], meter) -> list[dict]:
    """Median seconds and requests per commit of each step, and of the whole commit, per (variant, waiting)."""

    def requests(window) -> int:
        return (
            sum(1 for r in meter.requests if window[0] <= r.t_start <= window[0] + window[1])
            if meter is not None
            else 0
        )

    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["variant"], r["waiting"]), []).append(r)
    rows = []
    for (variant, waiting), found in groups.items():
        names = list(found[0]["steps"])
        for step in (*names, "whole commit"):
            chosen = names if step == "whole commit" else [step]
            seconds = [sum(r["steps"][s][1] for s in chosen) for r in found]
            counts = [sum(requests(r["steps"][s]) for s in chosen) for r in found]
            rows.append(
                {
                    "backend": store,
                    "variant": variant,
                    "waiting": waiting,
                    "step": step,
                    "commits": len(found),
                    "seconds_median": statistics.median(seconds),
                    "seconds_mean": statistics.fmean(seconds),
                    "requests_median": statistics.median(counts),
                    "requests_max": max(counts),
                    "markers_listed_median": statistics.median(r["markers_listed"] for r in found),
                }
            )
    return rows


def _fresh(backend: str, name: str, meter) -> tuple[Table, dict]:
    table = Table.fresh(backend, name)
    return table, {
        "uri": table.uri,
        "options": table.options,
        "routed": table.route(meter) if meter is not None else table.options,
    }


def _remove(table: Table, tries: int = 3) -> None:
    """Remove a measurement's table, trying again after a failure: moto answers a ``ListObjectVersions``
    page after the first (10,000 markers and their deletions are several pages) with a 500 now and then."""
    for attempt in range(1, tries + 1):
        try:
            table.remove()
            return
        except Exception as error:  # noqa: BLE001  (the last failure is said, not raised: the figures stand)
            if attempt == tries:
                print(
                    f"profile: could not remove {table.uri} after {tries} tries: {type(error).__name__}: {error}",
                    file=sys.stderr,
                )
            time.sleep(2.0)


def run_profile(
    store: str,
    backend: str,
    name: str,
    meter,
    *,
    commits: int = 10,
    files: int = 10,
    lengths=QUEUE_LENGTHS,
    queue_commits: int = 5,
) -> tuple[list[dict], list[dict]]:
    """On one store: each step of a commit (the committer as it is, as it was, a plain append), and
    a commit's cost with each of ``lengths`` markers waiting. Returns (steps rows, queue rows)."""
    tables, runs = [], []
    for variant in VARIANTS:
        table, where = _fresh(
            backend, f"{name}/{variant.replace(', ', '-').replace(' ', '-')}", meter
        )
        tables.append(table)
        runs.append(
            {
                **where,
                "variants": [[variant, 1]],
                "stage": 0 if variant == "plain append" else commits * files,
                "waiting": 0,
                "commits": commits,
                "files": files,
            }
        )
    for waiting in (
        lengths or ()
    ):  # the committer as it is takes the first files; as it was, the next ones
        table, where = _fresh(backend, f"{name}/queue-{waiting}", meter)
        tables.append(table)
        runs.append(
            {
                **where,
                "variants": [["committer", 1], ["committer, before", queue_commits + 1]],
                "stage": 2 * queue_commits * files,
                "waiting": waiting,
                "commits": queue_commits,
                "files": files,
            }
        )
    run_dir = tables[0].run_dir
    spec_path, result_path = run_dir / "profile.json", run_dir / "profile.result.json"
    spec_path.write_text(
        json.dumps(
            {
                "backend": backend,
                "rows": tables[0].rows,
                "run_dir": str(run_dir),
                "runs": runs,
                "result_path": str(result_path),
            },
            indent=1,
        )
    )
    if meter is not None:
        meter.reset()
    subprocess.run(
        [sys.executable, "-m", "helpers.producers.profile", str(spec_path)],
        check=True,
        timeout=RUN_TIMEOUT_S,
    )
    records = json.loads(result_path.read_text())["records"]
    rows = _summary(store, records, meter)
    for table in tables:
        _remove(table)
    profile_rows = [r for r in rows if r["waiting"] == 0]
    queue_rows = [r for r in rows if r["waiting"] > 0]
    return profile_rows, queue_rows


def main(argv: list[str] | None = None) -> int:
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    found = alternate(spec) if spec.get("mode") == "limit" else measure(spec)
    Path(spec["result_path"]).write_text(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
