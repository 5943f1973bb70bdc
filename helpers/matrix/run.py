"""Run the conflict matrix: worker processes for the engines, every verdict into one tidy CSV.

:func:`run` starts :mod:`helpers.matrix.worker` in each engine's environment, one process per
group of engines that share one (:func:`helpers.matrix.engines.processes`: the Spark engines share
a session), at most ``jobs`` at a time; it reads their JSON lines as they come, classes each pair
(:mod:`helpers.matrix.classify`), sets it against the documentation (:mod:`helpers.matrix.documented`),
prints one line per pair, and writes into ``build/matrix/<name>/``:

* ``matrix.csv``: one row per engine × first × second (:data:`helpers.matrix.tidy.CSV_COLUMNS`);
* ``pairs.jsonl``: every pair's raw record (each table's rows, errors, log problems);
* ``grid-<engine>.png``: the grid of :func:`helpers.matrix.plots.grid`;
* ``meta.json``: engines and versions, operations, wall time, the documentation's pages.

All but ``pairs.jsonl`` are written at the end, by :mod:`helpers.matrix.outputs`.

Tables go to ``tables/<engine>/`` (an engine on S3: a prefix of the emulator's bucket,
:func:`helpers.matrix.worker.s3_root`); a pair's tables are kept only when its verdict is an
anomaly or an error, for a look by hand. :func:`summary` also sets each engine run on S3 against
the same engine's local cells (:func:`confirmations`).
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, TextIO

from helpers.ground import config, eras
from helpers.matrix import classify, engines, outputs, tidy
from helpers.matrix import layouts
from helpers.matrix import operations as ops

DEFAULT_OUT = config.BUILD_DIR / "matrix"
DEFAULT_JOBS = 3
"""Worker processes at once: the Spark drivers (two per Delta Spark release,
:data:`helpers.matrix.engines.SECOND_DRIVERS`), each about one core busy, then the delta-rs eras one
after the other beside the last of them."""
SILENCE_LIMIT_S = 300.0
"""A worker that reports nothing for this long is stuck: it is stopped and the run fails."""


class MatrixError(RuntimeError):
    """An engine's worker could not run; the message names the engine and its error."""


def _reader(process: subprocess.Popen, name: str, lines: queue.Queue) -> None:
    errors: list[str] = []

    def drain() -> None:  # a worker's JVM may write more than a pipe holds: read it as it comes
        for line in process.stderr:
            errors.append(line)
            del errors[:-200]

    draining = threading.Thread(target=drain, daemon=True)
    draining.start()
    for line in process.stdout:
        if line.startswith("{"):
            lines.put((name, json.loads(line)))
    process.wait()
    draining.join(timeout=10)
    lines.put(
        (name, {"event": "exit", "code": process.returncode, "stderr": "".join(errors)[-2000:]})
    )


def _remove_table(folder: str) -> None:
    """Delete a pair's tables (a folder under the workbook's, or an ``s3://`` prefix)."""
    if folder.startswith("s3://"):
        from helpers.matrix import stores

        stores.for_location(folder).remove(folder)
    else:
        shutil.rmtree(config.ROOT / folder, ignore_errors=True)


