"""docs/answer.md: current, every cell true to what it cites, every version from the one home.

Each property is a checker that raises AssertionError naming what is wrong; each test runs it on
the committed inputs (it must pass) and on a crafted input (it must fail), so no check here passes
whatever the page says:

* the page is what ``python -m helpers.page.markdown_page`` writes now;
* every cell decided by the conflict matrix has the verdict that data/conflict_matrix.csv gives by
  the stated rule, recomputed here (not read back from helpers.page.decision), and the versions it ran;
* every notebook check a cell cites is a check of that notebook's code, and every section the page
  links is a heading of its notebook;
* every version the page names is in helpers/page/boundaries.py or helpers/ground/eras.py.
"""

from __future__ import annotations

import csv
import dataclasses
import fnmatch
import json
import re

import pytest

from helpers.ground import config, eras
from helpers.jupyter import workbook
from helpers.page import (
    advice,
    boundaries,
    columns,
    decision,
    deltalake_rows,
    engine_names,
    evidence,
    markdown_page,
    matrix_verdicts,
    notebook_sections,
    setting_paragraphs,
    table,
    table_rows,
)

VERSION = re.compile(r"(?<![\d.])\d+(?:\.\d+)+")
CHECK_NAME = re.compile(r"\bcheck\.(?:equal|holds)\(\s*f?\"((?:[^\"\\]|\\.)*)\"")


def _page() -> str:
    return markdown_page.PAGE.read_text(encoding="utf-8")


def _matrix_rows() -> list[dict]:
    """The conflict matrix's rows, then the mixed run's (the page reads both)."""
    rows = []
    for path in (decision.MATRIX_CSV, engine_names.MIXED_CSV):
        with path.open(newline="", encoding="utf-8") as handle:
            rows += list(csv.DictReader(handle))
    return rows


# (i) the page is current --------------------------------------------------------------------------


def assert_page_current(page: str) -> None:
    assert page == markdown_page.render(), (
        "docs/answer.md differs from a fresh render: run `python -m helpers.page.markdown_page`"
    )


def test_the_committed_page_is_a_fresh_render():
    assert_page_current(_page())


def test_a_page_edited_by_hand_is_caught(tmp_path):
    edited = _page().replace("**duplicates data**", "**safe**", 1)
    with pytest.raises(AssertionError, match="differs from a fresh render"):
        assert_page_current(edited)
    (tmp_path / "answer.md").write_text(edited, encoding="utf-8")
    assert markdown_page.main(["--check", "--page", str(tmp_path / "answer.md")]) == 1
    (tmp_path / "answer.md").write_text(_page(), encoding="utf-8")
    assert markdown_page.main(["--check", "--page", str(tmp_path / "answer.md")]) == 0


# (ii) matrix cells follow from the CSV by the rule -----------------------------------------------


def expected_verdict(rows: list[dict | None]) -> str:
    """The rule, written out again: missing/unavailable/error → not measured; anomaly → by its kinds
    (lost update or broken log: loses data; duplicated rows: duplicates data; else wrong result);
    else any refused → refused (retry); else safe. A retry counts its run after reloading too."""
    if not rows or any(row is None for row in rows):
        return "not measured"
    classes = {row["outcome"] for row in rows} | {row["retry_after_reload"] for row in rows} - {""}
    kinds = {
        kind
        for row in rows
        for text in (row["anomaly_kind"], row["retry_after_reload_kind"])
        for kind in text.split(" + ")
    } - {""}
    if classes & {"not available", "error"}:
        return "not measured"
    if "anomaly" in classes:
        if kinds & {"lost update", "broken log"}:
            return "loses data"
        return "duplicates data" if "duplicated rows" in kinds else "wrong result"
    return "refused (retry)" if "refused" in classes else "safe"


SECTION_LABEL = re.compile(r"\d\d (?:§\d+|appendix [A-Z])$")


