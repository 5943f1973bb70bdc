"""The runner: start N writer processes at once against one Delta table, and collect what they say.

(What a run leaves, :class:`helpers.runs.run_result.RunResult`, is shown and summarised in
:mod:`helpers.runs.run_result`; each writer process's spec, files and result row are in
:mod:`helpers.runs.run_processes`.)

This is the seeds' "runner" (a program that launches the writer 8 times in parallel), with two
things the seeds left to luck made exact:

* a cross-process barrier: each writer loads the table, creates ``ready-<id>`` in the run's
  barrier folder and polls for ``go``; the runner writes ``go`` once every writer is ready (or
  gone), so all of them hold the same snapshot and race for the same next version;
* a record: every writer leaves a result JSON (see :mod:`helpers.writers`); a writer that leaves
  none, crashes or overruns the timeout is recorded as failed with its exit code and stderr tail.

The timeout is the runner's alone: writers wait at the barrier for as long as the runner lives. If
the timeout passes before every writer is ready, the barrier never opens and every writer still
running is killed; after go, those still writing at the timeout are killed. Either way they are
recorded as failed with ``Timeout``, and no writer decides anything by its own clock.

Usage::

    create_table(uri, options)                                   # an empty table, version 0
    run = run_writers(uri, options, n=8, era="deltalake-0.22.3", max_commit_retries=0)
    run.results                                                  # one row per writer
    run.timeline(title="8 writers, no retries")                  # the picture (helpers.runs.plots)

What the writers *say* is only half the story: :func:`helpers.runs.audit.audit` checks it against the
storage. Each run lives in ``build/runs/<run id>/`` (specs, results, logs, barrier files).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from helpers import writers
from helpers.delta import landing
from helpers.ground import config, eras
from helpers.ground import progress as progress_display
from helpers.runs import run_processes, run_result
from helpers.stores import store_check, tables
from helpers.writers import processes

RUNS_DIR = config.BUILD_DIR / "runs"
DEFAULT_TIMEOUT_S = 180.0


class RunnerError(RuntimeError):
    """The run cannot start (no such table, bad arguments); the message says what to do."""


# ---------------------------------------------------------------------------------------------
# Tables and landing files
# ---------------------------------------------------------------------------------------------


def create_table(
    table_uri: str | os.PathLike, storage_options: dict[str, str] | None = None
) -> int:
    """Create an empty Delta table with the landing schema (``id`` int, ``name`` string) using the
    kernel's deltalake; return its version (0). Raises RunnerError if a table is already there."""
    from deltalake import DeltaTable

    uri = str(table_uri)
    try:
        DeltaTable(uri, storage_options=tables.kernel_storage_options(storage_options))
    except Exception:
        pass
    else:
        raise RunnerError(
            f"A Delta table already exists at {uri}; pick a new name (e.g. with a uuid) or delete it first."
        )
    table = DeltaTable.create(
        uri,
        schema=landing.landing_schema(),
        mode="error",
        storage_options=tables.kernel_storage_options(storage_options),
    )
    return table.version()


def create_table_in_era(
    table_uri: str,
    storage_options: dict[str, str] | None = None,
    *,
    era: str,
    first_batch: int | None = None,
) -> dict:
    """Create the table with an era's own deltalake (in a process of that era), and append the
    landing file of ``first_batch`` if given. Returns the writer's report: ``{"deltalake",
    "created", "appended", "version", "error", "message"}`` (a refused creation is a result, not an
    exception). Raises EraError for an unknown era, RunnerError if the process gave no report, and
    StorageError, naming the endpoint and the settings to check, if the store does not answer or
    refuses the credentials (checked before the era's process starts)."""
    store_check.check_store(table_uri, storage_options)
    args = [
        "-m",
        writers.MODULE,
        "--create-table",
        str(table_uri),
        json.dumps(storage_options or {}),
    ]
    if first_batch is not None:
        args.append(str(landing.landing_file(first_batch)))
    done = eras.run_in_era(era, args, timeout=180)
    reports = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not reports:
        raise RunnerError(
            f"Creating {table_uri} in {era} gave no report (exit {done.returncode}): {done.stderr.strip()[-400:]}"
        )
    return json.loads(reports[-1])


@dataclass(frozen=True)
class TableState:
    version: int
    rows: int
    next_batch: int
    """The first batch number whose ids are not in the table yet."""


