"""What a notebook states, asserted, and what it concludes, rendered from the measured values.

A notebook's checks cell proves its lessons on every run. It collects its checks in a
:class:`Checklist` and asserts at the end that all of them held; the assertion's message lists
every one that did not, each saying what was expected and what was found, so a learner who
changed a parameter (or a version) reads every reason at once, not a bare ``AssertionError``::

    check = checks.Checklist()
    check.equal("rows added by the run", audit.rows_added, 10 * n_writers)
    check.holds("rows lost under the unsafe rename", audit.rows_lost > 0,
                expected="more than 0", found=audit.rows_lost)
    assert check.passed, check.report()

:func:`equal` and :func:`holds` do the same for one check and raise at once (for a check in the
middle of a notebook, or in a test).

Results are told in prose built from the same variables, never typed by hand, so they stay true
when ``n_writers`` changes::

    checks.say(f"{run.committed} of {n_writers} writers committed")

:func:`counted` spells a count for such prose ("1 writer", "7 writers").
"""

from __future__ import annotations

from typing import Any


class CheckFailed(AssertionError):
    """A stated result did not hold; the message names it, what was expected and what was found."""


def equal(what: str, found: Any, expected: Any) -> None:
    """Raise :class:`CheckFailed` unless ``found == expected``."""
    if not found == expected:
        raise CheckFailed(f"{what}: expected {expected!r}, found {found!r}")


def holds(what: str, condition: bool, *, expected: str, found: Any) -> None:
    """Raise :class:`CheckFailed` unless ``condition``; ``expected`` describes what should be true."""
    if not condition:
        raise CheckFailed(f"{what}: expected {expected}, found {found!r}")


class Checklist:
    """Checks collected for one assertion: :meth:`equal` and :meth:`holds` record what failed,
    :attr:`passed` says whether everything held, :meth:`report` names every failure."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.count = 0

    def equal(self, what: str, found: Any, expected: Any) -> bool:
        """Record a failure unless ``found == expected``; return whether it held."""
        self.count += 1
        if found == expected:
            return True
        self.failures.append(f"{what}: expected {expected!r}, found {found!r}")
        return False

    def holds(self, what: str, condition: bool, *, expected: str, found: Any) -> bool:
        """Record a failure unless ``condition``; ``expected`` describes what should be true."""
        self.count += 1
        if condition:
            return True
        self.failures.append(f"{what}: expected {expected}, found {found!r}")
        return False

    @property
    def passed(self) -> bool:
        return self.count > 0 and not self.failures

    def report(self) -> str:
        """Every failed check, one per line (what the final ``assert`` shows)."""
        if not self.count:
            return "no check was made"
        return f"{len(self.failures)} of {self.count} checks failed:\n- " + "\n- ".join(
            self.failures
        )


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """``counted(1, "writer")`` is "1 writer"; ``counted(7, "writer")`` is "7 writers"."""
    return f"{number} {noun if number == 1 else (plural or noun + 's')}"


def say(markdown: str) -> None:
    """Show ``markdown`` as a rendered Markdown output of the running cell (plain text outside Jupyter)."""
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - the kernel always has IPython
        print(markdown)
        return
    if get_ipython() is None:
        print(markdown)
    else:
        display(Markdown(markdown))


def chosen_parts(parser, text: str, choices) -> list[str]:
    """The comma-separated parts named in ``text``, each one of ``choices``; else ``parser``'s
    error (an argparse parser: exit 2) naming the unknown ones and the choices."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in parts if p not in choices]
    if unknown or not parts:
        parser.error(
            f"unknown part(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(choices)}"
        )
    return parts


def reported(done: str, problems: list[str]) -> int:
    """Print what a long run did, then each of its problems; its exit status (1 with problems)."""
    print(done)
    for problem in problems:
        print(f"PROBLEM: {problem}")
    return 1 if problems else 0