def table_cells(page: str) -> dict[tuple[str, str], list[str]]:
    """The page's table, by (row key, column key): ``[verdict, releases, section, how]``. A cell names
    only the evidence that differs from its row's *measured* column (releases · section · how), so each
    part it leaves out is the row's."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| engine |"))
    body = lines[start + 2 : start + 2 + len(table_rows.ROWS)]
    cells = {}
    for row, line in zip(table_rows.ROWS, body, strict=True):
        parts = [part.strip() for part in line.strip()[1:-1].split(" | ")]
        assert parts[:4] == [row.engine, row.versions, row.store, row.setting], (
            f"rows out of order at {parts[:4]}"
        )
        shared = _evidence(parts[4].split(" · ") if parts[4] != "none" else [])
        for column, text in zip(columns.COLUMNS, parts[5:-1], strict=True):  # then the lost answer
            verdict, *own = text.split(" · ")
            mine = _evidence(own)
            cells[row.key, column.key] = [
                verdict,
                *(m if m is not None else s for m, s in zip(mine, shared)),
            ]
    return cells


def _evidence(parts: list[str]) -> list[str | None]:
    """``[releases, section, how]`` from a cell's or a row's evidence parts (None: not given)."""
    found: list[str | None] = [None, None, None]
    for part in parts:
        part = re.sub(r"[;\[].*$", "", part).strip()  # a condition or a note's mark after it
        if part in table.HOW:
            found[2] = part
        elif SECTION_LABEL.match(part):
            found[1] = part
        elif part:
            found[0] = part
    return found


def _verdict(parts: list[str]) -> str:
    found = re.match(r"\*\*(.+?)\*\*", parts[0])
    return found.group(1) if found else parts[0].split(" [")[0]


def assert_matrix_cells_follow(page: str, matrix_rows: list[dict]) -> None:
    cells = table_cells(page)
    names = list(dict.fromkeys(row["engine"] for row in matrix_rows))
    by_pair = {(row["engine"], row["first"], row["second"]): row for row in matrix_rows}
    checked = 0
    for row in table_rows.ROWS:
        for column in columns.COLUMNS:
            cited = decision.evidence(row, column)
            if not isinstance(cited, evidence.MatrixCells):
                continue
            present = [
                n
                for n in names
                if any(fnmatch.fnmatchcase(n, pattern) for pattern in cited.engines)
            ]
            rows = [
                by_pair.get((n, first, second))
                for n in present
                for first, second in cited.pairs
                if (n, first, second) in by_pair or not n.endswith("@s3")
            ]  # an S3 confirmation may be a sample
            rows += [  # the other interleaving: a cell stands under the worst of both
                by_pair[variant, first, second]
                for n in present
                if not n.endswith("@s3")
                for point in ("b-files-first", "b-files-after")
                for first, second in cited.pairs
                if ((variant := f"{n}+{point}"), first, second) in by_pair
            ]
            parts, checked = cells[row.key, column.key], checked + 1
            where = f"{row.key} / {column.title}"
            said, due = _verdict(parts), expected_verdict(rows)
            assert said == due, f"{where}: the page says {said!r}, the CSV {due!r}"
            if present:
                ran = sorted(
                    {
                        decision.short_version(r["engine_version"])
                        for r in matrix_rows
                        if r["engine"] in present
                    }
                )
                assert sorted(parts[1].split(", ")) == ran, (
                    f"{where}: the page names {parts[1]!r}, the CSV ran {ran}"
                )
    assert checked, "no cell cites the matrix"


def test_every_matrix_cell_follows_from_the_csv_by_the_rule():
    assert_matrix_cells_follow(_page(), _matrix_rows())


def _flipped(rows: list[dict], engine: str, first: str, second: str, **values) -> list[dict]:
    target = (engine, first, second)
    assert any((r["engine"], r["first"], r["second"]) == target for r in rows), target
    return [
        {**r, **values} if (r["engine"], r["first"], r["second"]) == target else r for r in rows
    ]


@pytest.mark.parametrize(
    "flip",
    [
        (
            "deltalake-1.6.3",
            "optimize",
            "optimize",
            {"outcome": "anomaly", "anomaly_kind": "duplicated rows"},
        ),
        (
            "deltalake-1.6.6",
            "optimize",
            "append",
            {"outcome": "refused", "conflict": "ConcurrentDeleteRead"},
        ),
        (
            "deltalake-0.22.3",
            "overwrite",
            "append",
            {"outcome": "refused", "conflict": "ConcurrentDeleteRead"},
        ),
        (
            "deltalake-1.5.1",
            "delete",
            "append",
            {"outcome": "anomaly", "anomaly_kind": "lost update"},
        ),
    ],
    ids=lambda flip: f"{flip[0]}:{flip[1]}-{flip[2]}" if isinstance(flip, tuple) else None,
)
def test_a_cell_the_csv_contradicts_is_caught(flip):
    engine, first, second, values = flip
    with pytest.raises(AssertionError, match="the page says"):
        assert_matrix_cells_follow(
            _page(), _flipped(_matrix_rows(), engine, first, second, **values)
        )


def test_a_rows_measured_releases_the_csv_contradicts_is_caught():
    """A row states its releases once (its *measured* column); every cell that names none is held to it."""
    page = _page().replace(
        "| 1.6.6 · 13 §5 · conflict matrix, on S3 too |",
        "| 1.6.3 · 13 §5 · conflict matrix, on S3 too |",
        1,
    )
    assert page != _page()
    with pytest.raises(
        AssertionError, match=r"the page names '1\.6\.3', the CSV ran \['1\.6\.6'\]"
    ):
        assert_matrix_cells_follow(page, _matrix_rows())


def test_an_engine_missing_from_the_csv_is_caught():
    without = [r for r in _matrix_rows() if not r["engine"].startswith("deltalake-1.6.6")]
    with pytest.raises(AssertionError, match="the CSV 'not measured'"):
        assert_matrix_cells_follow(_page(), without)


# (iii) cited checks and sections exist ------------------------------------------------------------


def _notebook(name: str) -> dict:
    return json.loads((config.NOTEBOOKS_DIR / name).read_text(encoding="utf-8"))


def check_names(notebook: dict) -> set[str]:
    """Every ``check.equal``/``check.holds`` name in the notebook's code, as its source spells it."""
    return {
        name
        for cell in notebook["cells"]
        if cell["cell_type"] == "code"
        for name in CHECK_NAME.findall("".join(cell["source"]))
    }


