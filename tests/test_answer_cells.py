"""Every cell of docs/answer.html, in a real browser, against an independent reader of the data.

The reader (``tests/answer_reader.py``) computes what each cell must show from ``data/*.csv``, the
version boundaries and the findings' version table, with code of its own: none of the page's. The page
is driven in headless Chromium (as ``tests/test_answer_html.py`` drives it) through every cell it
offers: every release of every engine, every row that release offers, every layout, every pair of
the first and the later job, and every choice that applies (VACUUM's retention, a condition on the key
only). Each cell's verdict must be the reader's (for a cell a notebook's check decides: no milder than
the matrix's), its sentence must say what the verdict is about (what is lost, what comes twice, and
the milder interleaving with its condition), and the findings it lists must be those whose measured
releases and settings contain the cell's. A crafted break of the data, of the page and of a boundary
each fails, naming the cell.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from itertools import product

import answer_reader as ar
import pytest

PAGE = ar.ROOT / "docs" / "answer.html"
BATCH = 2500
"""Cells shown per ``execute_script`` call (each call about a second)."""
HANG_BOUND_S = 300
"""A batch still not shown after this long is a hung page."""
LISTED = 300
"""Per-cell messages listed after the groups (the groups hold them all)."""

PAGE_JS = """
const $ = (id) => document.getElementById(id);
const choose = (id, value) => { $(id).value = value; $(id).dispatchEvent(new Event("change")); };
const values = (id) => ($(id) ? [...$(id).options].map((o) => o.value) : []);
const page = window.answerPage;
"""
OFFERED = (
    PAGE_JS
    + """
const known = arguments[0], rows = {}, engines = {};
for (const engine of values("engine")) {
  choose("engine", engine);
  const listed = values("release"), offered = {};
  for (const release of new Set([...listed, ...(known[engine] || [])])) {
    if (listed.includes(release)) {
      choose("release", release);
      for (const o of $("row").options) rows[o.value] = o.textContent;
    }
    offered[release] = page.rowsFor(engine, release);
  }
  engines[engine] = offered;
}
// the choice of a DELETE's, UPDATE's or MERGE's condition: "condition" in the page's contract, its
// select named "predicate" on today's page (show() is given it under both names)
return { engines, rows, first: values("first"), second: values("second"), layout: values("layout"),
         retention: values("retention"), condition: values("condition").concat(values("predicate")) };
"""
)
SHOW = (
    PAGE_JS
    + """
const strings = [], index = new Map();
const s = (text) => {
  if (!index.has(text)) { index.set(text, strings.length); strings.push(text); }
  return index.get(text);
};
const seen = [];
for (const [row, release, layout, options, pairs] of arguments[0]) {
  // the contract's call for the group's first pair, then the later job's pairs as a user picks them;
  // the findings and the release shown are the row's, read once a group
  let group;
  pairs.forEach(([first, second], i) => {
    if (i === 0) page.show(row, first, second, layout, Object.assign({ release }, options));
    else { $("first").value = first; choose("second", second); }
    const evidence = $("evidence").querySelector("a[href]");
    group = group || [[...$("findings").querySelectorAll("a[href]")].map((a) => a.getAttribute("href")).join(" "),
                      $("range").textContent].map(s);
    seen.push([s($("verdict").textContent), s($("sentence").textContent),
               s(evidence ? evidence.getAttribute("href") : ""), ...group]);
  });
}
return [strings, seen];
"""
)


@dataclass(frozen=True)
class Cell:
    row: str
    protocol: ar.Protocol
    store: str
    release: str
    layout: str
    first: str
    second: str
    choices: tuple[tuple[str, str], ...] = ()
    spark: str = ""
    """The row's Delta Spark release (:func:`answer_reader.spark_release`)."""

    @property
    def where(self) -> str:
        chosen = "".join(f", {name} {value}" for name, value in self.choices)
        return (
            f"{self.row}, release {self.release}, {self.layout}{chosen}, "
            f"{self.first} then {self.second}"
        )


@dataclass(frozen=True)
class Problem:
    kind: str
    text: str
    cell: Cell | None = None
    page: str = ""
    reader: str = ""


