"""Run the conflict matrix: worker processes for the engines, every verdict into one tidy CSV.

:func:`run` starts :mod:`helpers.matrix.worker` in each engine's environment, one process per
group of engines that share one (:func:`helpers.matrix.engines.processes`: the Spark engines share
a session), at most ``jobs`` at a time; it reads their JSON lines as they come, classes each pair
(:mod:`helpers.matrix.classify`), sets it against the documentation (:mod:`helpers.matrix.documented`),
prints one line per pair, and writes into ``build/matrix/<name>/``:

* ``matrix.csv``: one row per engine × first × second (:data:`CSV_COLUMNS`);
* ``pairs.jsonl``: every pair's raw record (each table's rows, errors, log problems);
* ``grid-<engine>.png``: the grid of :func:`helpers.matrix.plots.grid`;
* ``meta.json``: engines and versions, operations, wall time, the documentation's pages.

Tables go to ``tables/<engine>/`` (an engine on S3: a prefix of the emulator's bucket,
:func:`helpers.matrix.worker.s3_root`); a pair's tables are kept only when its verdict is an
anomaly or an error, for a look by hand. :func:`summary` also sets each engine run on S3 against
the same engine's local cells (:func:`confirmations`).
"""

from __future__ import annotations

import csv
import json
import queue
import shutil
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from helpers.ground import config, eras
from helpers.matrix import classify, documented, engines
from helpers.matrix import operations as ops

DEFAULT_OUT = config.BUILD_DIR / "matrix"
DEFAULT_JOBS = 3
"""Worker processes at once: the two Spark drivers (:data:`helpers.matrix.engines.SECOND_SPARK`), each
about one core busy, and the delta-rs eras one after the other beside them."""
SILENCE_LIMIT_S = 300.0
"""A worker that reports nothing for this long is stuck: it is stopped and the run fails."""
CSV_COLUMNS = (
    "engine",
    "engine_version",
    "layout",
    "interleaving",
    "first",
    "second",
    "outcome",
    "error_class",
    "conflict",
    "anomaly_kind",
    "matched",
    "rows_race",
    "rows_serial_ab",
    "rows_serial_ba",
    "rows_a_alone",
    "docs_category_first",
    "docs_category_second",
    "docs_delta_io",
    "docs_write_serializable",
    "docs_serializable",
    "agrees_with_docs",
    "disagreement",
    "retry_after_reload",
    "retry_after_reload_kind",
    "b_read_version",
    "b_operations",
    "b_note",
    "error_serial_ab",
    "error_serial_ba",
    "detail",
    "seconds",
)


class MatrixError(RuntimeError):
    """An engine's worker could not run; the message names the engine and its error."""


def _rows(state: dict | None) -> int | str:
    if not state:
        return ""
    return "unreadable" if "unreadable" in state else len(state["rows"])


def _error(step: dict | None) -> str:
    """``"SchemaMismatchError: <message>"`` for a serial step that raised, else ``""``."""
    error = (step or {}).get("error")
    return f"{error['class']}: {error['message']}" if error else ""


def tidy_row(record: dict, base: dict, version: str) -> dict:
    """One ``matrix.csv`` row from a worker's pair record."""
    verdict = classify.classify(record, base)
    spec = engines.ENGINES.get(record["engine"])
    expected = documented.expectation(
        record["first"], record["second"], spec.layout if spec else ops.SHARED_FILES.name
    )
    agrees, disagreement = documented.compare(verdict, expected)
    reload = classify.retry_after_reload(record, base)
    race = record.get("race", {})
    first, second = ops.OPERATIONS[record["first"]], ops.OPERATIONS[record["second"]]
    return {
        "engine": record["engine"],
        "engine_version": version,
        "layout": spec.layout if spec else "",
        "interleaving": spec.interleaving if spec else "",
        "first": record["first"],
        "second": record["second"],
        "outcome": verdict.outcome,
        "error_class": verdict.error_class,
        "conflict": verdict.conflict,
        "anomaly_kind": verdict.kind,
        "matched": verdict.matched,
        "rows_race": _rows(race.get("state")),
        "rows_serial_ab": _rows(record.get("serial_ab", {}).get("state")),
        "rows_serial_ba": _rows(record.get("serial_ba", {}).get("state")),
        "rows_a_alone": _rows(record.get("alone_a")),
        "docs_category_first": first.category or "",
        "docs_category_second": second.category or "",
        "docs_delta_io": expected.delta_io,
        "docs_write_serializable": expected.write_serializable,
        "docs_serializable": expected.serializable,
        "agrees_with_docs": agrees,
        "disagreement": disagreement,
        "retry_after_reload": reload.outcome if reload else "",
        "retry_after_reload_kind": reload.kind if reload else "",
        "b_read_version": "" if race.get("b_read_version") is None else race["b_read_version"],
        "b_operations": " ".join(o or "?" for o in race.get("b_operations", [])),
        "b_note": race.get("note") or "",
        "error_serial_ab": _error(record.get("serial_ab")),
        "error_serial_ba": _error(record.get("serial_ba")),
        "detail": verdict.detail
        + (
            f" | after reloading: {reload.outcome}{': ' + reload.detail if reload.detail else ''}"
            if reload
            else ""
        ),
        "seconds": record.get("seconds", ""),
    }