def has_section(notebook: dict, section: notebook_sections.Section) -> bool:
    """A heading ``## 5. Title``, with or without its anchor (``<a id="section-5"></a>``) after it:
    tests/test_references.py checks the anchor the page links."""
    heading = re.compile(
        rf"^#{{2,4}} {re.escape(section.heading)}(?: <a id=\"{re.escape(section.anchor)}\"></a>)?$",
        re.M,
    )
    return any(
        heading.search("".join(c["source"]))
        for c in notebook["cells"]
        if c["cell_type"] == "markdown"
    )


def cited_checks() -> list[evidence.Check]:
    found = [
        decision.evidence(row, column) for row in table_rows.ROWS for column in columns.COLUMNS
    ]
    return list(dict.fromkeys(e for e in found if isinstance(e, evidence.Check)))


def linked_sections() -> list[notebook_sections.Section]:
    cells = decision.grid_of(decision.Results.load()).values()
    return list(dict.fromkeys(c.section for c in cells if c.section))


def assert_checks_exist(
    checks: list[evidence.Check], sections: list[notebook_sections.Section]
) -> None:
    for check in checks:
        names = check_names(_notebook(check.section.notebook))
        assert check.check in names, f"{check.section.notebook} has no check named {check.check!r}"
    for section in sections:
        assert has_section(_notebook(section.notebook), section), (
            f"{section.notebook} has no section {section.heading}"
        )


def test_every_cited_check_and_linked_section_exists():
    checks, sections = cited_checks(), linked_sections()
    assert len(checks) >= 10 and {c.section for c in checks} <= set(sections)
    assert_checks_exist(checks, sections)


def test_a_check_or_section_that_is_not_there_is_caught():
    real = cited_checks()[0]
    with pytest.raises(AssertionError, match="has no check named"):
        assert_checks_exist([dataclasses.replace(real, check=real.check + " (renamed)")], [])
    with pytest.raises(AssertionError, match="has no section"):
        assert_checks_exist([], [dataclasses.replace(real.section, title="A section nobody wrote")])


# (iv) versions come from the one home -------------------------------------------------------------


def known_versions() -> set[str]:
    texts = [" ".join(dataclasses.astuple(boundary)) for boundary in boundaries.BOUNDARIES]
    found = {version for text in texts for version in VERSION.findall(text)}
    spark = {v for s in eras.SPARK_ERAS.values() for v in (s.delta_version, s.spark_line)}
    return found | {era.deltalake_version for era in eras.ALL_ERAS.values()} | spark


def assert_versions_known(page: str) -> None:
    known = known_versions()
    prefixes = {".".join(v.split(".")[:n]) for v in known for n in range(2, len(v.split(".")) + 1)}
    unknown = sorted(set(VERSION.findall(page)) - prefixes)
    assert not unknown, (
        f"versions named in the page but in neither helpers/page/boundaries.py nor helpers/ground/eras.py: {unknown}"
    )


def without_measured_run(page: str) -> str:
    """The page without its section of the many-producers run: figures measured, and the versions
    that run used (its meta), not release boundaries."""
    from helpers.producers import answer as producers_answer

    start = page.index(producers_answer.HEADING)
    end = page.index("\n## ", start + 1)
    return page[:start] + page[end:]


