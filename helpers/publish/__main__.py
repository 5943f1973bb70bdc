"""``python -m helpers.publish``: make runs of this machine the committed ones (``make publish``).

    python -m helpers.publish build/bench/full                    # the kind from its folder, build/<kind>/<name>/
    python -m helpers.publish build/bench/full build/producers/full
    python -m helpers.publish --kind matrix-mixed build/matrix/try

Checks each run as its own command does (:mod:`helpers.publish.kinds`), all before anything is
copied; copies them into ``data/``; then writes again every page rendered from ``data/``
(:data:`PAGES`: docs/answer.md and docs/disagreements.md, docs/answer.html), once, so the committed
pages stay fresh; and says what else shows each run. Exit 0 published; 2 nothing changed (no such
folder, no kind known for it, two runs of one kind, a run whose checks failed: the message says
what to do); 1 a page could not be written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from helpers.ground import config
from helpers.page import html_page, markdown_page
from helpers.publish import kinds

PAGES = (markdown_page.main, html_page.main)
"""Every page rendered from ``data/``, by its command (each ``--check``s its page in ``make test``)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.publish", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "runs", nargs="+", type=Path, help="each run's folder, e.g. build/bench/full"
    )
    parser.add_argument(
        "--kind",
        choices=list(kinds.KINDS),
        help="the kind of every run named (default: each from its folder, build/<kind>/<name>/)",
    )
    args = parser.parse_args(argv)
    try:
        chosen = [
            (kinds.KINDS[args.kind] if args.kind else kinds.kind_of(run), run) for run in args.runs
        ]
        if len({kind.name for kind, _ in chosen}) < len(chosen):
            raise kinds.PublishError("two runs of one kind: name one run of each kind")
        for kind, run in chosen:
            kinds.check(kind, run)
    except kinds.PublishError as error:
        print(f"publish: {error}", file=sys.stderr)
        return 2
    for kind, run in chosen:
        written = ", ".join(config.shown(path) for path in kind.copy(run))
        print(f"published the {kind.name} run {config.shown(run)} to {written}")
    failed = [render([]) for render in PAGES]
    for kind, _ in chosen:
        print(f"Next, by hand: {kind.then}.")
    return 1 if any(failed) else 0


if __name__ == "__main__":
    sys.exit(main())
