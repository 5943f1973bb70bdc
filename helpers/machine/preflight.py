"""Checks what `make install` cannot install for you: Python 3.11, Java 17+, Node.js 20+, and
the disk space it needs.

Run as ``python3.11 -m helpers.machine.preflight`` (``make preflight``). Uses the standard library only,
so it works before any virtual environment exists. Exit code 0 when all is well, 1 otherwise,
with one line per problem saying how to fix it.
"""

from __future__ import annotations

import sys

from helpers.ground import config, tools


def problems() -> list[str]:
    return [
        p
        for p in (
            tools.check_python(),
            tools.check_java(),
            tools.check_javac(),
            tools.check_cc(),
            tools.check_node(),
            tools.check_disk(),
        )
        if p
    ]


def notes() -> list[str]:
    """What is optional and missing (the workbook runs without it, and the note says how to add it),
    and what the workbook does differently on this machine (kernel sockets, when the clone is deep)."""
    from helpers.catalog import server_build
    from helpers.jupyter import kernels
    from helpers.stores import versitygw

    return [
        note
        for note in (
            versitygw.check_go(),
            server_build.check_cargo(),
            tools.check_browser(),
            kernels.preflight_note(config.ROOT),
        )
        if note
    ]


def main(argv: list[str] | None = None) -> int:
    """``--problems-only``: what every `make` command checks first, without the notes (`make preflight`
    says those, once)."""
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--problems-only"]):
        print("usage: python -m helpers.machine.preflight [--problems-only]", file=sys.stderr)
        return 2
    found = problems()
    for problem in found:
        print(f"preflight: {problem}", file=sys.stderr)
    for note in [] if args else notes():
        print(f"preflight (note): {note}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
