"""docs/answer.html: current, small, self-contained, and showing in a real browser what the data says.

The page is driven in headless Chromium (Debian's ``chromium`` and ``chromium-driver``, as
``make lab-check`` drives JupyterLab): for each distinct verdict and evidence of every row and layout,
the page is set to that setting and pair, and what it shows (the verdict, the copy cell, the evidence
link) is compared with :func:`helpers.page.shown.cell` and the notebooks' copy cells (every cell, against
the data itself: tests/test_answer_cells.py). Every link the page shows must open a file of this repository. The keyboard
alone reaches every control. A page whose data was changed by hand fails, and so does a stale one.
"""

from __future__ import annotations

import json
import re

from test_references import anchors

from helpers.ground import config
from helpers.page import decision, html_page, notebook_sections, table_rows
from helpers.page import shown as shown_cells

PAGE = html_page.PAGE
HANG_BOUND_S = 300
"""A batch of cells still not shown after this long is a hung page (a batch takes about a second)."""


def test_the_committed_page_is_a_fresh_render(tmp_path):
    assert PAGE.read_text(encoding="utf-8") == html_page.render(), (
        "run `python -m helpers.page.html_page`"
    )
    stale = tmp_path / "answer.html"
    stale.write_text(
        PAGE.read_text(encoding="utf-8").replace('"safe"', '"safe "', 1), encoding="utf-8"
    )
    assert html_page.main(["--check", "--page", str(stale)]) == 1
    assert html_page.main(["--check", "--page", str(PAGE)]) == 0


def test_the_page_is_small_and_fetches_nothing():
    text = PAGE.read_text(encoding="utf-8")
    assert len(text.encode()) <= 300 * 1024
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", text), (
        "a link or script from the network"
    )
    assert not re.search(r"\bfetch\(|XMLHttpRequest|<link\b|<script\s+src|@import", text), (
        "the page loads something"
    )


def expected_cases(results: decision.Results) -> list[dict]:
    """For every row and layout, each distinct (verdict, evidence) its cells give, at its first cell; with
    what the page must show. Every cell's verdict is held to the data by tests/test_answer_cells.py, with
    code of its own; this test holds the page to its own resolution (:func:`helpers.page.shown.cell`)."""
    copies = html_page._copy_cells()
    cases, seen = [], set()
    for row in table_rows.ROWS:
        for layout in shown_cells.LAYOUTS:
            for first in shown_cells.OPERATIONS:
                for second in shown_cells.LATER:
                    shown = shown_cells.cell(
                        row, first, second, shown_cells.Choice(layout), results
                    )
                    if (row.key, layout, shown.verdict, shown.evidence) in seen:
                        continue
                    seen.add((row.key, layout, shown.verdict, shown.evidence))
                    cases.append(
                        {
                            "row": row.key,
                            "first": first,
                            "second": second,
                            "layout": layout,
                            "verdict": shown.verdict,
                            "evidence": shown.evidence,
                            "copy": copies.get(row.key, ("", ""))[0],
                        }
                    )
    return cases


SHOW_ALL = """
const cases = arguments[0];
return cases.map((c) => window.answerPage.show(c.row, c.first, c.second, c.layout));
"""


def page_problems(browser, url: str, cases: list[dict]) -> list[str]:
    browser.get(url)
    browser.set_script_timeout(HANG_BOUND_S)
    shown = [
        seen
        for start in range(0, len(cases), 400)
        for seen in browser.execute_script(SHOW_ALL, cases[start : start + 400])
    ]
    problems = []
    for case, seen in zip(cases, shown):
        where = f"{case['row']}: {case['first']} then {case['second']} ({case['layout']})"
        if seen["verdict"] != case["verdict"]:
            problems.append(
                f"{where}: the page says {seen['verdict']!r}, the data {case['verdict']!r}"
            )
        if seen["evidence"] != case["evidence"]:
            problems.append(f"{where}: evidence {seen['evidence']!r}, not {case['evidence']!r}")
        if case["copy"] and seen["copy"] != case["copy"]:
            problems.append(f"{where}: the copy cell shown is not the notebook's")
    return problems


