"""The answer as a page a user queries: ``docs/answer.html``, one static file (no server, nothing
fetched), rendered from the same rows and data as ``docs/answer.md`` (:mod:`helpers.page.answer`, the
committed conflict matrix in ``data/``, the notebooks' copy cells).

The user chooses an engine, a release, a store and setting, the two jobs' operations and the table's
layout; the page shows the verdict, what the user will see, what to configure (the copy cell of that
setting), what to do, the findings that apply and the evidence, or "not measured" with the reason.
"My setup" shows the whole row as a grid of operation pairs. :func:`cell` is the one resolution of a
(row, first, second, layout) that the page's data holds; ``tests/test_answer_html.py`` drives the page
in Chromium and compares what it shows with it::

    python -m helpers.page.answer_html           # writes docs/answer.html
    python -m helpers.page.answer_html --check   # exit 1 if docs/answer.html differs from a fresh render
"""

from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers.ground import config, eras
from helpers.matrix.operations import MATRIX_OPS
from helpers.page import (
    answer,
    answer_columns,
    answer_engines,
    answer_page,
    answer_rows,
    answer_sections,
    answer_settings,
    boundaries,
)
from helpers.page.answer_evidence import Check, Row, Unmeasured
from helpers.page.answer_matrix import OP_WORDS, UNNAMED_MERGE, met

PAGE = config.ROOT / "docs" / "answer.html"
OPERATIONS = MATRIX_OPS  # the operations the matrix races, in its order
LATER = (*OPERATIONS, "retry")
WORDS = {
    **OP_WORDS,
    "add_column": "ADD COLUMN",
    "set_property": "a table property change",
    "retry": "rerun of the first job's append",
    "delete": "DELETE with a predicate",
}
WORDS.update(
    {second: f"{WORDS[first]} on a partition of its own" for first, second in answer_columns.APART}
)
WORDS["merge_on_id_apart"] = "MERGE on a partition of its own, its condition naming only the key"
LAYOUTS = {
    "shared": "both jobs touch the same files",
    "partitions": "each job on a partition of its own",
}
ENGINES = {
    "deltalake": "deltalake (delta-rs)",
    "Delta Spark": "Delta Spark",
    "both": "Delta Spark and deltalake on one table",
}
COLOURS = {
    answer.SAFE: "#1a7f37",
    answer.REFUSED: "#0a58ca",
    answer.LOSES: "#b42318",
    answer.DUPLICATES: "#b54708",
    answer.WRONG: "#9a3412",
    answer.MISREPORTS: "#6f42c1",
    answer.BY_DESIGN: "#0e6672",
    answer.NOT_MEASURED: "#57606a",
}
SHORT = {
    answer.SAFE: "safe",
    answer.REFUSED: "retry",
    answer.LOSES: "loses",
    answer.DUPLICATES: "twice",
    answer.WRONG: "wrong",
    answer.MISREPORTS: "told",
    answer.BY_DESIGN: "never",
    answer.NOT_MEASURED: "n/m",
}
"""A verdict in a grid cell (the cell's label says it in full)."""
TODO = {
    answer.SAFE: "Run them at once.",
    answer.REFUSED: "Run them at once if you like: the job that fails committed nothing; rerun it.",
    answer.LOSES: "Keep them apart: run one after the other.",
    answer.DUPLICATES: "Keep them apart: run one after the other.",
    answer.WRONG: "Keep them apart: run one after the other.",
    answer.MISREPORTS: "Before you rerun a job that was told it failed, look for its write in the table.",
    answer.BY_DESIGN: "Do not run it on this table, beside another job or alone: this setting refuses it by "
    "design, before anything is written, and a rerun is refused again; the sentence above says what to do "
    "instead.",
    answer.NOT_MEASURED: "Nothing here measures it: treat it as unsafe until you have measured it.",
}
KIND_WORDS = {
    "duplicated rows": "rows end up in the table twice",
    "resurrected rows": "rows that were removed come back",
    "removed twice": "the log removes a file twice",
    "lost update": "a committed write's rows are lost",
    "broken log": "the table can no longer be read",
}


@dataclass(frozen=True)
class Shown:
    """What the page shows for one (row, first, second, layout): the verdict, a sentence, the evidence
    (a link into the notebooks and its label), the releases measured and, for a verdict the data does
    not give, the reason."""

    verdict: str
    sentence: str
    evidence: str = ""
    label: str = ""
    measured: str = ""


def _sentence(rows: list[dict], verdict: str) -> str:
    if verdict == answer.NOT_MEASURED:
        return ""
    worst = [r for r in rows if answer.verdict_of([r]) == verdict] or rows
    row = worst[0]
    kinds = [
        k
        for r in worst
        for text in (r["anomaly_kind"], r["retry_after_reload_kind"])
        for k in text.split(" + ")
        if k
    ]
    if row["second"] == "retry" or row["first"] == "append_txn":
        return (
            "the rerun commits again, and the append's rows are in the table twice"
            if verdict == answer.DUPLICATES
            else "the rerun fails loudly from the old snapshot, and a rerun from a fresh snapshot is skipped"
            if verdict == answer.REFUSED
            else "the rerun appends nothing: the table holds the append once"
        )
    if verdict == answer.REFUSED:
        error = row["error_class"] or "an error"
        return f"the later job ({WORDS.get(row['second'], row['second'])}) fails with {error} and commits nothing"
    if verdict == answer.SAFE:
        return met(row["first"], row["second"], row["matched"])
    return (
        "both commit, and " + ", and ".join(dict.fromkeys(KIND_WORDS.get(k, k) for k in kinds))
        if kinds
        else verdict
    )