def table_state(table_uri: str, storage_options: dict[str, str] | None = None) -> TableState:
    """Version, row count and first unused batch of a table, read with the kernel's deltalake.
    Raises RunnerError naming the URI if there is no table there, StorageError if the store does not answer."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        table = DeltaTable(
            table_uri, storage_options=tables.kernel_storage_options(storage_options)
        )
        ids = table.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
    except TableNotFoundError:
        raise RunnerError(
            f"No Delta table at {table_uri}. Create it first: helpers.runs.runner.create_table({table_uri!r}, storage_options)."
        ) from None
    except OSError as error:
        store_check.check_store(
            table_uri, storage_options
        )  # raises if the store does not answer or refuses the keys
        raise RunnerError(
            f"Cannot read {table_uri}: {writers.one_line(str(error), 400)}. Are the storage_options right?"
        ) from None
    top = max((i for i in ids if i is not None), default=0)
    return TableState(
        version=table.version(),
        rows=len(ids),
        next_batch=landing.batch_of_id(top) + 1 if top else 1,
    )


# ---------------------------------------------------------------------------------------------
# Running writers
# ---------------------------------------------------------------------------------------------


def _check_arguments(
    n: int,
    kinds: Sequence[tuple[str, str]],
    batches: Sequence[int] | None,
    max_commit_retries,
    timeout_s: float,
) -> None:
    for engine, era in kinds:
        eras.python_for(era)  # EraError for an unknown or missing era
        if engine not in writers.ENGINES:
            raise RunnerError(
                f"Unknown engine {engine!r}; the writer has {', '.join(writers.ENGINES)}."
            )
    if batches is not None and len(batches) != n:
        raise RunnerError(
            f"batches names {len(batches)} batch(es) for {n} writers; give one per writer."
        )
    if batches is not None and len(set(batches)) != len(batches):
        raise RunnerError(
            f"batches {list(batches)} repeat a batch; each writer needs its own ids for the audit to tell them apart."
        )
    try:
        writers.check_max_commit_retries(max_commit_retries)
    except writers.SpecError as error:
        raise RunnerError(str(error)) from None
    if timeout_s <= 0:
        raise RunnerError(f"timeout_s must be positive, not {timeout_s!r}.")


def _new_run_dir(run_dir: str | os.PathLike | None) -> Path:
    path = (
        Path(run_dir)
        if run_dir
        else RUNS_DIR / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
    )
    for sub in ("specs", "results", "logs", "barrier"):
        (path / sub).mkdir(parents=True, exist_ok=True)
    if writers.go_file(path / "barrier").exists():
        raise RunnerError(f"{path} holds an earlier run (its barrier is open); give a new run_dir.")
    return path


def writer_code(
    table_uri: str | os.PathLike,
    storage_options: dict[str, str] | None = None,
    *,
    era: str = eras.CURRENT,
    engine: str = "deltalake",
    max_commit_retries: int | None = None,
    hold_snapshot: bool | None = None,
    writer: int = 1,
    batch: int | None = None,
) -> str:
    """What writer ``w<writer>`` of :func:`run_writers` with these arguments runs (the same spec the
    run builds, rendered by its engine: :func:`helpers.writers.code`), as Python to copy. ``batch``:
    its landing batch (default: the one the run would give it, read from the table)."""
    era_name = eras.era(era).name  # an unknown era is refused here, by name
    if batch is None:
        batch = table_state(str(table_uri), dict(storage_options or {})).next_batch + writer - 1
    spec = run_processes.writer_spec(
        RUNS_DIR / "preview",
        writer,
        str(table_uri),
        dict(storage_options or {}),
        engine,
        era_name,
        batch,
        max_commit_retries,
        hold_snapshot,
    )
    writers.engine_class(engine).check_spec(spec)
    return writers.code(spec)


def run_single_writer(
    spec: dict, *, era: str | None = None, timeout_s: float = 120
) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run one writer process to completion with a spec given as a dict (no barrier, no runner
    bookkeeping): for trying a writer by hand and for tests. Returns the finished process (its
    output captured) and the result the writer left, or None if it left none."""
    done = eras.run_in_era(
        era or spec["era"], ["-m", writers.MODULE, json.dumps(spec)], timeout=timeout_s
    )
    try:
        return done, json.loads(Path(spec["result_path"]).read_text())
    except FileNotFoundError:
        return done, None