def known_releases(reader: ar.Reader) -> dict[str, list[str]]:
    """The releases the matrix measured, by the page's engine: each must be one a user can choose."""
    found: dict[str, set[str]] = {"deltalake": set(), "delta": set()}
    for versions in reader.versions.values():
        for side, version in versions.items():
            found[side].add(version)
    ordered = {side: sorted(v, key=ar.release_key) for side, v in found.items()}
    return {
        "deltalake": ordered["deltalake"],
        "both": ordered["deltalake"],
        "Delta Spark": ordered["delta"],
    }


def page_setup(browser, url: str, reader: ar.Reader) -> dict:
    browser.get(url)
    browser.set_script_timeout(HANG_BOUND_S)
    return browser.execute_script(OFFERED, known_releases(reader))


def row_protocol(setup: dict, engine: str, key: str) -> tuple[ar.Protocol | None, str]:
    store, _, setting = setup["rows"].get(key, "").partition(": ")
    return ar.protocol_of(engine, store, setting), store


def cells_of(setup: dict) -> list[Cell]:
    """Every cell the page offers: each release's rows, each layout, pair and applicable choice."""
    cells = []
    for engine, offered in setup["engines"].items():
        for release, keys in offered.items():
            for key in keys:
                protocol, store = row_protocol(setup, engine, key)
                if protocol is None:
                    continue  # test_every_release_offers_the_rows_of_its_settings names it
                for layout, first, second in product(
                    setup["layout"], setup["first"], setup["second"]
                ):
                    retention = setup["retention"] if "vacuum" in (first, second) else []
                    keyed = layout != "shared" and {first, second} & set(ar.KEYED)
                    condition = setup["condition"] if keyed else []
                    for chosen in product(
                        *([(name, v) for v in values] for name, values in
                          (("retention", retention), ("condition", condition)) if values)
                    ):  # fmt: skip
                        spark = ar.spark_release(
                            engine,
                            release,
                            setup["rows"].get(key, ""),
                            ar.boundaries.DELTA_SPARK.version,
                        )
                        cells.append(
                            Cell(
                                key, protocol, store, release, layout, first, second, chosen, spark
                            )
                        )
    # the page draws a row's grid again whenever the row, layout or a choice changes: those outermost
    return sorted(cells, key=lambda c: (c.row, c.release, c.layout, c.choices))


def shown(browser, cells: list[Cell], url: str = PAGE.as_uri()) -> list[tuple[str, ...]]:
    """What the page at ``url`` shows for each cell: verdict, sentence, evidence, findings' links,
    range. Cells of one row, release, layout and choices go as one group."""
    browser.get(url)
    browser.set_script_timeout(HANG_BOUND_S)
    groups: list[list] = []
    for c in cells:
        group = [c.row, c.release, c.layout, options(c.choices)]
        if not groups or groups[-1][:4] != group:
            groups.append([*group, []])
        groups[-1][4].append([c.first, c.second])
    seen, batch, size = [], [], 0
    for group in [*groups, None]:
        if group is None or size + len(group[4]) > BATCH:
            strings, indices = browser.execute_script(SHOW, batch)
            seen += [tuple(strings[i] for i in one) for one in indices]
            batch, size = [], 0
        if group is not None:
            batch.append(group)
            size += len(group[4])
    return seen


def options(choices: tuple[tuple[str, str], ...]) -> dict:
    """The choices as ``show``'s options: the condition also as ``predicate``, the page's name for it."""
    chosen = dict(choices)
    if "condition" in chosen:
        chosen["predicate"] = chosen["condition"]
    return chosen


def by_check(evidence: str) -> bool:
    """A cell whose evidence is a notebook's section other than 13's (the conflict matrix's)."""
    notebook = re.search(r"(?:^|/)(\d\d)_[\w-]*\.(?:ipynb|html|md)", evidence)
    return bool(notebook) and notebook.group(1) != "13"


def verdict_problem(verdict: str, expected: ar.Expected, checked: bool) -> str | None:
    """Why the page's verdict is not the reader's: ``"verdict"`` (they differ), a check's verdict milder
    than the matrix's, or one the reader does not know; None if it is."""
    if verdict not in ar.SEVERITY:
        return f"no verdict the reader knows ({verdict!r})"
    if checked and not expected.check:
        if expected.verdict == ar.NOT_MEASURED:
            return None
        if ar.SEVERITY.index(verdict) < ar.SEVERITY.index(expected.verdict):
            return f"a check's verdict milder than the matrix's ({expected.verdict!r})"
        return None
    return None if verdict == expected.verdict else "verdict"


