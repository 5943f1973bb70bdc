"""The one-page answer rendered: ``docs/answer.md``, in Markdown, from the decision table of
:mod:`helpers.page.answer`.

:func:`render` writes the page from :data:`helpers.page.answer.ROWS` and :data:`~helpers.page.answer.COLUMNS`
(each cell resolved by :func:`helpers.page.answer.grid_of`), the conflict matrix's CSV
(:class:`helpers.page.answer.Results`) and the matrix run's facts (``data/conflict_matrix_meta.json``,
:func:`load_meta`): the table with its notes, the rule, what to do, the version boundaries
(:mod:`helpers.page.boundaries`) and the sources.
The same inputs give the same text. :func:`main` is the command (``make matrix`` runs it)::

    python -m helpers.page.answer_page           # writes docs/answer.md and docs/disagreements.md
    python -m helpers.page.answer_page --check   # exit 1 if either differs from a fresh render

:func:`render_disagreements` writes docs/disagreements.md: per engine, the pairs whose outcome differs
from Delta's documentation (the answer page links it once).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from helpers.ground import config
from helpers.page import boundaries as b
from helpers.page.answer import (
    BY_DESIGN,
    COLUMNS,
    DUPLICATES,
    LOSES,
    MISREPORTS,
    MIXED_LINK,
    MIXED_LOCK_ENGINES,
    MIXED_RUN,
    NOT_MEASURED,
    REFUSED,
    ROWS,
    RULE,
    SAFE,
    SPARK,
    WRONG,
    Cell,
    Check,
    MatrixCells,
    Results,
    grid_of,
    link_of,
    mixed_run,
    remedy,
)
from helpers.page.answer_matrix import UNNAMED_MERGE
from helpers.page.answer_settings import (
    NOT_ALLOWED,
    SETTINGS,
    WHY,
    race_words,
    setting_paragraph,
    term,
)
from helpers.runs import full_runs

MATRIX_META = config.DATA_DIR / "conflict_matrix_meta.json"
PAGE = config.ROOT / "docs" / "answer.md"
DISAGREEMENTS_PAGE = config.ROOT / "docs" / "disagreements.md"


def load_meta(path: Path = MATRIX_META) -> dict:
    """The matrix run's facts kept beside the CSV: its date, engines, pairs per engine, the docs read."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


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
ADVICE = {
    ("optimize", DUPLICATES): (
        "Run OPTIMIZE and Z-order from one job at a time",
        "two made from one snapshot both commit, and every compacted row is then in the table twice",
    ),
    ("optimize_rewrite", WRONG): (
        "Run OPTIMIZE and Z-order only while no job deletes every row or overwrites",
        "a DELETE of every row or a full overwrite made from a snapshot older than the "
        "compaction commits, reports the rows it removed, and the table still holds them all (a "
        "DELETE with a predicate or a replaceWhere is refused instead: rerun it)",
    ),
    ("vacuum_rewrite", WRONG): (
        "Run OPTIMIZE + VACUUM only while no job overwrites or deletes every row",
        "a full overwrite or a DELETE of every row made from a snapshot older than the compaction commits "
        "and brings removed rows back (a replaceWhere or a DELETE with a predicate is refused instead: "
        "rerun it)",
    ),
    ("vacuum", LOSES): (
        "Keep VACUUM's default retention (7 days) while any job may be writing",
        "a zero-retention VACUUM deletes the data file of an append still in flight, the append then "
        "commits, and the table can no longer be read",
    ),
    ("retry", DUPLICATES): (
        "Never rerun an append blindly",
        "if its commit landed but the job never heard so, a rerun "
        "adds the rows again; an app id alone does not stop it",
    ),
    ("append", MISREPORTS): (
        "Before rerunning a failed append, look for it in the table",
        "a job that loads the table while the append is being committed can finish that commit for "
        'it, and the writer is then told "version N already exists" for an append that is in the '
        "table",
    ),
    ("other", MISREPORTS): (
        "When Spark and deltalake share one lock table, look for a failed append in the table before "
        "rerunning it",
        "nothing is lost, but either writer can be told its append failed although "
        "it is in the log",
    ),
    ("other", LOSES): (
        "Never let writers that commit differently share a table",
        "one writer's commit file replaces the other's, and its rows are gone",
    ),
    ("other", DUPLICATES): (
        "Run OPTIMIZE from one engine at a time",
        "the other engine's OPTIMIZE from the same snapshot commits too, and compacted rows end up twice",
    ),
}
"""(what to do, why) for a bad verdict in a column, in a person's words; any other gets a plain sentence."""
DISAGREEMENTS = {
    "needless failure": "refused where the docs say the two cannot conflict",
    "anomaly": "anomalies where the docs say the two conflict",
    "committed": "committed where the docs say the two conflict",
}


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


