"""The reading path a learner takes, notebook 00 first, then 01, 02, ... in order:

* every term of the workbook is defined before a notebook's prose uses it. A term is defined where
  a markdown cell names it in bold (``**orphan**``, ``**commit gate**``); a use is the word in any
  markdown cell, code spans included. A cell that defines a term may use it. The terms of
  :data:`TERMS` are defined in notebook 00 itself; those of :data:`GLOSSARY_ONLY` are defined once a
  cell links the glossary (``docs/glossary.md``, which notebook 00's first cell links);
* docs/glossary.md defines every term (:data:`GLOSSARY_TERMS`) in bold, and README, every other page
  of docs/ and notebooks/README.md use none of them before they link the glossary (or define the
  term in bold themselves);
* every exercise can be solved from what the lessons showed: each helper function or attribute
  (a name ``helpers/`` defines) and each column or key (a string) an answer uses, between
  ``### BEGIN SOLUTION`` and ``### END SOLUTION``, appears in a lesson cell of the same or an
  earlier notebook: in its code, in its printed output, or in a markdown code span. Lesson cells
  are those before the notebook's ``## Exercises``.
"""

from __future__ import annotations

import ast
import json
import re
import textwrap

import pytest

from helpers import config

TERMS = {
    "seeds": r"seeds?",
    "era": r"eras?",
    "landing file": r"landing files?",
    "orphan": r"orphan(?:s|ed)?",
    "phantom": r"phantoms?",
    "gate": r"gates?",
    "commit gate": r"commit gates?",
}
"""Each term, as a pattern of the forms prose uses."""
GLOSSARY_ONLY = {
    "log store": r"log stores?",
    "snapshot": r"snapshots?",
    "blind append": r"blind appends?",
    "staged": r"staged",
    "tombstone": r"tombstones?",
    "serial order": r"serial orders?",
    "lease": r"leases?",
    "conditional put": r"conditional puts?",
    "conditional write": r"conditional writes?",
    "put-if-absent": r"put-if-absent",
    "create-if-absent": r"create-if-absent",
    "copy-if-absent": r"copy-if-absent",
}
"""Terms the glossary defines for every reader (with one preferred name per idea: "conditional put",
whose synonyms are the four after it)."""
GLOSSARY_TERMS = {**TERMS, **GLOSSARY_ONLY}
GLOSSARY = config.ROOT / "docs" / "glossary.md"
GLOSSARY_LINK = re.compile(r"\[[^\]]*\]\((?:\.\./)?(?:docs/)?glossary\.md(?:#[\w-]*)?\)")
"""A link to the glossary, its text included: a term may be the text of the link to its entry."""


def _markdown(path) -> list[str]:
    return [
        "".join(cell["source"])
        for cell in json.loads(path.read_text())["cells"]
        if cell["cell_type"] == "markdown"
    ]


def used_before_defined(notebooks: list[tuple[str, list[str]]]) -> list[str]:
    """``"<notebook> markdown cell <n>: '<term>' used before it is defined"`` for each term whose
    first use, reading the notebooks' markdown cells in order, comes before its definition."""
    defined: set[str] = set()
    problems = []
    for name, cells in notebooks:
        for number, text in enumerate(cells):
            for term, pattern in GLOSSARY_TERMS.items():
                if re.search(rf"\*\*(?:the )?{pattern}\*\*", text, re.IGNORECASE):
                    defined.add(term)
            if GLOSSARY_LINK.search(text):
                defined |= set(GLOSSARY_ONLY)
            for term, pattern in GLOSSARY_TERMS.items():
                if term not in defined and re.search(rf"\b{pattern}\b", text, re.IGNORECASE):
                    problems.append(
                        f"{name} markdown cell {number}: '{term}' used before it is defined"
                    )
                    defined.add(term)  # one report per term
    return problems


def workbook_notebooks() -> list[tuple[str, list[str]]]:
    return [
        (path.stem, _markdown(path))
        for path in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    ]