def _checked(check: Check) -> Shown:
    sentence = {
        answer.SAFE: "both commit, and nothing is lost",
        answer.LOSES: "rows are lost, and every job is told it committed",
        answer.MISREPORTS: "nothing is lost, but a job can be told its write failed although it is in the table",
        answer.BY_DESIGN: f"{_listed(check.refuses) or 'the operation'} "
        f"{'is' if len(check.refuses) == 1 else 'are'} refused by design on this table",
    }
    text = sentence.get(check.verdict, check.check) + (f" ({check.note})" if check.note else "")
    return Shown(check.verdict, text, _link(check.section), check.section.label, check.versions)


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def refused_by_design(row: Row, *operations: str) -> Check | None:
    """The row's check that refuses one of these operations (the matrix's names) by design, if any: a
    pair with such an operation is no race on this setting, whatever the other job runs."""
    return next(
        (
            check
            for check in row.cells.values()
            if isinstance(check, Check)
            and check.verdict == answer.BY_DESIGN
            and any(WORDS.get(op) in check.refuses for op in operations)
        ),
        None,
    )


def _link(section: answer_sections.Section | None) -> str:
    """The section in the learner's edition, at its heading's anchor; the page links the same section
    in the solutions edition beside it."""
    return section.target if section else ""


def cell(row: Row, first: str, second: str, layout: str, results: answer.Results) -> Shown:
    """The one resolution of a race for the page: the row's loss, its checked or unmeasured cell, or
    the conflict matrix's rows of its engines (with ``layout="partitions"``, their partitioned variants)."""
    if row.loses:
        return _checked(row.loses)
    barred = refused_by_design(row, first, second)
    if barred:
        return _checked(barred)
    pair = (first, second)
    column = next((c for c in answer_columns.COLUMNS if pair in c.pairs), None)
    if second == "retry":
        column = next(c for c in answer_columns.COLUMNS if c.key == "retry")
        pair = ("append", "retry")
    found = row.cells.get(column.key) if column else None
    if isinstance(found, Check) and (layout == "shared" or column.key == "other"):
        return _checked(found)
    if isinstance(found, Unmeasured):
        return Shown(answer.NOT_MEASURED, found.note or "nothing here races it for this setting")
    engines = results.engines(row.engines)
    if not engines:
        why = next(
            (c.note for c in row.cells.values() if isinstance(c, Unmeasured) and c.note),
            "",
        )
        return Shown(answer.NOT_MEASURED, why or "nothing here races it for this setting")
    names = (
        [f"{e}+partitions" for e in engines if not e.endswith("@s3")]
        if layout == "partitions"
        else engines
    )
    apart = (
        next((p for p in answer_columns.APART if p[0] == first == second), None)
        if layout == "partitions"
        else None
    )
    if apart:  # one operation from two jobs on partitions of their own: both interleavings (a job cannot choose)
        return _backfill(names, apart, results)
    rows = [r for e in names if (r := results.by_pair.get((e, *pair))) is not None]
    if not rows and answer_engines.mixed_run(tuple(engines)):
        return Shown(
            answer.NOT_MEASURED, "the mixed run (`make matrix-mixed`) does not race this pair"
        )
    if not rows:
        return Shown(
            answer.NOT_MEASURED,
            "the conflict matrix does not race this pair on a partitioned table for this setting"
            if layout == "partitions"
            else "the conflict matrix does not race this pair for this setting",
        )
    verdict = answer.verdict_of(rows)
    engines = sorted({r["engine"] for r in rows})
    # the mixed run on S3: its CSV is the evidence, no notebook section
    if answer_engines.mixed_run(tuple(engines)):
        by_order = {e: mine for e in engines if (mine := [r for r in rows if r["engine"] == e])}
        verdicts = {e: answer.verdict_of(mine) for e, mine in by_order.items()}
        sentence = (  # each order in its own words where the two orders differ
            "; ".join(
                f"{answer_engines.MIXED_ORDERS[e]}: {_sentence(mine, verdicts[e])}"
                for e, mine in by_order.items()
            )
            if len(set(verdicts.values())) > 1
            else _sentence(rows, verdict)
        )
        return Shown(
            verdict,
            sentence,
            "../" + answer_engines.MIXED_CSV.relative_to(config.ROOT).as_posix(),
            "make matrix-mixed",
            results.versions(engines),
        )
    section = column.section if column else answer_sections.S13_5
    return Shown(
        verdict,
        _sentence(rows, verdict),
        _link(section),
        section.label,
        results.versions(engines),
    )


