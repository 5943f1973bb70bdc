"""Running the benchmark: one table per (protocol, writer count), N writers released together by
the barrier, M appends each, then every figure taken from storage and the meter.

::

    from helpers.bench import run
    results = run.benchmark(["s3-conditional-put", "azure"], writer_counts=(1, 4), appends=3)
    results.runs        # one row per run (pandas DataFrame), results.commits one row per commit

Each run: a fresh table (version 0, the landing schema), the writers started in the protocol's
era (:mod:`helpers.bench.worker`), the barrier opened once every one of them is set up, and the
run's figures computed once all have exited (:mod:`helpers.bench.stats`). Storage decides what
happened: the commit files are read back, each acknowledged commit must be in exactly one of
them, versions must run 0..n without a gap, and a safe protocol that lost a commit fails the
benchmark. The writer count 1 is each protocol's serial limit, measured in the same call.
"""

from __future__ import annotations

import json
import os
import platform
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from helpers.bench import meter as meter_module
from helpers.bench import stats
from helpers.bench.meter import KINDS, RequestMeter
from helpers.delta import integrity
from helpers.ground import config, eras
from helpers.ground.progress import RunProgress
from helpers.runs import audit, runner
from helpers.stores import storage, tables
from helpers.writers import processes
from helpers.writers.protocol import open_barrier

RESULTS_DIR = config.BUILD_DIR / "bench"
WORKER_MODULE = "helpers.bench.worker"
RUN_TIMEOUT_S = 3600.0
"""A run that has not ended after an hour is hung (a writer stuck on a dead service): it is
stopped and reported. Not a speed limit: the longest full run here takes minutes."""


@dataclass(frozen=True)
class Protocol:
    """One way of committing to one table from many writers."""

    name: str
    label: str
    era: str
    engine: str
    """``deltalake`` or ``spark`` (:data:`helpers.bench.worker.APPENDERS`)."""
    backend: str
    """``s3`` or ``azure``: which emulator, and which cloud the model projects to."""
    claim_style: str
    """How an attempt claims a version (:data:`helpers.bench.meter.CLAIM_STYLES`)."""
    writer_counts: tuple[int, ...] = (1, 2, 4, 8, 16)
    threads: bool = False
    """Writers share one process (one Spark driver with a pool of writer threads)."""
    safe: bool = True
    s3_server: str = ""
    """The server that plays S3 for this protocol (:data:`helpers.ground.config.S3_SERVERS`); empty: the
    environment's. Set by :func:`on_servers`, whose copies are named ``<protocol>@<server>``."""
    unsafe_on: tuple[tuple[str, str], ...] = ()
    """(S3 server, why): servers on which this safe protocol is known to break its promise, each with
    the finding that shows it; :func:`on_servers` leaves those pairs out and says so."""

    def table_uri(self, name: str) -> str:
        if self.backend == "azure":
            return tables.azure_uri(name)
        return tables.s3_uri(name, scheme="s3a" if self.engine == "spark" else "s3")

    def storage_options(self) -> dict[str, str]:
        if self.backend == "azure":
            return tables.azure_storage_options()
        options = tables.s3_storage_options(
            locking_provider="dynamodb" if self.claim_style == "dynamodb" else None
        )
        if self.threads:
            options["spark.master"] = (
                "local[2]"  # the pool's jobs may use both cores, as the drivers together do
            )
        return options


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "azure",
            "Azure Blob, copy-if-absent (deltalake 1.6.6, Azurite)",
            eras.CURRENT,
            "deltalake",
            "azure",
            "object",
        ),
        Protocol(
            "s3-conditional-put",
            "S3 conditional put (deltalake 1.6.6)",
            eras.CURRENT,
            "deltalake",
            "s3",
            "object",
        ),
        Protocol(
            "s3-dynamodb-lock",
            "S3 + DynamoDB lock (deltalake 1.5.1)",
            eras.DYNAMODB_INTEROP,
            "deltalake",
            "s3",
            "dynamodb",
            unsafe_on=(
                (
                    "versitygw",
                    "versitygw copies a deleted staged file, and deltalake 1.5.1's retry then commits an append "
                    "twice (findings/deltalake-dynamodb-reclaim-after-a-refused-copy)",
                ),
            ),
        ),
        Protocol(
            "spark-drivers",
            "Spark, DynamoDB log store, one driver per writer",
            eras.CURRENT,
            "spark",
            "s3",
            "dynamodb",
            writer_counts=(1, 2, 4),
        ),
        Protocol(
            "spark-threads",
            "Spark, DynamoDB log store, one driver, writer threads",
            eras.CURRENT,
            "spark",
            "s3",
            "dynamodb",
            threads=True,
        ),
    )
}


