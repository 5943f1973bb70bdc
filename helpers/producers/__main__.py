"""``python -m helpers.producers``: the full run (``make producers``): 1, 2, 4 and 8 producers
through one committer on local disk, Azure (Azurite) and S3 (moto; and versitygw with --s3-servers), beside the benchmark's
serial limit and 8 racing writers on the same stores, in one run.

    python -m helpers.producers                           # the full run, results in build/producers/full/
    python -m helpers.producers --producers 1,2 --files 25 --name try

The emulators must be running (``make producers`` starts and stops them). Exits 1 unless every
run kept every row exactly once and no racing writer lost a commit. A run stays under ``build/``:
``make publish RUN=build/producers/full`` makes it the committed one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from datetime import datetime, timezone

from helpers.bench import run as bench
from helpers.bench.meter import RequestMeter, upstream
from helpers.ground import config
from helpers.producers import committer, deltalake_fix, profile, scenarios, serial_limit
from helpers.producers import results as results_module
from helpers.producers.run import BACKENDS, RESULTS_DIR, ProducersError, Table
from helpers.producers.scenarios import throughput
from helpers.stores import storage

PRODUCER_COUNTS = (1, 2, 4, 8)
FILES_PER_PRODUCER = 40
APPENDS = 8
LIMIT_FILES_PER_COMMIT = 10
"""The committer alone on staged files commits this many per commit (the 8 producers' 320 files: 32 commits)."""


RUN_COLUMNS = [
    "backend",
    "producers",
    "commits",
    "rows",
    "commits_per_s",
    "rows_per_s",
    "files_per_commit_mean",
    "ratio_to_serial",
    "rows_ratio_to_racing",
    "marker_to_commit_p50_s",
    "marker_to_commit_p99_s",
    "producers_cpu_share",
    "machine_cpu_share",
    "exactly_once",
]
"""The columns of the producers' runs that ``python -m helpers.producers`` prints."""
VARIANT_COLUMNS = [
    "backend",
    "variant",
    "commits",
    "busy_commits_per_s",
    "serial_commits_per_s",
    "ratio_to_serial",
    "refresh_p50_ms",
    "refresh_p99_ms",
    "checkpoints",
    "checkpoint_p50_ms",
    "errors",
    "exactly_once",
]
"""The columns of the variants at the limit that it prints."""
RACING_COLUMNS = [
    "backend",
    "protocol",
    "writers",
    "commits_per_s",
    "rows_per_s",
    "ratio_to_serial",
    "lost",
    "failed",
]
"""The racing writers' table: the benchmark's rows by store (:func:`results_module.racing_rows`)."""


def _stores(backends, s3_servers) -> list[tuple[str, str | None]]:
    """``(backend, S3 server or None)`` for each store measured: S3 once per server when servers are named."""
    return [
        (backend, server)
        for backend in backends
        for server in ((s3_servers or [None]) if backend == "s3" else [None])
    ]


def _racing(backends, name: str, appends: int, s3_servers):
    """One racing writer and :data:`results_module.RACING_WRITERS` of them on each store that has a
    racing-writer protocol (:func:`helpers.bench.run.benchmark`); None when no store has one."""
    protocols = [p for p, b in results_module.BACKEND_OF_PROTOCOL.items() if b in backends]
    if not protocols:
        return None
    return bench.benchmark(
        protocols,
        writer_counts=[1, results_module.RACING_WRITERS],
        appends=appends,
        name=f"producers-{name}",
        probe_requests=10,
        s3_servers=s3_servers,
    )


def _producer_rows(backend: str, store: str, where: str, producer_counts, files: int, meter):
    """One :func:`throughput` row per producer count, each on a fresh table removed after."""
    rows = []
    for n in producer_counts:
        table = Table.fresh(backend, f"{where}-n{n}")
        row = throughput(
            table,
            producers=n,
            files=files,
            committer_options=table.route(meter) if meter else None,
        )
        rows.append(
            {
                **row,
                "backend": store,
                "metered": meter is not None,
                "load_1min": os.getloadavg()[0],
            }
        )
        table.remove()
    return rows


def _limit_rows(backend: str, store: str, where: str, producers: int, with_variants: bool):
    """:func:`helpers.producers.serial_limit.variant_rows` on ``backend``: each variant on a staged
    table (``producers`` stage the files) and a table of its own for the plain appends. Returns
    the default variant's row and every variant's rows."""
    rows = serial_limit.variant_rows(
        backend,
        store,
        where,
        producers=producers,
        max_files=LIMIT_FILES_PER_COMMIT,
        rounds=scenarios.LIMIT_ROUNDS,
        block=scenarios.LIMIT_BLOCK,
        names=serial_limit.variants(with_variants),
    )
    (default,) = [r for r in rows if r["variant"] == serial_limit.default_variant()]
    return default, rows


def _measure_store(
    backend: str,
    server: str | None,
    *,
    name: str,
    producer_counts,
    files: int,
    metered: bool,
    with_profile: bool,
    with_variants: bool,
) -> tuple[list[dict], dict, list[dict], list[dict], list[dict]]:
    """One store's producer rows, its row at the limit, the variants' rows at the limit, and
    (``with_profile``) the commit's steps and the queue-length rows; requests metered when
    ``metered`` and the store is not local disk."""
    store = results_module.store(backend, server)
    with config.s3_server_chosen(server) if server else contextlib.nullcontext():
        meter = (
            RequestMeter(upstream(backend), claim_style="object")
            if metered and backend != "local"
            else None
        )
        try:
            where = f"producers/{name}/{store.replace('@', '-')}"
            rows = _producer_rows(backend, store, where, producer_counts, files, meter)
            limit, variants = _limit_rows(
                backend, store, where, max(producer_counts), with_variants
            )
            steps, waiting = [], []
            if with_profile:
                steps, waiting = profile.run_profile(store, backend, f"{where}-profile", meter)
            return rows, limit, variants, steps, waiting
        finally:
            if meter is not None:
                meter.close()


def _meta(
    name: str,
    racing,
    runs,
    *,
    producer_counts,
    files: int,
    appends: int,
    backends,
    metered: bool,
    s3_servers,
    with_profile: bool,
    started: float,
) -> dict:
    """The run's settings, date, machine and versions, saved beside its tables."""
    return {
        "run_id": name,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": bench.machine(),
        "versions": racing.meta["versions"] if racing is not None else {},
        "producer_counts": list(producer_counts),
        "files_per_producer": files,
        "rows_per_file": int(runs.rows_per_file.iloc[0]),
        "racing_appends": appends,
        "racing_writers": results_module.RACING_WRITERS,
        "backends": list(backends),
        "metered": metered,
        "s3_server": config.s3_server(),
        "s3_servers": list(s3_servers or [config.s3_server()]),
        "limit_files_per_commit": LIMIT_FILES_PER_COMMIT,
        "limit_rounds": scenarios.LIMIT_ROUNDS,
        "limit_block": scenarios.LIMIT_BLOCK,
        "committer_checkpoint_every": committer.CHECKPOINT_EVERY,
        "deltalake_fix": deltalake_fix.stamp_text() if deltalake_fix.built() else None,
        "queue_lengths": list(profile.QUEUE_LENGTHS) if with_profile else [],
        "wall_s": time.time() - started,
    }


def full_run(
    name: str = "full",
    *,
    producer_counts=PRODUCER_COUNTS,
    files: int = FILES_PER_PRODUCER,
    appends: int = APPENDS,
    backends=BACKENDS,
    s3_servers=None,
    with_profile: bool = True,
    with_variants: bool = True,
) -> results_module.Results:
    """Measure the racing writers (:func:`helpers.bench.run.benchmark`), then the producers, and save both.
    ``s3_servers`` (``["moto", "versitygw"]``): S3 on each, in this one run, racing writers too."""
    import pandas as pd

    started = time.time()
    racing = _racing(backends, name, appends, s3_servers)
    metered = config.profile() == "local"
    rows, limit_rows, variant_rows, profile_rows, queue_rows = [], [], [], [], []
    for backend, server in _stores(backends, s3_servers):
        found, limit, variants, steps, waiting = _measure_store(
            backend,
            server,
            name=name,
            producer_counts=producer_counts,
            files=files,
            metered=metered,
            with_profile=with_profile,
            with_variants=with_variants,
        )
        rows += found
        limit_rows.append(limit)
        variant_rows += variants
        profile_rows += steps
        queue_rows += waiting
    racing_frame = pd.DataFrame(
        results_module.racing_rows(racing.runs) if racing is not None else [],
        columns=RACING_COLUMNS,
    )
    runs = results_module.with_ratios(pd.DataFrame(rows), racing_frame)
    meta = _meta(
        name,
        racing,
        runs,
        producer_counts=producer_counts,
        files=files,
        appends=appends,
        backends=backends,
        metered=metered,
        s3_servers=s3_servers,
        with_profile=with_profile,
        started=started,
    )
    results = results_module.Results(
        runs,
        racing_frame,
        meta,
        limit=results_module.limit_ratios(pd.DataFrame(limit_rows), racing_frame),
        limit_variants=pd.DataFrame(variant_rows),
        profile=pd.DataFrame(profile_rows),
        queue=pd.DataFrame(queue_rows),
    )
    results_module.save(results, RESULTS_DIR / name)
    return results


def _parser() -> argparse.ArgumentParser:
    """The command line: producer counts, files, appends, backends, S3 servers, name, profile."""
    parser = argparse.ArgumentParser(
        prog="python -m helpers.producers", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--producers",
        default=",".join(map(str, PRODUCER_COUNTS)),
        help="producer counts (default 1,2,4,8)",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=FILES_PER_PRODUCER,
        help="data files per producer in the producers' runs (default 40; the run at the limit stages its own)",
    )
    parser.add_argument(
        "--appends", type=int, default=APPENDS, help="appends per racing writer (default 8)"
    )
    parser.add_argument(
        "--backends", default=",".join(BACKENDS), help="from local, azure, s3 (default: all)"
    )
    parser.add_argument(
        "--name", default="full", help="results folder under build/producers/ (default full)"
    )
    parser.add_argument(
        "--s3-servers",
        default="",
        help="S3 on each of these servers in one run, e.g. moto,versitygw "
        "(default: the one WORKBOOK_S3_SERVER names)",
    )
    parser.add_argument(
        "--no-variants",
        action="store_true",
        help="at the limit, only the committer as it runs by default, not every way of keeping "
        "its refresh short (helpers/producers/serial_limit.py)",
    )
    parser.add_argument(
        "--no-profile",
        action="store_true",
        help="leave out the commit's step-by-step profile and the queue-length run",
    )
    return parser


def _choices(parser: argparse.ArgumentParser, args) -> tuple[list[int], list[str], list[str]]:
    """The producer counts, backends and S3 servers the arguments name; a wrong one ends the
    program with its usage line (:meth:`argparse.ArgumentParser.error`), before anything starts.
    The run at the limit stages files of its own (:func:`helpers.producers.scenarios.limit_files_per_producer`), whatever
    ``--files`` says."""
    try:
        counts = [int(v) for v in args.producers.split(",")]
        backends = [b for b in args.backends.split(",") if b]
        servers = [v for v in args.s3_servers.split(",") if v]
        if (
            not counts
            or min(counts) < 1
            or args.files < 1
            or args.appends < 1
            or set(backends) - set(BACKENDS)
        ):
            raise ValueError
        if set(servers) - set(config.S3_SERVERS) or len(set(servers)) != len(servers):
            parser.error(
                f"--s3-servers: distinct names from {', '.join(config.S3_SERVERS)}, not {args.s3_servers!r}"
            )
    except ValueError:
        parser.error(
            "producer counts and files must be whole numbers >= 1, backends from "
            + ", ".join(BACKENDS)
        )
    return counts, backends, servers


def _print_tables(found: results_module.Results) -> None:
    """The run's tables as text: the producers' runs, the racing writers, the limit, and the
    profile and queue when the run has them."""
    import pandas as pd

    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(found.runs[RUN_COLUMNS].round(3).to_string(index=False))
        print(found.racing.round(3).to_string(index=False))
        print(found.limit.round(3).to_string(index=False))
        if found.limit_variants is not None and len(found.limit_variants):
            print(found.limit_variants[VARIANT_COLUMNS].round(3).to_string(index=False))
        if len(found.profile):
            print(found.profile.drop(columns=["waiting"]).round(4).to_string(index=False))
            print(found.queue.round(4).to_string(index=False))


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    counts, backends, servers = _choices(parser, args)
    try:
        found = full_run(
            args.name,
            producer_counts=counts,
            files=args.files,
            appends=args.appends,
            backends=backends,
            s3_servers=servers or None,
            with_profile=not args.no_profile,
            with_variants=not args.no_variants,
        )
    except (ProducersError, storage.StorageError, bench.stats.BenchError) as error:
        print(f"producers: {error}", file=sys.stderr)
        return 1
    _print_tables(found)
    print(f"Results: {config.shown(found.folder)}")
    problems = results_module.problems(found)
    if problems:
        print(f"producers: {'; '.join(problems)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