def test_every_term_is_defined_before_the_prose_uses_it():
    assert used_before_defined(workbook_notebooks()) == []


def test_notebook_00_defines_every_term():
    first = workbook_notebooks()[0]
    assert first[0].startswith("00_")
    text = "\n".join(first[1])
    assert [
        term
        for term, pattern in TERMS.items()
        if not re.search(rf"\*\*(?:the )?{pattern}\*\*", text, re.IGNORECASE)
    ] == []


@pytest.mark.parametrize("term", list(TERMS))
def test_a_term_used_before_the_glossary_is_found(term):
    crafted = [
        ("00_crafted", [f"An intro that mentions the {term} too early.", _glossary()]),
        ("01_next", [f"The {term}."]),
    ]
    found = used_before_defined(crafted)
    assert f"00_crafted markdown cell 0: '{term}' used before it is defined" in found
    assert all(
        problem.startswith("00_crafted markdown cell 0:") for problem in found
    )  # ("commit gate" is a "gate" too)


def test_a_notebook_read_after_the_glossary_may_use_every_term():
    assert (
        used_before_defined([("00_crafted", [_glossary()]), ("01_next", [" ".join(TERMS)])]) == []
    )


def test_a_term_defined_in_no_notebook_is_found_in_the_notebook_that_first_uses_it():
    crafted = [
        ("00_crafted", ["Nothing yet."]),
        ("05_crafted", ["intro", "Its orphans stay in the bucket."]),
    ]
    assert used_before_defined(crafted) == [
        "05_crafted markdown cell 1: 'orphan' used before it is defined"
    ]


def _glossary() -> str:
    return "\n".join(f"- **{term}**: ..." for term in TERMS)


def test_a_glossary_term_is_defined_by_a_link_to_the_glossary():
    crafted = [
        ("00_crafted", [_glossary() + "\nThe rest is in the [glossary](../docs/glossary.md)."]),
        ("01_next", ["Each writer loads a snapshot, then its staged commit meets a tombstone."]),
    ]
    assert used_before_defined(crafted) == []
    unlinked = [("00_crafted", [_glossary()]), ("01_next", ["Each writer loads a snapshot."])]
    assert used_before_defined(unlinked) == [
        "01_next markdown cell 0: 'snapshot' used before it is defined"
    ]


def test_notebook_00_links_the_glossary_in_its_first_cell():
    assert GLOSSARY_LINK.search(workbook_notebooks()[0][1][0])


# ---------------------------------------------------------------------------------------------
# The glossary, and the pages a reader reads outside the notebooks
# ---------------------------------------------------------------------------------------------


def undefined_in_glossary(text: str) -> list[str]:
    return [
        term
        for term, pattern in GLOSSARY_TERMS.items()
        if not re.search(rf"\*\*(?:the )?{pattern}\*\*", text, re.IGNORECASE)
    ]


def test_the_glossary_defines_every_term():
    assert undefined_in_glossary(GLOSSARY.read_text(encoding="utf-8")) == []


def used_before_the_glossary(name: str, text: str) -> list[str]:
    """``"<page>: '<term>' used before the glossary is linked"`` for each term a page uses before its
    first link to the glossary, unless it defines the term in bold first."""
    link = GLOSSARY_LINK.search(text)
    linked_at = link.start() if link else len(text)
    problems = []
    for term, pattern in GLOSSARY_TERMS.items():
        use = re.search(rf"\b{pattern}\b", text, re.IGNORECASE)
        definition = re.search(rf"\*\*(?:the )?{pattern}\*\*", text, re.IGNORECASE)
        if (
            use
            and use.start() < linked_at
            and not (definition and definition.start() <= use.start())
        ):
            problems.append(f"{name}: '{term}' used before the glossary is linked")
    return problems


def reader_pages() -> list:
    pages = [
        config.ROOT / "README.md",
        *sorted((config.ROOT / "docs").glob("*.md")),
        config.NOTEBOOKS_DIR / "README.md",
    ]
    return [page for page in pages if page != GLOSSARY]