def on_servers(chosen: Sequence[Protocol], servers: Sequence[str] | None) -> list[Protocol]:
    """Each S3 protocol once per server (``s3-conditional-put@versitygw``), the others once; no
    ``servers``: every protocol once, on the environment's S3 server."""
    if not servers:
        return list(chosen)
    unknown = [s for s in servers if s not in config.S3_SERVERS]
    if unknown or len(set(servers)) != len(servers):
        raise stats.BenchError(
            f"S3 servers must be distinct names from {', '.join(config.S3_SERVERS)}, not {', '.join(servers)}."
        )
    return [
        replace(p, name=f"{p.name}@{server}", label=f"{p.label} on {server}", s3_server=server)
        if p.backend == "s3"
        else p
        for p in chosen
        for server in (servers if p.backend == "s3" else servers[:1])
        if server not in dict(p.unsafe_on)
    ]


def left_out(chosen: Sequence[Protocol], servers: Sequence[str] | None) -> dict[str, str]:
    """``{"<protocol>@<server>": why}``: the pairs :func:`on_servers` leaves out."""
    return {
        f"{p.name}@{server}": dict(p.unsafe_on)[server]
        for p in chosen
        if p.backend == "s3"
        for server in servers or ()
        if server in dict(p.unsafe_on)
    }


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise stats.BenchError(
            f"Unknown protocol {name!r}; the benchmark has {', '.join(PROTOCOLS)}."
        ) from None


# ---------------------------------------------------------------------------------------------
# One run
# ---------------------------------------------------------------------------------------------


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
    base_options = proto.storage_options()
    storage.remove_table(uri)
    runner.create_table(uri.replace("s3a://", "s3://", 1), base_options)
    options = base_options
    if meter is not None:
        options = (
            meter.route_azure(base_options)
            if proto.backend == "azure"
            else meter.route(base_options, dynamodb=proto.claim_style == "dynamodb")
        )
    run_dir = RESULTS_DIR / "runs" / run_id / slug
    run_dir.mkdir(parents=True, exist_ok=True)
    for stale in run_dir.iterdir():
        stale.unlink()
    total = writers * appends
    shown = RunProgress(f"{proto.name} N={writers}", total)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    procs = _prepare(proto, uri, options, writers, appends, run_dir, max_commit_retries)
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
    results = []
    for p in procs:
        if not p.result_path.exists():
            raise _failure(p, "(it crashed)")
        result = json.loads(p.result_path.read_text())
        if result["error"]:
            raise _failure(p, "while writing")
        results.append(result)
    commits = [c for r in results for c in r["commits"]]
    check = integrity.check_table(uri)
    if check.blocking:
        raise stats.BenchError(
            f"{proto.name} N={writers}: the table is damaged: "
            + "; ".join(map(str, check.blocking))
        )
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
        seconds, counts = meter.seconds_by_kind(since=t_go), meter.count_by_kind(since=t_go)
        per = max(figures.committed, 1)
        for kind in KINDS:
            row[meter_module.column("s", kind)] = seconds[kind] / per
            row[meter_module.column("n", kind)] = counts[kind] / per
        row[meter_module.OUTSIDE_REQUESTS] = stats.outside_requests_per_commit(
            [c["t_done"] - c["t_first_try"] for c in commits],
            sum(seconds.values()),
            figures.committed,
        )
        row["unattributed_claims"] = meter.unattributed_claims()
    shown.finish(
        f"{figures.committed}/{figures.commits} committed, {losses.lost} lost, "
        f"{figures.commits_per_s:.1f} commits/s, p50 {figures.latency_p50_s * 1000:.0f} ms"
    )
    commit_rows = [
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
    storage.remove_table(uri)
    return row, commit_rows


# ---------------------------------------------------------------------------------------------
# A whole benchmark
# ---------------------------------------------------------------------------------------------


@dataclass
class Results:
    """Tidy results: ``runs`` (one row per run), ``commits`` (one per commit), ``probe`` (per-request
    latency of the emulators), ``meta`` (date, machine, versions), and the folder they were saved to."""

    runs: object
    commits: object
    probe: object
    meta: dict
    folder: Path | None = None


def machine() -> dict:
    """What the figures were measured on."""
    pages = (
        os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 0
    )
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(pages / 2**30, 1),
        "system": f"{platform.system()} {platform.machine()}",
        "python": platform.python_version(),
    }