def sentence_problems(
    sentence: str, verdict: str, expected: ar.Expected, checked: bool
) -> list[str]:
    """What the sentence fails to say: the kinds of the worst rows, or the verdict's words; and where
    the interleavings differ, the milder one and its condition."""
    found = []
    named = {ar.LOSES: ("lost update", "broken log"), ar.DUPLICATES: ("duplicated rows",)}
    named[ar.WRONG] = ("resurrected rows", "removed twice")
    worst = [r for r in expected.rows if ar.verdict_of([r]) == verdict]
    kinds = sorted(ar.kinds_of(worst) & set(named.get(verdict, ()))) if not checked else []
    for kind in kinds or [None]:
        words = ar.KIND_WORDS[kind] if kind else ar.VERDICT_WORDS[verdict]
        if not re.search(words, sentence):
            found.append(f"the sentence does not say {kind or verdict!r} ({words})")
    each = expected.interleavings()
    milder = set(each.values()) - {verdict}
    if not checked and milder and ar.NOT_MEASURED not in each.values():
        if not re.search(ar.CONDITION_WORDS, sentence):
            found.append("the sentence names no condition of a milder interleaving")
        for other in sorted(milder):
            if not re.search(ar.VERDICT_WORDS[other], sentence):
                found.append(f"the sentence does not say the milder {other!r}")
    return found


def cell_problems(cell: Cell, seen: tuple[str, ...], reader: ar.Reader) -> list[Problem]:
    verdict, sentence, evidence, _, range_ = seen
    expected = reader.expected(
        cell.protocol, cell.store, cell.release, cell.layout, cell.first, cell.second,
        dict(cell.choices), cell.spark,
    )  # fmt: skip
    checked = expected.check or by_check(evidence)
    if not re.search(rf"(?<![\d.]){re.escape(cell.release)}(?![\d.])", range_):
        shows = f"{cell.row}, release {cell.release}: the page shows another release ({range_!r})"
        return [Problem("release", shows)]
    wrong = verdict_problem(verdict, expected, checked)
    if wrong:
        text = f"{cell.where}: the page says {verdict!r}, the reader {expected.verdict!r}"
        if wrong != "verdict":
            text += f": {wrong}"
        return [Problem("verdict", text, cell, verdict, expected.verdict)]
    return [
        Problem("sentence", f"{cell.where}: {said} ({sentence!r})", cell, verdict, said)
        for said in sentence_problems(sentence, verdict, expected, checked)
    ]


def findings_problems(cells: list[Cell], seen, reader: ar.Reader) -> list[Problem]:
    """The findings each (row, release) lists against the reader's: one message per (row, release)."""
    listed: dict[tuple, set[frozenset]] = {}
    for cell, one in zip(cells, seen):
        folders = frozenset(re.findall(r"findings/([^/\s]+)/", one[3]))
        listed.setdefault((cell.row, cell.protocol, cell.release, cell.spark), set()).add(folders)
    found = []
    for (row, protocol, release, spark), sets in listed.items():
        expected = reader.findings_for(protocol, release, spark)
        for folders in sets:
            if folders != expected:
                found.append(
                    Problem(
                        "findings",
                        f"{row}, release {release}: the page lists findings {sorted(folders)}, "
                        f"the reader {sorted(expected)} (missing {sorted(expected - folders)}, "
                        f"extra {sorted(folders - expected)})",
                    )
                )
    return found


def all_problems(cells: list[Cell], seen, reader: ar.Reader) -> list[Problem]:
    found = [p for cell, one in zip(cells, seen) for p in cell_problems(cell, one, reader)]
    found = list(dict.fromkeys(found))  # a release not shown: once per row and release
    return found + findings_problems(cells, seen, reader)


def grouped(problems: list[Problem]) -> list[str]:
    """Verdict problems by (row, pair, page, reader) with their layouts, releases and choices."""
    groups: dict[tuple, list[set]] = {}
    for p in problems:
        if p.kind != "verdict":
            continue
        c = p.cell
        key = (c.row, c.first, c.second, p.page, p.reader)
        into = groups.setdefault(key, [set(), set(), set()])
        into[0].add(c.layout)
        into[1].add(c.release)
        into[2].add(", ".join(f"{n} {v}" for n, v in c.choices) or "-")
    return [
        f"{row}: {first} then {second} ({', '.join(sorted(layouts))}; releases "
        f"{', '.join(sorted(releases, key=ar.release_key))}; choices {'; '.join(sorted(chosen))}): "
        f"{page} -> {reader}"
        for (row, first, second, page, reader), (layouts, releases, chosen) in sorted(
            groups.items()
        )
    ]


