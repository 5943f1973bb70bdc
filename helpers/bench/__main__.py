"""``python -m helpers.bench``: run the commit-throughput benchmark and print its table.

    python -m helpers.bench                                  # every protocol, every writer count (make bench)
    python -m helpers.bench --protocols azure,s3-conditional-put --writers 1,4 --appends 3 --name try
    python -m helpers.bench --protocols s3-conditional-put --writers 1,4 --s3-servers moto,versitygw   # make bench-servers

Results go to ``build/bench/<name>/`` (runs.csv, commits.csv, probe.csv, meta.json and the plots);
``make bench`` uses the name ``full``, which notebook 11 shows. The emulators must be running
(``make bench`` starts and stops them).
"""

from __future__ import annotations

import argparse
import sys

from helpers.bench import model, plots, run, stats
from helpers.ground import config, eras
from helpers.ground.checks import Checklist
from helpers.stores import storage


def _numbers(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole numbers separated by commas, not {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected writer counts >= 1, not {text!r}")
    return values


def _appends(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {text!r}")
    return int(text)


def _names(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in run.PROTOCOLS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown protocol(s) {', '.join(unknown)}; choose from {', '.join(run.PROTOCOLS)}"
        )
    return names


def _servers(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in config.S3_SERVERS]
    if not names or unknown or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(
            f"expected distinct S3 servers from {', '.join(config.S3_SERVERS)}, not {text!r}"
        )
    return names


def save_plots(results: run.Results) -> None:
    import matplotlib

    matplotlib.use("Agg")
    projected = model.project_runs(results)
    plots.curves(
        results.runs, meta=results.meta, projected=projected if len(projected) else None
    ).savefig(results.folder / "curves.png", dpi=110)
    if "s_outside_requests" in results.runs:
        plots.breakdown(results.runs).savefig(results.folder / "breakdown.png", dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.bench", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--protocols",
        type=_names,
        default=None,
        help=f"comma-separated, from {', '.join(run.PROTOCOLS)} (default: all)",
    )
    parser.add_argument(
        "--writers",
        type=_numbers,
        default=None,
        help="writer counts to run (default: each protocol's own; 1 always runs)",
    )
    parser.add_argument(
        "--appends", type=_appends, default=8, help="appends per writer (default 8)"
    )
    parser.add_argument(
        "--name", default=None, help="results folder under build/bench/ (default: a timestamp)"
    )
    parser.add_argument(
        "--s3-servers",
        type=_servers,
        default=None,
        help="run each S3 protocol on each of these servers, in this one run (e.g. moto,versitygw; both running)",
    )
    args = parser.parse_args(argv)
    try:
        results = run.benchmark(
            args.protocols,
            writer_counts=args.writers,
            appends=args.appends,
            name=args.name,
            s3_servers=args.s3_servers,
        )
    except (stats.BenchError, storage.StorageError, eras.EraError, config.ConfigError) as error:
        print(f"bench: {error}", file=sys.stderr)
        return 1
    save_plots(results)
    columns = [
        "protocol",
        "s3_server",
        "writers",
        "committed",
        "failed",
        "lost",
        "commits_per_s",
        "ratio_to_serial",
        "latency_p50_s",
        "latency_p95_s",
        "latency_p99_s",
        "attempts_mean",
        "attempts_max",
        "setup_s_mean",
    ]
    with __import__("pandas").option_context("display.width", 200, "display.max_columns", 20):
        print(
            results.runs[[c for c in columns if c in results.runs]].round(3).to_string(index=False)
        )
    windows = results.runs["window_s"].sum()
    print(
        f"\nMeasured windows: {windows:.0f} s of a {results.meta['wall_s']:.0f} s benchmark; the rest is setup "
        f"(processes, imports, JVMs, data: {results.runs['setup_s_mean'].mean():.1f} s per writer on average), "
        "table creation, the probe and the checks, none of it in the figures."
    )
    print(f"Results: {results.folder}")
    check = Checklist()
    stats.check_runs(check, results.runs, args.appends)
    if not check.passed:
        print(
            f"bench: the run falls short of what notebook 11 asserts: {check.report()}",
            file=sys.stderr,
        )
        return 1
    print(f"All {check.count} checks of notebook 11 held.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
