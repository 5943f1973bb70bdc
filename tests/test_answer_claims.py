"""docs/answer.md against the notebooks it cites: every cell's verdict is what its section says.

Each cell with a section names the words of that section that state its verdict (``Cell.claim``: a
check's ``claim``, or :data:`helpers.page.decision.MATRIX_CLAIMS` for a matrix cell). The test finds them
in the section (its markdown and its committed outputs, from its heading to the next heading of the
same level), takes the sentence they stand in, and classes that sentence with a vocabulary of its
own, written here and not read from helpers.page.decision: "nothing lost", "0 lost" and "every batch is in
the table once" say no loss, "lost", "gone", "cannot be read" say a loss, "twice" duplicated rows,
"come back" a wrong result, "refused" or "fails loudly" a refusal, "told it failed ... in the log" a
misreport. A sentence that says "nothing lost" can then never back a "loses data" cell, nor one that
says "lost" a "safe" cell.
"""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from helpers.ground import config
from helpers.page import decision, notebook_sections

HEADING = re.compile(r"^(#{2,4}) (.+)$", re.M)
ANCHOR = re.compile(r"\s*<a id=\"[\w-]+\"></a>$")
"""A heading's anchor (``<a id="section-5"></a>``), which the section's heading text leaves out."""
NO_LOSS = re.compile(
    r"nothing (?:is )?lost|(?:loses|lose|lost) nothing|no rows? (?:is |are )?lost|\b0 (?:[\w-]+ ){0,2}lost|without los(?:ing|s)"
    r"|\blost:? 0\b|never lost|los(?:e|es|t|ing) (?:the|a) race"
    r"|\b(?:every|each)\b[^.;:]{0,60}\b(?:is|are) in the table once\b",
    re.I,
)
LOSS = re.compile(
    r"\blos(?:e|es|t|ing)\b|\bgone\b|cannot be read|can no longer be read|unreadable", re.I
)
DUPLICATED = re.compile(r"\btwice\b|duplicat", re.I)
WRONG = re.compile(r"comes? back|back in the table|resurrect", re.I)
MISREPORTED = re.compile(
    r"\b(?:told|say|says|reports?)\b.{0,80}\b(?:fail\w*|already exists)\b.{0,120}"
    r"\b(?:is in the (?:log|table)|in the log)\b",
    re.I,
)
REFUSAL = re.compile(r"refus|\bloud|\bfails?\b", re.I)
SERIAL = re.compile(r"both commit|equals a serial order", re.I)


def claim_classes(sentence: str) -> set[str]:
    """What a sentence says happened: a set of "no loss", "loss", "duplicates", "wrong", "misreport",
    "refused", "both commit"."""
    found = set()
    if NO_LOSS.search(sentence):
        found.add("no loss")
    if LOSS.search(NO_LOSS.sub("", sentence)):
        found.add("loss")
    for name, pattern in (
        ("duplicates", DUPLICATED),
        ("wrong", WRONG),
        ("misreport", MISREPORTED),
        ("refused", REFUSAL),
        ("both commit", SERIAL),
    ):
        if pattern.search(sentence):
            found.add(name)
    return found


def agrees(verdict: str, classes: set[str]) -> bool:
    """Does a sentence of these classes back a cell of this verdict?"""
    bad = {"loss", "duplicates", "wrong"}
    return {
        decision.SAFE: bool(classes & {"no loss", "both commit"})
        and not classes & (bad | {"misreport"}),
        decision.REFUSED: "refused" in classes and not classes & bad,
        decision.BY_DESIGN: "refused" in classes and not classes & (bad | {"both commit"}),
        decision.LOSES: "loss" in classes and "no loss" not in classes,
        decision.DUPLICATES: "duplicates" in classes and "loss" not in classes,
        decision.WRONG: "wrong" in classes and "loss" not in classes,
        decision.MISREPORTS: "misreport" in classes and "loss" not in classes,
    }[verdict]