def table(grid: dict, notes: list[str]) -> list[str]:
    head = ["engine", "versions", "store", "setting", "measured", *(c.title for c in COLUMNS)]
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
                [row.engine, row.versions, row.store, row.setting, measured_text(shared), *cells]
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


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def what_to_do(grid: dict, results: Results) -> list[str]:
    """The advice, from the cells: each item names the settings whose cells call for it."""
    kept = [r for r in ROWS if not r.loses]
    losing = [f"{r.name} ({r.loses.section.link})" for r in ROWS if r.loses]
    items = [
        f"Never let two jobs commit at once with {_listed(losing)}: these commit protocols lose appends, "
        "whatever the jobs do."
    ]
    refused = [
        race_words(c.key)
        for c in COLUMNS
        if any(grid[r.key, c.key].verdict == REFUSED for r in kept)
    ]
    items.append(
        f"When one job of a race fails with a conflict ({'; '.join(refused)}), nothing is lost: it committed "
        "nothing, and you can rerun it; it starts from a fresh snapshot."
    )
    items += by_design(grid, kept)
    for column in COLUMNS:
        for verdict in (LOSES, DUPLICATES, WRONG, MISREPORTS):
            rows = [r for r in kept if grid[r.key, column.key].verdict == verdict]
            if rows:
                do, why = ADVICE.get(
                    (column.key, verdict), (f"Keep {race_words(column.key)} apart", WHY[verdict])
                )
                links = ", ".join(dict.fromkeys(link_of(grid[r.key, column.key]) for r in rows))
                items.append(f"{do} ({_listed([r.name for r in rows])}): {why} ({links}).")
    for condition in dict.fromkeys(
        w for r in kept for c in COLUMNS for w, v in grid[r.key, c.key].conditions if v == SAFE
    ):
        pairs = [
            (r, c)
            for r in kept
            for c in COLUMNS
            if (condition, SAFE) in grid[r.key, c.key].conditions
        ]
        races = _listed(list(dict.fromkeys(race_words(c.key) for _, c in pairs)))
        links = ", ".join(dict.fromkeys(link_of(grid[r.key, c.key]) for r, c in pairs))
        items.append(
            f"To let jobs run at once, lay the table out so that they touch different files: both jobs of "
            f"{races} commit {condition} ({_listed(list(dict.fromkeys(r.name for r, _ in pairs)))}; {links})."
        )
    items += backfills(grid, kept)
    fixes = [(r, *remedy(r, results)) for r in ROWS if r.remedy]
    for how in dict.fromkeys(r.remedy_how for r, _, _ in fixes):
        safe = [
            f"{r.name} (measured {versions})"
            for r, verdict, versions in fixes
            if r.remedy_how == how and verdict == SAFE
        ]
        if safe:
            items.append(
                f"To rerun an append safely, give it {how}: it then commits once ({_listed(safe)})."
            )
    return [f"- {item}" for item in items]


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def by_design(grid: dict, kept: list) -> list[str]:
    """The advice for the operations a setting refuses by design: not to run them there at all (a rerun
    is refused again), each setting once, with the sections that show it."""
    items = []
    for row in kept:
        cells = [grid[row.key, c.key] for c in COLUMNS if grid[row.key, c.key].verdict == BY_DESIGN]
        if not cells:
            continue
        ops = list(
            dict.fromkeys(
                op
                for cell in cells
                for op in (cell.evidence.refuses if isinstance(cell.evidence, Check) else ())
            )
        )
        links = ", ".join(dict.fromkeys(link_of(cell) for cell in cells if link_of(cell)))
        items.append(
            f"Do not run {_either(ops) if ops else 'them'} with {row.name}: that setting refuses "
            f"{'them' if len(ops) != 1 else 'it'} by design, before anything is written, and a rerun is "
            f"refused again; what to do instead is in its paragraph above, under *{NOT_ALLOWED}* ({links})."
        )
    return items


