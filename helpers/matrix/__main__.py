"""``python -m helpers.matrix``: race every ordered pair of write operations on every engine.

    python -m helpers.matrix                                   # every engine, every operation (make matrix)
    python -m helpers.matrix --engines deltalake-1.6.6 --ops optimize,append --name try
    python -m helpers.matrix --involving vacuum_retained --name new   # a new operation's pairs only
    make publish RUN=build/matrix/new                                 # ... added to data/'s results

Results go to ``<out>/<name>/`` (default ``build/matrix/<timestamp>/``): matrix.csv, pairs.jsonl,
meta.json, one grid-<engine>.png per engine, summary.txt. An unknown engine or operation is refused
by name, with the valid choices (exit 2). A run stays there: ``make publish RUN=build/matrix/full``
makes it the committed one, or adds a run of new pairs only to it (:func:`helpers.matrix.outputs.publish`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from helpers.matrix import engines, operations, outputs, run


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.matrix", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--engines",
        help=f"comma-separated, from {', '.join(engines.ENGINES)} "
        f"(default: {', '.join(engines.DEFAULT_ENGINES)})",
    )
    parser.add_argument(
        "--ops", help=f"comma-separated, from {', '.join(operations.CHOICES)} (default: all)"
    )
    parser.add_argument(
        "--involving",
        help="comma-separated operations: race only the pairs of --ops that name one of them (a new "
        "operation's pairs, which `make publish` adds to the committed results)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=run.DEFAULT_OUT,
        help="parent folder of the results (default build/matrix)",
    )
    parser.add_argument(
        "--name", default=None, help="results folder under --out (default: a timestamp)"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=run.DEFAULT_JOBS,
        help=f"worker processes at once (default {run.DEFAULT_JOBS}: two Spark drivers and a delta-rs era)",
    )
    args = parser.parse_args(argv)
    try:
        chosen_engines = operations.check_names(
            "engine", _names(args.engines) or list(engines.DEFAULT_ENGINES), tuple(engines.ENGINES)
        )
        chosen_ops = operations.check_names(
            "operation", _names(args.ops) or list(operations.CHOICES), operations.CHOICES
        )
        involving = operations.check_names(
            "operation", _names(args.involving) or [], operations.CHOICES
        )
    except operations.UnknownName as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"{parser.prog}: --jobs must be 1 or more, not {args.jobs}", file=sys.stderr)
        return 2
    folder = args.out / (args.name or time.strftime("%Y%m%d-%H%M%S"))
    try:
        only = (
            [p for p in operations.pairs(chosen_ops) if set(p) & set(involving)]
            if involving
            else None
        )
        rows = run.run(chosen_engines, chosen_ops, folder, jobs=args.jobs, only=only)
    except run.MatrixError as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 1
    text = run.summary(rows)
    (folder / outputs.SUMMARY).write_text(text + "\n")  # last: the run is finished
    print(f"\n{text}\n\nResults: {folder}/matrix.csv and grid-<engine>.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