def _sentences(text: str) -> list[str]:
    text = re.sub(r"\n\s*[-*] ", "\n\n", text)  # a bullet is a sentence of its own
    out = []
    for block in re.split(r"\n\s*\n", text):
        block = re.sub(r"\s+", " ", block.replace("**", "")).strip()
        out += [s for s in re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+", block) if s]
    return out


def section_sentences(notebook: dict, section: notebook_sections.Section) -> list[str]:
    """The sentences of a section: its markdown, sentence by sentence, and its committed outputs (text
    and Markdown), line by line; from its heading to the next heading of the same or a higher level."""
    level, found = None, []
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for match in HEADING.finditer(source):
                if level is None and ANCHOR.sub("", match.group(2)) == section.heading:
                    level, source = len(match.group(1)), source[match.end() :]
                    break
                if level is not None and len(match.group(1)) <= level:
                    return found + _sentences(source[: match.start()])
            if level is not None:
                found += _sentences(source)
            continue
        if level is None:
            continue
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) or "".join(
                output.get("data", {}).get("text/markdown", "")
            )
            found += [s for line in text.splitlines() for s in _sentences(line)]
    assert level is not None, f"{section.notebook} has no section {section.heading}"
    return found


def _notebook(name: str) -> dict:
    return json.loads((config.NOTEBOOKS_DIR / name).read_text(encoding="utf-8"))


def assert_cells_agree_with_their_sections(grid: dict, notebooks=_notebook) -> int:
    """Every cell with a section: its claim is in a sentence of that section, and the sentence says
    its verdict. Returns the number of cells checked."""
    checked, cache = 0, {}
    for (row, column), cell in grid.items():
        if cell.section is None or cell.verdict == decision.NOT_MEASURED:
            continue
        where = f"{row} / {column} ({cell.verdict}, {cell.section.label})"
        assert cell.claim, f"{where}: the cell names no words of its section that state its verdict"
        key = (cell.section.notebook, cell.section.heading)
        if key not in cache:
            cache[key] = section_sentences(notebooks(cell.section.notebook), cell.section)
        claim = re.sub(r"\s+", " ", cell.claim.replace("**", ""))
        holding = [s for s in cache[key] if claim in s]
        assert holding, f"{where}: {cell.section.label} does not say {cell.claim!r}"
        classes = set().union(*(claim_classes(s) for s in holding))
        assert agrees(cell.verdict, classes), (
            f"{where}: {cell.section.label} says {holding[0]!r}, which reads as {sorted(classes)}, not {cell.verdict!r}"
        )
        checked += 1
    return checked


def test_every_cell_says_what_its_section_says():
    assert assert_cells_agree_with_their_sections(decision.grid_of(decision.Results.load())) >= 60


def _with_sentence(notebook: str, old: str, new: str):
    """A loader of notebooks in which the markdown cell of ``notebook`` that says ``old`` (matched
    across its line breaks) says ``new`` instead; fails loudly if no cell says it."""
    pattern = r"\s+".join(map(re.escape, old.split()))

    def notebooks(name: str) -> dict:
        loaded = _notebook(name)
        if name == notebook:
            cells = [
                c
                for c in loaded["cells"]
                if c["cell_type"] == "markdown" and re.search(pattern, "".join(c["source"]))
            ]
            assert cells, (notebook, old)
            cells[0]["source"] = [re.sub(pattern, new, "".join(cells[0]["source"]))]
        return loaded

    return notebooks