def backfills(grid: dict, kept: list) -> list[str]:
    """The advice for parallel backfills, from the cells of the same operation from two jobs on partitions
    of their own: the settings where both commit, and each condition that gives another verdict (the MERGE
    whose condition does not name the partition, the other interleaving, file statistics instead of partitions)."""
    cells = [
        (r, grid[r.key, "backfill"])
        for r in kept
        if grid[r.key, "backfill"].verdict != NOT_MEASURED
    ]
    if not cells:
        return []
    links = ", ".join(dict.fromkeys(c.section.link for _, c in cells if c.section))
    by_verdict: dict[str, list[str]] = {}
    for row, cell in cells:
        by_verdict.setdefault(cell.verdict, []).append(row.name)
    said = "; ".join(
        f"{BACKFILL_WORDS.get(v, v)} ({_listed(names)})" for v, names in by_verdict.items()
    )
    conditions: dict[tuple[str, str], list[str]] = {}
    for row, cell in cells:
        for condition, verdict in cell.conditions:
            conditions.setdefault((condition, verdict), []).append(row.name)
    more = []
    for (condition, verdict), names in conditions.items():
        if condition == UNNAMED_MERGE[0]:
            more.append(
                f"A MERGE whose condition does not name the partition, only the source's rows do, "
                f"{UNNAMED_VERBS.get(verdict, 'is ' + verdict)} although the partitions differ "
                f"({_listed(names)}): name the partition in its `ON` clause."
            )
        else:
            more.append(f"The backfills are {verdict} {condition} ({_listed(names)}).")
    return [
        f"To backfill in parallel, give each job a partition of its own and name that partition in the job's "
        f"condition (the replaceWhere predicate, the DELETE's or UPDATE's predicate, the MERGE's `ON` clause): two "
        f"replaceWheres, DELETEs, UPDATEs, MERGEs or appends on partitions of their own then {said}. "
        + " ".join(more)
        + f" Shown in {links}."
    ]


BACKFILL_WORDS = {
    SAFE: "both commit, and the table equals a serial order",
    REFUSED: "race: the later job fails loudly and commits nothing; rerun it",
}
UNNAMED_VERBS = {
    REFUSED: "is refused (retry): the later job fails loudly and commits nothing",
    SAFE: "commits too",
}


def boundaries_table() -> list[str]:
    lines = [
        "| library | from | last before | what changed | how the workbook knows |",
        "| --- | --- | --- | --- | --- |",
    ]
    return lines + [
        f"| {x.library} | {x.version} | {x.last_before or '-'} | {x.change} | {x.known_from} |"
        for x in b.BOUNDARIES
    ]