def links_problems(browser, url: str, base=PAGE.parent) -> list[str]:
    """Every link the page shows, for every row, opens a file of the repository, at an anchor the file
    has (a section's ``<a id="section-5"></a>``: tests/test_references.py's anchors)."""
    browser.get(url)
    hrefs = browser.execute_script(
        """
const seen = new Set();
for (const r of JSON.parse(arguments[0])) {
  window.answerPage.show(r, "append", "append", "shared");
  document.querySelectorAll("a[href]").forEach((a) => seen.add(a.getAttribute("href")));
}
return [...seen];""",
        json.dumps([row.key for row in table_rows.ROWS]),
    )
    problems = []
    for href in hrefs:
        file, _, anchor = href.partition("#")
        target = (base / file).resolve()
        if not target.is_relative_to(config.ROOT) or not target.exists():
            problems.append(f"the link {href!r} opens nothing in the repository")
        elif anchor and target.suffix in (".md", ".ipynb") and anchor not in anchors(target):
            problems.append(f"the link {href!r} names an anchor its file does not have")
        elif anchor and target.suffix == ".html" and f'id="{anchor}"' not in target.read_text():
            problems.append(f"the link {href!r} names an anchor its file does not have")
    return problems


def test_the_page_shows_what_the_data_says(browser):
    cases = expected_cases(decision.Results.load())
    assert len({c["verdict"] for c in cases}) == len(decision.VERDICTS) and len(cases) > 200
    assert page_problems(browser, PAGE.as_uri(), cases) == []


def test_a_page_whose_data_disagrees_is_caught(browser, tmp_path):
    """One verdict of the page's data changed by hand: the browser shows it, and the test says where."""
    data = html_page.page_data()
    row = next(r for r in data["rows"] if r["key"] == "rs-put-today")
    at = data["forms"].index("optimize") * len(data["later"]) + data["later"].index("optimize")
    crafted_cell = list(data["cells"][row["grid"]["shared"][at]])
    crafted_cell[0] = data["verdicts"].index(decision.SAFE)
    data["cells"].append(crafted_cell)
    row["grid"]["shared"][at] = len(data["cells"]) - 1
    crafted = tmp_path / "answer.html"
    crafted.write_text(
        html_page.TEMPLATE.read_text(encoding="utf-8").replace(
            "/*DATA*/null", json.dumps(data).replace("</", "<\\/")
        ),
        encoding="utf-8",
    )
    case = [
        {
            "row": "rs-put-today",
            "first": "optimize",
            "second": "optimize",
            "layout": "shared",
            "verdict": decision.DUPLICATES,
            "evidence": "evidence/13_conflict_matrix.html#section-5",
            "copy": "",
        }
    ]
    assert page_problems(browser, crafted.as_uri(), case) == [
        "rs-put-today: optimize then optimize (shared): the page says 'safe', the data 'duplicates data'"
    ]


def test_every_link_on_the_page_opens_a_file_of_the_repository(browser):
    assert links_problems(browser, PAGE.as_uri()) == []


def test_the_evidence_links_both_editions_at_the_section(browser):
    """The evidence opens the section in the learner's edition, and beside it the same section in the
    solutions edition, labelled as such; a link to an anchor no notebook has is found."""
    from selenium.webdriver.common.by import By

    browser.get(PAGE.as_uri())
    browser.execute_script(
        'window.answerPage.show("rs-put-today", "optimize", "optimize", "shared")'
    )
    links = browser.find_element(By.ID, "evidence").find_elements(By.TAG_NAME, "a")
    assert [(a.get_attribute("href").split("/")[-2:], a.text) for a in links] == [
        (["evidence", "13_conflict_matrix.html#section-5"], "13 §5"),
        (["notebooks", "13_conflict_matrix.ipynb#section-5"], notebook_sections.SOLUTIONS_EDITION),
    ]
    links[0].click()  # the copy to read opens at the section's heading, in view
    seen = browser.execute_script(
        """const a = document.getElementById("section-5");
        return a && [a.closest("h2") ? a.closest("h2").textContent : "", a.getBoundingClientRect().top,
                     window.innerHeight, window.scrollY, document.body.innerText.trim().startsWith("{")];"""
    )
    assert seen is not None, "the copy has no #section-5"
    heading, top, height, scrolled, json_text = seen
    assert heading.startswith("5. ") and -1 <= top < height and scrolled > 0 and not json_text