def _interleaved(names: list[str], pair: tuple[str, str], results: answer.Results) -> list[dict]:
    """The rows of a pair for these layout variants and their other interleaving (``<name>+b-files-…``)."""
    return [
        r
        for e in names
        for variant in (e, *(f"{e}+{k}" for k in ("b-files-first", "b-files-after")))
        if (r := results.by_pair.get((variant, *pair))) is not None
    ]


def _backfill(names: list[str], pair: tuple[str, str], results: answer.Results) -> Shown:
    """The same operation from two jobs, each on a partition of its own named in its condition; for a
    MERGE, what comes of one whose condition does not name the partition too."""
    rows = _interleaved(names, pair, results)
    if not rows:
        return Shown(
            answer.NOT_MEASURED,
            "the conflict matrix does not race two jobs on partitions of their own "
            "for this setting",
        )
    verdict = answer.verdict_of(rows)
    each = (
        "each job appending to a partition of its own"
        if pair[0] == "append"
        else "each job on a partition of its own named in its condition"
    )
    sentence = f"{each}: {_sentence(rows, verdict)}"
    if pair[0] == "merge":
        unnamed = _interleaved(names, UNNAMED_MERGE[1], results)
        if unnamed:
            other = answer.verdict_of(unnamed)
            sentence += f"; {UNNAMED_MERGE[0]}, {other}: {_sentence(unnamed, other)}"
    engines = sorted({r["engine"] for r in rows})
    return Shown(
        verdict,
        sentence,
        _link(answer_sections.S13_6),
        answer_sections.S13_6.label,
        results.versions(engines),
    )


def _releases() -> dict[str, list[str]]:
    """The releases a user may choose, per library: every release the boundaries and eras name."""

    def key(v):
        return [int(p) for p in v.split(".")]

    deltalake = {
        v
        for x in boundaries.BOUNDARIES
        if x.library == "deltalake"
        for v in (x.version, x.last_before)
        if v
    }
    deltalake |= {e.deltalake_version for e in eras.ALL_ERAS.values()} | {"1.6.5"}
    return {
        "deltalake": sorted(deltalake, key=key),
        "Delta Spark": [boundaries.DELTA_SPARK.version],
    }


def _span(versions: str) -> list[str]:
    """A row's deltalake releases as ``[low, high]`` (inclusive; ``""``: no bound)."""
    part = versions.split(" + ")[-1]
    if part.startswith("up to "):
        return ["", part.removeprefix("up to ")]
    low, _, high = part.partition("–")
    return [low, high or low]


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


def page_data(results: answer.Results | None = None) -> dict:
    """Everything the page shows, with each sentence, link and label stored once (``strings``)."""
    results = results or answer.Results.load()
    strings: dict[str, int] = {}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    settings = {setting.row: setting for setting in answer_settings.SETTINGS}
    copies = _copy_cells()
    rows = []
    for row in answer_rows.ROWS:
        setting = settings.get(row.key)
        source, notebook = copies.get(row.key, ("", ""))
        grid = {}
        for layout in LAYOUTS:
            grid[layout] = [
                [list(_pack(cell(row, a, b, layout, results), s)) for b in LATER]
                for a in OPERATIONS
            ]
        rows.append(
            {
                "key": row.key,
                "engine": _engine_of(row),
                "versions": row.versions,
                "span": _span(row.versions),
                "store": row.store,
                "setting": row.setting,
                "name": row.name,
                "configure": _markdown_links(
                    answer_settings.configure(setting) if setting else row.setting
                ),
                "copy": source,
                "copyFrom": f"../notebooks/{notebook}" if notebook else "",
                "findings": [_markdown_links(f) for f in setting.findings] if setting else [],
                "remedy": row.remedy_how,
                "grid": grid,
            }
        )
    return {
        "rows": rows,
        "operations": OPERATIONS,
        "later": LATER,
        "words": WORDS,
        "layouts": LAYOUTS,
        "engines": ENGINES,
        "releases": _releases(),
        "verdicts": list(answer.VERDICTS),
        "colours": COLOURS,
        "short": SHORT,
        "todo": TODO,
        "strings": list(strings),
        "solutionsEdition": answer_sections.SOLUTIONS_EDITION,
    }


def _pack(shown: Shown, s) -> tuple[int, ...]:
    return (
        answer.VERDICTS.index(shown.verdict),
        s(shown.sentence),
        s(shown.evidence),
        s(shown.label),
        s(shown.measured),
    )


TEMPLATE = Path(__file__).with_name("answer_html_template.html")


def render(results: answer.Results | None = None) -> str:
    """The page: the template with the data inlined (``</`` escaped so no string closes the script)."""
    data = json.dumps(page_data(results), ensure_ascii=False, separators=(",", ":")).replace(
        "</", "<\\/"
    )
    return TEMPLATE.read_text(encoding="utf-8").replace("/*DATA*/null", data)


def main(argv: list[str] | None = None) -> int:
    return answer_page.page_command(
        argv, module="helpers.page.answer_html", page=PAGE, render_page=render
    )


if __name__ == "__main__":
    sys.exit(main())