def test_every_version_on_the_page_comes_from_boundaries_or_eras():
    assert {"0.23.0", "1.6.1", "1.6.4", "1.3.0", "4.4.1"} <= set(VERSION.findall(_page()))
    assert_versions_known(without_measured_run(_page()))


def test_delta_4_4_1_is_known_from_its_boundary_alone(monkeypatch):
    """The catalog-managed row's notes name Delta 4.4.1 (its safeguards, not obtainable here): the page
    may, because helpers/page/boundaries.py has it; without that boundary the same page is caught."""
    known = boundaries.CATALOG_MANAGED_MAINTENANCE
    assert (known.library, known.version, known.last_before) == ("Delta Spark", "4.4.1", "4.4.0")
    assert "not obtainable here" in known.change and "delta-io/delta#7603" in known.known_from
    notes = [decision.grid_of(decision.Results.load())["spark-catalog", "optimize"].note]
    assert "4.4.1" in notes[0] and "4.4.1" in _page()
    monkeypatch.setattr(
        boundaries,
        "BOUNDARIES",
        tuple(x for x in boundaries.BOUNDARIES if x is not known),
    )
    with pytest.raises(AssertionError, match=r"\['4\.4\.1'\]"):
        assert_versions_known(without_measured_run(_page()))


def test_a_version_from_nowhere_is_caught():
    with pytest.raises(AssertionError, match=r"\['1\.6\.7'\]"):
        assert_versions_known(
            without_measured_run(_page()) + "\nWith deltalake 1.6.7, run OPTIMIZE from one job.\n"
        )


# the rule and the data itself ---------------------------------------------------------------------


def test_every_cell_has_a_known_verdict_and_a_loss_row_loses_everywhere():
    grid = decision.grid_of(decision.Results.load())
    assert {cell.verdict for cell in grid.values()} <= set(decision.VERDICTS)
    for row in table_rows.ROWS:
        if row.loses:
            verdicts = {grid[row.key, c.key].verdict for c in columns.COLUMNS}
            assert verdicts == {decision.LOSES}, row.key


def test_the_module_rule_agrees_with_the_rule_written_out_here():
    rows = _matrix_rows()
    by_engine_pair = {}
    for row in rows:
        by_engine_pair.setdefault((row["first"], row["second"]), []).append(row)
    for pair_rows in by_engine_pair.values():
        for row in pair_rows:
            assert decision.verdict_of([row]) == expected_verdict([row]), (
                row["engine"],
                row["first"],
                row["second"],
            )
    assert decision.verdict_of([]) == expected_verdict([]) == "not measured"


NOTEBOOK_LINK = re.compile(r"\[([^\]]+)\]\(\.\./(student|notebooks)/(\d\d_\w+\.ipynb)(#[\w-]+)?\)")


def notebook_link_problems(page: str) -> list[str]:
    """A link into the notebooks opens at a section's anchor (``13 §5`` at ``#section-5``, ``12 appendix
    C`` at ``#appendix-c``) and one into ``notebooks/`` says it is the solutions edition."""
    problems, label = [], ""
    for text, edition, notebook, anchor in NOTEBOOK_LINK.findall(page):
        if edition == "notebooks" and text != notebook_sections.SOLUTIONS_EDITION:
            problems.append(f"{text} links the solutions edition without saying so")
        if edition == "student":
            label = text
        found = re.fullmatch(r"\d\d (?:§(\d+)|appendix ([A-Z]))", label)
        want = (
            f"#section-{found.group(1)}"
            if found and found.group(1)
            else f"#appendix-{found.group(2).lower()}"
            if found
            else None
        )
        if want is None or anchor != want:
            problems.append(
                f"{label} ({edition}/{notebook}) opens at {anchor or 'the top'}, not {want}"
            )
    return problems


def test_every_notebook_link_opens_its_section_and_names_its_edition():
    page = _page()
    assert len(NOTEBOOK_LINK.findall(page)) > 50
    assert notebook_link_problems(page) == []


