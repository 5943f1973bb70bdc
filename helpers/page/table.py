"""The table of ``docs/answer.md`` (:mod:`helpers.page.markdown_page`): every setting, every race. Its
introduction (:data:`INTRO`), a row per setting with the evidence most of its cells share stated once
(:func:`row_evidence`), each cell's verdict with only what differs and its note's mark (:func:`cell_text`),
and the sections the cells name, each linked once.
"""

from __future__ import annotations

from helpers.page import lost_answer_cells
from helpers.page.columns import COLUMNS
from helpers.page.decision import Cell
from helpers.page.engine_names import MIXED_RUN, mixed_run
from helpers.page.evidence import MatrixCells
from helpers.page.matrix_verdicts import (
    NOT_MEASURED,
)
from helpers.page.setting_paragraphs import NOT_ALLOWED, term
from helpers.page.table_rows import ROWS

INTRO = (
    "Each row is an engine, its releases (from the version boundaries below), a store and a setting; each column is "
    "a race between two jobs on one table, the later one working from an older "
    + term("snapshot", "snapshot")
    + ". "
    "A cell gives the verdict; the row's *measured* column gives, once for the row, the releases measured, the "
    "notebook section that shows it (`13 §5`: notebook 13, section 5) and how it was decided: by the "
    + term("conflict matrix", "conflict-matrix")
    + " (on local disk; *on S3 too* where it also raced the pairs on S3), by "
    + MIXED_RUN
    + " (Delta Spark and deltalake through one lock table, both orders; no notebook section) or by the section's "
    "check; a cell repeats "
    "them only where its own differ. **safe**: both commit "
    "and the table equals a "
    + term("serial order", "serial-order")
    + "; **refused (retry)**: the later job fails "
    "with an error (a conflict, or a file VACUUM deleted) and commits nothing: rerun it; **refused by design**: "
    "no race at all, the setting never allows the operation, whatever runs beside it: it fails before writing "
    "anything, and a rerun is refused again (its setting's paragraph says so under *"
    + NOT_ALLOWED
    + "*); **loses data**, "
    "**duplicates data**, **wrong result**: the jobs report success and the table is not what any serial order "
    "gives; **fails though committed**: a job is told its write failed although it is in the table, so rerunning "
    "it duplicates data; **not measured**: nothing here measures it. A matrix cell's first verdict is for two jobs that touch the same files, the later "
    "one writing its data files when its engine does by itself (deltalake after the other's commit, Delta Spark before "
    "it); where a partition of each job's own, rows that file statistics keep apart, or the other moment for the data "
    "files gives another verdict, the cell adds it with that condition. A row whose commit protocol loses appends says so once, in its first cell, and "
    "loses data in every cell. The sections are linked once, below the table, each in the learner's edition "
    "(`student/`) and in the "
    + term("solutions edition", "solutions-edition")
    + " (`notebooks/`, with the exercises' answers)."
)


def _note_mark(note: str, notes: list[str]) -> str:
    if not note:
        return ""
    if note not in notes:
        notes.append(note)
    return f" [{notes.index(note) + 1}]"


MATRIX = "conflict matrix"
MATRIX_S3 = "conflict matrix, on S3 too"
CHECKED = "the section's check"
HOW = (MATRIX, MATRIX_S3, CHECKED, MIXED_RUN)
"""How a cell was decided, as the table says it: by the conflict matrix (on local disk; on S3 too), or by
the check of the notebook section it names."""


def evidence_parts(cell: Cell) -> tuple[str, str, str]:
    """(the releases measured, the section's label, how it was decided) for a measured cell."""
    if isinstance(cell.evidence, MatrixCells) and mixed_run(cell.engines):
        how = MIXED_RUN
    elif isinstance(cell.evidence, MatrixCells):
        how = MATRIX_S3 if any(e.endswith("@s3") for e in cell.engines) else MATRIX
    else:
        how = CHECKED
    return cell.versions, cell.section.label if cell.section else "", how


def _measured(cell: Cell) -> bool:
    return not (cell.verdict == NOT_MEASURED and not cell.engines)


def row_evidence(grid: dict, row) -> tuple[str, str, str]:
    """The evidence most of a row's measured cells share (each part apart): stated once, in the row's
    "measured" column; a cell names only the parts where it differs."""
    cells = [grid[row.key, c.key] for c in COLUMNS]
    measured = [evidence_parts(c) for c in cells if _measured(c)]
    if row.loses:
        measured = measured[:1]
    if not measured:
        return "", "", ""
    parts = []
    for i in range(3):
        values = [m[i] for m in measured]
        parts.append(max(dict.fromkeys(values), key=values.count))
    return tuple(parts)


def measured_text(shared: tuple[str, str, str]) -> str:
    """A row's "measured" column: releases · section · how (nothing measured: "none")."""
    return " · ".join(p for p in shared if p) or "none"


def cell_text(
    cell: Cell,
    notes: list[str],
    *,
    repeat: bool = False,
    shared: tuple[str, str, str] = ("", "", ""),
) -> str:
    """**verdict**, then only the evidence that differs from the row's (releases · section · how), the
    conditions that change the verdict, and a note's mark."""
    if repeat:
        return f"**{cell.verdict}**"
    if not _measured(cell):
        return NOT_MEASURED + _note_mark(cell.note, notes)
    own = evidence_parts(cell)
    parts = [f"**{cell.verdict}**", *(p for p, s in zip(own, shared) if p and p != s)]
    varied = "".join(
        f"; **{verdict}** {condition}" for condition, verdict in cell.conditions + cell.orders
    )
    return " · ".join(parts) + varied + _note_mark(cell.note, notes)


def lost_answer_text(row_key: str) -> str:
    """The row's "the commit's answer is lost" cell: **verdict**, what happened, and the remedy."""
    found = lost_answer_cells.cell(row_key)
    remedy = f"; **{found.remedy_verdict}** {found.remedy}" if found.remedy else ""
    return f"**{found.verdict}** · {found.text}{remedy}"


def table(grid: dict, notes: list[str]) -> list[str]:
    head = [
        "engine",
        "versions",
        "store",
        "setting",
        "measured",
        *(c.title for c in COLUMNS),
        lost_answer_cells.TITLE,
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in ROWS:
        shared = row_evidence(grid, row)
        cells = [
            cell_text(grid[row.key, c.key], notes, repeat=bool(row.loses) and i > 0, shared=shared)
            for i, c in enumerate(COLUMNS)
        ]
        lines.append(
            "| "
            + " | ".join(
                [
                    row.engine,
                    row.versions,
                    row.store,
                    row.setting,
                    measured_text(shared),
                    *cells,
                    lost_answer_text(row.key),
                ]
            )
            + " |"
        )
    return lines


def sections_linked(grid: dict) -> str:
    """The sections the table's cells name, each linked once."""
    found = sorted(
        {c.section for c in grid.values() if c.section and c.verdict != NOT_MEASURED},
        key=lambda x: (x.notebook, x.number),
    )
    return "The sections the cells name: " + "; ".join(x.link for x in found) + "."
