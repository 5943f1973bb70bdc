"""``python -m helpers.lost_answer``: every commit path with its answer lost, each remedy, from storage.

    python -m helpers.lost_answer --name full                  # everything (make lost-answer)
    python -m helpers.lost_answer --parts deltalake --trials 3 --name try
    make publish RUN=build/lost_answer/full                    # the committed data/lost_answer.csv

Prints each path's progress, then each cell's trials by outcome; exit 1 when a trial lost no answer.
"""

from __future__ import annotations

import argparse
import sys

from helpers.ground import checks, config
from helpers.lost_answer import run, trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.lost_answer", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--name", default="full", help="results folder under build/lost_answer/")
    parser.add_argument(
        "--parts",
        default=",".join(run.PARTS),
        help=f"comma-separated, from {', '.join(run.PARTS)} (default: all)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=trials.TRIALS,
        help=f"trials per path, release and remedy (default {trials.TRIALS})",
    )
    args = parser.parse_args(argv)
    parts = checks.chosen_parts(parser, args.parts, run.PARTS)
    if args.trials < 1:
        parser.error(f"--trials must be 1 or more, not {args.trials}")
    folder = run.run(args.name, parts, args.trials, progress=lambda line: print(line, flush=True))
    import json

    meta = json.loads((folder / "meta.json").read_text())
    print((folder / "summary.txt").read_text(), end="")
    done = f"{meta['trials']} trials in {meta['seconds']} s; results in {config.shown(folder)}"
    return checks.reported(done, meta["problems"])


if __name__ == "__main__":
    sys.exit(main())