def test_a_link_to_the_top_of_a_notebook_or_an_unnamed_edition_is_found():
    edition = notebook_sections.SOLUTIONS_EDITION
    page = (
        f"[13 §5](../student/13_conflict_matrix.ipynb#section-5) "
        f"([{edition}](../notebooks/13_conflict_matrix.ipynb)); "
        f"[12 appendix C](../student/12_torture.ipynb#appendix-c) "
        f"([with solutions](../notebooks/12_torture.ipynb#appendix-c)); "
        f"[09 §3](../student/09_spark_multi_cluster_s3.ipynb#section-2)"
    )
    assert notebook_link_problems(page) == [
        "13 §5 (notebooks/13_conflict_matrix.ipynb) opens at the top, not #section-5",
        "with solutions links the solutions edition without saying so",
        "09 §3 (student/09_spark_multi_cluster_s3.ipynb) opens at #section-2, not #section-3",
    ]


def test_the_page_is_linked_from_the_readme_the_guide_and_the_last_notebook():
    readme = (config.ROOT / "README.md").read_text(encoding="utf-8")
    assert "[docs/answer.md](docs/answer.md)" in "\n".join(readme.splitlines()[:12]), (
        "README links the page near its top"
    )
    assert (
        "(answer.md)"
        in (config.ROOT / "docs" / "facilitator.md")
        .read_text(encoding="utf-8")
        .split("wrap-up", 1)[1][:300]
    )
    for name in (workbook.notebooks()[-1].name,):  # the last notebook's "Next" is the page
        cells = _notebook(name)["cells"]
        optional = next(
            (
                i
                for i, c in enumerate(cells)
                if re.match(r"## (?:Appendix|How this was measured)", "".join(c["source"]))
            ),
            len(cells),
        )
        last = cells[
            optional - 1
        ]  # the main path's last cell: the optional parts follow it, if any
        assert last["cell_type"] == "markdown" and "(../docs/answer.md)" in "".join(
            last["source"]
        ), name


# (v) the setting paragraphs agree with the table and with themselves ---------------------------

RERUNS = "|".join(re.escape(h) for h in setting_paragraphs.RERUN_HEADINGS)
NOT_ALLOWED = "Not allowed on this table"
HEADINGS = re.compile(
    rf"\*\*(May run at once|{RERUNS}|Keep apart|{NOT_ALLOWED}):\*\* (.*?)(?= \*\*| Not measured here:| Shown in |$)"
)
BRACKETS = re.compile(r"\([^()]*(?:\([^()]*(?:\([^()]*\)[^()]*)*\)[^()]*)*\)")
"""A bracket, with up to two levels of brackets inside it: a race's conditions or note."""
FINDING_OF = {"deltalake-two-optimizes-both-commit": decision.DUPLICATES}
"""A finding a setting must name wherever its row's OPTIMIZE column has this verdict."""


def setting_problems(paragraphs: dict[str, str], grid: dict) -> list[str]:
    """Each setting's title names its row's releases; each race stands under one heading; the findings
    that apply are named; the retry advice quotes notebook 11's committed run."""
    problems = []
    for setting in setting_paragraphs.SETTINGS:
        row = next(r for r in table_rows.ROWS if r.key == setting.row)
        text = paragraphs[setting.row]
        title = re.match(r"\*\*(.+?)\*\*", text).group(1)
        for versions in row.versions.split(" + "):
            if versions not in title:
                problems.append(
                    f"{setting.row}: the title {title!r} does not name the row's releases {versions!r}"
                )
        placed: dict[str, list[str]] = {}
        for heading, races in HEADINGS.findall(text):
            for race in setting_paragraphs.RACE_WORDS.values():
                if race in BRACKETS.sub("", races):
                    placed.setdefault(race, []).append(heading)
        problems += by_design_problems(setting.row, text, grid)
        problems += [
            f"{setting.row}: {race!r} stands under {headings}"
            for race, headings in placed.items()
            if len(headings) > 1
        ]
        if (
            grid[row.key, "optimize"].verdict == FINDING_OF["deltalake-two-optimizes-both-commit"]
            and "deltalake-two-optimizes-both-commit" not in text
        ):
            problems.append(
                f"{setting.row}: two OPTIMIZEs duplicate rows, and the paragraph does not name the finding"
            )
        if (
            row.engine == "deltalake"
            and row.store in ("S3", "Azure Blob")
            and "deltalake-lost-commit-response-commits-twice" not in text
        ):
            problems.append(
                f"{setting.row}: the lost commit answer applies, and the paragraph does not name it"
            )
    return problems