def report(problems: list[Problem]) -> str:
    lines = [p.text for p in problems]
    more = f"\n... and {len(lines) - LISTED} more" if len(lines) > LISTED else ""
    return (
        f"{len(problems)} problems; the verdicts by group:\n"
        + "\n".join(grouped(problems))
        + "\nby cell:\n"
        + "\n".join(lines[:LISTED])
        + more
    )


def offering_problems(setup: dict, reader: ar.Reader) -> list[str]:
    """For every release of every engine: each row it offers is a setting the reader knows, of a
    protocol that exists in that release; each protocol that exists in it has a row."""
    found = []
    missing: dict[str, list[str]] = {}
    for engine, offered in setup["engines"].items():
        for release, keys in offered.items():
            protocols = set()
            for key in keys:
                protocol, _ = row_protocol(setup, engine, key)
                if protocol is None:
                    found.append(f"{engine} {release}: the row {key} ({setup['rows'].get(key)!r}) "
                                 "is no setting the reader knows")  # fmt: skip
                    continue
                protocols.add(protocol.key)
                if not reader.exists(protocol, release):
                    found.append(f"{engine} {release}: the row {key} ({protocol.key}) does not exist "
                                 "in that release")  # fmt: skip
            for protocol in ar.PROTOCOLS:
                wanted = protocol.required and protocol.engine == engine
                if wanted and reader.exists(protocol, release) and protocol.key not in protocols:
                    missing.setdefault(f"{engine}: {protocol.key}", []).append(release)
    found += [
        f"{what}: no row offered in {', '.join(releases)}" for what, releases in missing.items()
    ]
    return found


@pytest.fixture(scope="module")
def reader():
    return ar.Reader()


@pytest.fixture(scope="module")
def setup(browser, reader):
    return page_setup(browser, PAGE.as_uri(), reader)


def test_every_cell_shows_what_the_reader_computes(browser, reader, setup):
    cells = cells_of(setup)
    assert len({c.row for c in cells}) >= 10 and len(cells) > 10_000
    problems = all_problems(cells, shown(browser, cells), reader)
    assert not problems, report(problems)


def test_every_release_offers_the_rows_of_its_settings(setup, reader):
    assert offering_problems(setup, reader) == []


def test_every_finding_of_the_table_is_placed(reader):
    """Each commit path of the version table is one the reader's protocols name, and each finding's
    folder has its rows in the table or a reason not to (:data:`answer_reader.NOT_A_SETTING`)."""
    paths = {p for protocol in ar.PROTOCOLS for p in protocol.paths}
    assert {p for f in reader.findings for p in f["paths"].split()} - paths == set()
    folders = {p.parent.name for p in ar.FINDINGS_TABLE.parent.glob("*/*.md")}
    tabled = {f["finding"] for f in reader.findings}
    assert folders - tabled - set(ar.NOT_A_SETTING) == set(), (
        "findings with no versions in the table"
    )


def one_cell(setup: dict, protocol: str, release: str, first: str, second: str) -> list[Cell]:
    """The shared-layout cell of the row of a protocol offered in a release."""
    return [
        c
        for c in cells_of(setup)
        if c.protocol.key == protocol and c.release == release and c.layout == "shared"
        and (c.first, c.second) == (first, second)
    ]  # fmt: skip


def verdicts(cells, seen, reader) -> list[str]:
    return [p.text for p in all_problems(cells, seen, reader) if p.kind == "verdict"]


def test_a_crafted_break_of_the_data_is_found(browser, reader, setup, tmp_path):
    """One row of a copy of the matrix turned into a lost update: the reader changes, the page does
    not, and the cell is named."""
    cells = one_cell(setup, "rs-put", "1.6.6", "append", "optimize")
    seen = shown(browser, cells)
    assert len(cells) == 1 and verdicts(cells, seen, reader) == []
    text = ar.CSVS[0].read_text(encoding="utf-8")
    row = next(
        line
        for line in text.splitlines()
        if line.startswith("deltalake-1.6.6,1.6.6,") and ",append,optimize,serializable," in line
    )
    crafted = tmp_path / "conflict_matrix.csv"
    broken = row.replace(
        ",append,optimize,serializable,,,,", ",append,optimize,anomaly,,,lost update,"
    )
    crafted.write_text(text.replace(row, broken), encoding="utf-8")
    assert verdicts(cells, seen, ar.Reader(csvs=(crafted, ar.CSVS[1]))) == [
        f"{cells[0].where}: the page says 'safe', the reader 'loses data'"
    ]


