"""The reading path a learner takes, notebook 00 first, then 01, 02, ... in order:

* every term of the workbook is defined before a notebook's prose uses it. A term is defined where
  a markdown cell names it in bold (``**orphan**``, ``**commit gate**``); a use is the word in any
  markdown cell, code spans included. A cell that defines a term may use it. The terms of
  :data:`TERMS` are defined in notebook 00 itself; those of :data:`GLOSSARY_ONLY` are defined once a
  cell links the glossary (``docs/glossary.md``, which notebook 00's first cell links);
* a term is met where it is taught, or explained where it is first used: the glossary entry of a
  term a notebook teaches ends with that notebook's number (the sentence ``Notebook 13.``,
  :data:`TAUGHT_IN`). Where the reading path first uses a term (notebook N, or N's written
  answers), a notebook up to N teaches it, or that cell defines it in bold or links its entry (a
  glossary link whose text names the term): a term taught by a later notebook, or by none, is
  never met bare;
* docs/glossary.md defines every term (:data:`GLOSSARY_TERMS`) in bold, and README, every other page
  of docs/ and notebooks/README.md use none of them before they link the glossary (or define the
  term in bold themselves); the answer page's row labels, as docs/answer.html offers them, come
  after its link to the glossary;
* every name README and the answer page (its text and row labels) use for an API, a request or a
  callback (``PutItem``, ``foreachBatch``, :data:`API_NAME`) and every HTTP status they cite has a
  glossary entry, as every error class the learner's prose names has one;
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

from helpers.ground import config

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
    "solutions edition": r"solutions editions?",
    "student edition": r"student editions?",
    "ConcurrentAppend": r"ConcurrentAppend(?:Exception)?",
    "ConcurrentDeleteRead": r"ConcurrentDeleteRead(?:Exception)?",
    "ConcurrentDeleteDelete": r"ConcurrentDeleteDelete(?:Exception)?",
    "CommitFailedError": r"CommitFailedError",
    "delete_all": r"delete_all",
    "duplicated rows": r"duplicated rows",
    "lost update": r"lost updates?",
    "resurrected rows": r"resurrected rows",
    "removed twice": r"removed twice",
    "broken log": r"broken logs?",
    "ABFS": r"(?-i:ABFS)",
    "Daft": r"(?-i:Daft)",
    "STS": r"(?-i:STS)",
    "delete marker": r"delete markers?",
    "DeltaOps": r"DeltaOps",
    "anomaly": r"anomal(?:y|ies)",
    "auditor": r"auditors?",
    "catalog-managed table": r"catalog-managed tables?",
    "commit protocol": r"commit protocols?",
    "commit retries": r"commit retries",
    "committer": r"committers?",
    "conflict matrix": r"conflict matrix",
    "DynamoDB log store": r"DynamoDB log stores?",
    "idempotent-write id": r"idempotent-write ids?",
    "interleaving": r"interleavings?",
    "operation names": r"operation names",
    "serial limit": r"serial limits?",
    "time travel": r"time travel",
    "torture run": r"torture runs?",
    "unsafe rename": r"unsafe renames?",
    "Delta Kernel": r"(?-i:Delta Kernel)",
    "DeltaError": r"DeltaError",
    "DeltaProtocolError": r"DeltaProtocolError",
    "FileAlreadyExistsException": r"FileAlreadyExistsException",
    "FileNotFoundError": r"FileNotFoundError",
    "TableNotFoundError": r"TableNotFoundError",
    "ValidationException": r"ValidationException",
    "CommitVersionConflictException": r"CommitVersionConflictException",
    "InvalidParameterValueException": r"InvalidParameterValueException",
    "OSError": r"(?-i:OSError)",
    "conflict checker": r"conflict[- ]checkers?",
    "change data feed": r"change data feeds?",
    "commit coordinator": r"commit coordinators?",
    "TTL": r"(?-i:TTL)",
    "Ivy": r"(?-i:Ivy)",
    "PutItem": r"PutItem",
    "foreachBatch": r"foreachBatch",
    "429": r"429",
    "UCSingleCatalog": r"UCSingleCatalog",
    "deletion vectors": r"deletion vectors?",
    "row tracking": r"row tracking",
    "Z-order": r"Z-order(?:s|ed)?",
}
"""Terms the glossary defines for every reader (with one preferred name per idea: "conditional put",
whose synonyms are the four after it). Acronyms and names match in their own case only (``(?-i:...)``):
"sts" in a host name is not the service."""
FORMS = {
    "staged": (
        "_commit_<uuid>.json.tmp",
        ".tmp/N.json.<uuid>",
        "_staged_commits/",
        "_queue/ready/",
    ),
    "conditional put": (
        "conditional write",
        "put-if-absent",
        "create-if-absent",
        "If-None-Match: *",
        "PutMode::Create",
        "copy-if-absent",
    ),
    "catalog-managed table": ("catalogManaged", "catalogOwned-preview", "_staged_commits/"),
    "DynamoDB log store": ("S3DynamoDBLogStore", "AWS_S3_LOCKING_PROVIDER=dynamodb"),
    "idempotent-write id": ("Transaction(app_id, version)", "txnAppId", "txnVersion"),
    "ConcurrentAppend": ("ConcurrentAppendException", "concurrent transactions added new data"),
    "ConcurrentDeleteRead": ("ConcurrentDeleteReadException", "deleted data this operation read"),
    "ConcurrentDeleteDelete": (
        "ConcurrentDeleteDeleteException",
        "deleted the same data your transaction deletes",
    ),
    "ABFS": ("abfss://", "abfs://"),
    "FileNotFoundError": ("FileNotFoundException", "FILE_NOT_EXIST"),
    "solutions edition": ("notebooks/",),
    "student edition": ("student/",),
}
"""Each glossary entry (by its heading) and the forms it must name: every name the term takes in the
engines, the stores and the workbook's pages (a staged commit is deltalake's ``_commit_<uuid>.json.tmp``,
Delta Spark's ``.tmp/N.json.<uuid>`` and a catalog's ``_staged_commits/``). The entries whose forms
the code defines (the conflict matrix's operations, its anomaly kinds and conflict names) are held to
the code by :func:`code_forms`."""
GLOSSARY_TERMS = {**TERMS, **GLOSSARY_ONLY}
EVERYDAY = {
    "acknowledged",
    "append",
    "commit",
    "conflict",
    "driver",
    "emulator",
    "layout",
    "MERGE",
    "OPTIMIZE",
    "VACUUM",
    "writer",
}
"""Glossary entries whose word prose also uses in its everyday (or SQL) sense before a page can link
the glossary ("the writer commits"): defined for the reader who looks, not checked for order."""
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


def reading_path() -> list[tuple[str, list[str]]]:
    """The notebooks in order, each followed by its written answers (``solutions/NN.md``, one text)."""
    path = []
    for name, cells in workbook_notebooks():
        path.append((name, cells))
        answers = config.NOTEBOOKS_DIR / "solutions" / f"{name[:2]}.md"
        if answers.exists():
            path.append((f"solutions/{answers.name}", [answers.read_text(encoding="utf-8")]))
    return path


def test_every_term_is_defined_before_the_prose_uses_it():
    path = reading_path()
    assert any(name.startswith("solutions/") for name, _ in path)
    assert used_before_defined(path) == []


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
# A term's first use, across the notebooks' order
# ---------------------------------------------------------------------------------------------

TAUGHT_IN = re.compile(r"(?<![\w-])Notebook (\d\d)\.(?:\s|<!--.*?-->)*$", re.S)
"""The field of a glossary entry that names the notebook teaching its terms: the sentence
``Notebook NN.`` that ends the entry (a verdict tag may follow it). An entry without it is taught
by no notebook: the glossary alone defines it."""


def entry_of(pattern: str, entries: dict[str, str]) -> str | None:
    """The heading of the entry that defines a term: the one it names, else the first that names
    it in bold or in code (a synonym, such as ``create-if-absent`` under "conditional put")."""
    for heading in entries:
        if re.fullmatch(pattern, heading, re.IGNORECASE):
            return heading
    return next(
        (
            heading
            for heading, body in entries.items()
            if re.search(rf"\*\*(?:the )?{pattern}\*\*|`{pattern}`", body, re.IGNORECASE)
        ),
        None,
    )


def teaching_notebooks(glossary: str) -> dict[str, int | None]:
    """``{term: NN}``: the notebook that teaches each term, by its entry's field
    (:data:`TAUGHT_IN`), ``None`` for a term no notebook teaches."""
    entries = glossary_entries(glossary)
    taught = {}
    for term, pattern in GLOSSARY_TERMS.items():
        heading = entry_of(pattern, entries)
        field = TAUGHT_IN.search(entries[heading].strip()) if heading else None
        taught[term] = int(field.group(1)) if field else None
    return taught


def _explained(text: str, pattern: str) -> bool:
    """The cell defines the term in bold or links its glossary entry with a text that names it."""
    return bool(re.search(rf"\*\*(?:the )?{pattern}\*\*", text, re.IGNORECASE)) or any(
        re.search(rf"\b{pattern}\b", link.group(0).split("](")[0], re.IGNORECASE)
        for link in GLOSSARY_LINK.finditer(text)
    )


def unexplained_first_uses(
    path: list[tuple[str, list[str]]], taught: dict[str, int | None]
) -> list[str]:
    """``"<page> markdown cell <n>: '<term>' used bare, ..."`` for each term whose first use on the
    reading path (notebook N's cells, or its written answers) is neither taught by a notebook up to
    N nor defined or linked in that cell. What a reader skips (HTML comments: verdict tags) is no
    use."""
    seen: set[str] = set()
    problems = []
    for name, cells in path:
        notebook = int(re.search(r"\d\d", name).group(0))
        for number, cell in enumerate(cells):
            text = re.sub(r"<!--.*?-->", " ", cell, flags=re.S)
            for term, pattern in GLOSSARY_TERMS.items():
                if term in seen or not re.search(rf"\b{pattern}\b", text, re.IGNORECASE):
                    continue
                seen.add(term)
                teacher = taught.get(term)
                if (teacher is not None and teacher <= notebook) or _explained(text, pattern):
                    continue
                taught_later = (
                    f"before notebook {teacher:02d}" if teacher is not None else "untaught"
                )
                problems.append(
                    f"{name} markdown cell {number}: '{term}' used bare, {taught_later}"
                )
    return problems


def test_every_term_is_taught_before_or_explained_at_its_first_use():
    taught = teaching_notebooks(GLOSSARY.read_text(encoding="utf-8"))
    assert taught["conflict matrix"] == 13 and taught["snapshot"] is None
    problems = unexplained_first_uses(reading_path(), taught)
    assert problems == [], "define each in bold there, or link its glossary entry"


def test_a_term_used_before_the_notebook_that_teaches_it_is_found():
    taught = {"conflict matrix": 13, "snapshot": None, "lease": 6}
    crafted = [
        ("00_crafted", ["Section 5 previews the conflict matrix.", "The conflict matrix again."]),
        ("06_crafted", ["Each writer holds a lease."]),
        ("solutions/06.md", ["From one snapshot."]),
    ]
    assert unexplained_first_uses(crafted, taught) == [
        "00_crafted markdown cell 0: 'conflict matrix' used bare, before notebook 13",
        "solutions/06.md markdown cell 0: 'snapshot' used bare, untaught",
    ]
    crafted[0] = (
        "00_crafted",
        ["Section 5 previews the [conflict matrix](../docs/glossary.md#conflict-matrix)."],
    )
    crafted[2] = ("solutions/06.md", ["From one **snapshot**, the version a writer loaded."])
    assert unexplained_first_uses(crafted, taught) == []
    unnamed = [("00_crafted", ["The conflict matrix, in the [glossary](../docs/glossary.md)."])]
    assert len(unexplained_first_uses(unnamed, taught)) == 1  # the link's text must name it


def test_a_notebooks_number_in_its_entry_says_which_notebook_teaches_a_term():
    glossary = GLOSSARY.read_text(encoding="utf-8")
    entries = glossary_entries(glossary)
    assert TAUGHT_IN.search(entries["conflict matrix"].strip())
    assert (
        teaching_notebooks(glossary)["create-if-absent"]
        == teaching_notebooks(glossary)["conditional put"]
    )  # a synonym is taught with its entry
    entry = entries["conflict matrix"]
    untaught = glossary.replace(entry, TAUGHT_IN.sub("", entry.rstrip()) + "\n\n")
    assert teaching_notebooks(untaught)["conflict matrix"] is None


# ---------------------------------------------------------------------------------------------
# The glossary, and the pages a reader reads outside the notebooks
# ---------------------------------------------------------------------------------------------


def undefined_in_glossary(text: str) -> list[str]:
    """The terms the glossary names neither in bold nor in code (its synonyms' two forms)."""
    return [
        term
        for term, pattern in GLOSSARY_TERMS.items()
        if not re.search(rf"\*\*(?:the )?{pattern}\*\*|`{pattern}`", text, re.IGNORECASE)
    ]


def glossary_entries(text: str) -> dict[str, str]:
    """The glossary's entries, by heading: each one's text up to the next heading."""
    parts = re.split(r"^### (.+)$", text, flags=re.M)
    return {heading.strip(): body for heading, body in zip(parts[1::2], parts[2::2])}


def code_forms() -> dict[str, tuple[str, ...]]:
    """The forms the code defines: every operation the conflict matrix races (an ``…_apart`` one as
    ``<operation>_apart``), every anomaly kind it names, every conflict name it reports."""
    from helpers.matrix import classify, operations

    names = {
        "<operation>_apart" if op.apart_of else op.name for op in operations.OPERATIONS.values()
    }
    conflicts = {
        name
        for _, name in classify.CONFLICT_NAMES
        if name.startswith("Concurrent") and name != "ConcurrentTransaction"
    }
    return {
        "operation names": tuple(sorted(names)),
        "anomaly": classify.KINDS,
        "conflict": tuple(sorted(conflicts)),
    }


def missing_forms(text: str, forms: dict[str, tuple[str, ...]]) -> list[str]:
    """``"<entry>: no <form>"`` for each form its glossary entry does not name (or no such entry)."""
    entries = glossary_entries(text)
    problems = []
    for heading, wanted in forms.items():
        if heading not in entries:
            problems.append(f"{heading}: no such entry")
            continue
        problems += [f"{heading}: no {form}" for form in wanted if form not in entries[heading]]
    return problems


def unchecked_entries(text: str) -> list[str]:
    """The glossary's headings that are neither a checked term nor an everyday word."""
    return [
        heading
        for heading in glossary_entries(text)
        if heading not in EVERYDAY
        and not any(re.fullmatch(p, heading, re.IGNORECASE) for p in GLOSSARY_TERMS.values())
    ]


def test_every_glossary_entry_is_a_term_the_order_check_reads():
    assert unchecked_entries(GLOSSARY.read_text(encoding="utf-8")) == []


def test_a_glossary_entry_the_check_does_not_read_is_found():
    text = (
        GLOSSARY.read_text(encoding="utf-8")
        + "\n### write amplification\n\n**write amplification**: ...\n"
    )
    assert unchecked_entries(text) == ["write amplification"]


def test_each_glossary_entry_names_every_form_of_its_term():
    assert missing_forms(GLOSSARY.read_text(encoding="utf-8"), {**FORMS, **code_forms()}) == []


def test_an_entry_missing_a_form_is_found():
    text = GLOSSARY.read_text(encoding="utf-8")
    assert missing_forms(text.replace("`_delta_log/.tmp/N.json.<uuid>`", "a file"), FORMS) == [
        "staged: no .tmp/N.json.<uuid>"
    ]
    forms = code_forms()
    assert "delete_all" in forms["operation names"] and "resurrected rows" in forms["anomaly"]
    assert missing_forms(
        text.replace("`delete_all`", "`delete_every_row`"), {**forms, "no entry": ("x",)}
    ) == ["operation names: no delete_all", "no entry: no such entry"]


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


def test_the_answer_pages_link_the_glossary_before_their_terms():
    """docs/answer.md (and the disagreements page it links) link the glossary before any term, and the
    check sees the terms of their tables: without the links, each is found."""
    from helpers.page import markdown_page

    for page in (markdown_page.PAGE, markdown_page.DISAGREEMENTS_PAGE):
        text = page.read_text(encoding="utf-8")
        assert used_before_the_glossary(page.name, text) == []
        unlinked = GLOSSARY_LINK.sub("", text)
        found = used_before_the_glossary(page.name, unlinked)
        assert f"{page.name}: 'resurrected rows' used before the glossary is linked" in found
    assert "m+S3" not in markdown_page.PAGE.read_text(encoding="utf-8")  # spelled out instead


ERROR_CLASS = re.compile(r"\b(?:[A-Z]\w*(?:Error|Exception)|Concurrent[A-Z]\w*)\b")
"""An error class's name (``CommitFailedError``, ``FileAlreadyExistsException``) or one of Delta's
conflicts (``ConcurrentAppend``), in the prose or its code spans."""
API_NAME = re.compile(
    r"(?<![\w.])[A-Za-z]*[a-z][A-Z][a-z]\w*(?!\w|\.\w|=)"  # PutItem, foreachBatch, UCSingleCatalog
    r"|(?<=HTTP )[45]\d\d\b|(?<='s )[45]\d\d\b"  # HTTP 429, the catalog's 429
)
"""A name README and the answer page use for an API, a request or a callback (a word with a capital
inside it: ``PutItem``, ``foreachBatch``, ``UCSingleCatalog``) or an HTTP status they cite. A part
of a dotted name (``spark.io.delta...ddb.tableName``) or a setting's key (``dataChange=false``) is
the setting's, which its sentence names; so are error classes (:data:`ERROR_CLASS`)."""
NOT_TERMS = {"JupyterLab"}
"""Names :data:`API_NAME` matches that name a program a reader runs, not a term."""


def _unfenced(texts: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(where, re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)) for where, text in texts]


def _read(pages: list) -> list[tuple[str, str]]:
    """``(path from the root, text)`` of each page."""
    return [(str(p.relative_to(config.ROOT)), p.read_text(encoding="utf-8")) for p in pages]


def answer_html_labels(page: str) -> str:
    """What docs/answer.html shows a reader before the answer: its introduction (a link to the
    glossary written as markdown's), then each row's label as its "Store and setting" list offers
    it (``store: setting``, code marks dropped) and the row's name, which its answer repeats."""
    intro = page[page.index("<body>") : page.index("<form")]
    intro = re.sub(r'<a href="(glossary\.md[^"]*)">(.*?)</a>', r"[\2](\1)", intro)
    data = json.loads(re.search(r"const D = (\{.*?\});\n", page, re.S).group(1))
    labels = [f"{r['store']}: {r['setting'].replace('`', '')}\n{r['name']}" for r in data["rows"]]
    return "\n".join([re.sub(r"<[^>]+>", " ", intro), *labels])


def readme_and_answer_page() -> list[tuple[str, str]]:
    """README, docs/answer.md and the page of disagreements it links, and docs/answer.html's row
    labels (:func:`answer_html_labels`), fenced code left out."""
    from helpers.page import html_page, markdown_page

    texts = _read([config.ROOT / "README.md", markdown_page.PAGE, markdown_page.DISAGREEMENTS_PAGE])
    page = html_page.PAGE.read_text(encoding="utf-8")
    return _unfenced([*texts, ("docs/answer.html", answer_html_labels(page))])


def learner_prose() -> list[tuple[str, str]]:
    """``(where, text)``: what a learner reads: README and the answer page
    (:func:`readme_and_answer_page`), the notebooks' markdown and their written answers,
    notebooks/README.md (fenced code left out). The rest of ``docs/`` (troubleshooting, running,
    maintainers' pages) quotes the errors of tools and set-ups, not of the lessons."""
    texts = _read(
        [
            config.NOTEBOOKS_DIR / "README.md",
            *sorted((config.NOTEBOOKS_DIR / "solutions").glob("*.md")),
        ]
    )
    for path in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")):
        texts += [
            (f"{path.relative_to(config.ROOT)} cell {n}", text)
            for n, text in enumerate(_markdown(path))
        ]
    return readme_and_answer_page() + _unfenced(texts)


def names_without_entry(
    texts: list[tuple[str, str]], glossary: str, pattern: re.Pattern = ERROR_CLASS
) -> list[str]:
    """``"<where>: <Name> has no glossary entry"`` at each name's first use (an error class, or what
    ``pattern`` matches), for each one the glossary names neither in a heading, in bold nor in code
    (a word of a code span: ``catalogOwned`` of `` `catalogOwned-preview` ``; a plural counts as its
    singular). Link targets are no text."""
    named = set(re.findall(r"^### (\S+)$", glossary, re.M)) | NOT_TERMS
    named |= set(re.findall(r"\*\*(\w+)\*\*", glossary))
    named |= set(re.findall(r"\w+", " ".join(re.findall(r"`([^`]+)`", glossary))))
    problems, seen = [], set()
    for where, text in texts:
        for name in pattern.findall(re.sub(r"\]\([^)]*\)", "]", text)):
            if name not in named and name.removesuffix("s") not in named and name not in seen:
                problems.append(f"{where}: {name} has no glossary entry")
            seen.add(name)
    return problems


def test_every_error_class_the_prose_names_has_a_glossary_entry():
    texts = learner_prose()
    used = {name for _, text in texts for name in ERROR_CLASS.findall(text)}
    assert {"CommitFailedError", "ConcurrentAppend", "ConcurrentDeleteRead"} <= used
    assert names_without_entry(texts, GLOSSARY.read_text(encoding="utf-8")) == []


def test_an_error_class_without_an_entry_is_found():
    glossary = GLOSSARY.read_text(encoding="utf-8")
    crafted = [
        ("01_crafted cell 3", "The writer fails with `CommitFailedError`."),
        (
            "02_crafted cell 1",
            "Then a `TableVanishedError`, a ConcurrentRenameException, twice: TableVanishedError.",
        ),
    ]
    assert names_without_entry(crafted, glossary) == [
        "02_crafted cell 1: TableVanishedError has no glossary entry",
        "02_crafted cell 1: ConcurrentRenameException has no glossary entry",
    ]
    assert names_without_entry(
        [("x", "a ConcurrentDeleteRead")],
        glossary.replace("ConcurrentDeleteRead", "the read conflict"),
    ) == ["x: ConcurrentDeleteRead has no glossary entry"]


def test_every_name_readme_and_the_answer_page_use_has_a_glossary_entry():
    texts = readme_and_answer_page()
    used = {name for _, text in texts for name in API_NAME.findall(text)}
    assert {"PutItem", "foreachBatch", "UCSingleCatalog", "429"} <= used
    assert names_without_entry(texts, GLOSSARY.read_text(encoding="utf-8"), API_NAME) == []


def test_the_answer_pages_row_labels_come_after_its_link_to_the_glossary():
    from helpers.page import html_page

    page = html_page.PAGE.read_text(encoding="utf-8")
    labels = answer_html_labels(page)
    assert "catalog-managed table" in labels
    assert used_before_the_glossary("docs/answer.html", labels) == []
    unlinked = answer_html_labels(page.replace('href="glossary.md"', 'href="answer.md"'))
    assert (
        "docs/answer.html: 'catalog-managed table' used before the glossary is linked"
        in used_before_the_glossary("docs/answer.html", unlinked)
    )


def test_a_readme_name_missing_from_the_glossary_is_found():
    glossary = GLOSSARY.read_text(encoding="utf-8")
    entries = glossary_entries(glossary)
    without = glossary.replace("### PutItem" + entries["PutItem"], "")
    readme = (
        "moto's conditional PutObject and PutItem are not atomic; Spark's `foreachBatch`. "
        "The catalog's 418 (a teapot), HTTP 429. "
        "Not names: `spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName`, dataChange=false, "
        "[a report](findings/deltalakeLostCommit/REPORT.md)."
    )
    assert names_without_entry([("README.md", readme)], without, API_NAME) == [
        "README.md: PutObject has no glossary entry",
        "README.md: PutItem has no glossary entry",
        "README.md: 418 has no glossary entry",
    ]
    assert names_without_entry([("README.md", readme)], glossary, API_NAME) == [
        "README.md: 418 has no glossary entry"
    ]


def test_a_new_term_the_glossary_does_not_define_is_found():
    glossary = GLOSSARY.read_text(encoding="utf-8")
    for term, crafted in [
        ("delete marker", glossary.replace("**delete marker**", "delete marker")),
        ("STS", glossary.replace("**STS**", "**sts**")),
        ("delete_all", glossary.replace("`delete_all`", "`delete_every_row`")),
    ]:
        assert undefined_in_glossary(crafted) == [term]


def test_a_solutions_page_is_read_after_its_notebook():
    crafted = [
        ("00_crafted", [_glossary().replace("**orphan**", "orphan")]),
        ("solutions/00.md", ["Its orphans stay in the bucket."]),
    ]
    assert used_before_defined(crafted) == [
        "00_crafted markdown cell 0: 'orphan' used before it is defined"
    ]
    crafted[0] = ("00_crafted", [_glossary().replace("- **orphan**: ...", "")])
    assert used_before_defined(crafted) == [
        "solutions/00.md markdown cell 0: 'orphan' used before it is defined"
    ]


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
