"""Check a notebook's parameters before anything runs.

papermill (and ``python -m helpers.jupyter.workbook run NN -p NAME=VALUE``) injects parameters as a cell
of plain assignments after the notebook's ``parameters`` cell. A misspelt name (``-p n_writer 4``)
only makes papermill warn, and the notebook would run its default silently; a value that cannot
show the lesson (one writer cannot race anyone) would fail much later with a misleading message.
Each notebook's first cell after its parameters therefore says what it accepts::

    parameters.check(globals(), n_writers=parameters.whole(minimum=2, why="one writer has no one to race"),
                     table_name=parameters.text(), era=parameters.choice(eras.ERAS))

and :func:`check` raises :class:`ParameterError` naming what is wrong, what is accepted and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable


class ParameterError(ValueError):
    """A parameter is unknown or its value cannot show the notebook's lesson; the message says which and what to use."""


@dataclass(frozen=True)
class Rule:
    describe: str
    """What the parameter takes, for messages: ``a whole number >= 2``."""
    accepts: Callable[[Any], bool]
    why: str = ""


def whole(minimum: int = 0, maximum: int | None = None, *, why: str = "") -> Rule:
    """A whole number in ``minimum..maximum``; ``why`` says what a smaller or larger one would break."""
    bounds = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    return Rule(
        f"a whole number {bounds}",
        lambda v: (
            isinstance(v, int)
            and not isinstance(v, bool)
            and v >= minimum
            and (maximum is None or v <= maximum)
        ),
        why,
    )


def positive(*, why: str = "") -> Rule:
    """A number > 0."""
    return Rule(
        "a number > 0",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0,
        why,
    )


def text() -> Rule:
    """A non-empty string without slashes (a table or folder name)."""
    return Rule(
        "a non-empty name without '/'", lambda v: isinstance(v, str) and bool(v) and "/" not in v
    )


def flag() -> Rule:
    return Rule("True or False", lambda v: isinstance(v, bool))


def choice(options: Iterable[Any], *, why: str = "") -> Rule:
    """One of ``options``."""
    allowed = list(options)
    return Rule(f"one of {', '.join(map(repr, allowed))}", lambda v: v in allowed, why)


def subset(options: Iterable[Any]) -> Rule:
    """A list whose items are all among ``options`` (empty allowed)."""
    allowed = list(options)
    return Rule(
        f"a list drawn from {', '.join(map(repr, allowed))}",
        lambda v: isinstance(v, (list, tuple)) and all(item in allowed for item in v),
    )


INJECTED_MARK = "# Parameters"
"""How papermill's injected cell starts (its Python translator's comment)."""


def injected_names(namespace: dict[str, Any]) -> list[str]:
    """The names papermill's injected cell assigned, read from the kernel's input history (``In``);
    [] when nothing was injected (JupyterLab, nbval)."""
    import ast

    names: list[str] = []
    for source in namespace.get("In", []) or []:
        if isinstance(source, str) and source.lstrip().startswith(INJECTED_MARK):
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            names = [
                target.id
                for node in tree.body
                if isinstance(node, ast.Assign)
                for target in node.targets
                if isinstance(target, ast.Name)
            ]
    return names


def check(namespace: dict[str, Any], **rules: Rule) -> None:
    """Raise ParameterError for an injected name that is no declared parameter (misspelt), or for a
    declared parameter whose value its rule refuses. Call it with ``globals()`` right after the
    parameters cell."""
    accepted = ", ".join(rules)
    unknown = sorted(set(injected_names(namespace)) - set(rules))
    if unknown:
        raise ParameterError(
            f"Unknown parameter(s) {', '.join(unknown)}: this notebook accepts {accepted}. "
            "Check the spelling of each -p NAME (papermill adds unknown names without complaint)."
        )
    missing = [name for name in rules if name not in namespace]
    if missing:
        raise ParameterError(
            f"The parameters cell must define {', '.join(missing)}; run it first (it accepts {accepted})."
        )
    for name, rule in rules.items():
        value = namespace[name]
        if not rule.accepts(value):
            because = f": {rule.why}" if rule.why else ""
            raise ParameterError(
                f"{name}={value!r} cannot be used; {name} must be {rule.describe}{because}."
            )