def by_design_problems(key: str, text: str, grid: dict) -> list[str]:
    """A cell refused by design (no race: the setting never allows the operation) stands under "Not
    allowed on this table", with every operation it refuses, and its race under no other heading: never
    under "rerun it", never under "May run at once"."""
    problems = []
    row = next(r for r in table_rows.ROWS if r.key == key)
    headings = HEADINGS.findall(text)
    barred = " ".join(BRACKETS.sub("", races) for h, races in headings if h == NOT_ALLOWED)
    for column in columns.COLUMNS:
        cell = grid[key, column.key]
        if cell.verdict != decision.BY_DESIGN:
            continue
        race = setting_paragraphs.race_words(column.key, row, cell)
        elsewhere = [
            h for h, races in headings if h != NOT_ALLOWED and race in BRACKETS.sub("", races)
        ]
        if elsewhere:
            problems.append(f"{key}: {race!r} is refused by design, and stands under {elsewhere}")
        for operation in cell.evidence.refuses:
            if not re.search(rf"(?<![\w-]){re.escape(operation)}(?![\w-])", barred):
                problems.append(
                    f"{key}: {operation} is refused by design, and not under {NOT_ALLOWED!r}"
                )
    return problems


def _paragraphs(page: str) -> dict[str, str]:
    found = {}
    for setting in setting_paragraphs.SETTINGS:
        found[setting.row] = next(
            line for line in page.splitlines() if line.startswith(f"**{setting.title}**")
        )
    return found


def test_the_setting_paragraphs_agree_with_the_table_and_with_themselves():
    assert setting_problems(_paragraphs(_page()), decision.grid_of(decision.Results.load())) == []


def test_a_setting_paragraph_that_breaks_a_rule_is_caught():
    paragraphs, grid = _paragraphs(_page()), decision.grid_of(decision.Results.load())
    broken = dict(paragraphs)
    broken["rs-put-today"] = paragraphs["rs-put-today"].replace(
        "**May run at once:** two appends;",
        "**May run at once:** two appends; two OPTIMIZEs or Z-orders;",
    )
    assert any("stands under" in p for p in setting_problems(broken, grid))
    broken["rs-put-today"] = paragraphs["rs-put-today"].replace(
        "deltalake-lost-commit-response-commits-twice", "elsewhere"
    )
    assert any("lost commit answer" in p for p in setting_problems(broken, grid))


def test_the_retry_advice_quotes_notebook_11s_committed_run():
    import pandas as pd

    commits = pd.read_csv(config.DATA_DIR / "full_runs" / "bench" / "commits.csv.gz")
    page = _page()
    for protocol, row in (("s3-conditional-put", "rs-put-today"), ("azure", "rs-azure")):
        mine = commits[commits.protocol == protocol]
        failing = mine[mine.outcome != "committed"].groupby("writers").size()
        writers = int(failing.index.min())
        figure = f"{int(failing[writers])} of {int((mine.writers == writers).sum())} appends by {writers} writers"
        assert figure in _paragraphs(page)[row], (row, figure)


def test_the_page_renders_from_the_committed_results_only(monkeypatch):
    """A full run of this machine's (``build/<kind>/full/``) never reaches the page: it is rendered
    from ``data/`` alone, so a user's own `make producers` leaves the committed page current."""
    from helpers.runs import full_runs

    def refuse(*args, **kwargs):
        raise AssertionError("the page asked for this machine's full run")

    monkeypatch.setattr(full_runs, "location", refuse)
    assert markdown_page.render() == _page()


# the same operation from two jobs on partitions of their own ----------------------------------------


def test_the_backfill_cells_cite_each_engines_partitioned_variant_and_state_the_merge_condition():
    """Each engine's cell of one operation against itself, each job on a partition of its own, is decided by
    that engine's ``+partitions`` rows of the pairs whose condition names the partition; the MERGE whose
    condition does not name it, where its verdict differs, is a condition of the cell, as are the other
    interleaving and the file-statistics layout."""
    results = decision.Results.load()
    grid = decision.grid_of(results)
    measured = 0
    for row in table_rows.ROWS:
        cell = grid[row.key, "backfill"]
        cited = decision.evidence(row, next(c for c in columns.COLUMNS if c.key == "backfill"))
        if not isinstance(cited, evidence.MatrixCells) or row.loses:
            continue
        assert (
            all(e.endswith("+partitions") for e in cited.engines)
            and ("merge", "merge_apart") in cited.pairs
        )
        assert ("merge_on_id", "merge_on_id_apart") not in cited.pairs
        if not cell.engines:
            continue
        measured += 1
        unnamed = decision.verdict_of(
            [results.by_pair.get((e, "merge_on_id", "merge_on_id_apart")) for e in cell.engines]
        )
        stated = dict(cell.conditions).get(matrix_verdicts.UNNAMED_MERGE[0])
        assert stated == (None if unnamed == cell.verdict else unnamed), row.key
    assert measured >= 5
    page = _page()
    assert "To backfill in parallel, give each job a partition of its own" in page


