"""What decides a cell of the one-page answer (:mod:`helpers.page.answer`): pairs of the conflict matrix
(:class:`MatrixCells`), one check of a notebook's Checks cell (:class:`Check`) or nothing
(:class:`Unmeasured`); and the :class:`Row` of a setting that holds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.page.answer_sections import Section


@dataclass(frozen=True)
class MatrixCells:
    """Matrix pairs of some engines (names or fnmatch patterns; those absent from the CSV skipped)."""

    engines: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    note: str = ""
    also: tuple[str, tuple[tuple[str, str], ...]] = ()
    """``(condition, pairs)``: more pairs the cell states apart, under that condition, where their verdict
    differs from the cell's."""


@dataclass(frozen=True)
class Check:
    """A check's name as the notebook's Checks code spells it (an f-string's literal text), and what it
    shows; ``every_run=False``: asserted only when a full run (``make torture``) is present."""

    section: Section
    check: str
    verdict: str
    versions: str
    note: str = ""
    every_run: bool = True
    claim: str = ""
    """Words of the section (its prose or committed output) that state what the cell says; a test
    checks they are there and that they say the cell's verdict."""
    refuses: tuple[str, ...] = ()
    """For a verdict of :data:`helpers.page.answer_matrix.BY_DESIGN`: the operations the setting never
    allows, as a sentence names them (the matrix's operations by their words in
    :data:`helpers.page.answer_matrix.OP_WORDS`)."""


@dataclass(frozen=True)
class Unmeasured:
    note: str = ""


@dataclass(frozen=True)
class Row:
    """``versions``: the releases the setting stands for (cells name those measured); ``name``: short,
    for "what to do"; ``engines``: the matrix engines of every column ``cells`` (column key -> Check or
    Unmeasured) does not give; ``loses``: the commit protocol loses appends, so every cell loses data on
    that one evidence; ``remedy``: matrix pairs of the retried append made safe by ``remedy_how``;
    ``other_from_matrix``: each pair is one engine against the other, so sharing is the worst of all;
    ``other_engine``: the engine its "other" cell measured beside it, where that is not the other of
    Delta Spark and deltalake."""

    key: str
    engine: str
    versions: str
    store: str
    setting: str
    name: str
    engines: tuple[str, ...] = ()
    cells: dict = field(default_factory=dict)
    loses: Check | None = None
    remedy: tuple[tuple[str, str], ...] = ()
    remedy_how: str = ""
    other_from_matrix: bool = False
    other_engine: str = ""
