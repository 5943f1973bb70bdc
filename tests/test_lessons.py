"""Each notebook's main path is its lesson, told in the learner's words, within a budget.

A notebook's **main path** is every cell before its first optional part. An optional part starts at
a level-2 heading that begins with "Appendix" or "How this was measured"; everything after it is
optional too, and each optional heading's next line says in one line what the part adds
("*Optional: ...*"). A learner who stops at the first optional heading has the whole lesson.

On the main path:

* the lesson's closing headings come in this order: "## What to remember" (at most 5 bullets),
  "## Exercises", "## Next", and "## Next" is the main path's last level-2 heading;
* its markdown holds at most :data:`BUDGET` words (:data:`LONG_BUDGET` for the notebooks listed
  there), all main paths together at most :data:`TOTAL_BUDGET`. Words are what a reader reads:
  HTML comments (the verdict tags of tests/test_one_truth.py) and anchors are not counted;
* the prose names no helper module by its path (``helpers/...``, ``helpers.x``), no test
  (``tests/...``, ``test_x.py``) and no date (an incident's date belongs in docs/maintainers.md);
  it speaks of the learner's table, not of the workbook's harness: no "harness", no machine's size
  ("a 2-core machine", "24 GiB") and no issue number ("#1234", "issue 1234"), which belong in
  "How this was measured";
  A code span that calls into a helper module (```storage.list_table(...)```) is allowed only when
  the notebook's own code shows that call: the learner has met it;
* an exercise (the cells from "## Exercises" on) names in a code span only the helper calls the
  notebook's code showed before it (an earlier exercise's answer does not count: the student
  edition takes it out), so that the learner has met every call an exercise asks for;
* every numbered section ("## 3. ...") and appendix ("## Appendix B · ...") carries an anchor
  (``<a id="section-3"></a>``, ``<a id="appendix-b"></a>``), so that a "§3" link opens at it.

The checks are plain functions of the notebooks' cells, so each can be shown failing on a crafted
notebook (the tests at the end).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.ground import config

BUDGET = 1500
LONG_BUDGET = {"13": 1800, "15": 1800}
TOTAL_BUDGET = 16000
"""Back to 16,000 once every exercise could be answered from its own main path and every term was
linked where first used: links in place of repeated definitions paid for the facts moved up."""
MAX_REMEMBER_BULLETS = 5
CLOSING = ["What to remember", "Exercises", "Next"]
OPTIONAL = re.compile(r"^##\s+(?:Appendix\b|How this was measured\b)", re.M)
OPTIONAL_LINE = re.compile(r"^\*Optional[:.]\s.+\*\s*$")
HELPERS = config.ROOT / "helpers"


def helper_modules() -> set[str]:
    """Every module and package name under helpers/, at any depth (``storage``, ``stores``, ...)."""
    names = {p.stem for p in HELPERS.rglob("*.py") if p.stem not in ("__init__", "__main__")}
    names |= {p.parent.name for p in HELPERS.rglob("__init__.py") if p.parent != HELPERS}
    return names


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def main_path(notebook_cells: list[dict]) -> list[dict]:
    """The cells before the first optional heading."""
    for number, cell in enumerate(notebook_cells):
        if cell["cell_type"] == "markdown" and OPTIONAL.search(source(cell)):
            return notebook_cells[:number]
    return notebook_cells


def reader_text(markdown: str) -> str:
    """What a reader reads of a markdown cell: no HTML comments, no anchors."""
    text = re.sub(r"<!--.*?-->", " ", markdown, flags=re.S)
    return re.sub(r"<a\s+id=\"[^\"]*\"\s*>\s*</a>", " ", text)


def words(notebook_cells: list[dict]) -> int:
    return sum(
        len(reader_text(source(c)).split())
        for c in main_path(notebook_cells)
        if c["cell_type"] == "markdown"
    )


def level2(notebook_cells: list[dict]) -> list[str]:
    return [
        m.group(1).strip()
        for c in notebook_cells
        if c["cell_type"] == "markdown"
        for m in re.finditer(
            r"^##\s+(.+?)\s*(?:<a\s+id=\"[^\"]*\"\s*>\s*</a>)?\s*$", source(c), re.M
        )
    ]


def structure_problems(name: str, notebook_cells: list[dict]) -> list[str]:
    problems = []
    main = level2(main_path(notebook_cells))
    found = [h for h in main if h in CLOSING]
    if found != CLOSING:
        problems.append(f"{name}: the main path's closing headings are {found}, not {CLOSING}")
    elif main[-1] != "Next":
        problems.append(f"{name}: '## Next' is not the main path's last heading ({main[-1]!r} is)")
    for cell in main_path(notebook_cells):
        text = source(cell)
        if cell["cell_type"] == "markdown" and re.search(r"^##\s+What to remember", text, re.M):
            bullets = re.findall(r"^\s{0,1}[-*]\s", text, re.M)
            if len(bullets) > MAX_REMEMBER_BULLETS:
                problems.append(
                    f"{name}: 'What to remember' has {len(bullets)} bullets "
                    f"(at most {MAX_REMEMBER_BULLETS})"
                )
    optional = notebook_cells[len(main_path(notebook_cells)) :]
    for cell in optional:
        if cell["cell_type"] != "markdown":
            continue
        lines = source(cell).splitlines()
        for i, line in enumerate(lines):
            if re.match(r"^##\s", line):
                following = next((ln for ln in lines[i + 1 :] if ln.strip()), "")
                if not OPTIONAL_LINE.match(following):
                    problems.append(
                        f"{name}: optional heading {line.strip()!r} is not followed by one line "
                        "'*Optional: what it adds.*'"
                    )
                if not OPTIONAL.match(line):
                    problems.append(
                        f"{name}: {line.strip()!r} comes after an optional part but is not one "
                        "('## Appendix ...' or '## How this was measured')"
                    )
    return problems


def anchor_problems(name: str, notebook_cells: list[dict]) -> list[str]:
    problems = []
    for cell in notebook_cells:
        if cell["cell_type"] != "markdown":
            continue
        for line in source(cell).splitlines():
            numbered = re.match(r"^##\s+(\d+)\.\s", line)
            appendix = re.match(r"^##\s+Appendix\s+([A-Z])\b", line)
            wanted = (
                f"section-{numbered.group(1)}"
                if numbered
                else f"appendix-{appendix.group(1).lower()}"
                if appendix
                else None
            )
            if wanted and f'<a id="{wanted}"></a>' not in line:
                problems.append(f'{name}: {line.strip()!r} has no <a id="{wanted}"></a>')
    return problems


DATE = re.compile(r"\b(?:19|20)\d\d-\d\d-\d\d\b")
HARNESS = re.compile(r"\bharness(?:es)?\b", re.I)
MACHINE_SIZE = re.compile(
    r"\b(?:\d+|N|one|two|three|four|eight|sixteen)[- ](?:cores?|CPUs?|vCPUs?)\b"
    r"|\b\d+(?:\.\d+)? ?(?:GiB|GB|TiB|TB)\b(?!/)",
    re.I,
)
ISSUE_NUMBER = re.compile(
    r"\b[\w.-]+/[\w.-]+#\d+\b|(?<![\w&])#\d+\b|\b(?:issues?|PRs?|pull requests?) #?\d+\b"
    r"|/(?:issues|pull)/\d+\b",
    re.I,
)
TEST_NAME = re.compile(r"\btests/|\btest_\w+\.py\b")
HELPER_PATH = re.compile(r"\bhelpers(?:/|\.\w)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def helper_calls(text: str, modules: set[str]):
    """Each code span of ``text`` that calls into a helper module, with its call: the span
    ``storage.list_table(uri)`` and ``storage.list_table``."""
    for span in CODE_SPAN.finditer(text):
        call = re.match(r"(\w+)\.(\w+)", span.group(1))
        if call and call.group(1) in modules:
            yield span.group(1), call.group(0)


def wording_problems(name: str, notebook_cells: list[dict], modules: set[str]) -> list[str]:
    code = "\n".join(source(c) for c in notebook_cells if c["cell_type"] == "code")
    problems = []
    for number, cell in enumerate(main_path(notebook_cells)):
        if cell["cell_type"] != "markdown":
            continue
        text = reader_text(source(cell))
        where = f"{name} markdown cell {number}"
        for pattern, what in (
            (HELPER_PATH, "a helper module's path"),
            (TEST_NAME, "a test"),
            (DATE, "a date"),
            (HARNESS, "the harness"),
            (MACHINE_SIZE, "a machine's size"),
            (ISSUE_NUMBER, "an issue number"),
        ):
            for match in pattern.finditer(text):
                problems.append(f"{where}: names {what} ({match.group(0)!r})")
        for span, call in helper_calls(text, modules):
            if call not in code:
                problems.append(
                    f"{where}: `{span}` names a helper the notebook's code does not show"
                )
    return problems


def workbook() -> list[tuple[str, list[dict]]]:
    return [
        (path.name[:2], cells(path))
        for path in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    ]


def budget_problems(notebooks: list[tuple[str, list[dict]]]) -> list[str]:
    problems = []
    total = 0
    for name, notebook_cells in notebooks:
        count = words(notebook_cells)
        total += count
        limit = LONG_BUDGET.get(name, BUDGET)
        if count > limit:
            problems.append(
                f"{name}: the main path has {count} words of markdown (at most {limit})"
            )
    if total > TOTAL_BUDGET:
        problems.append(f"all main paths: {total} words of markdown (at most {TOTAL_BUDGET})")
    return problems


NOTEBOOKS = workbook()
IDS = [name for name, _ in NOTEBOOKS]


def test_the_main_paths_keep_their_budgets():
    assert budget_problems(NOTEBOOKS) == []


@pytest.mark.parametrize("name, notebook_cells", NOTEBOOKS, ids=IDS)
def test_a_lesson_closes_with_what_to_remember_exercises_and_next(name, notebook_cells):
    assert structure_problems(name, notebook_cells) == []


@pytest.mark.parametrize("name, notebook_cells", NOTEBOOKS, ids=IDS)
def test_every_numbered_section_has_an_anchor(name, notebook_cells):
    assert anchor_problems(name, notebook_cells) == []


@pytest.mark.parametrize("name, notebook_cells", NOTEBOOKS, ids=IDS)
def test_the_main_path_speaks_the_learners_words(name, notebook_cells):
    assert wording_problems(name, notebook_cells, helper_modules()) == []


# ---------------------------------------------------------------------------------------------
# The checks find what they are meant to find
# ---------------------------------------------------------------------------------------------


def _md(text: str) -> dict:
    return {"cell_type": "markdown", "source": [text]}


def _code(text: str) -> dict:
    return {"cell_type": "code", "source": [text]}


LESSON = [
    _md('# 99 · A lesson\n\n## 1. The race <a id="section-1"></a>\n\nTwo writers race.'),
    _code("table = storage.table_store(uri)"),
    _md("## What to remember\n- one\n- two"),
    _md("## Exercises\n1. Try `storage.table_store(uri)`."),
    _md("## Next\n\nNext: [100](100.ipynb)."),
    _md('## Appendix A · More <a id="appendix-a"></a>\n*Optional: the details.*\n\nMore words.'),
]


def test_a_crafted_lesson_passes():
    assert structure_problems("99", LESSON) == []
    assert anchor_problems("99", LESSON) == []
    assert wording_problems("99", LESSON, {"storage"}) == []
    assert words(LESSON) == len(
        reader_text(
            "\n".join(source(c) for c in LESSON[:5] if c["cell_type"] == "markdown")
        ).split()
    )


def test_a_main_path_over_its_budget_is_found():
    long = [*LESSON[:1], _md("word " * BUDGET), *LESSON[1:]]
    assert budget_problems([("99", long)]) == [
        f"99: the main path has {words(long)} words of markdown (at most {BUDGET})"
    ]
    appendix = [*LESSON, _md("word " * BUDGET)]  # optional parts are not counted
    assert budget_problems([("99", appendix)]) == []
    many = [("99", LESSON)] * (TOTAL_BUDGET // words(LESSON) + 1)
    assert budget_problems(many)[-1].startswith("all main paths:")


def test_a_verdict_tag_is_not_counted():
    tagged = [_md("Two writers lose nothing. <!-- verdict: append/append a long tag text -->")]
    assert words(tagged) == 4


def test_a_lesson_out_of_order_is_found():
    swapped = [LESSON[0], LESSON[3], LESSON[2], LESSON[4]]
    assert structure_problems("99", swapped) == [
        "99: the main path's closing headings are ['Exercises', 'What to remember', 'Next'], "
        "not ['What to remember', 'Exercises', 'Next']"
    ]
    after = [*LESSON[:5], _md("## 2. A section after Next")]
    assert structure_problems("99", after) == [
        "99: '## Next' is not the main path's last heading ('2. A section after Next' is)"
    ]
    bullets = [*LESSON[:2], _md("## What to remember\n" + "- b\n" * 6), *LESSON[3:]]
    assert structure_problems("99", bullets) == ["99: 'What to remember' has 6 bullets (at most 5)"]


def test_an_optional_part_that_does_not_say_what_it_adds_is_found():
    bare = [*LESSON[:5], _md('## Appendix A · More <a id="appendix-a"></a>\n\nMore words.')]
    assert len(structure_problems("99", bare)) == 1
    section = [*LESSON, _md('## 3. Back on the path <a id="section-3"></a>\n*Optional: no.*')]
    assert structure_problems("99", section)[-1].endswith(
        "comes after an optional part but is not one ('## Appendix ...' or '## How this was measured')"
    )


def test_a_section_without_an_anchor_is_found():
    bare = [_md("## 2. No anchor"), _md("## Appendix B · None either")]
    assert anchor_problems("99", bare) == [
        "99: '## 2. No anchor' has no <a id=\"section-2\"></a>",
        "99: '## Appendix B · None either' has no <a id=\"appendix-b\"></a>",
    ]


def test_a_helper_a_test_and_a_date_on_the_main_path_are_found():
    crafted = [
        _md(
            "See helpers/runs/runner.py and tests/test_runner.py: on 2026-11-26 a run stopped. "
            "Call `runner.run_writers(...)`."
        ),
        *LESSON,
    ]
    assert wording_problems("99", crafted, {"runner", "storage"}) == [
        "99 markdown cell 0: names a helper module's path ('helpers/')",
        "99 markdown cell 0: names a test ('tests/')",
        "99 markdown cell 0: names a test ('test_runner.py')",
        "99 markdown cell 0: names a date ('2026-11-26')",
        "99 markdown cell 0: `runner.run_writers(...)` names a helper the notebook's code does not show",
    ]
    optional = [*LESSON, _md("In an appendix, helpers/runs/runner.py may be named.")]
    assert wording_problems("99", optional, {"runner"}) == []


def test_the_harness_a_machine_and_an_issue_on_the_main_path_are_found():
    crafted = [
        _md(
            "The same harness runs it on a 2-core machine (8 cores, 24 GiB elsewhere); see "
            "delta-io/delta-rs#4549, issue 3736 and [the fix](https://github.com/o/r/pull/7603)."
        ),
        *LESSON,
    ]
    assert wording_problems("99", crafted, {"storage"}) == [
        "99 markdown cell 0: names the harness ('harness')",
        "99 markdown cell 0: names a machine's size ('2-core')",
        "99 markdown cell 0: names a machine's size ('8 cores')",
        "99 markdown cell 0: names a machine's size ('24 GiB')",
        "99 markdown cell 0: names an issue number ('delta-io/delta-rs#4549')",
        "99 markdown cell 0: names an issue number ('issue 3736')",
        "99 markdown cell 0: names an issue number ('/pull/7603')",
    ]
    kept = [_md("16 writers race ([§3](#section-3)), 8 GiB/s, and take the cores."), *LESSON]
    assert wording_problems("99", kept, {"storage"}) == []
    optional = [*LESSON, _md("The harness ran on 2 cores (delta-io/delta-rs#4549).")]
    assert wording_problems("99", optional, {"storage"}) == []


# ---------------------------------------------------------------------------------------------
# Every exercise can be done where it is asked: a helper call it names in a code span has been shown
# in the notebook's code before it, as the student edition shows it (answers taken out).
# ---------------------------------------------------------------------------------------------

ANSWER = re.compile(r"### BEGIN SOLUTION\n.*?### END SOLUTION", re.S)
EXERCISE_ITEM = re.compile(r"^\*\*(Exercise \d+)|^(\d+)\.\s")


def shown_code(notebook_cells: list[dict]) -> str:
    """The code of these cells as the student edition shows it: every answer taken out."""
    return "\n".join(ANSWER.sub("", source(c)) for c in notebook_cells if c["cell_type"] == "code")


def exercise_call_problems(name: str, notebook_cells: list[dict], modules: set[str]) -> list[str]:
    """Each helper call (``storage.list_table(...)``, ``meter.KINDS``) an exercise or question names
    in a code span that no code cell before it shows."""
    main = main_path(notebook_cells)
    start = exercises_start(main)
    if start is None:
        return []
    problems = []
    for number in range(start, len(main)):
        if main[number]["cell_type"] != "markdown":
            continue
        shown = shown_code(notebook_cells[:number])
        exercise = "the exercises"
        for line in reader_text(source(main[number])).splitlines():
            item = EXERCISE_ITEM.match(line)
            if item:
                exercise = item.group(1) or f"question {item.group(2)}"
            for span, call in helper_calls(line, modules):
                if not re.search(rf"\b{re.escape(call)}\b", shown):
                    problems.append(
                        f"{name} {exercise}: `{span}` names a helper call the notebook's code does "
                        "not show before it"
                    )
    return problems


@pytest.mark.parametrize("name, notebook_cells", NOTEBOOKS, ids=IDS)
def test_an_exercise_names_only_calls_its_notebook_showed_before_it(name, notebook_cells):
    assert exercise_call_problems(name, notebook_cells, helper_modules()) == []


def test_an_exercise_naming_a_call_not_shown_before_it_is_found():
    exercises = [
        _md("## Exercises\n**Exercise 1 · List.** Use `storage.list_table(uri)`, `model.project`."),
        _code("model.project_runs(r)\n### BEGIN SOLUTION\nstorage.list_table(u)\n### END SOLUTION"),
        _md("**Questions**\n1. Why `storage.table_store(uri)`?\n2. And\n   `storage.list_table`?"),
    ]
    crafted = [*LESSON[:3], *exercises, LESSON[4]]
    assert exercise_call_problems("99", crafted, {"storage", "model"}) == [
        "99 Exercise 1: `storage.list_table(uri)` names a helper call the notebook's code does not "
        "show before it",
        "99 Exercise 1: `model.project` names a helper call the notebook's code does not show "
        "before it",
        "99 question 2: `storage.list_table` names a helper call the notebook's code does not show "
        "before it",
    ]
    assert exercise_call_problems("99", LESSON, {"storage"}) == []


# ---------------------------------------------------------------------------------------------
# Every exercise has an answer: a code exercise a solution cell (``### BEGIN SOLUTION``), which
# runs whenever the notebook runs; a question a paragraph "**N. ...**" in notebooks/solutions/NN.md.
# A code answer is never only in a solutions page, where nothing would run it.
# ---------------------------------------------------------------------------------------------

SOLUTIONS = config.NOTEBOOKS_DIR / "solutions"


def exercises_start(main: list[dict]) -> int | None:
    """The index of the main path's "## Exercises" cell (None: it has none)."""
    return next(
        (
            i
            for i, c in enumerate(main)
            if c["cell_type"] == "markdown" and re.search(r"^##\s+Exercises", source(c), re.M)
        ),
        None,
    )