def test_the_mixed_lock_cells_read_the_mixed_runs_csv():
    """The cells of Delta Spark and deltalake through one lock table follow the mixed run's rows: a crafted
    row that changes a class changes the cells, and without that CSV they are not measured."""
    rows = _matrix_rows()
    mixed = set(engine_names.MIXED_LOCK_ENGINES)
    assert any(r["engine"] in mixed for r in rows), "no rows of the mixed run in data/"
    grid = decision.grid_of(decision.Results(rows))
    assert grid["mixed-lock", "optimize_append"].verdict == decision.SAFE
    assert grid["mixed-lock", "vacuum"].verdict == decision.LOSES
    for key in ("rs-lock-interop", "spark-dynamodb"):
        cell = grid[key, "other"]
        assert cell.engines and set(cell.engines) <= mixed, (key, cell.engines)
        assert (deltalake_rows.WITH_VACUUM, decision.LOSES) in cell.conditions, (
            key,
            cell.conditions,
        )

    def crafted(engine: str, first: str, second: str, **changes) -> list[dict]:
        out = [dict(r) for r in rows]
        hits = [r for r in out if (r["engine"], r["first"], r["second"]) == (engine, first, second)]
        assert len(hits) == 1, (engine, first, second)
        hits[0].update(changes)
        return out

    spark_first = engine_names.MIXED_LOCK_ENGINES[0]
    grid = decision.grid_of(
        decision.Results(
            crafted(
                spark_first, "optimize", "append", outcome="anomaly", anomaly_kind="duplicated rows"
            )
        )
    )
    assert grid["mixed-lock", "optimize_append"].verdict == decision.DUPLICATES
    assert grid["spark-dynamodb", "other"].verdict == decision.DUPLICATES
    broken = [r for r in rows if r["engine"] in mixed and "broken log" in r["anomaly_kind"]]
    assert broken, "the mixed run's VACUUM anomaly is gone from the CSV"
    healed = [dict(r) for r in rows]
    for r in healed:
        if r["engine"] in mixed and "broken log" in r["anomaly_kind"]:
            r.update(outcome="refused", anomaly_kind="")
    setting = next(x for x in setting_paragraphs.SETTINGS if x.row == "mixed-lock")
    never = "**Never** run deltalake's zero-retention VACUUM while Delta Spark's append"
    results = decision.Results(rows)
    assert never in setting_paragraphs.setting_paragraph(
        setting, decision.grid_of(results), results
    )
    grid = decision.grid_of(results := decision.Results(healed))
    assert never not in setting_paragraphs.setting_paragraph(setting, grid, results)
    assert grid["mixed-lock", "vacuum"].verdict != decision.LOSES
    conditions = grid["rs-lock-interop", "other"].conditions
    assert (deltalake_rows.WITH_VACUUM, decision.LOSES) not in conditions
    without = decision.grid_of(decision.Results([r for r in rows if r["engine"] not in mixed]))
    assert without["mixed-lock", "rewrite"].verdict == decision.NOT_MEASURED
    assert without["rs-lock-interop", "other"].verdict == decision.NOT_MEASURED


# refused by design: an operation the setting never allows, not an outcome of a race ----------------


def _by_design_vacuum(results: decision.Results) -> dict:
    """The grid with deltalake's VACUUM on S3 crafted as refused by design (its own check and note)."""
    row = next(r for r in table_rows.ROWS if r.key == "rs-put-today")
    column = next(c for c in columns.COLUMNS if c.key == "vacuum")
    check = evidence.Check(
        notebook_sections.S13_5,
        "a crafted check",
        decision.BY_DESIGN,
        "1.6.6",
        note="a crafted note: the setting never allows it",
        refuses=("VACUUM",),
    )
    crafted = dataclasses.replace(row, cells={**row.cells, "vacuum": check})
    return {
        **decision.grid_of(results),
        (row.key, "vacuum"): decision.resolve(crafted, column, results),
    }