def test_readme_docs_and_the_notebooks_readme_link_the_glossary_before_its_terms():
    problems = []
    for page in reader_pages():
        problems += used_before_the_glossary(
            str(page.relative_to(config.ROOT)), page.read_text(encoding="utf-8")
        )
    assert problems == []


def test_a_page_that_uses_a_term_before_the_glossary_is_found():
    page = "# A page\nThe seeds' writers race from one snapshot.\n\nTerms: [glossary](glossary.md). A tombstone."
    assert used_before_the_glossary("crafted.md", page) == [
        "crafted.md: 'seeds' used before the glossary is linked",
        "crafted.md: 'snapshot' used before the glossary is linked",
    ]
    assert used_before_the_glossary(
        "crafted.md", page.replace("one snapshot", "one **snapshot** (defined here)")
    ) == ["crafted.md: 'seeds' used before the glossary is linked"]
    assert undefined_in_glossary(
        GLOSSARY.read_text(encoding="utf-8").replace("**tombstone**", "tombstone")
    ) == ["tombstone"]


# ---------------------------------------------------------------------------------------------
# Exercises use what the lessons showed
# ---------------------------------------------------------------------------------------------

SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def helper_names() -> set[str]:
    """Every public name ``helpers/`` defines at module or class level: functions, classes,
    constants, dataclass fields (the names a learner can only know from the workbook)."""
    names: set[str] = set()

    def collect(statements) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.ClassDef):
                names.add(node.name)
                collect(node.body)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.Assign):
                names.update(target.id for target in node.targets if isinstance(target, ast.Name))

    for path in (config.ROOT / "helpers").rglob("*.py"):
        collect(ast.parse(path.read_text()).body)
    return {name for name in names if not name.startswith("_")}


def _shown(cell: dict) -> set[str]:
    """The words a lesson cell shows: its code and printed output, or its markdown's code spans."""
    text = "".join(cell["source"])
    if cell["cell_type"] == "markdown":
        return set(re.findall(r"\w+", " ".join(re.findall(r"`([^`]+)`", text))))
    for output in cell.get("outputs", []):
        text += "\n" + "".join(output.get("text") or output.get("data", {}).get("text/plain") or "")
    return set(re.findall(r"\w+", text))


