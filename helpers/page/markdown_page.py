"""The one-page answer rendered: ``docs/answer.md``, in Markdown, from the decision table of
:mod:`helpers.page.decision`.

:func:`render` writes the page from :data:`helpers.page.table_rows.ROWS` and
:data:`~helpers.page.columns.COLUMNS` (each cell resolved by :func:`helpers.page.decision.grid_of`), the
conflict matrix's CSV (:class:`helpers.page.decision.Results`) and the matrix run's facts
(``data/conflict_matrix_meta.json``, :func:`load_meta`): the table with its notes
(:mod:`helpers.page.table`), the rule, what to do (:mod:`helpers.page.advice`), the version
boundaries (:mod:`helpers.page.boundaries`) and the sources.
The same inputs give the same text. :func:`main` is the command (``make matrix`` runs it)::

    python -m helpers.page.markdown_page           # writes docs/answer.md and docs/disagreements.md
    python -m helpers.page.markdown_page --check   # exit 1 if either differs from a fresh render

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
from helpers.page.advice import what_to_do
from helpers.page.decision import Results, grid_of
from helpers.page.engine_names import (
    MIXED_LINK,
    MIXED_LOCK_ENGINES,
    MIXED_LOCK_ENGINES_3,
    MIXED_RUN,
    SPARK,
    SPARK_3,
)
from helpers.page.evidence import Check
from helpers.page.matrix_verdicts import RULE
from helpers.page.setting_paragraphs import SETTINGS, setting_paragraph, term
from helpers.page.table import INTRO, sections_linked, table
from helpers.runs import full_runs

MATRIX_META = config.DATA_DIR / "conflict_matrix_meta.json"
PAGE = config.ROOT / "docs" / "answer.md"
DISAGREEMENTS_PAGE = config.ROOT / "docs" / "disagreements.md"


def load_meta(path: Path = MATRIX_META) -> dict:
    """The matrix run's facts kept beside the CSV: its date, engines, pairs per engine, the docs read."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


DISAGREEMENTS = {
    "needless failure": "refused where the docs say the two cannot conflict",
    "anomaly": "anomalies where the docs say the two conflict",
    "committed": "committed where the docs say the two conflict",
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
        f"- **{MIXED_RUN[0].upper() + MIXED_RUN[1:]}**: Delta Spark {SPARK}, and in a run of its own {SPARK_3}, "
        "through its DynamoDB log store and "
        "deltalake through its DynamoDB lock (`AWS_S3_LOCKING_PROVIDER=dynamodb`) on one S3 table, `s3a://` URIs, one "
        "lock table, every pair of the columns above but the rerun and the backfills, in both orders (engines "
        + ", ".join(
            f"`{e}` ({results.versions([e])})" for e in (*MIXED_LOCK_ENGINES, *MIXED_LOCK_ENGINES_3)
        )
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
        "<!-- Written by `python -m helpers.page.markdown_page` from data/: change helpers/page/table_rows.py, not this file. -->",
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
        "<!-- Written by `python -m helpers.page.markdown_page` from data/conflict_matrix.csv and "
        "data/conflict_matrix_mixed_dynamodb.csv: change "
        "helpers/page/markdown_page.py, not this file. -->",
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
    failed = page_command(argv, module="helpers.page.markdown_page", page=PAGE, render_page=render)
    if "--page" not in argv:
        failed |= page_command(
            argv,
            module="helpers.page.markdown_page",
            page=DISAGREEMENTS_PAGE,
            render_page=render_disagreements,
        )
    return failed


if __name__ == "__main__":
    sys.exit(main())
