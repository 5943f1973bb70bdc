"""The one-page answer rendered: ``docs/answer.md``, in Markdown, from the decision table of
:mod:`helpers.answer`.

:func:`render` writes the page from :data:`helpers.answer.ROWS` and :data:`~helpers.answer.COLUMNS`
(each cell resolved by :func:`helpers.answer.grid_of`), the conflict matrix's CSV
(:class:`helpers.answer.Results`) and the matrix run's facts (``data/conflict_matrix_meta.json``,
:func:`load_meta`): the table with its notes, the rule, what to do, the version boundaries
(:mod:`helpers.boundaries`), the sources and where the engines disagree with Delta's documentation.
The same inputs give the same text. :func:`main` is ``python -m helpers.answer``::

    python -m helpers.answer           # writes docs/answer.md
    python -m helpers.answer --check   # exit 1 if docs/answer.md differs from a fresh render
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers import boundaries as b
from helpers import config
from helpers.answer import (
    COLUMNS, DUPLICATES, LOSES, MISREPORTS, NOT_MEASURED, REFUSED, ROWS, RULE, SAFE, WRONG, Cell, Check, MatrixCells, Results,
    grid_of, remedy,
)

MATRIX_META = config.DATA_DIR / "conflict_matrix_meta.json"
PAGE = config.ROOT / "docs" / "answer.md"


def load_meta(path: Path = MATRIX_META) -> dict:
    """The matrix run's facts kept beside the CSV: its date, engines, pairs per engine, the docs read."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


INTRO = (
    "Each row is an engine, the releases its setting stands for (from the version boundaries below), a store and a "
    "setting; each column is a race between two jobs on one table. A cell gives the verdict, the releases measured and "
    "the notebook section that shows it. **safe**: both commit and the table equals a serial order; **refused (retry)**: "
    "the later writer fails with an error (a conflict, or a file VACUUM deleted) and commits nothing: rerun it; "
    "**loses data**, **duplicates data**, **wrong result**: the writers report success and the table is not what any "
    "serial order gives; **fails though committed**: a writer is told its write failed although it is in the table, "
    "so rerunning it duplicates data; **not measured**: nothing here measures it. `m` marks a cell decided by the conflict matrix "
    "(`m+S3`: on S3 too). A row whose commit protocol loses appends says so once, in its first cell, and loses data in "
    "every cell. Links open the notebook; the section is named by its number.")
ADVICE = {
    ("optimize", DUPLICATES): ("Run OPTIMIZE and Z-order from one job at a time",
                               "two made from one snapshot both commit, and every compacted row is then in the table twice"),
    ("vacuum", WRONG): ("Run OPTIMIZE + VACUUM while no job overwrites",
                        "an overwrite made from a snapshot older than the compaction commits and brings removed rows back"),
    ("retry", DUPLICATES): ("Never retry an append blindly", "a retry of a commit that landed unacknowledged adds its "
                            "rows again, with or without an app id alone"),
    ("append", MISREPORTS): ("Before rerunning a failed append, look for it in the log",
                             "a job that loads the table while the append is being committed can finish that commit for "
                             "it, and the writer is then told \"version N already exists\" for an append that is in the "
                             "table"),
    ("other", LOSES): ("Never share a table between writers that commit differently", "one writer's commit replaces the other's"),
}
"""(what to do, why) for a bad verdict in a column; any other gets a generic sentence."""
DISAGREEMENTS = {"needless failure": "refused where the docs say the two cannot conflict",
                 "anomaly": "anomalies where the docs say the two conflict",
                 "committed": "committed where the docs say the two conflict"}


def _note_mark(note: str, notes: list[str]) -> str:
    if not note:
        return ""
    if note not in notes:
        notes.append(note)
    return f" [{notes.index(note) + 1}]"


def cell_text(cell: Cell, notes: list[str], *, repeat: bool = False) -> str:
    """**verdict** · versions · section link (· m: decided by the matrix), and a note's mark."""
    if repeat:
        return f"**{cell.verdict}**"
    if cell.verdict == NOT_MEASURED and not cell.engines:
        return NOT_MEASURED + _note_mark(cell.note, notes)
    parts = [f"**{cell.verdict}**", cell.versions, cell.section.link if cell.section else ""]
    if isinstance(cell.evidence, MatrixCells):
        parts.append("m+S3" if any(e.endswith("@s3") for e in cell.engines) else "m")
    return " · ".join(p for p in parts if p) + _note_mark(cell.note, notes)