def progress_line(row: dict, done: int, total: int) -> str:
    what = row["outcome"]
    if row["outcome"] == "refused":
        what += f" ({row['conflict'] or row['error_class']})"
    elif row["outcome"] == "anomaly":
        what += f": {row['anomaly_kind']}"
    elif row["matched"] == "B→A":
        what += " (equals B→A)"
    if row["retry_after_reload"]:
        what += f"; after reloading: {row['retry_after_reload']}"
    flag = "  ≠ docs" if row["agrees_with_docs"] == "no" else ""
    return f"[{row['engine']}] {done:>3}/{total} {row['first']} → {row['second']}: {what}{flag}"


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
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(
        "grid-*.png"
    ):  # an earlier run's grids, of engines this run may not have
        stale.unlink()
    started, rows, versions, bases = time.perf_counter(), [], {}, {}
    lines: queue.Queue = queue.Queue()
    totals = {name: len(todo[name]) for name in engine_names}
    waiting, running, problems = engines.processes(list(engine_names), totals), {}, []
    counts: Counter = Counter()
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
        while waiting or running:
            while waiting and len(running) < jobs:
                era, group = waiting.pop(0)
                key = ",".join(group)
                process = eras.start_in_era(
                    era,
                    [
                        "-u",
                        "-m",
                        "helpers.matrix.worker",
                        key,
                        str(tables),
                        json.dumps({name: todo[name] for name in group}),
                    ],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    env=worker_env(group),
                )
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
            name = event.get("engine", key)
            if event["event"] == "start":
                versions[name], bases[name], totals[name] = (
                    event["version"],
                    event["base"],
                    event["pairs"],
                )
            elif event["event"] == "pair":
                raw.write(json.dumps(event, default=str) + "\n")
                row = tidy_row(event, bases[name], versions[name])
                rows.append(row)
                counts[name] += 1
                echo(progress_line(row, counts[name], totals[name]))
                if row["outcome"] not in (classify.ANOMALY, classify.ERROR) and event.get("folder"):
                    _remove_table(event["folder"])
            elif event["event"] == "fatal":
                problems.append(f"{name}: {event['error']}")
            elif event["event"] == "exit":
                running.pop(key)
                for member in key.split(","):
                    if counts[member] < totals[member] and not any(
                        p.startswith(f"{member}:") for p in problems
                    ):
                        problems.append(
                            f"{member}: its worker exited ({event['code']}) after {counts[member]} of "
                            f"{totals[member]} pairs: {event['stderr'].strip()[-600:]}"
                        )
    seconds = time.perf_counter() - started
    write_outputs(folder, rows, engine_names, versions, op_names, seconds)
    if problems:
        raise MatrixError("; ".join(problems))
    return rows


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


def write_outputs(
    folder: Path,
    rows: list[dict],
    engine_names: list[str],
    versions: dict,
    op_names: list[str],
    seconds: float,
) -> None:
    """``matrix.csv`` (rows in engine, then pair order), ``meta.json`` and one grid per engine."""
    order = {pair: i for i, pair in enumerate(ops.pairs(op_names))}
    rows.sort(key=lambda r: (engine_names.index(r["engine"]), order[(r["first"], r["second"])]))
    with (folder / "matrix.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    meta = {
        "engines": {name: versions.get(name) for name in engine_names},
        "operations": list(op_names),
        "pairs_per_engine": len(order),
        "pairs": {name: sum(1 for r in rows if r["engine"] == name) for name in engine_names},
        "layouts": {layout.name: layout.what for layout in ops.LAYOUTS.values()},
        "interleavings": dict(ops.INTERLEAVINGS),
        "wall_seconds": round(seconds, 1),
        "run_on": time.strftime("%Y-%m-%d"),
        "documentation": [
            {"page": page, "read_on": read_on} for page, read_on in documented.sources()
        ],
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    import matplotlib

    if "inline" not in matplotlib.get_backend():  # a notebook keeps its inline plots
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.matrix import plots

    for name in engine_names:
        if any(r["engine"] == name for r in rows):
            figure = plots.grid(rows, name, title=grid_title(name, versions.get(name) or ""))
            figure.savefig(folder / f"grid-{name}.png", dpi=110)
            plt.close(figure)


def grid_title(name: str, version: str) -> str | None:
    """A grid's title for an engine the plain title would misname (a mixed pair, Spark, a run on S3);
    None for a delta-rs era on local disk (the grid's own title)."""
    spec = engines.ENGINES.get(name)
    if spec is None or (spec.module == "helpers.matrix.deltars" and spec.store == "local"):
        return None
    where = " on the S3 emulator" if spec.store == "s3" else ""
    if spec.parts:
        return f"A by {spec.parts[0]}, then B by {spec.parts[1]} from the older snapshot{where}\n({version})"
    return f"{name.split('@')[0]}{where} ({version}): A commits, then B from the older snapshot"


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
            CELL if spec.layout == ops.SHARED_FILES.name else VERDICT
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