def sources(grid: dict, results: Results, meta: dict) -> list[str]:
    engines = ", ".join(f"{name} ({results.versions([name])})" for name in results.engine_names)
    docs = "; ".join(f"{d['page']} (read on {d['read_on']})" for d in meta["documentation"])
    lines = [
        f"- **The conflict matrix** (`make matrix`), run on {meta['run_on']}: {meta['pairs_per_engine']} pairs per "
        f"engine, engines {engines}. Each pair is raced from a stale snapshot on local disk (engines named `…@s3`: "
        "on S3) and classed against the two serial orders; the cells it decides (*conflict matrix* in their row's "
        "*measured* column) follow from its rows in [data/conflict_matrix.csv](../data/conflict_matrix.csv), and "
        "name the notebook section about that race. "
        "An engine named `…+<layout>` races the operations with a predicate of their own on another table "
        + "; ".join(
            f"(`{name}`: {what})"
            for name, what in meta.get("layouts", {}).items()
            if name != "shared-files"
        )
        + ", and on it each such operation against a second job of the same operation on a part of its own "
        "(another partition, or another range of ids; a MERGE also with a condition that names only the key)"
        + "; one named `…+b-files-first` or `…+b-files-after` races the pairs whose later job writes data files "
        "with the other moment for them ("
        + "; ".join(f"`{k}`: {v}" for k, v in meta.get("interleavings", {}).items())
        + "), and one named `…+<layout>+b-files-…`, with that other moment, only the pairs of an operation against "
        "a second job on a part of its own.",
        f"- **Delta's documentation**, set against every pair: {docs}. Where each engine disagrees with it, "
        f"pair by pair: [{DISAGREEMENTS_TITLE}]({DISAGREEMENTS_PAGE.name}).",
        f"- **{MIXED_RUN[0].upper() + MIXED_RUN[1:]}**: Delta Spark {SPARK} through its DynamoDB log store and "
        "deltalake through its DynamoDB lock (`AWS_S3_LOCKING_PROVIDER=dynamodb`) on one S3 table, `s3a://` URIs, one "
        "lock table, every pair of the columns above but the rerun and the backfills, in both orders (engines "
        + " and ".join(f"`{e}` ({results.versions([e])})" for e in MIXED_LOCK_ENGINES)
        + f"), classed as the matrix classes a pair, the lock table's items checked too; its rows in {MIXED_LINK}, "
        "the run's facts beside them in "
        "[data/conflict_matrix_mixed_dynamodb_meta.json](../data/conflict_matrix_mixed_dynamodb_meta.json). The "
        "cells it decides say so in their row's *measured* column.",
        "- **Notebook checks**, each asserted by its notebook's Checks cell whenever the notebook runs (`make test`):",
    ]
    checks = {
        (c.evidence.section, c.evidence.check): c.evidence
        for c in grid.values()
        if isinstance(c.evidence, Check)
    }
    for check in checks.values():
        when = "" if check.every_run else " (asserted when a `make torture` full run is present)"
        lines.append(f"  - {check.section.link} {check.section.title}: `{check.check}`{when}")
    return lines