def exercise_problems(name: str, notebook_cells: list[dict], solutions: str | None) -> list[str]:
    problems = []
    main = main_path(notebook_cells)
    start = exercises_start(main)
    if start is None:
        return [f"{name}: no '## Exercises'"]
    exercises = main[start:]
    markdown = "\n".join(source(c) for c in exercises if c["cell_type"] == "markdown")
    coded = re.findall(r"\*\*Exercise (\d+)", markdown)
    solved = sum("### BEGIN SOLUTION" in source(c) for c in exercises if c["cell_type"] == "code")
    if coded and solved < len(coded):
        problems.append(f"{name}: {len(coded)} code exercises, {solved} solution cells")
    questions = re.findall(r"^(\d+)\.\s", markdown, re.M)
    if solutions is None:
        if questions or not coded:
            problems.append(f"{name}: no notebooks/solutions/{name}.md")
        return problems
    answers = re.findall(r"^\*\*(\d+)\.", solutions, re.M)
    if answers != questions:
        problems.append(f"{name}: questions {questions}, answers {answers} in solutions/{name}.md")
    if re.search(r"^```", solutions, re.M):
        problems.append(
            f"{name}: solutions/{name}.md holds code; a code answer is a solution cell, "
            "which runs with the notebook"
        )
    return problems


