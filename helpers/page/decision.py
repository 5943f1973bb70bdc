"""The one-page answer to "is it safe to write to this Delta table from two jobs at once?", as data.

Each row (:data:`helpers.page.table_rows.ROWS`: engine, releases, store, setting) has one cell per race
(:data:`helpers.page.columns.COLUMNS`): a verdict, the releases measured, the notebook section that
shows it (:mod:`helpers.page.notebook_sections`), and its evidence (:mod:`helpers.page.evidence`):
pairs of the conflict matrix (``data/conflict_matrix.csv``; for Delta Spark and deltalake through one lock
table, the mixed run's ``data/conflict_matrix_mixed_dynamodb.csv``) whose classes decide the verdict by
:data:`RULE`, engines absent from the CSV skipped (so "not measured" until the matrix runs them); or one
check of a notebook's Checks cell; or nothing. A row whose commit protocol loses appends loses data in every
cell, on one evidence. Versions come from :mod:`helpers.page.boundaries` and :mod:`helpers.ground.eras` only
(:mod:`helpers.page.engine_names`). :func:`grid_of` resolves every cell from the rows and the CSV
(:class:`Results`, with the verdicts and their rule from :mod:`helpers.page.matrix_verdicts`); each cell also
names the words of its section that state its verdict (``claim``, :data:`MATRIX_CLAIMS`).
:mod:`helpers.page.markdown_page` renders them as ``docs/answer.md`` (``python -m helpers.page.markdown_page``);
this module imports nothing of it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from helpers.page import matrix_verdicts
from helpers.page.columns import COLUMNS, Column
from helpers.page.engine_names import (
    MIXED_CSV,
    MIXED_LINK,
    MIXED_ORDERS,
    MIXED_RUN,
    mixed_run,
)
from helpers.page.evidence import Check, MatrixCells, Row, Unmeasured
from helpers.page.matrix_verdicts import (  # noqa: F401  (the page and the tests use them from here)
    BY_DESIGN,
    DUPLICATES,
    LOSES,
    LOSING_KINDS,
    MATRIX_CSV,
    MISREPORTS,
    NOT_MEASURED,
    REFUSED,
    RULE,
    SAFE,
    UNDECIDED,
    VERDICTS,
    WRONG,
    short_version,
    verdict_of,
)
from helpers.page.notebook_sections import Section
from helpers.page.table_rows import ROWS


class Results(matrix_verdicts.Results):
    """The conflict matrix's rows and the mixed run's (``MIXED_CSV``), by engine and pair."""

    @classmethod
    def load(cls, path=MATRIX_CSV, mixed=MIXED_CSV) -> Results:
        rows = []
        for one in (path, mixed) if mixed else (path,):
            with open(one, newline="", encoding="utf-8") as handle:
                rows += list(csv.DictReader(handle))
        return cls(rows)


def evidence(row: Row, column: Column) -> Check | MatrixCells | Unmeasured:
    """What decides one cell, without reading any data: the row's loss, its check or note, or matrix pairs."""
    if row.loses:
        return row.loses
    if column.key in row.cells:
        return row.cells[column.key]
    if (
        column.key == "other" and row.other_from_matrix
    ):  # every race but VACUUM's, which its own column shows
        return MatrixCells(
            row.engines,
            tuple(
                p
                for c in COLUMNS
                if not c.key.startswith("vacuum")
                and not c.layout
                and not isinstance(row.cells.get(c.key), Unmeasured)
                for p in c.pairs
            ),
        )
    if (
        column.layout and row.engines and column.key not in row.cells
    ):  # the engines' own variant on that layout (not the S3 confirmations)
        single = tuple(
            f"{e}+{column.layout}" for e in row.engines if "*" not in e and not e.endswith("@s3")
        )
        return (
            MatrixCells(single, column.pairs)
            if single
            else Unmeasured(
                "the conflict matrix races two jobs on parts of their own with one engine at a time"
            )
        )
    return MatrixCells(row.engines, column.pairs) if row.engines and column.pairs else Unmeasured()