def disagreements(results: Results) -> list[str]:
    """Per engine, the pairs whose measured outcome differs from WriteSerializable's documented answer:
    a table, one row per engine, one column per kind of disagreement."""
    kinds = list(DISAGREEMENTS.values())
    lines = [
        "| engine | releases | documented pairs | disagree | " + " | ".join(kinds) + " |",
        "|" + " --- |" * (4 + len(kinds)),
    ]
    for engine in results.engine_names:
        mine = [r for r in results.rows if r["engine"] == engine]
        off, groups = [r for r in mine if r["agrees_with_docs"] == "no"], {}
        for r in off:
            kind = next((k for k in DISAGREEMENTS if r["disagreement"].startswith(k)), "other")
            groups.setdefault(DISAGREEMENTS.get(kind, kind), []).append(
                f"{r['first']} → {r['second']} ({r['conflict'] or r['anomaly_kind'] or r['matched']})"
            )
        unknown = set(groups) - set(kinds)
        assert not unknown, f"a disagreement of no known kind: {unknown}"
        cells = [", ".join(groups.get(kind, [])) or "none" for kind in kinds]
        lines.append(
            f"| {engine} | {results.versions([engine])} | "
            f"{sum(1 for r in mine if r['agrees_with_docs'])} | {len(off)} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def render(results: Results | None = None, meta: dict | None = None) -> str:
    """The page, from the rows, the matrix's CSV and the run's facts; the same inputs give the same text."""
    results, meta = results or Results.load(), meta or load_meta()
    grid, notes = grid_of(results), []
    rows = table(grid, notes)
    out = [
        "# Is it safe to write to this Delta table from two jobs at once? The answer, on one page",
        "",
        "<!-- Written by `python -m helpers.page.answer_page` from data/: change helpers/page/answer.py, not this file. -->",
        "",
        "To find your own setting, choose it in [answer.html](answer.html): the same answer as a page you query (open "
        "it in a browser). Below, a paragraph per setting, then every cell with its evidence. Every term this "
        "page uses is defined in the [glossary](glossary.md).",
        "",
        "## Your setting",
        "",
        "Find yours; the table below has every cell, with the evidence.",
        "",
        *[p for setting in SETTINGS for p in (setting_paragraph(setting, grid, results), "")],
        "## Every setting, every race",
        "",
        INTRO,
        "",
        *rows,
        "",
        sections_linked(grid),
        "",
    ]
    out += [
        f"[{i}] {note}" + ("  " if i < len(notes) else "") for i, note in enumerate(notes, 1)
    ] + [""]
    out += ["A matrix cell's verdict, from the classes of the pairs it cites:", ""]
    out += [f"{i}. {step}" for i, step in enumerate(RULE, 1)] + [""]
    out += ["## What to do", "", *what_to_do(grid, results), ""]
    from helpers.producers import answer as producers_answer
    from helpers.producers import results as producers_results

    committed = producers_results.load(
        full_runs.PUBLISHED_DIR / producers_results.KIND
    )  # never a run of this machine's
    out += [producers_answer.what_to_build(committed), ""]
    out += [
        "## Version boundaries",
        "",
        "<!-- From helpers/page/boundaries.py, the one home of these releases. -->",
        "",
        "The releases at which what this page says changes, and how the workbook knows:",
        "",
        *boundaries_table(),
        "",
    ]
    out += ["## Where each figure comes from", "", *sources(grid, results, meta)]
    return "\n".join(out) + "\n"


DISAGREEMENTS_TITLE = "Where the engines disagree with Delta's documentation"
DISAGREEMENTS_INTRO = (
    "Delta's documentation has a table of which concurrent writes conflict (under WriteSerializable, "
    "its default isolation level; copied to "
    "[data/delta_write_conflicts.csv](../data/delta_write_conflicts.csv)). The "
    + term("conflict matrix", "conflict-matrix")
    + " (notebook 13) raced every pair in each engine; below, a row per engine of its run: how many of its "
    "pairs that table answers, how many of them came out otherwise, and which. A pair is written `first → later` by the matrix's names of the "
    "operations (`delete_all`: a DELETE of every row; `replace_where`: a replaceWhere; `zorder`: a Z-order; "
    "`…_apart`: the same operation on a partition, or a range of ids, of its own; the glossary's "
    + term("operation names", "operation-names")
    + " has them all). In brackets: for a refusal, the "
    + term("conflict", "conflict")
    + " the engine reported (`ConcurrentAppend`, `ConcurrentDeleteRead`, ...); for an "
    + term("anomaly", "anomaly")
    + ", what the table shows (duplicated rows, resurrected rows, removed twice); for a pair that commits, "
    "`A→B = B→A`: the table equals both serial orders. The answer for your setting is on "
    "[the answer page](answer.md)."
)


def render_disagreements(results: Results | None = None) -> str:
    """The page of the engines' disagreements with Delta's documentation, from the matrix's CSV."""
    results = results or Results.load()
    out = [
        f"# {DISAGREEMENTS_TITLE}",
        "",
        "<!-- Written by `python -m helpers.page.answer_page` from data/conflict_matrix.csv and "
        "data/conflict_matrix_mixed_dynamodb.csv: change "
        "helpers/page/answer_page.py, not this file. -->",
        "",
        DISAGREEMENTS_INTRO,
        "",
        *disagreements(results),
    ]
    return "\n".join(out) + "\n"


def page_command(argv: list[str] | None, *, module: str, page: Path, render_page) -> int:
    """The command of a generated page: write it, or with ``--check`` exit 1 if it differs from a fresh
    render (``module``: the command's name, ``render_page``: a function that returns the page's text)."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}", description=f"Write {page.name} from the measurements."
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the page differs from a fresh render"
    )
    parser.add_argument(
        "--page", type=Path, default=page, help=f"the page (default docs/{page.name})"
    )
    args = parser.parse_args(argv)
    fresh, shown = render_page(), config.shown(args.page)
    if args.check:
        if not args.page.exists() or args.page.read_text(encoding="utf-8") != fresh:
            print(
                f"{shown} is not what `python -m {module}` writes now: run it and commit the page.",
                file=sys.stderr,
            )
            return 1
        print(f"{shown} is current")
        return 0
    args.page.write_text(fresh, encoding="utf-8")
    print(f"wrote {shown} ({len(fresh.encode()) // 1024} KB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Write (or ``--check``) docs/answer.md, then docs/disagreements.md; with ``--page``, that page alone
    as docs/answer.md."""
    argv = list(sys.argv[1:] if argv is None else argv)
    failed = page_command(argv, module="helpers.page.answer_page", page=PAGE, render_page=render)
    if "--page" not in argv:
        failed |= page_command(
            argv,
            module="helpers.page.answer_page",
            page=DISAGREEMENTS_PAGE,
            render_page=render_disagreements,
        )
    return failed


if __name__ == "__main__":
    sys.exit(main())