@pytest.mark.parametrize("name, notebook_cells", NOTEBOOKS, ids=IDS)
def test_every_exercise_has_an_answer_that_runs(name, notebook_cells):
    page = SOLUTIONS / f"{name}.md"
    solutions = page.read_text(encoding="utf-8") if page.exists() else None
    assert exercise_problems(name, notebook_cells, solutions) == []


def test_an_exercise_without_its_answer_is_found():
    exercises = [
        _md("## Exercises\n**Exercise 1 · Try it.**"),
        _code("answer = 1"),
        _md("**Questions**\n1. Why?\n2. And then?"),
    ]
    crafted = [*LESSON[:3], *exercises, LESSON[4]]
    assert exercise_problems("99", crafted, "**1. Because.**\n\n**2. Then.**") == [
        "99: 1 code exercises, 0 solution cells"
    ]
    assert exercise_problems("99", crafted, None)[-1] == "99: no notebooks/solutions/99.md"
    assert exercise_problems("99", crafted, "**1. Because.**\n```python\nx\n```") == [
        "99: 1 code exercises, 0 solution cells",
        "99: questions ['1', '2'], answers ['1'] in solutions/99.md",
        "99: solutions/99.md holds code; a code answer is a solution cell, which runs with the "
        "notebook",
    ]