def benchmark(
    protocols: Sequence[str] | None = None,
    *,
    writer_counts: Sequence[int] | None = None,
    appends: int = 8,
    name: str | None = None,
    probe_requests: int = 40,
    max_commit_retries: int | None = None,
    s3_servers: Sequence[str] | None = None,
) -> Results:
    """Run every protocol at each of its writer counts (or only those in ``writer_counts``; 1 is
    always included: the serial limit), save the tidy tables under ``build/bench/<name>/``.
    ``s3_servers`` (e.g. ``["moto", "versitygw"]``): each S3 protocol runs on each, in this one run."""
    import pandas as pd

    from helpers.bench import probe

    asked = [protocol(p) for p in (protocols or PROTOCOLS)]
    here = config.s3_server()
    for p in asked if not s3_servers else ():
        if p.backend == "s3" and here in dict(p.unsafe_on):
            raise stats.BenchError(
                f"{p.name} cannot be measured with {here} playing S3: {dict(p.unsafe_on)[here]}. "
                f"Leave it out of the protocols, or run it on moto (unset WORKBOOK_S3_SERVER)."
            )
    chosen, skipped = on_servers(asked, s3_servers), left_out(asked, s3_servers)
    for pair, why in skipped.items():
        print(f"bench: {pair} left out: {why}", flush=True)
    if isinstance(appends, bool) or not isinstance(appends, int) or appends < 1:
        raise stats.BenchError(f"appends must be a whole number >= 1, not {appends!r}.")
    started = time.time()
    run_id = name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    for server in s3_servers or [config.s3_server()]:
        with config.s3_server_chosen(server):
            storage.ensure_bucket()
    if any(p.claim_style == "dynamodb" for p in chosen):
        storage.ensure_lock_table()
    if any(p.backend == "azure" for p in chosen):
        storage.ensure_container()
    metered = config.profile() == "local"
    rows, commit_rows = [], []
    probe_rows = (
        probe.measure(sorted({p.backend for p in chosen}), requests=probe_requests)
        if metered
        else []
    )
    for proto in chosen:
        counts = sorted(
            {1, *(n for n in proto.writer_counts if writer_counts is None or n in writer_counts)}
        )
        with config.s3_server_chosen(proto.s3_server) if proto.s3_server else nullcontext():
            meter = None
            if metered:
                meter = RequestMeter(
                    meter_module.upstream(proto.backend), claim_style=proto.claim_style
                )
            try:
                for n in counts:
                    row, commits = run_once(
                        proto,
                        n,
                        appends,
                        run_id=run_id,
                        meter=meter,
                        max_commit_retries=max_commit_retries,
                    )
                    rows.append(row)
                    commit_rows.extend(commits)
            finally:
                if meter is not None:
                    meter.close()
    runs = pd.DataFrame(rows)
    runs["ratio_to_serial"] = stats.ratios_to_serial(rows)
    meta = {
        "run_id": run_id,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": versions(chosen),
        "appends": appends,
        "protocols": [p.name for p in chosen],
        "wall_s": time.time() - started,
        "profile": config.profile(),
        "metered": metered,
        "s3_servers": list(s3_servers or [config.s3_server()]),
        "left_out": skipped,
    }
    results = Results(runs, pd.DataFrame(commit_rows), pd.DataFrame(probe_rows), meta)
    results.folder = save(results, RESULTS_DIR / run_id)
    return results


def versions(chosen: Sequence[Protocol]) -> dict[str, str]:
    import deltalake
    import pyspark

    found = {
        "deltalake (kernel)": deltalake.__version__,
        "moto": config.MOTO_VERSION,
        "azurite": config.AZURITE_VERSION,
    }
    if any(
        p.backend == "s3" and (p.s3_server or config.s3_server()) == "versitygw" for p in chosen
    ):
        from helpers.stores import versitygw

        found["versitygw"] = versitygw.VERSION
    if any(p.era == eras.DYNAMODB_INTEROP for p in chosen):
        found[f"deltalake ({eras.DYNAMODB_INTEROP})"] = eras.era(
            eras.DYNAMODB_INTEROP
        ).deltalake_version
    if any(p.engine == "spark" for p in chosen):
        found.update({"pyspark": pyspark.__version__, "delta-spark": config.DELTA_JARS_VERSION})
    return found


def save(results: Results, folder: Path) -> Path:
    """Write runs.csv, commits.csv, probe.csv and meta.json into ``folder``; return it."""
    folder.mkdir(parents=True, exist_ok=True)
    results.runs.to_csv(folder / "runs.csv", index=False)
    results.commits.to_csv(folder / "commits.csv", index=False)
    results.probe.to_csv(folder / "probe.csv", index=False)
    (folder / "meta.json").write_text(json.dumps(results.meta, indent=1))
    return folder


def load(folder: str | os.PathLike) -> Results:
    """Results saved by :func:`benchmark`, or their published copy (:mod:`helpers.runs.full_runs`);
    raises BenchError naming the folder if it holds none."""
    from helpers.runs import full_runs

    folder = Path(folder)
    if not full_runs.finished(folder):
        raise stats.BenchError(
            f"No benchmark results in {config.shown(folder)}; run `make bench` first."
        )
    return Results(
        *(full_runs.read_table(folder, table) for table in full_runs.TABLES["bench"]),
        json.loads((folder / "meta.json").read_text()),
        folder,
    )


def failures(commits) -> dict[tuple[str, int], str]:
    """What the failed commits of each run failed with, from ``commits``: ``{(protocol, writers):
    "CommitFailedError 40"}`` (runs without failures are left out). A library that gave up after
    its retries says ``CommitFailedError``; anything else is a writer's own trouble, not the protocol's."""
    failed = commits[commits["outcome"] != "committed"]
    counted = failed.groupby(["protocol", "writers", "error_class"]).size()
    summary: dict[tuple[str, int], str] = {}
    for (name, writers, error), count in counted.items():
        key = (name, int(writers))
        summary[key] = f"{summary[key]}, " if key in summary else ""
        summary[key] += f"{error} {count}"
    return summary
