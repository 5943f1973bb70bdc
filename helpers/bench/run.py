"""Running the benchmark: one table per (protocol, writer count), N writers released together by
the barrier, M appends each, then every figure taken from storage and the meter.

::

    from helpers.bench import run
    results = run.benchmark(["s3-conditional-put", "azure"], writer_counts=(1, 4), appends=3)
    results.runs        # one row per run (pandas DataFrame), results.commits one row per commit

Each run (:func:`helpers.bench.one_run.run_once`): a fresh table (version 0, the landing
schema), the writers started in the protocol's era (:mod:`helpers.bench.worker`), the barrier
opened once every one of them is set up, and the run's figures computed once all have exited
(:mod:`helpers.bench.stats`). Storage decides what happened: the commit files are read back, each
acknowledged commit must be in exactly one of them, versions must run 0..n without a gap, and a
safe protocol that lost a commit fails the benchmark. The writer count 1 is each protocol's
serial limit, measured in the same call.
What a protocol is, and its copies per S3 server: :mod:`helpers.bench.protocols`.
"""

from __future__ import annotations

import json
import os
import platform
import time
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from helpers.bench import meter as meter_module
from helpers.bench import stats
from helpers.bench.meter import RequestMeter
from helpers.bench.one_run import RESULTS_DIR, run_once
from helpers.bench.protocols import Protocol, left_out, on_servers
from helpers.ground import config, eras
from helpers.stores import storage

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


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise stats.BenchError(
            f"Unknown protocol {name!r}; the benchmark has {', '.join(PROTOCOLS)}."
        ) from None


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


def _chosen(
    protocols: Sequence[str] | None, s3_servers: Sequence[str] | None
) -> tuple[list[Protocol], dict[str, str]]:
    """The protocols to run, each S3 one once per server of ``s3_servers`` (:func:`on_servers`), and
    the pairs left out (printed, with why). BenchError for a protocol known to break on the
    environment's S3 server, when no servers are named."""
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
    return chosen, skipped


def _ensure_stores(chosen: Sequence[Protocol], s3_servers: Sequence[str] | None) -> None:
    """The bucket on each S3 server, and the lock table and the container the protocols need."""
    for server in s3_servers or [config.s3_server()]:
        with config.s3_server_chosen(server):
            storage.ensure_bucket()
    if any(p.claim_style == "dynamodb" for p in chosen):
        storage.ensure_lock_table()
    if any(p.backend == "azure" for p in chosen):
        storage.ensure_container()


def _measure(
    proto: Protocol,
    writer_counts: Sequence[int] | None,
    appends: int,
    *,
    run_id: str,
    metered: bool,
    max_commit_retries: int | None,
) -> tuple[list[dict], list[dict]]:
    """Every run of one protocol, on its own S3 server and through its own meter (when
    ``metered``): (their rows, their commit rows)."""
    rows, commit_rows = [], []
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
    return rows, commit_rows


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

    chosen, skipped = _chosen(protocols, s3_servers)
    if isinstance(appends, bool) or not isinstance(appends, int) or appends < 1:
        raise stats.BenchError(f"appends must be a whole number >= 1, not {appends!r}.")
    started = time.time()
    run_id = name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    _ensure_stores(chosen, s3_servers)
    metered = config.profile() == "local"
    rows, commit_rows = [], []
    probe_rows = (
        probe.measure(sorted({p.backend for p in chosen}), requests=probe_requests)
        if metered
        else []
    )
    for proto in chosen:
        its_rows, its_commits = _measure(
            proto,
            writer_counts,
            appends,
            run_id=run_id,
            metered=metered,
            max_commit_retries=max_commit_retries,
        )
        rows.extend(its_rows)
        commit_rows.extend(its_commits)
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