def crafted_page(tmp_path, row: str, first: str, second: str, verdict: str):
    """A copy of the page with one cell's verdict changed in its inlined data. It follows the page's
    data: ``rows[i].grid[layout][at]`` indexes ``cells`` (shared by every cell that shows the same),
    ``at`` = the first job's place in ``forms`` times the length of ``later``, plus the later job's
    place in ``later``; a cell is ``[verdict index, ...]``. The changed cell gets an entry of its own."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("const D = ") + len("const D = ")
    data, end = json.JSONDecoder().raw_decode(text, start)
    grid = next(r for r in data["rows"] if r["key"] == row)["grid"]["shared"]
    at = data["forms"].index(first) * len(data["later"]) + data["later"].index(second)
    changed = [data["verdicts"].index(verdict), *data["cells"][grid[at]][1:]]
    data["cells"].append(changed)
    grid[at] = len(data["cells"]) - 1
    page = tmp_path / "answer.html"
    data_text = json.dumps(data, ensure_ascii=False).replace("</", "<\\/")
    page.write_text(text[:start] + data_text + text[end:], encoding="utf-8")
    return page


def test_a_crafted_break_of_the_page_is_found(browser, reader, setup, tmp_path):
    cells = one_cell(setup, "rs-put", "1.6.6", "append", "optimize")
    assert verdicts(cells, shown(browser, cells), reader) == []
    page = crafted_page(tmp_path, cells[0].row, "append", "optimize", ar.LOSES)
    assert verdicts(cells, shown(browser, cells, page.as_uri()), reader) == [
        f"{cells[0].where}: the page says 'loses data', the reader 'safe'"
    ]


def test_a_crafted_break_of_a_boundary_is_found(browser, reader, setup):
    """The boundary of the second OPTIMIZE moved from 1.6.4 to 1.6.5: 1.6.4 then falls beside 1.5.1
    and 1.6.3, which refuse the second OPTIMIZE, and the page's cell no longer agrees."""
    cells = one_cell(setup, "rs-put", "1.6.4", "optimize", "optimize")
    seen = shown(browser, cells)
    assert len(cells) == 1 and verdicts(cells, seen, reader) == []
    moved = dataclasses.replace(
        reader.bounds["DOUBLE_OPTIMIZE"], version="1.6.5", last_before="1.6.4"
    )
    crafted = ar.Reader(bounds={**reader.bounds, "DOUBLE_OPTIMIZE": moved})
    assert crafted.representatives(cells[0].protocol, "1.6.4") == [
        "deltalake-1.5.1",
        "deltalake-1.6.3",
    ]
    assert verdicts(cells, seen, crafted) == [
        f"{cells[0].where}: the page says 'duplicates data', the reader 'refused (retry)'"
    ]


UNMEASURED_JS = """
const page = window.answerPage;
return page.offered("Delta Spark").filter((v) => !page.releases("Delta Spark").includes(v))
  .map((v) => [v, page.unmeasured(v)]);
"""


def test_a_delta_spark_release_not_measured_says_so_and_the_reader_agrees(browser, reader):
    """Every Delta Spark release the page lists but no row stands for (a boundary's, not raced) shows
    "not measured" and names the releases that were; the reader has no engine standing for it."""
    browser.get(PAGE.as_uri())
    shown = browser.execute_script(UNMEASURED_JS)
    assert shown, "the page lists no Delta Spark release that was not measured"
    measured = sorted(reader.spark_measured, key=ar.release_key)
    for release, said in shown:
        assert said["verdict"] == "not measured" and said["rows"] == 0, (release, said)
        assert f"Delta Spark {release} was not measured" in said["sentence"], said
        assert all(m in said["sentence"] for m in measured), said
        for protocol in ar.PROTOCOLS:
            if protocol.side == "delta":
                assert reader.representatives(protocol, release) == [], (protocol.key, release)
                assert not reader.exists(protocol, release), (protocol.key, release)
    assert {"3.3.2", "4.4.0"} <= reader.spark_measured
