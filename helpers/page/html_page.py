"""The answer as a page a user queries: ``docs/answer.html``, one static file (no server, nothing
fetched), rendered from the same rows and data as ``docs/answer.md`` (:mod:`helpers.page.decision`, the
committed conflict matrix in ``data/``, the notebooks' copy cells).

The user chooses an engine, a release, a store and setting, the two jobs' operations and the table's
layout; the page shows the verdict, what the user will see, what to configure (the copy cell of that
setting), what to do, the findings that apply and the evidence, or "not measured" with the reason.
"My setup" shows the whole row as a grid of operation pairs. :func:`cell` is the one resolution of a
(row, first, second, layout) that the page's data holds; ``tests/test_answer_html.py`` drives the page
in Chromium and compares what it shows with it::

    python -m helpers.page.html_page           # writes docs/answer.html
    python -m helpers.page.html_page --check   # exit 1 if docs/answer.html differs from a fresh render
"""

from __future__ import annotations

import html
import json
import re
import sys
from pathlib import Path

from helpers.ground import config, eras
from helpers.page import (
    boundaries,
    decision,
    engine_names,
    findings,
    lost_answer_cells,
    markdown_page,
    notebook_sections,
    setting_paragraphs,
    shown,
    table_rows,
)
from helpers.page.evidence import Row

PAGE = config.ROOT / "docs" / "answer.html"
VACUUM_FORMS = (*shown.OPERATIONS, shown.RETAINED)
"""The grid's operations: the reader's, and VACUUM with the default retention (the retention's choice)."""
LATER = (*VACUUM_FORMS, *shown.RETRIES)
GRIDS = ("shared",) + tuple(
    f"{layout}|{predicate}"
    for layout in shown.LAYOUTS
    if layout != "shared"
    for predicate in shown.PREDICATES
)
"""One grid per layout and (on a layout with parts of their own) what a condition names."""
ENGINES = {
    "deltalake": "deltalake (delta-rs)",
    "Delta Spark": "Delta Spark",
    "both": "Delta Spark and deltalake on one table",
}
COLOURS = {
    decision.SAFE: "#1a7f37",
    decision.REFUSED: "#0a58ca",
    decision.LOSES: "#b42318",
    decision.DUPLICATES: "#b54708",
    decision.WRONG: "#9a3412",
    decision.MISREPORTS: "#6f42c1",
    decision.BY_DESIGN: "#0e6672",
    decision.NOT_MEASURED: "#57606a",
    lost_answer_cells.STOPS: "#7a2e0e",
}
SHORT = {
    decision.SAFE: "safe",
    decision.REFUSED: "retry",
    decision.LOSES: "loses",
    decision.DUPLICATES: "twice",
    decision.WRONG: "wrong",
    decision.MISREPORTS: "told",
    decision.BY_DESIGN: "never",
    decision.NOT_MEASURED: "n/m",
}
"""A verdict in a grid cell (the cell's label says it in full)."""
TODO = {
    decision.SAFE: "Run them at once.",
    decision.REFUSED: "Run them at once if you like: the job refused by a conflict committed nothing; rerun it, "
    "and it starts from a fresh snapshot. A failure that is no conflict (a timeout, a lost answer) may "
    "have committed: look in the table first.",
    decision.LOSES: "Keep them apart: run one after the other.",
    decision.DUPLICATES: "Keep them apart: run one after the other.",
    decision.WRONG: "Keep them apart: run one after the other.",
    decision.MISREPORTS: "Before you rerun a job that was told it failed, look for its write in the table.",
    decision.BY_DESIGN: "Do not run it on this table, beside another job or alone: this setting refuses it by "
    "design, before anything is written, and a rerun is refused again; the sentence above says what to do "
    "instead.",
    decision.NOT_MEASURED: "Nothing here measures it: treat it as unsafe until you have measured it.",
}


def _named_by_boundaries(library: str) -> set[str]:
    """The releases the boundaries of one library name (each first release, and the last before it)."""
    return {v for x in boundaries.BOUNDARIES if x.library == library for v in x.versions}


def _releases() -> dict[str, list[str]]:
    """The releases a user may choose, per library: every release the boundaries, the eras and the findings'
    version table name (each one measured, or the first or last of a behaviour)."""
    deltalake = _named_by_boundaries("deltalake")
    deltalake |= {e.deltalake_version for e in eras.ALL_ERAS.values()} | {"1.6.5"}
    deltalake |= {
        v
        for f in findings.load()
        if f.library == "deltalake"
        for v in (*f.affected, *f.not_affected)
    }
    spark = set(engine_names.SPARK_RELEASES) | _named_by_boundaries("Delta Spark")
    return {
        "deltalake": sorted(deltalake, key=findings.version_key),
        "Delta Spark": sorted(spark, key=findings.version_key),
    }


def _spark_release(row: Row) -> str:
    """The Delta Spark release a row stands for ("" for a row of deltalake alone)."""
    if row.engine == "Delta Spark":
        return row.versions
    return row.versions.split(" + ")[0] if "Spark" in row.engine else ""


UNMEASURED_SPARK = (
    "Delta Spark {release} was not measured here, and no boundary read from Delta's release notes or "
    "source ties it to a measured release ({measured}): measure it before relying on a neighbour's verdict"
)
"""What the page says for a Delta Spark release that no row stands for."""


def _engine_of(row: Row) -> str:
    return "both" if "+" in row.engine and "Spark" in row.engine else row.engine.split(" + ")[0]