def test_a_row_refused_by_design_stands_under_its_own_heading():
    """A crafted cell refused by design renders under "Not allowed on this table", with its note, and its
    race stands under no heading of a race (not "rerun it", not "Keep apart" where the matrix put it)."""
    results = decision.Results.load()
    grid = _by_design_vacuum(results)
    setting = next(x for x in setting_paragraphs.SETTINGS if x.row == "rs-put-today")
    text = setting_paragraphs.setting_paragraph(setting, grid, results)
    assert f"**{NOT_ALLOWED}:** VACUUM (a crafted note: the setting never allows it)." in text, text
    race = setting_paragraphs.race_words("vacuum")
    assert all(race not in BRACKETS.sub("", races) for _, races in HEADINGS.findall(text)), text
    assert by_design_problems("rs-put-today", text, grid) == []
    items = advice.by_design(grid, [r for r in table_rows.ROWS if not r.loses])
    assert any(i.startswith("Do not run VACUUM with deltalake 1.6.4–1.6.6 on S3:") for i in items)


def test_a_refusal_by_design_under_rerun_is_caught():
    """The page as it once was: the maintenance cells of a catalog-managed table had the verdict of a
    race's refusal, so they stood under "rerun it", where a rerun is refused again. Rendered so from the
    crafted cell, the check finds it."""
    results = decision.Results.load()
    grid = _by_design_vacuum(results)
    as_a_race = {
        **grid,
        ("rs-put-today", "vacuum"): dataclasses.replace(
            grid["rs-put-today", "vacuum"], verdict=decision.REFUSED
        ),
    }
    setting = next(x for x in setting_paragraphs.SETTINGS if x.row == "rs-put-today")
    text = setting_paragraphs.setting_paragraph(setting, as_a_race, results)
    rerun = setting_paragraphs.RERUN_HEADINGS[1]  # a finding applies: look before rerunning
    assert f"**{rerun}:**" in text
    assert by_design_problems("rs-put-today", text, grid) == [
        f"rs-put-today: {setting_paragraphs.race_words('vacuum')!r} is refused by design, and stands "
        f"under [{rerun!r}]",
        f"rs-put-today: VACUUM is refused by design, and not under {NOT_ALLOWED!r}",
    ]
    paragraphs = _paragraphs(_page())
    assert any(
        "is refused by design" in p
        for p in setting_problems({**paragraphs, "rs-put-today": text}, grid)
    )


def test_the_catalog_managed_tables_maintenance_is_not_allowed_and_never_rerun():
    """On the committed page: OPTIMIZE, Z-order, REORG and VACUUM of a catalog-managed table stand under
    "Not allowed on this table", the paragraph has no "rerun it", and "What to do" says not to run them."""
    page = _page()
    text = _paragraphs(page)["spark-catalog"]
    barred = dict(HEADINGS.findall(text))[NOT_ALLOWED]
    for operation in ("OPTIMIZE", "Z-order", "REORG", "VACUUM"):
        assert operation in barred
    assert "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION" in barred
    assert not any(h in text for h in setting_paragraphs.RERUN_HEADINGS) and "(retry)" not in text
    grid = decision.grid_of(decision.Results.load())
    assert {grid["spark-catalog", k].verdict for k in ("optimize", "vacuum_rewrite")} == {
        decision.BY_DESIGN
    }
    assert (
        "- Do not run OPTIMIZE, Z-order, REORG or VACUUM with Delta Spark 4.4.0 on a catalog-managed "
        "table: that setting refuses them by design" in page
    )


def test_the_catalog_rows_other_engine_is_the_one_raced_beside_it():
    """The catalog-managed row's "other" cell is Java Delta Kernel's race through the same catalog (15 §9),
    and its paragraph names Kernel, not deltalake, as the engine that may write beside Delta Spark; its note
    keeps that deltalake neither reads nor writes such a table. Without the row's ``other_engine`` the race
    would be named as deltalake's, and this test says so."""
    grid = decision.grid_of(decision.Results.load())
    cell = grid["spark-catalog", "other"]
    assert (cell.verdict, cell.section) == (decision.SAFE, notebook_sections.S15_9)
    assert cell.evidence.check == "kernel race: problems found reading storage and the catalog"
    assert "deltalake 1.6.6 neither reads nor writes a catalog-managed table (15 §6)" in cell.note
    text = _paragraphs(_page())["spark-catalog"]
    may = BRACKETS.sub("", dict(HEADINGS.findall(text))["May run at once"])
    assert "Java Delta Kernel 4.4.0 writing the same table" in may and "deltalake" not in may
    row = next(r for r in table_rows.ROWS if r.key == "spark-catalog")
    unnamed = setting_paragraphs.race_words(
        "other", dataclasses.replace(row, other_engine=""), cell
    )
    assert "Java Delta Kernel" not in unnamed and unnamed.startswith("deltalake")
