"""What a notebook states, asserted, and what it concludes, rendered from the measured values.

A notebook's checks cell proves its lessons on every run. Each check says, when it fails, what
was expected and what was found, so a learner who changed a parameter (or a version) reads the
reason, not a bare ``AssertionError``::

    checks.equal("rows added by the run", audit.rows_added, 10 * n_writers)
    checks.holds("rows lost under the unsafe rename", audit.rows_lost > 0,
                 expected="more than 0", found=audit.rows_lost)

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