def _copy_cells() -> dict[str, tuple[str, str]]:
    """Row key -> (the copy cell's source, its notebook), from the notebooks' ``workbook_copy`` cells."""
    found = {}
    for path in sorted(config.NOTEBOOKS_DIR.glob("*.ipynb")):
        for cell_ in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            for row in cell_["metadata"].get("workbook_copy", {}):
                if "To copy into a job of your own" in "".join(cell_["source"]):
                    found.setdefault(row, ("".join(cell_["source"]), path.name))
    return found


def _markdown_links(text: str) -> str:
    """A setting's text in HTML: code spans and links; relative links as the page sees them (from docs/)."""
    escaped = html.escape(text, quote=False)
    escaped = re.sub(r"`([^`]+)`", r"<code>\1</code>", escaped)
    return re.sub(
        r"\[([^\]]+)\]\(([^)\s]+)\)",
        lambda m: f'<a href="{html.escape(m.group(2))}">{m.group(1)}</a>',
        escaped,
    )


def _grid(row: Row, key: str, results: decision.Results, pack) -> list[int]:
    """One grid of a row (:data:`GRIDS`), every first operation by every later one, as indices of
    distinct cells."""
    layout, _, predicate = key.partition("|")
    choice = shown.Choice(layout, "zero", predicate or "partition")
    return [pack(shown.cell(row, a, b, choice, results)) for a in VACUUM_FORMS for b in LATER]


def _lost(row_key: str) -> dict:
    """A row's "the commit's answer is lost": its verdict, what happens, and its remedy (HTML)."""
    found = lost_answer_cells.cell(row_key)
    remedy = f" Remedy, measured: {found.remedy}." if found.remedy else ""
    return {
        "verdict": found.verdict,
        "html": _markdown_links(f"{found.text}.{remedy}"),
        "rerun": lost_answer_cells.rerun(row_key).replace("`", ""),  # shown as text
    }


def _row_data(row: Row, setting, copy: tuple[str, str]) -> dict:
    """What the page says of a row, but its grids: its setting, what to configure (against a lost
    commit answer too), its copy cell, and its lost-answer cell."""
    source, notebook = copy
    return {
        "key": row.key,
        "engine": _engine_of(row),
        "versions": row.versions,
        "span": list(row.span()),
        "spark": _spark_release(row),
        "store": row.store,
        "setting": row.setting,
        "name": row.name,
        "measuredAs": row.measured_as,
        "configure": _markdown_links(
            " ".join(
                part
                for part in (
                    setting_paragraphs.configure(setting) if setting else row.setting,
                    lost_answer_cells.configure(row.key),
                )
                if part
            )
        ),
        "copy": source,
        "copyFrom": f"../notebooks/{notebook}" if notebook else "",
        "paths": list(row.paths),
        "remedy": row.remedy_how,
        "lost": _lost(row.key),
    }


def page_data(results: decision.Results | None = None) -> dict:
    """Everything the page shows, with each sentence, link and label stored once (``strings``) and each
    distinct cell once (``cells``)."""
    results = results or decision.Results.load()
    strings: dict[str, int] = {}
    cells: dict[tuple[int, ...], int] = {}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    def pack(one: shown.Shown) -> int:
        packed = (
            decision.VERDICTS.index(one.verdict),
            s(one.sentence),
            s(one.evidence),
            s(one.label),
            s(one.measured),
        )
        return cells.setdefault(packed, len(cells))

    settings = {setting.row: setting for setting in setting_paragraphs.SETTINGS}
    copies = _copy_cells()
    table = findings.load()
    rows = [
        {
            **_row_data(row, settings.get(row.key), copies.get(row.key, ("", ""))),
            "grid": {key: _grid(row, key, results, pack) for key in GRIDS},
        }
        for row in table_rows.ROWS
    ]
    return {
        "rows": rows,
        "operations": shown.OPERATIONS,
        "forms": VACUUM_FORMS,
        "later": LATER,
        "words": shown.WORDS,
        "layouts": shown.LAYOUTS,
        "retentions": shown.RETENTIONS,
        "predicates": shown.PREDICATES,
        "engines": ENGINES,
        "releases": _releases(),
        "findings": [
            {
                "html": _markdown_links(findings.finding_text(f.folder)),
                "folder": f.folder,
                "library": f.library,
                "first": f.first,
                "last": f.last,
                "paths": list(f.paths),
            }
            for f in table
        ],
        "jvm": list(findings.JVM_LIBRARIES),
        "spark": boundaries.DELTA_SPARK.version,
        "unmeasuredSpark": UNMEASURED_SPARK.replace(
            "{measured}", " and ".join(engine_names.SPARK_RELEASES)
        ),
        "verdicts": list(decision.VERDICTS),
        "colours": COLOURS,
        "short": SHORT,
        "todo": TODO,
        "strings": list(strings),
        "cells": [list(c) for c in cells],
        "solutionsEdition": notebook_sections.SOLUTIONS_EDITION,
    }


TEMPLATE = Path(__file__).with_name("html_page_template.html")


def render(results: decision.Results | None = None) -> str:
    """The page: the template with the data inlined (``</`` escaped so no string closes the script)."""
    data = json.dumps(page_data(results), ensure_ascii=False, separators=(",", ":")).replace(
        "</", "<\\/"
    )
    return TEMPLATE.read_text(encoding="utf-8").replace("/*DATA*/null", data)


def main(argv: list[str] | None = None) -> int:
    return markdown_page.page_command(
        argv, module="helpers.page.html_page", page=PAGE, render_page=render
    )


if __name__ == "__main__":
    sys.exit(main())