def test_a_section_that_says_nothing_lost_cannot_back_a_loses_data_cell():
    """The contradiction this page once had: 13 §5 said a zero-retention VACUUM loses nothing, while
    the page's Delta Spark cells said it loses data. Say so again in 13 §5 and the test fails."""
    grid = decision.grid_of(decision.Results.load())
    broken = _with_sentence(
        notebook_sections.N13,
        decision.MATRIX_CLAIMS["vacuum", decision.LOSES],
        "the append then commits a version whose data file is gone: loudly, nothing lost.",
    )
    with pytest.raises(AssertionError, match=r"vacuum \(loses data, 13 §5\): 13 §5 does not say"):
        assert_cells_agree_with_their_sections(grid, broken)
    kept = _with_sentence(
        notebook_sections.N13, "the append then commits", "nothing lost: the append then commits"
    )
    with pytest.raises(AssertionError, match=r"vacuum \(loses data, 13 §5\).*reads as .*'no loss'"):
        assert_cells_agree_with_their_sections(grid, kept)


def test_a_safe_cell_whose_section_reports_a_loss_is_caught():
    grid = decision.grid_of(decision.Results.load())
    misread = {
        key: dataclasses.replace(cell, verdict=decision.SAFE)
        if key == ("spark-several", "append")
        else cell
        for key, cell in grid.items()
    }
    with pytest.raises(
        AssertionError, match=r"spark-several / append \(safe, 09 §3\).*reads as \['loss'"
    ):
        assert_cells_agree_with_their_sections(misread)


def test_a_claim_the_section_does_not_make_is_caught():
    grid = decision.grid_of(decision.Results.load())
    cell = grid["rs-lock-interop", "append"]
    moved = {
        **grid,
        ("rs-lock-interop", "append"): dataclasses.replace(
            cell, claim="the writer is told it lost the race"
        ),
    }
    with pytest.raises(
        AssertionError, match="12 appendix C does not say 'the writer is told it lost the race'"
    ):
        assert_cells_agree_with_their_sections(moved)
    said = {
        **grid,
        ("rs-lock-interop", "append"): dataclasses.replace(
            cell, claim="the writer is told it committed"
        ),
    }
    with pytest.raises(
        AssertionError, match=r"12 appendix C says .*Up to deltalake 1\.5\.0.*reads as \[\]"
    ):
        assert_cells_agree_with_their_sections(
            said
        )  # up to 1.5.0 the writer is told it committed: no misreport


@pytest.mark.parametrize(
    "sentence, classes",
    [
        ("Writers committed; 80 rows added, 0 lost.", {"no loss"}),
        ("several drivers still lose commits, and none of them notices", {"loss"}),
        ("a writer that loses the race re-reads the log and tries again", {"no loss"}),
        ("every compacted row is then in the table twice", {"duplicates"}),
        ("it fails (`missing data file`): loudly, nothing lost.", {"refused", "no loss"}),
        ("another may say it failed although its commit is in the log", {"misreport"}),
        ("Every batch of both engines is in the table once, one commit per version.", {"no loss"}),
        ("each batch is in the table twice", {"duplicates"}),
    ],
)
def test_the_vocabulary_reads_sentences_as_a_reader_would(sentence, classes):
    assert claim_classes(sentence) == classes


def test_a_refused_by_design_cell_whose_section_says_both_commit_is_caught():
    """A cell refused by design is backed by a sentence that says "refused", and never by one that also
    says both commit: crafted so in 15 §8, the maintenance cell is caught."""
    grid = decision.grid_of(decision.Results.load())
    assert grid["spark-catalog", "optimize"].verdict == decision.BY_DESIGN
    assert agrees(decision.BY_DESIGN, {"refused"}) and not agrees(
        decision.BY_DESIGN, {"both commit"}
    )
    broken = _with_sentence(
        notebook_sections.S15_8.notebook,
        "OPTIMIZE (Z-order too) and REORG are refused with",
        "OPTIMIZE (Z-order too) and REORG are refused once, then both commit, with",
    )
    with pytest.raises(
        AssertionError,
        match=r"spark-catalog / optimize \(refused by design, 15 §8\).*reads as \['both commit', 'refused'\]",
    ):
        assert_cells_agree_with_their_sections(grid, broken)