def _todo(
    engine_names: list[str],
    op_names: list[str],
    only: list[tuple[str, str]] | dict[str, list[tuple[str, str]]] | None,
    also: dict[str, list[tuple[str, str]]] | None,
) -> tuple[list[str], list[str], list[tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    """(engines, operations, their pairs, ``{engine: the pairs it races}``) for :func:`run`'s
    arguments: ``also`` adds its pairs, and its engines and operations to the run's."""
    pairs = ops.pairs(op_names)
    wanted = {name: only.get(name, ()) if isinstance(only, dict) else only for name in engine_names}
    todo = {
        name: [
            pair
            for pair in engines.ENGINES[name].chosen(pairs)
            if wanted[name] is None or pair in {tuple(p) for p in wanted[name]}
        ]
        for name in engine_names
    }
    for name, extra in (also or {}).items():
        mine = todo.get(name, [])
        todo[name] = mine + [pair for pair in dict.fromkeys(map(tuple, extra)) if pair not in mine]
    if also:
        engine_names = list(todo)
        op_names = [
            name
            for name in ops.CHOICES
            if any(name in pair for mine in todo.values() for pair in mine)
        ]
        pairs = ops.pairs(op_names)
    return engine_names, op_names, pairs, todo


@dataclass
class _Tally:
    """What the workers have said so far: each engine's version, base table and number of pairs,
    the tidy rows, how many each engine has given, and the problems that fail the run."""

    totals: dict[str, int]
    echo: Callable[[str], object]
    rows: list[dict] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    bases: dict[str, dict] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    def take(self, key: str, event: dict, raw: TextIO) -> None:
        """One event of the worker ``key``: an engine's start, a pair (its raw record into
        ``raw``, its row printed, its tables removed unless they show an anomaly or an error), a
        fatal error, or the worker's exit (a problem for each of its engines that gave fewer pairs
        than it had)."""
        name = event.get("engine", key)
        if event["event"] == "start":
            self.versions[name], self.bases[name], self.totals[name] = (
                event["version"],
                event["base"],
                event["pairs"],
            )
        elif event["event"] == "pair":
            raw.write(json.dumps(event, default=str) + "\n")
            row = tidy.tidy_row(event, self.bases[name], self.versions[name])
            self.rows.append(row)
            self.counts[name] += 1
            self.echo(tidy.progress_line(row, self.counts[name], self.totals[name]))
            if row["outcome"] not in (classify.ANOMALY, classify.ERROR) and event.get("folder"):
                _remove_table(event["folder"])
        elif event["event"] == "fatal":
            self.problems.append(f"{name}: {event['error']}")
        elif event["event"] == "exit":
            for member in key.split(","):
                if self.counts[member] < self.totals[member] and not any(
                    p.startswith(f"{member}:") for p in self.problems
                ):
                    self.problems.append(
                        f"{member}: its worker exited ({event['code']}) after {self.counts[member]} of "
                        f"{self.totals[member]} pairs: {event['stderr'].strip()[-600:]}"
                    )


def _start_worker(
    era: str, group: list[str], todo: dict[str, list[tuple[str, str]]], tables: Path
) -> subprocess.Popen:
    """The worker process of the engines ``group``, in ``era``'s Python, given their pairs."""
    return eras.start_in_era(
        era,
        [
            "-u",
            "-m",
            "helpers.matrix.worker",
            ",".join(group),
            str(tables),
            json.dumps({name: todo[name] for name in group}),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_env(group),
    )


def _race_all(
    waiting: list[tuple[str, list[str]]],
    todo: dict[str, list[tuple[str, str]]],
    tables: Path,
    jobs: int,
    tally: _Tally,
    raw: TextIO,
) -> None:
    """Run the ``waiting`` worker processes, at most ``jobs`` at once, each event they send into
    ``tally``, until every one has exited; MatrixError (and every running worker stopped) when none
    has said a word for :data:`SILENCE_LIMIT_S`."""
    lines: queue.Queue = queue.Queue()
    running: dict[str, subprocess.Popen] = {}
    while waiting or running:
        while waiting and len(running) < jobs:
            era, group = waiting.pop(0)
            key = ",".join(group)
            process = _start_worker(era, group, todo, tables)
            running[key] = process
            threading.Thread(target=_reader, args=(process, key, lines), daemon=True).start()
        try:
            key, event = lines.get(timeout=SILENCE_LIMIT_S)
        except queue.Empty:
            for process in running.values():
                process.kill()
            raise MatrixError(
                f"no word from {', '.join(running)} for {SILENCE_LIMIT_S:.0f} s: stopped"
            ) from None
        if event["event"] == "exit":
            running.pop(key)
        tally.take(key, event, raw)


def run(
    engine_names: list[str],
    op_names: list[str],
    folder: Path,
    *,
    jobs: int = DEFAULT_JOBS,
    echo=print,
    only: list[tuple[str, str]] | dict[str, list[tuple[str, str]]] | None = None,
    also: dict[str, list[tuple[str, str]]] | None = None,
) -> list[dict]:
    """Run every pair of ``op_names`` on every engine (``only``: just these pairs of them, on every
    engine, or per engine as ``{engine: pairs}``, e.g. each engine's anomalies of a full run raced
    again); write the files (see the module's text) and return the CSV's rows. Raises MatrixError
    if an engine's worker gives no result.

    ``also`` (``{engine: pairs}``, any operations) adds pairs to race in the same worker processes,
    an engine not in ``engine_names`` joining for its own: e.g. notebook 13 races a full run's
    anomalies (:func:`anomalies_to_race_again`) beside its few operations, so Delta Spark's driver starts once.

    Engines that share a process (:func:`helpers.matrix.engines.processes`) run in one worker (up to
    :attr:`~helpers.matrix.engines.EngineSpec.threads` of them at once); at most ``jobs`` workers run
    at once, the largest groups first."""
    engine_names, op_names, pairs, todo = _todo(engine_names, op_names, only, also)
    folder.mkdir(parents=True, exist_ok=True)
    # an earlier run's grids, of engines this run may not have
    for stale in folder.glob("grid-*.png"):
        stale.unlink()
    started = time.perf_counter()
    totals = {name: len(todo[name]) for name in engine_names}
    waiting = engines.processes(list(engine_names), totals)
    tally = _Tally(totals, echo)
    counted = (
        f"{len(pairs)} pairs × {len(engine_names)} engine(s)"
        if only is None and not also
        else f"{sum(totals.values())} chosen pairs on {len(engine_names)} engine(s)"
    )
    echo(f"conflict matrix: {counted} ({', '.join(engine_names)}) into {folder}")
    tables = folder / "tables"
    if tables.resolve().is_relative_to(config.ROOT):  # the worker runs in the workbook's folder
        tables = tables.resolve().relative_to(config.ROOT)
    with (folder / "pairs.jsonl").open("w", encoding="utf-8") as raw:
        _race_all(waiting, todo, tables, jobs, tally, raw)
    seconds = time.perf_counter() - started
    outputs.write_outputs(folder, tally.rows, engine_names, tally.versions, op_names, seconds)
    if tally.problems:
        raise MatrixError("; ".join(tally.problems))
    return tally.rows


def worker_env(group: list[str]) -> dict[str, str] | None:
    """The environment of a worker process: delta-rs's held interleaving needs its commit hold
    preloaded (:mod:`helpers.matrix.commit_hold`); every other worker, the parent's."""
    held = [
        name
        for name in group
        if engines.ENGINES[name].held_interleaving
        and engines.ENGINES[name].module == "helpers.matrix.deltars"
    ]
    if not held:
        return None
    from helpers.matrix import commit_hold

    return commit_hold.preload()


def is_anomaly(row: dict) -> bool:
    """A row (of the CSV) whose race, or whose retry after reloading, left a table no serial order gives."""
    return row["outcome"] == classify.ANOMALY or row["retry_after_reload"] == classify.ANOMALY


def anomalous_pairs(
    rows: list[dict], engine_names: list[str] | None = None
) -> dict[str, list[tuple[str, str]]]:
    """The (first, second) pairs of ``rows`` (a run's CSV rows) that are anomalies (:func:`is_anomaly`),
    per engine, of ``engine_names`` only if given: what :func:`run`'s ``also`` races again."""
    found: dict[str, list[tuple[str, str]]] = {}
    for row in rows:
        if is_anomaly(row) and (engine_names is None or row["engine"] in engine_names):
            found.setdefault(row["engine"], []).append((row["first"], row["second"]))
    return found


def anomalies_to_race_again(
    engine_names: list[str], rows: list[dict], *, every_engine: bool = False
) -> dict[str, list[tuple[str, str]]]:
    """Which anomalies of a full run (``rows``) a short run of ``engine_names`` races again beside its
    own pairs (:func:`run`'s ``also``): all of those engines' and of the delta-rs eras' (they need no
    JVM), and the first of each mixed pair that runs in a process the short run starts anyway (Delta
    Spark's: each of their pairs costs its driver seconds); every engine's all with ``every_engine``."""
    if every_engine:
        return anomalous_pairs(rows)
    again = anomalous_pairs(rows, [*engine_names, *eras.ALL_ERAS])
    started = {engines.ENGINES[name].process_key for name in engine_names}
    mixed = [
        name for name, spec in engines.ENGINES.items() if spec.parts and spec.process_key in started
    ]
    again.update((name, pairs[:1]) for name, pairs in anomalous_pairs(rows, mixed).items())
    return again


def summary(rows: list[dict]) -> str:
    """Counts per outcome per engine, then every anomaly and every disagreement with the docs."""
    lines = []
    for name in dict.fromkeys(r["engine"] for r in rows):
        mine = [r for r in rows if r["engine"] == name]
        counted = Counter(r["outcome"] for r in mine)
        reloaded = Counter(r["retry_after_reload"] for r in mine if r["retry_after_reload"])
        line = f"{name}: " + ", ".join(f"{counted[o]} {o}" for o in classify.OUTCOMES if counted[o])
        if reloaded:
            line += "; retries after reloading: " + ", ".join(
                f"{reloaded[o]} {o}" for o in classify.OUTCOMES if reloaded[o]
            )
        lines.append(line)
    anomalies = [r for r in rows if is_anomaly(r)]
    lines.append(f"\n{len(anomalies)} anomal{'y' if len(anomalies) == 1 else 'ies'}:")
    for r in anomalies:
        kind = " | ".join(
            filter(
                None,
                (
                    r["anomaly_kind"] if r["outcome"] == classify.ANOMALY else "",
                    f"after reloading: {r['retry_after_reload_kind']}"
                    if r["retry_after_reload"] == classify.ANOMALY
                    else "",
                ),
            )
        )
        lines.append(f"- {r['engine']}: {r['first']} → {r['second']}: {kind} ({r['detail']})")
    lines += confirmations(rows)
    disagreements = [r for r in rows if r["agrees_with_docs"] == "no"]
    lines.append(f"\n{len(disagreements)} disagreement(s) with the documentation:")
    lines += [
        f"- {r['engine']}: {r['first']} → {r['second']}: {r['disagreement']}" for r in disagreements
    ]
    return "\n".join(lines)


CELL = (
    "outcome",
    "conflict",
    "anomaly_kind",
    "matched",
    "rows_race",
    "retry_after_reload",
    "retry_after_reload_kind",
)
"""What must match for two engines' cells to be the same cell (the store must not change any of it)."""
VERDICT = ("outcome", "conflict", "anomaly_kind", "retry_after_reload", "retry_after_reload_kind")
"""What a variant on another layout is compared by: its base table holds other rows."""


def confirmations(rows: list[dict]) -> list[str]:
    """For each engine that re-runs another's cells on another store (:attr:`EngineSpec.confirms`), or
    on another layout or interleaving (:attr:`EngineSpec.variant_of`): how many cells it compared,
    and every cell that differs, field by field."""
    lines = []
    present = {r["engine"] for r in rows}
    for name in dict.fromkeys(r["engine"] for r in rows):
        spec = engines.ENGINES.get(name)
        confirmed = (spec.confirms or spec.variant_of) if spec else None
        if not confirmed or confirmed not in present:
            continue
        local = {(r["first"], r["second"]): r for r in rows if r["engine"] == confirmed}
        mine = [r for r in rows if r["engine"] == name and (r["first"], r["second"]) in local]
        compared = (
            CELL if spec.layout == layouts.SHARED_FILES.name else VERDICT
        )  # another table: other rows
        differ = []
        for r in mine:
            other = local[(r["first"], r["second"])]
            fields = [
                f"{f}: {other[f]!r} → {r[f]!r}" for f in compared if str(r[f]) != str(other[f])
            ]
            if fields:
                differ.append(f"- {r['first']} → {r['second']}: {'; '.join(fields)}")
        lines.append(
            f"\n{name} against {confirmed}: {len(mine)} cells compared, {len(differ)} differ"
            + (":" if differ else "")
        )
        lines += differ
    return lines