def table(grid: dict, notes: list[str]) -> list[str]:
    head = ["engine", "versions", "store", "setting", *(c.title for c in COLUMNS)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in ROWS:
        cells = [cell_text(grid[row.key, c.key], notes, repeat=bool(row.loses) and i > 0) for i, c in enumerate(COLUMNS)]
        lines.append("| " + " | ".join([row.engine, row.versions, row.store, row.setting, *cells]) + " |")
    return lines


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def what_to_do(grid: dict, results: Results) -> list[str]:
    """The advice, generated from the cells: each item names the rows whose cells call for it."""
    kept = [r for r in ROWS if not r.loses]
    losing = [f"{r.name} ({r.loses.section.link})" for r in ROWS if r.loses]
    safe = [r.name for r in kept if grid[r.key, "append"].verdict == SAFE]
    items = [f"Never let two jobs commit at once with {_listed(losing)}: the commit protocol loses appends, whatever "
             "the two jobs do.", f"Appends from many jobs at once are safe with {_listed(safe)}."]
    refused = [c.title for c in COLUMNS if any(grid[r.key, c.key].verdict == REFUSED for r in kept)]
    items.append(f"A refusal loses nothing ({', '.join(refused)}): the later writer fails with an error and commits "
                 "nothing; rerun it from a fresh snapshot.")
    for column in COLUMNS:
        for verdict in (LOSES, DUPLICATES, WRONG, MISREPORTS):
            rows = [r for r in kept if grid[r.key, column.key].verdict == verdict]
            if rows:
                do, why = ADVICE.get((column.key, verdict), (f"Keep {column.title} apart", f"the table {verdict}"))
                links = ", ".join(dict.fromkeys(grid[r.key, column.key].section.link for r in rows))
                items.append(f"{do} with {_listed([r.name for r in rows])}: {why} ({links}).")
    fixes = [(r, *remedy(r, results)) for r in ROWS if r.remedy]
    for how in dict.fromkeys(r.remedy_how for r, _, _ in fixes):
        safe = [f"{r.name} (measured {versions})" for r, verdict, versions in fixes if r.remedy_how == how and verdict == SAFE]
        if safe:
            items.append(f"A retried append is safe with {how}: {_listed(safe)}.")
    return [f"- {item}" for item in items]


def boundaries_table() -> list[str]:
    lines = ["| library | from | last before | what changed | how the workbook knows |", "| --- | --- | --- | --- | --- |"]
    return lines + [f"| {x.library} | {x.version} | {x.last_before or '-'} | {x.change} | {x.known_from} |" for x in b.BOUNDARIES]


def sources(grid: dict, results: Results, meta: dict) -> list[str]:
    engines = ", ".join(f"{name} ({results.versions([name])})" for name in results.engine_names)
    docs = "; ".join(f"{d['page']} (read on {d['read_on']})" for d in meta["documentation"])
    lines = [f"- **The conflict matrix** (`make matrix`), run on {meta['run_on']}: {meta['pairs_per_engine']} pairs per "
             f"engine, engines {engines}. Each pair is raced from a stale snapshot on local disk (engines named `…@s3`: "
             "on S3) and classed against the two serial orders; the cells marked `m` are decided by its rows in "
             "[data/conflict_matrix.csv](../data/conflict_matrix.csv), and link the notebook section about that race.",
             f"- **Delta's documentation**, set against every pair: {docs}.",
             "- **Notebook checks**, each asserted by its notebook's Checks cell whenever the notebook runs (`make test`):"]
    checks = {(c.evidence.section, c.evidence.check): c.evidence for c in grid.values() if isinstance(c.evidence, Check)}
    for check in checks.values():
        when = "" if check.every_run else " (asserted when a `make torture` full run is present)"
        lines.append(f"  - {check.section.link} {check.section.title}: `{check.check}`{when}")
    return lines


def disagreements(results: Results) -> list[str]:
    """Per engine, the pairs whose measured outcome differs from WriteSerializable's documented answer."""
    lines = []
    for engine in results.engine_names:
        mine = [r for r in results.rows if r["engine"] == engine]
        off, groups = [r for r in mine if r["agrees_with_docs"] == "no"], {}
        for r in off:
            kind = next((k for k in DISAGREEMENTS if r["disagreement"].startswith(k)), "other")
            groups.setdefault(DISAGREEMENTS.get(kind, kind), []).append(
                f"{r['first']} → {r['second']} ({r['conflict'] or r['anomaly_kind'] or r['matched']})")
        told = "; ".join(f"{kind}: {', '.join(pairs)}" for kind, pairs in groups.items()) or "none"
        lines.append(f"- **{engine}** ({results.versions([engine])}): {len(off)} of "
                     f"{sum(1 for r in mine if r['agrees_with_docs'])} documented pairs disagree. {told}.")
    return lines


def render(results: Results | None = None, meta: dict | None = None) -> str:
    """The page, from the rows, the matrix's CSV and the run's facts; the same inputs give the same text."""
    results, meta = results or Results.load(), meta or load_meta()
    grid, notes = grid_of(results), []
    rows = table(grid, notes)
    out = ["# Is it safe to write to this Delta table from two jobs at once? The answer, on one page", "",
           "Generated by `python -m helpers.answer` from the workbook's measurements; `tests/test_answer.py` fails when "
           "a cell disagrees with what it cites. Do not edit by hand.", "", INTRO, "", *rows, ""]
    out += [f"[{i}] {note}" + ("  " if i < len(notes) else "") for i, note in enumerate(notes, 1)] + [""]
    out += ["A matrix cell's verdict, from the classes of the pairs it cites:", ""]
    out += [f"{i}. {step}" for i, step in enumerate(RULE, 1)] + [""]
    out += ["## What to do", "", *what_to_do(grid, results), ""]
    out += ["## Version boundaries", "", "From `helpers/boundaries.py`, the one home of these releases:", "",
            *boundaries_table(), ""]
    out += ["## Where each figure comes from", "", *sources(grid, results, meta), ""]
    out += ["## Where the engines disagree with Delta's documentation", "",
            "Against the WriteSerializable answer of Delta's write-conflict table (`data/delta_write_conflicts.csv`), "
            "from the conflict matrix:", "", *disagreements(results)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.answer", description="Write docs/answer.md from the measurements.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs from a fresh render")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page (default docs/answer.md)")
    args = parser.parse_args(argv)
    fresh, shown = render(), config.shown(args.page)
    if args.check:
        if not args.page.exists() or args.page.read_text(encoding="utf-8") != fresh:
            print(f"{shown} is not what `python -m helpers.answer` writes now: run it and commit the page.", file=sys.stderr)
            return 1
        print(f"{shown} is current")
        return 0
    args.page.write_text(fresh, encoding="utf-8")
    print(f"wrote {shown}")
    return 0
