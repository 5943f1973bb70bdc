"""``python -m helpers.torture``: the torture run (``make torture``; a small one runs in ``make test``)."""

from __future__ import annotations

import argparse
import signal
import sys

from helpers.ground import checks, config
from helpers.torture import plan, verdict
from helpers.torture.run import TortureError, load, torture


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.torture", description=__doc__)
    parser.add_argument("--name", help="results folder under build/torture/ (default: the time)")
    parser.add_argument(
        "--protocols",
        nargs="+",
        metavar="PROTOCOL",
        help=f"default: all ({', '.join(plan.PROTOCOLS)})",
    )
    parser.add_argument(
        "--per-writer",
        type=int,
        help="operations per writer (default: each protocol's full run, enough for "
        "1,000 commits of a safe one, 25 for an unsafe one: plan.FULL_RUN_PER_WRITER)",
    )
    parser.add_argument(
        "--kills",
        type=int,
        default=16,
        help="writers killed per safe protocol (default 16: each kill point 4 or 8 times)",
    )
    parser.add_argument(
        "--restarts",
        type=int,
        default=1,
        help="service restarts per protocol that has one (default 1)",
    )
    parser.add_argument(
        "--min-commits",
        type=int,
        default=None,
        help="commits each safe protocol must make (default: "
        f"{plan.FULL_RUN_MIN_COMMITS:,} with the full run's operation counts, else 0)",
    )
    parser.add_argument(
        "--without-spark-read",
        action="store_true",
        help="leave out the Spark read of every table (a JVM): "
        "a quicker look, the rows still read by deltalake and each protocol's own reader; not for Spark's protocols",
    )
    args = parser.parse_args(argv)
    min_commits = (
        args.min_commits
        if args.min_commits is not None
        else 0
        if args.per_writer
        else plan.FULL_RUN_MIN_COMMITS
    )
    # `kill` (SIGTERM) ends the run as Ctrl-C does: its writers and emulators are stopped on the way out
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        for name in args.protocols or ():
            plan.protocol(name)
        folder = torture(
            args.protocols,
            per_writer=args.per_writer,
            kills=args.kills,
            restarts=args.restarts,
            name=args.name,
            spark_read=not args.without_spark_read,
        )
    except (TortureError, plan.PlanError) as error:
        print(f"torture: {error}", file=sys.stderr)
        return 1
    print(f"Results in {config.shown(folder)}")
    check = checks.Checklist()
    verdict.check_run(
        check, load(folder), min_commits=min_commits
    )  # what notebook 12 asserts of its run
    if not check.passed:
        print(f"torture: the run falls short: {check.report()}", file=sys.stderr)
        return 1
    print(f"All {check.count} checks held (at least {min_commits:,} commits per safe protocol).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