def _libraries(tree: ast.AST) -> set[str]:
    """Names bound by imports of anything but ``helpers`` (``pq``, ``pd``): their attributes are theirs."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound |= {
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if not alias.name.startswith("helpers")
            }
        elif isinstance(node, ast.ImportFrom) and not (node.module or "").startswith("helpers"):
            bound |= {alias.asname or alias.name for alias in node.names}
    return bound


def unseen_in_answers(
    notebooks: list[tuple[str, list[dict]]], helpers: set[str]
) -> dict[str, list[str]]:
    """``{"<notebook> cell <n>": [names]}``: what each answer uses that no lesson cell up to its
    notebook showed."""
    seen: set[str] = set()
    libraries: set[str] = set()
    found = {}
    for name, cells in notebooks:
        exercises = next(
            (
                i
                for i, cell in enumerate(cells)
                if cell["cell_type"] == "markdown"
                and "".join(cell["source"]).startswith("## Exercises")
            ),
            len(cells),
        )
        for cell in cells[:exercises]:
            seen |= _shown(cell)
            if cell["cell_type"] == "code":
                try:
                    libraries |= _libraries(ast.parse("".join(cell["source"])))
                except SyntaxError:  # a magic or a shell line
                    pass
        for number, cell in enumerate(cells[exercises:], start=exercises):
            text = "".join(cell["source"])
            answer = SOLUTION.search(text)
            if cell["cell_type"] != "code" or not answer:
                continue
            whole = ast.parse(re.sub(r"### (BEGIN|END) SOLUTION", "", text))
            theirs = libraries | _libraries(whole)
            bound = {
                node.id
                for node in ast.walk(whole)
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
            }
            bound |= {node.name for node in ast.walk(whole) if isinstance(node, ast.FunctionDef)}
            bound |= {
                arg.arg
                for node in ast.walk(whole)
                if isinstance(node, (ast.FunctionDef, ast.Lambda))
                for arg in node.args.args
            }
            used = set()
            for node in ast.walk(ast.parse(textwrap.dedent(answer.group(1)))):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in helpers
                    and not (isinstance(node.value, ast.Name) and node.value.id in theirs)
                ):
                    used.add(node.attr)
                elif (
                    isinstance(node, ast.Name)
                    and isinstance(node.ctx, ast.Load)
                    and node.id in helpers
                    and node.id not in bound
                ):
                    used.add(node.id)
                elif (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and re.fullmatch(r"[A-Za-z_]\w*", node.value)
                ):
                    used.add(node.value)  # a column, a key, an attribute by name
            unseen = sorted(used - seen)
            if unseen:
                found[f"{name} cell {number}"] = unseen
    return found


def _all_cells() -> list[tuple[str, list[dict]]]:
    return [
        (path.stem, json.loads(path.read_text())["cells"])
        for path in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    ]


def test_every_exercise_uses_only_what_a_lesson_showed():
    assert unseen_in_answers(_all_cells(), helper_names()) == {}


def _cell(kind: str, text: str, outputs: list | None = None) -> dict:
    cell = {"cell_type": kind, "source": [text], "metadata": {}}
    if kind == "code":
        cell["outputs"] = outputs or []
    return cell


EXERCISE = _cell("markdown", "## Exercises\nFind the orphans.")


def _answer(code: str) -> dict:
    return _cell(
        "code",
        f"from helpers import delta_log\nstore = storage.table_store(uri)\n### BEGIN SOLUTION\n{code}\n### END SOLUTION\n",
    )


def test_an_answer_calling_a_helper_no_lesson_called_is_found():
    crafted = [
        (
            "03_crafted",
            [
                _cell("code", "audit = audit.audit(run)"),
                EXERCISE,
                _answer(
                    "commits = delta_log.commit_files(store)\nadded = audit.parse_commit(1, b'').added"
                ),
            ],
        )
    ]
    assert unseen_in_answers(crafted, helper_names()) == {
        "03_crafted cell 2": ["added", "commit_files", "parse_commit"]
    }


def test_an_answer_is_solvable_once_a_lesson_shows_it_in_code_output_or_a_code_span():
    lessons = [
        _cell("code", "commits = delta_log.commit_files(store)"),
        _cell(
            "code",
            "print(parsed)",
            [{"output_type": "stream", "name": "stdout", "text": ["Commit(added=[...])"]}],
        ),
        _cell("markdown", "`audit.parse_commit(version, body)` reads one commit file."),
    ]
    crafted = [
        ("01_lesson", lessons),
        (
            "03_crafted",
            [
                EXERCISE,
                _answer(
                    "commits = delta_log.commit_files(store)\nadded = audit.parse_commit(1, b'').added"
                ),
            ],
        ),
    ]
    assert unseen_in_answers(crafted, helper_names()) == {}


def test_a_column_no_lesson_displayed_is_found_and_a_later_lesson_does_not_count():
    crafted = [
        (
            "07_crafted",
            [
                _cell("code", "claims = gate.lock_requests(uri)"),
                EXERCISE,
                _answer('won = set(claims.loc[claims["status"] == 200, "temp_path"])'),
            ],
        ),
        ("08_later", [_cell("markdown", "`temp_path` and `status`")]),
    ]
    assert unseen_in_answers(crafted, helper_names()) == {
        "07_crafted cell 2": ["status", "temp_path"]
    }


def test_a_library_function_of_the_same_name_as_a_helper_is_not_a_helper():
    assert "read_table" in helper_names()  # helpers.matrix.deltars.read_table
    crafted = [
        (
            "05_crafted",
            [
                _cell("code", "import pyarrow.parquet as pq"),
                EXERCISE,
                _answer('rows = pq.read_table("t.parquet")'),
            ],
        )
    ]
    assert unseen_in_answers(crafted, helper_names()) == {}