MATRIX_CLAIMS = {
    (
        "append",
        SAFE,
    ): "Two appends from one snapshot both commit, in every engine and every mixed pair, each at a "
    "version of its own: nothing lost.",
    (
        "rewrite",
        REFUSED,
    ): "They are loud failures either way: the later job commits nothing, and a rerun from a fresh "
    "snapshot commits.",
    (
        "overwrite",
        REFUSED,
    ): "They are loud failures either way: the later job commits nothing, and a rerun from a fresh "
    "snapshot commits.",
    (
        "overwrite",
        SAFE,
    ): "deltalake 0.22.3 (before 1.2.0) lets an append and an overwrite from one snapshot both commit, "
    "as the documentation allows, and the table equals a serial order: nothing lost.",
    ("optimize", DUPLICATES): "every compacted row is then in the table twice",
    (
        "optimize",
        REFUSED,
    ): "deltalake 0.22.3, 1.5.1 and 1.6.3 and Delta Spark refuse all eight: the later job fails "
    "loudly and commits nothing.",
    (
        "optimize_delete",
        REFUSED,
    ): "deltalake 0.22.3, 1.5.1 and 1.6.3 and Delta Spark refuse all eight: the later job "
    "fails loudly and commits nothing.",
    (
        "optimize_rewrite",
        REFUSED,
    ): "deltalake 0.22.3, 1.5.1 and 1.6.3 and Delta Spark refuse all eight: the later job "
    "fails loudly and commits nothing.",
    (
        "optimize_rewrite",
        WRONG,
    ): "reports the rows it deleted, and the table still holds all of them: the delete deletes "
    "nothing.",
    (
        "optimize_append",
        SAFE,
    ): "An OPTIMIZE and an append from one snapshot both commit, in either order and in every "
    "engine: nothing lost, since a compaction changes no row.",
    ("vacuum", REFUSED): "a later overwrite fails with a conflict: loudly, nothing lost.",
    (
        "vacuum",
        WRONG,
    ): "an overwrite from a snapshot older than that OPTIMIZE commits, and the rows it replaced come back.",
    ("vacuum_rewrite", REFUSED): "a later overwrite fails with a conflict: loudly, nothing lost.",
    (
        "vacuum_rewrite",
        WRONG,
    ): "an overwrite from a snapshot older than that OPTIMIZE commits, and the rows it replaced come "
    "back.",
    (
        "vacuum",
        LOSES,
    ): "the append then commits a version whose data file is gone, and the table can no longer be read: "
    "its rows are lost and every read fails.",
    (
        "vacuum_rewrite",
        LOSES,
    ): "the log removes a file twice and the table can no longer be read",
    (
        "vacuum_retained",
        REFUSED,
    ): "a later DELETE, UPDATE, MERGE or overwrite is refused: loudly, nothing lost",
    (
        "vacuum_retained",
        LOSES,
    ): "which deletes it as a zero-retention one does, and the table can no longer be read",
    (
        "vacuum_retained",
        WRONG,
    ): "an overwrite beside it commits, and the rows it replaced come back",
    (
        "delete_all_append",
        REFUSED,
    ): "one order is refused, the later job failing loudly and committing nothing",
    (
        "backfill",
        SAFE,
    ): "two appends, replaceWheres, DELETEs, UPDATEs and MERGEs whose condition names the partition "
    "both commit, and the table equals a serial order",
    ("retry", DUPLICATES): "ids 7 and 8 are in the table twice",
    (
        "other",
        DUPLICATES,
    ): "with Delta Spark first and deltalake 1.6.6 second: every compacted row is in the table twice",
}
"""For a matrix cell, keyed by (column, verdict): the words of the section it links (13 §5, or §4 for the
retried append) that state that verdict; a test checks they are there and say it."""


@dataclass(frozen=True)
class Cell:
    """One resolved cell; ``engines``: for a matrix cell, those whose rows decided it."""

    verdict: str
    versions: str
    section: Section | None
    evidence: Check | MatrixCells | Unmeasured
    engines: tuple[str, ...] = ()
    note: str = ""
    claim: str = ""
    conditions: tuple[tuple[str, str], ...] = ()
    """For a matrix cell: ``(condition, verdict)`` where a layout or an interleaving changes its verdict."""
    orders: tuple[tuple[str, str], ...] = ()
    """For a matrix cell: ``(what the user meets, verdict)`` where the order of the commits changes it."""


def resolve(row: Row, column: Column, results: Results) -> Cell:
    """One cell: its verdict (the check's, or the matrix's by the rule), versions, section, evidence."""
    found = evidence(row, column)
    if isinstance(found, Check):
        return Cell(
            found.verdict, found.versions, found.section, found, note=found.note, claim=found.claim
        )
    if isinstance(found, Unmeasured):
        return Cell(NOT_MEASURED, "", None, found, note=found.note)
    present, rows = results.cited(found)
    note = (
        found.note
        if present
        else f"no rows for {' / '.join(found.engines)} in the conflict matrix yet"
    )
    verdict = verdict_of(rows)
    conditions = results.conditions(present, found.pairs, verdict)
    if column.layout:
        conditions += results.layout_conditions(present, found.pairs, column.layout, verdict)
    if found.also and present:
        words, pairs = found.also
        more = verdict_of(results.cited(MatrixCells(found.engines, pairs))[1])
        if more != verdict:
            conditions += ((words, more),)
    mixed = mixed_run(tuple(present))
    if mixed:  # the order of the two engines, where one order gives another verdict
        for engine in present:
            alone = verdict_of(results.cited(MatrixCells((engine,), found.pairs))[1])
            if alone != verdict:
                conditions += ((MIXED_ORDERS[engine], alone),)
    return Cell(
        verdict,
        results.versions(present),
        None if mixed else column.section,
        found,
        tuple(present),
        note,
        MATRIX_CLAIMS.get((column.key, verdict), ""),
        conditions,
        results.orders(present, found.pairs),
    )


def link_of(cell: Cell) -> str:
    """A cell's evidence as a link: its section's, or the mixed run's CSV."""
    if cell.section:
        return cell.section.link
    return f"{MIXED_RUN}, {MIXED_LINK}" if mixed_run(cell.engines) else ""


def grid_of(results: Results) -> dict[tuple[str, str], Cell]:
    """Every cell, by (row key, column key)."""
    return {(r.key, c.key): resolve(r, c, results) for r in ROWS for c in COLUMNS}


def remedy(row: Row, results: Results) -> tuple[str, str]:
    """The retried append made safe: the verdict of the row's remedy pairs, and the versions measured."""
    present, rows = results.cited(MatrixCells(row.engines, row.remedy))
    return (verdict_of(rows), results.versions(present)) if row.remedy else (NOT_MEASURED, "")
