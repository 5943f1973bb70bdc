"""One run of the benchmark: N writer processes (or one process of N writer threads) set up on a
fresh table, released together by the barrier, M appends each; storage then decides what
happened, and the run gives one row of figures and one row per commit (:func:`run_once`).
A whole benchmark, many runs, is :func:`helpers.bench.run.benchmark`.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.bench import meter as meter_module
from helpers.bench import stats
from helpers.bench.meter import KINDS, RequestMeter
from helpers.bench.protocols import Protocol
from helpers.delta import integrity
from helpers.ground import config
from helpers.ground.progress import RunProgress
from helpers.runs import audit, runner
from helpers.stores import storage
from helpers.writers import processes
from helpers.writers.protocol import open_barrier

RESULTS_DIR = config.BUILD_DIR / "bench"
WORKER_MODULE = "helpers.bench.worker"
RUN_TIMEOUT_S = 3600.0
"""A run that has not ended after an hour is hung (a writer stuck on a dead service): it is
stopped and reported. Not a speed limit: the longest full run here takes minutes."""


def batches_of(writers: int, appends: int) -> dict[str, list[int]]:
    """Writer ``w<i>`` appends batches ``(i-1)*M+1 .. i*M``: every row says whose it is."""
    return {
        f"w{i}": list(range((i - 1) * appends + 1, i * appends + 1)) for i in range(1, writers + 1)
    }


@dataclass(kw_only=True)
class _Process(processes.EraProcess):
    """A benchmark process: one writer, or a pool of writer threads."""

    writers: list[str]
    result_path: Path


def warm_up_uri(uri: str, process: str) -> str:
    """The scratch table a process appends to once before the barrier (beside the run's table)."""
    return f"{uri}-warm-up-{process}"


def _prepare(
    proto: Protocol,
    uri: str,
    options: dict[str, str],
    writers: int,
    appends: int,
    run_dir: Path,
    max_commit_retries: int | None,
) -> list[_Process]:
    batches = batches_of(writers, appends)
    groups = [list(batches)] if proto.threads else [[w] for w in batches]
    procs = []
    for i, group in enumerate(groups, 1):
        name = f"p{i}"
        proc = _Process(
            name=name,
            era=proto.era,
            module=WORKER_MODULE,
            spec_path=run_dir / f"{name}.json",
            writers=group,
            result_path=run_dir / f"{name}.result.json",
            stdout_path=run_dir / f"{name}.out",
            stderr_path=run_dir / f"{name}.err",
        )
        spec = {
            "process": name,
            "writers": group,
            "batches": {w: batches[w] for w in group},
            "engine": proto.engine,
            "era": proto.era,
            "table_uri": uri,
            "storage_options": options,
            "barrier_dir": str(run_dir),
            "runner_pid": os.getpid(),
            "result_path": str(proc.result_path),
            "max_commit_retries": max_commit_retries,
            "warm_up_uri": warm_up_uri(uri, name),
        }
        proc.spec_path.write_text(json.dumps(spec, indent=1))
        procs.append(proc)
    return procs


def _failure(proc: _Process, when: str) -> stats.BenchError:
    """The error of a process that failed: its own report if it left one, else its stderr's tail."""
    try:
        detail = json.loads(proc.result_path.read_text()).get("error")
    except (OSError, ValueError):
        detail = (
            f"no result (exit {proc.process.poll()}): {processes.stderr_tail(proc.stderr_path)}"
        )
    return stats.BenchError(f"Writer process {proc.name} failed {when}: {detail}")


def _claimed(meter: RequestMeter | None, total: int):
    """The progress line while a run writes: accepted claims, in steps of a tenth (or nothing to count)."""
    if meter is None:
        return None
    step = max(1, total // 10)
    return lambda: f"{sum(c.accepted for c in meter.claims) // step * step}/{total} commits claimed"


def log_of(check: integrity.Check) -> dict[tuple[str, int], list[int]]:
    """From a table's check (its commit files as read from storage): ``{(writer, batch): [versions
    whose commit carries those tags]}``."""
    found: dict[tuple[str, int], list[int]] = {}
    for version, body in sorted(check.commit_bodies.items()):
        commit = audit.parse_commit(version, body)
        if commit.writer_id is not None and commit.batch is not None:
            found.setdefault((commit.writer_id, commit.batch), []).append(version)
    return found


def _fresh_table(proto: Protocol, uri: str, meter: RequestMeter | None) -> dict[str, str]:
    """Create the run's table at ``uri`` anew (version 0, the landing schema); return the writers'
    storage options, routed through ``meter`` when there is one."""
    base_options = proto.storage_options()
    storage.remove_table(uri)
    runner.create_table(uri.replace("s3a://", "s3://", 1), base_options)
    if meter is None:
        return base_options
    if proto.backend == "azure":
        return meter.route_azure(base_options)
    return meter.route(base_options, dynamodb=proto.claim_style == "dynamodb")


def _empty_folder(run_id: str, slug: str) -> Path:
    """The run's folder of specs, results and logs, emptied of an earlier run's."""
    run_dir = RESULTS_DIR / "runs" / run_id / slug
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in run_dir.iterdir():
        stale.unlink()
    return run_dir


def _race(
    procs: list[_Process],
    run_dir: Path,
    uri: str,
    deadline: float,
    shown: RunProgress,
    meter: RequestMeter | None,
    total: int,
) -> float:
    """Start the processes, open the barrier once every one is set up, wait for all to exit; return
    the time the barrier opened. Stragglers are stopped and the warm-up tables removed whatever
    happens."""
    try:
        processes.launch(procs)
        if not processes.wait_for_barrier(procs, run_dir, deadline, shown):
            raise stats.BenchError(
                f"The writers were not set up within {RUN_TIMEOUT_S:.0f} s; see the logs in {config.shown(run_dir)}."
            )
        missing = processes.absent(procs, run_dir)
        if missing:
            raise _failure(missing[0], "before the barrier")
        if meter is not None:
            meter.reset()  # forget the set-up's requests (the warm-up appends): only the measured window counts
        t_go = open_barrier(run_dir)
        processes.wait_for_exits(procs, deadline, shown, status=_claimed(meter, total))
        if processes.kill_stragglers(procs):
            raise stats.BenchError(
                f"The run did not end within {RUN_TIMEOUT_S:.0f} s; the writers were stopped."
            )
    finally:
        processes.kill_stragglers(procs)
        for p in procs:
            storage.remove_table(warm_up_uri(uri, p.name))
    return t_go


def _results(procs: list[_Process]) -> list[dict]:
    """Each process's result file; BenchError for the first that crashed or failed."""
    results = []
    for p in procs:
        if not p.result_path.exists():
            raise _failure(p, "(it crashed)")
        result = json.loads(p.result_path.read_text())
        if result["error"]:
            raise _failure(p, "while writing")
        results.append(result)
    return results


def _checked(proto: Protocol, writers: int, uri: str) -> integrity.Check:
    """The table's check as read from storage; BenchError if the table is damaged."""
    check = integrity.check_table(uri)
    if check.blocking:
        raise stats.BenchError(
            f"{proto.name} N={writers}: the table is damaged: "
            + "; ".join(map(str, check.blocking))
        )
    return check


def _metered(
    meter: RequestMeter, figures: stats.RunFigures, commits: list[dict], t_go: float
) -> dict:
    """A metered run's columns: seconds and requests of each kind per committed append, the
    requests outside the meter's view, the claims no attempt owns."""
    columns = {}
    seconds, counts = meter.seconds_by_kind(since=t_go), meter.count_by_kind(since=t_go)
    per = max(figures.committed, 1)
    for kind in KINDS:
        columns[meter_module.column("s", kind)] = seconds[kind] / per
        columns[meter_module.column("n", kind)] = counts[kind] / per
    columns[meter_module.OUTSIDE_REQUESTS] = stats.outside_requests_per_commit(
        [c["t_done"] - c["t_first_try"] for c in commits],
        sum(seconds.values()),
        figures.committed,
    )
    columns["unattributed_claims"] = meter.unattributed_claims()
    return columns


def _commit_rows(
    commits: list[dict], run_id: str, proto: Protocol, writers: int, t_go: float
) -> list[dict]:
    """One row per commit of the run, its times counted from the barrier's opening."""
    return [
        {
            "run_id": run_id,
            "protocol": proto.name,
            "writers": writers,
            "writer": c["writer"],
            "batch": c["batch"],
            "outcome": c["outcome"],
            "error_class": c.get("error_class"),
            "latency_s": c["t_done"] - c["t_first_try"],
            "attempts": c["attempts"],
            "in_log": c["in_log"],
            "t_first_try_s": c["t_first_try"] - t_go,
            "t_done_s": c["t_done"] - t_go,
        }
        for c in commits
    ]


def run_once(
    proto: Protocol,
    writers: int,
    appends: int,
    *,
    run_id: str,
    meter: RequestMeter | None,
    max_commit_retries: int | None = None,
) -> tuple[dict, list[dict]]:
    """One run; returns (its row, its commit rows). Raises BenchError if it is unusable or a safe protocol lost a commit."""
    if writers not in proto.writer_counts and writers != 1:
        raise stats.BenchError(
            f"{proto.name} runs with {proto.writer_counts} writers, not {writers}."
        )
    slug = f"{proto.name.replace('@', '-on-')}-n{writers}"  # no "@" in object keys or folder names
    name = f"bench/{run_id}/{slug}"
    uri = proto.table_uri(name)
    options = _fresh_table(proto, uri, meter)
    run_dir = _empty_folder(run_id, slug)
    total = writers * appends
    shown = RunProgress(f"{proto.name} N={writers}", total)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    procs = _prepare(proto, uri, options, writers, appends, run_dir, max_commit_retries)
    t_go = _race(procs, run_dir, uri, deadline, shown, meter, total)
    results = _results(procs)
    commits = [c for r in results for c in r["commits"]]
    check = _checked(proto, writers, uri)
    found, versions = log_of(check), check.commit_versions
    attempts = meter.attempts() if meter is not None else {}
    for c in commits:
        c["attempts"] = attempts.get((c["writer"], c["batch"])) if meter is not None else None
        c["in_log"] = len(found.get((c["writer"], c["batch"]), ()))
    planned = [
        (writer, batch)
        for writer, batches in batches_of(writers, appends).items()
        for batch in batches
    ]
    losses = stats.count_losses(commits, found, planned)
    stats.check_safe(proto.name, losses, proto.safe)
    figures = stats.run_figures(commits, losses, t_go=t_go, setup_s=[r["setup_s"] for r in results])
    row = {
        "run_id": run_id,
        "protocol": proto.name,
        "label": proto.label,
        "backend": proto.backend,
        "s3_server": config.s3_server() if proto.backend == "s3" else "",
        "writers": writers,
        "appends": appends,
        "processes": len(procs),
        "library": results[0]["library"],
        **figures.as_dict(),
        "versions": len(versions) - 1,
        "unacknowledged_in_log": losses.unacknowledged_in_log,
        "metered": meter is not None,
    }
    if meter is not None:
        row.update(_metered(meter, figures, commits, t_go))
    shown.finish(
        f"{figures.committed}/{figures.commits} committed, {losses.lost} lost, "
        f"{figures.commits_per_s:.1f} commits/s, p50 {figures.latency_p50_s * 1000:.0f} ms"
    )
    commit_rows = _commit_rows(commits, run_id, proto, writers, t_go)
    storage.remove_table(uri)
    return row, commit_rows