def run_writers(
    table_uri: str | os.PathLike,
    storage_options: dict[str, str] | None = None,
    *,
    n: int = 8,
    era: str = eras.CURRENT,
    max_commit_retries: int | None = None,
    batches: Sequence[int] | None = None,
    engine: str = "deltalake",
    hold_snapshot: bool | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: bool = True,
    run_dir: str | os.PathLike | None = None,
    mix: Sequence[tuple[str, str]] | None = None,
) -> run_result.RunResult:
    """Start ``n`` writer processes in ``era``'s environment, release them together, collect their results.

    ``mix``: writers of several engines and eras in one race, one ``(engine, era)`` per writer,
    e.g. ``[("spark", eras.CURRENT)] * 2 + [("deltalake", "deltalake-1.5.1")] * 2``; it replaces
    ``n``, ``engine`` and ``era``.

    ``max_commit_retries``: None keeps the library default, 0 turns retries off. ``batches``: the
    landing batch of each writer (default: the next ``n`` batches not yet in the table, so every
    row stays attributable). ``hold_snapshot``: see :class:`helpers.writers.WriterSpec`; None (the
    default) lets each writer hold its snapshot across the barrier if its engine can (deltalake),
    while Spark and Daft read the latest one after go.
    ``timeout_s`` bounds the whole run: if it passes before every writer is at the barrier, the
    barrier stays shut; writers still running then are killed and recorded as failed (``Timeout``).

    Returns a :class:`helpers.runs.run_result.RunResult`. Raises
    :class:`helpers.ground.eras.EraError` for an unknown or missing era, and RunnerError for bad
    arguments or a table that does not exist or cannot be read.
    """
    kinds, n, engine, era = _kinds(n, engine, era, mix)
    _check_arguments(n, kinds, batches, max_commit_retries, timeout_s)
    table_uri = str(table_uri)
    storage_options = dict(storage_options or {})
    before = table_state(table_uri, storage_options)
    batches = (
        list(batches)
        if batches is not None
        else list(range(before.next_batch, before.next_batch + n))
    )
    run_dir = _new_run_dir(run_dir)
    procs = run_processes.prepare_writers(
        run_dir, table_uri, storage_options, kinds, batches, max_commit_retries, hold_snapshot
    )
    deadline = time.monotonic() + timeout_s
    shown = progress_display.RunProgress(describe_writers(kinds), n, enabled=progress)
    t_launched, released, timed_out = _race(procs, run_dir, deadline, timeout_s, shown)
    frame = run_result.results_frame(
        [run_processes.result_row(w, table_uri, timeout_s) for w in procs]
    )
    result = run_result.RunResult(
        table_uri=table_uri,
        storage_options=storage_options,
        era=era,
        engine=engine,
        n=n,
        max_commit_retries=max_commit_retries,
        hold_snapshot=hold_snapshot,
        version_before=before.version,
        rows_before=before.rows,
        batches=batches,
        run_dir=run_dir,
        results=frame,
        t_launched=t_launched,
        t_released=released,
        t_finished=time.time(),
        timed_out=timed_out,
    )
    (run_dir / "summary.txt").write_text(result.summary() + "\n")
    _show_finished(shown, result, timeout_s)
    return result


def _kinds(
    n: int, engine: str, era: str, mix: Sequence[tuple[str, str]] | None
) -> tuple[list[tuple[str, str]], int, str, str]:
    """One ``(engine, era)`` per writer, and the run's ``n``, ``engine`` and ``era`` (for a mix:
    its engines and eras joined with `` + ``). Raises RunnerError for a bad ``mix`` or ``n``."""
    if mix is not None:
        kinds = [tuple(kind) for kind in mix]
        if not kinds or any(len(kind) != 2 for kind in kinds):
            raise RunnerError(f"mix must list one (engine, era) pair per writer, not {mix!r}.")
        n = len(kinds)
        engine = " + ".join(dict.fromkeys(k[0] for k in kinds))
        era = " + ".join(dict.fromkeys(k[1] for k in kinds))
    else:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise RunnerError(f"n must be a whole number of writers >= 1, not {n!r}.")
        kinds = [(engine, era)] * n
    return kinds, n, engine, era


def _race(
    procs: list[run_processes.WriterProcess],
    run_dir: Path,
    deadline: float,
    timeout_s: float,
    shown: progress_display.RunProgress,
) -> tuple[float, float | None, list[str]]:
    """Launch the writers, open the barrier once all are ready (if before ``deadline``), wait for
    them to exit, and kill those still running. Returns (first launch time, barrier release time
    or None if it stayed shut, the writers killed)."""
    released = None
    try:
        processes.launch(procs)
        t_launched = min(w.t_launched for w in procs)
        if processes.wait_for_barrier(procs, run_dir / "barrier", deadline, shown):
            released = writers.open_barrier(run_dir / "barrier")
            shown.status("released")
            processes.wait_for_exits(procs, deadline, shown)
        else:
            shown.status(f"not all ready within {timeout_s:g} s: barrier kept shut")
    finally:
        timed_out = processes.kill_stragglers(procs)
    return t_launched, released, timed_out


def _show_finished(
    shown: progress_display.RunProgress, result: run_result.RunResult, timeout_s: float
) -> None:
    """The progress line's last words: how many writers finished, committed and failed."""
    n, timed_out = result.n, result.timed_out
    shown.finish(
        f"{n - len(timed_out)}/{n} done, {result.committed} committed, {result.failed} failed"
        + (f" ({len(timed_out)} killed at the {timeout_s:g} s timeout)" if timed_out else "")
    )


def describe_writers(kinds: Sequence[tuple[str, str]]) -> str:
    """``8 deltalake 0.22.3 writers``, ``4 Spark drivers``, ``2 Spark drivers + 2 deltalake 1.5.1 writers``."""
    groups: dict[tuple[str, str], int] = {}
    for kind in kinds:
        groups[kind] = groups.get(kind, 0) + 1
    parts = []
    for (engine, era), count in groups.items():
        plural = "s" if count != 1 else ""
        if engine == "spark":
            parts.append(f"{count} Spark driver{plural}")
        elif engine == "daft":
            parts.append(f"{count} Daft writer{plural}")
        else:
            parts.append(f"{count} deltalake {eras.era(era).deltalake_version} writer{plural}")
    return " + ".join(parts)