def test_a_link_to_an_anchor_no_notebook_has_is_found(browser, tmp_path):
    data = html_page.page_data()
    at = data["strings"].index("evidence/13_conflict_matrix.html#section-5")
    data["strings"][at] = "evidence/13_conflict_matrix.html#section-55"
    crafted = tmp_path / "answer.html"
    crafted.write_text(
        html_page.TEMPLATE.read_text(encoding="utf-8").replace(
            "/*DATA*/null", json.dumps(data).replace("</", "<\\/")
        ),
        encoding="utf-8",
    )
    # its links resolve from docs/, where the page lives, not from the crafted copy's folder
    problems = links_problems(browser, crafted.as_uri(), base=PAGE.parent)
    assert (
        "the link 'evidence/13_conflict_matrix.html#section-55' names an anchor its file does not have"
        in problems
    )
    assert not any("section-55" in p and "opens nothing" in p for p in problems)


def test_the_keyboard_alone_chooses_a_setting(browser):
    """Tab to the engine, choose Delta Spark with the arrow keys: the answer follows."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(PAGE.as_uri())
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(
        Keys.TAB, Keys.TAB, Keys.TAB
    )  # the answer page's link, the glossary's, the engine
    assert browser.switch_to.active_element.get_attribute("id") == "engine"
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert browser.find_element(By.ID, "engine").get_attribute("value") == "Delta Spark"
    assert "Delta Spark" in browser.find_element(By.ID, "range").text
    for expected in ("release", "row", "first", "second", "layout"):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        assert browser.switch_to.active_element.get_attribute("id") == expected


def test_one_operation_on_partitions_of_their_own_reads_the_second_jobs_pairs():
    """With "each job on a partition of its own", the same operation twice is two jobs on two partitions
    (the matrix's ``<op>_apart`` pairs, both interleavings); a MERGE names what comes of one whose
    condition does not name the partition; with the shared layout, the two jobs touch the same files."""
    results = decision.Results.load()
    row = next(r for r in table_rows.ROWS if r.key == "rs-put-today")
    parts = shown_cells.Choice("partitions")
    apart = [
        r
        for e in ("deltalake-1.6.6+partitions", "deltalake-1.6.6+partitions+b-files-first")
        if (r := results.by_pair.get((e, "replace_where", "replace_where_apart")))
    ]
    assert len(apart) == 2
    shown = shown_cells.cell(row, "replace_where", "replace_where", parts, results)
    assert (
        shown.verdict == decision.verdict_of(apart) and shown.label == notebook_sections.S13_6.label
    )
    assert shown.sentence.startswith(
        "each job on a partition of its own, its condition naming its part: both commit"
    )
    by_key = shown_cells.Choice("partitions", predicate="key")
    merge = shown_cells.cell(row, "merge", "merge", by_key, results)
    by_key_rows = [
        results.by_pair[e, "merge_on_id", "merge_on_id_apart"]
        for e in ("deltalake-1.6.6+partitions", "deltalake-1.6.6+partitions+b-files-first")
    ]
    assert merge.verdict == decision.verdict_of(by_key_rows)
    assert "naming only the key" in merge.sentence
    same = shown_cells.cell(row, "replace_where", "replace_where", shown_cells.Choice(), results)
    assert same.verdict == decision.verdict_of(
        [results.by_pair[("deltalake-1.6.6", "replace_where", "replace_where")]]
    )


def test_refused_by_design_has_its_own_colour_label_and_advice():
    """An operation the setting never allows is no race: its own colour and label, and a "what to do"
    that never says to rerun it; every pair with such an operation shows it, whatever the other job."""
    data = html_page.page_data()
    mine = decision.BY_DESIGN
    assert mine in data["verdicts"]
    others = [v for v in data["verdicts"] if v != mine]
    assert data["colours"][mine] not in [data["colours"][v] for v in others]
    assert data["short"][mine] not in [data["short"][v] for v in others]
    assert "rerun it" not in data["todo"][mine] and "refused again" in data["todo"][mine]
    results = decision.Results.load()
    row = next(r for r in table_rows.ROWS if r.key == "spark-catalog")
    label = notebook_sections.S15_8.label
    for first, second in (("optimize", "append"), ("zorder", "update"), ("merge", "vacuum")):
        for layout in shown_cells.LAYOUTS:
            for retention in shown_cells.RETENTIONS:
                choice = shown_cells.Choice(layout, retention)
                shown = shown_cells.cell(row, first, second, choice, results)
                assert shown.verdict == mine and shown.label == label, (first, second)
    assert (
        shown_cells.cell(row, "append", "append", shown_cells.Choice(), results).verdict
        == decision.SAFE
    )
    plain = next(r for r in table_rows.ROWS if r.key == "spark-one")
    assert shown_cells.refused_by_design(plain, "optimize", "vacuum") is None


def test_the_page_shows_refused_by_design_in_its_colour_with_its_advice(browser):
    """In the browser: a catalog-managed table's OPTIMIZE beside an append shows "refused by design" in
    its own colour, the advice not to run it, and the evidence of 15 §8; its grid cell says so too."""
    from selenium.webdriver.common.by import By

    browser.get(PAGE.as_uri())
    seen = browser.execute_script(
        'return window.answerPage.show("spark-catalog", "optimize", "append", "shared")'
    )
    assert seen["verdict"] == decision.BY_DESIGN
    assert seen["evidence"] == notebook_sections.S15_8.rendered
    assert "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION" in seen["sentence"]
    assert browser.find_element(By.ID, "todo").text == html_page.TODO[decision.BY_DESIGN]
    colour = browser.execute_script(
        "return getComputedStyle(document.getElementById('verdict')).backgroundColor"
    )
    red, green, blue = (
        int(html_page.COLOURS[decision.BY_DESIGN][i : i + 2], 16) for i in (1, 3, 5)
    )
    assert colour == f"rgb({red}, {green}, {blue})"
    label = f"OPTIMIZE, then append: {decision.BY_DESIGN}"
    button = browser.find_element(By.CSS_SELECTOR, f'#grid button[aria-label="{label}"]')
    assert button.text == html_page.SHORT[decision.BY_DESIGN]


TOO_WIDE = """
const vw = document.documentElement.clientWidth, wide = [];
for (const el of document.querySelectorAll("body *")) {
  const box = el.getBoundingClientRect();
  const style = getComputedStyle(el), clips = ["auto", "scroll", "hidden"].includes(style.overflowX);
  const spills = el.scrollWidth > el.clientWidth + 1 && !clips && el.clientWidth > 0;
  if ((box.right <= vw + 1 && !spills) || style.display === "none") continue;
  let parent = el.parentElement, scrolls = false;  // inside a block that scrolls itself: allowed
  while (parent && !scrolls) {
    scrolls = ["auto", "scroll"].includes(getComputedStyle(parent).overflowX);
    parent = parent.parentElement;
  }
  if (!scrolls) wide.push(`${el.tagName.toLowerCase()}#${el.id} reaches ${Math.round(box.left + el.scrollWidth)} px`);
}
return [document.documentElement.scrollWidth, vw, wide.slice(0, 5)];
"""


def narrow_problems(browser, url: str, width: int = 360) -> list[str]:
    """At ``width`` px, for the rows with the longest copy cells and every layout: every block fits the
    screen or scrolls inside itself (the grid, a copy block), and the page itself never scrolls sideways."""
    browser.set_window_size(width, 900)
    browser.get(url)
    problems = []
    for row in ("rs-put-today", "rs-lock-seeds", "spark-dynamodb", "spark-catalog"):
        for layout in shown_cells.LAYOUTS:
            browser.execute_script(
                "window.answerPage.show(arguments[0], 'merge', 'merge', arguments[1])", row, layout
            )
            page, screen, wide = browser.execute_script(TOO_WIDE)
            if page > screen or wide:
                problems.append(f"{row} ({layout}) at {width} px: page {page} px; {wide}")
    return problems


def test_at_360_px_every_block_fits_or_scrolls_inside_itself(browser, tmp_path):
    """A phone's width: nothing but the copy block and the grid may be wider than the screen, and those
    scroll inside themselves. A copy block made to overflow is found."""
    try:
        assert narrow_problems(browser, PAGE.as_uri()) == []
        crafted = tmp_path / "answer.html"
        crafted.write_text(
            PAGE.read_text(encoding="utf-8").replace(
                "</style>", "pre { overflow-x: visible !important; }</style>", 1
            ),
            encoding="utf-8",
        )
        assert any("pre#copy" in p for p in narrow_problems(browser, crafted.as_uri()))
    finally:
        browser.set_window_size(1280, 900)
