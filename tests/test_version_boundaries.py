"""Version boundaries have one home, :mod:`helpers.page.boundaries` (with the eras of :mod:`helpers.ground.eras`):
every "since", "from", "until", "up to", "before" or "A to B" statement about a release of
deltalake, Daft or Delta Spark in the workbook's prose names a release that the register names on
the right side of a boundary, and names it in full (``1.6.1``, not ``1.6``).

* a change begins at a boundary's first release (``since 0.23.0``, ``removed in 1.6.1``,
  ``before 0.7.26``, a range's start);
* a behaviour lasts until a boundary's last release before the change (``up to 0.14.0``, a range's
  end ``0.15.0 to 1.6.0``);
* an installed era's release may stand on either side (it is measured, not inferred).
"""

from __future__ import annotations

import json
import re

import pytest

from helpers.ground import config, eras
from helpers.page import boundaries

LIBRARY = re.compile(r"deltalake|delta-rs|\bDaft\b|Delta Spark|delta-spark", re.IGNORECASE)
V = r"(\d+\.\d+(?:\.\d+)?)(?![\d.]*\s*(?:s\b|ms\b|%|GB|MB|KB|GiB|MiB))"
LIB = r"(?:(?:deltalake|delta-rs|Daft|Delta Spark|delta-spark|release)\s+)?"
FIRST = re.compile(
    rf"\b(?:since|from|as of|before|(?:removed|dropped|added|introduced|fixed|replaced|became)\b[^.;]{{0,60}}?\bin)\s+{LIB}{V}",
    re.I,
)
LAST = re.compile(rf"\b(?:until|up to|through)\s+{LIB}\**{LIB}{V}", re.I)
RANGE = re.compile(r"(\d+\.\d+\.\d+)\s+to\s+" + LIB + r"(\d+\.\d+\.\d+)")
LOOSE = re.compile(r"\b(?:deltalake|delta-rs)\s+(\d+\.\d+)(?![\d.])", re.I)


def _firsts() -> set[str]:
    return {b.version for b in boundaries.BOUNDARIES} | {
        era.deltalake_version for era in eras.ALL_ERAS.values()
    }


def _lasts() -> set[str]:
    return {b.last_before for b in boundaries.BOUNDARIES if b.last_before} | {
        era.deltalake_version for era in eras.ALL_ERAS.values()
    }


def contradictions(text: str) -> list[str]:
    """Each statement of ``text`` whose version the register does not put where the statement does."""
    found = []
    firsts, lasts = _firsts(), _lasts()
    for sentence in re.split(
        r"(?<=[.;!?])\s+|\n(?=\s*(?:$|[-|#*]|\d+\.\s))", text
    ):  # sentences, rows, items
        if not LIBRARY.search(sentence):
            continue
        flat = " ".join(sentence.replace("*", "").split())
        for match in LOOSE.finditer(flat):
            found.append(
                f"{match.group(0)!r} names no release (say which: the register has x.y.z): {flat[:160]}"
            )
        for pattern, known, side in (
            (FIRST, firsts, "first release"),
            (LAST, lasts, "last release before a change"),
        ):
            for match in pattern.finditer(flat):
                if match.group(1).count(".") < 2:
                    found.append(
                        f"{match.group(0)!r} names no release (say which: the register has x.y.z): {flat[:160]}"
                    )
                elif match.group(1) not in known:
                    found.append(
                        f"{match.group(0)!r}: {match.group(1)} is no boundary's {side}: {flat[:160]}"
                    )
        for match in RANGE.finditer(flat):
            start, end = match.groups()
            if start not in firsts or end not in lasts:
                found.append(
                    f"{match.group(0)!r}: a range must run from a first release to a last one: {flat[:160]}"
                )
    return found


def prose() -> dict[str, str]:
    """Every text a learner reads: the notebooks' markdown, the READMEs, docs/, the solutions, findings/."""
    texts = {}
    for path in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        for number, cell in enumerate(cells):
            if cell["cell_type"] == "markdown":
                texts[f"{path.name} cell {number}"] = "".join(cell["source"])
    for pattern in (
        "README.md",
        "notebooks/README.md",
        "notebooks/solutions/*.md",
        "docs/*.md",
        "findings/**/*.md",
    ):
        for path in sorted(config.ROOT.glob(pattern)):
            texts[str(path.relative_to(config.ROOT))] = path.read_text()
    return texts


def test_every_version_boundary_in_the_prose_agrees_with_the_register():
    found = {
        where: problems for where, text in prose().items() if (problems := contradictions(text))
    }
    assert found == {}


@pytest.mark.parametrize(
    "sentence, problem",
    [
        ("deltalake removed the DynamoDB log store in 1.6.", "names no release"),
        ("Since deltalake 1.6.0 the DynamoDB log store is gone.", "no boundary's first release"),
        ("The old lock lasted up to deltalake 0.14.2.", "no boundary's last release"),
        ("deltalake 0.15.0 to 1.4.0 share the lock table with Spark.", "a range must run"),
        (
            "Conditional put is the S3 default in deltalake from 0.23.1 on.",
            "no boundary's first release",
        ),
    ],
)
def test_a_hand_typed_boundary_that_contradicts_the_register_is_found(sentence, problem):
    found = contradictions(sentence)
    assert len(found) == 1 and problem in found[0], found


@pytest.mark.parametrize(
    "sentence",
    [
        "deltalake 1.6.1 removed the DynamoDB log store; 0.15.0 to 1.6.0 speak Delta Spark's protocol.",
        "Conditional put is the S3 default since deltalake 0.23.0, and up to 0.14.0 the lock was the old crate.",
        "Two OPTIMIZEs both commit with deltalake 1.6.4 to 1.6.6.",
        "A timeout of 0.3 s passes on one machine; Spark 4.2 needs Java 17.",
    ],
)
def test_statements_the_register_backs_pass(sentence):
    assert contradictions(sentence) == []
