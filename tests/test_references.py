"""Every reference a reader can follow leads somewhere.

Read: README.md, docs/*.md, notebooks/README.md, notebooks/solutions/*.md, student/README.md, and
the markdown cells of notebooks/*.ipynb and student/*.ipynb. In them:

* a markdown link ``[text](target)`` to a relative file must name a file or folder that exists;
  its ``#anchor``, if any, an anchor of that file: a heading's slug (GitHub's, HTML tags left out;
  for ``.ipynb``, the markdown cells' headings) or an ``<a id="...">`` in its text (a numbered
  section's heading ends with ``<a id="section-3"></a>``, an appendix's with
  ``<a id="appendix-b"></a>``); a bare ``#anchor`` an anchor of the same file;
* outside code spans, "§N", "section N" (any case; "sections N and M"), "appendix X" ("appendices A, B and C") and
  "cell N" ("cells N and M") must exist in the notebook they refer to. That notebook is the one
  named last before the reference in the same paragraph ("notebook NN", "NN §", "NN appendix",
  "NN cell", or a link to ``NN_*.ipynb``); without one, the notebook the text is written in or
  about (the notebook itself, ``solutions/NN.md``). A reference with neither fails.
  A section N exists when the notebook has a heading ``## N. …``; an appendix X when it has a
  heading ``## Appendix X · …``; a cell N when the notebook has more than N cells (counted from 0,
  as nbformat stores them);
* each notebook's last "Next:" link leads to the next notebook, and 13's to docs/answer.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.ground import config

ROOT = config.ROOT
NOTEBOOKS = ROOT / "notebooks"


# ---------------------------------------------------------------------------------------------
# What is read
# ---------------------------------------------------------------------------------------------


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def documents() -> list[tuple[str, Path, list[str], str | None]]:
    """``(name, path, paragraphs, own notebook number)`` for every text a reader reads."""
    found = []
    markdown = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        NOTEBOOKS / "README.md",
        *sorted((NOTEBOOKS / "solutions").glob("*.md")),
        ROOT / "student" / "README.md",
    ]
    for path in markdown:
        own = path.stem if path.parent.name == "solutions" else None
        found.append(
            (str(path.relative_to(ROOT)), path, _paragraphs(path.read_text(encoding="utf-8")), own)
        )
    for folder in (NOTEBOOKS, ROOT / "student"):
        for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
            for number, cell in enumerate(_cells(path)):
                if cell["cell_type"] == "markdown":
                    found.append(
                        (
                            f"{path.relative_to(ROOT)} cell {number}",
                            path,
                            _paragraphs("".join(cell["source"])),
                            path.name[:2],
                        )
                    )
    return found


def _paragraphs(text: str) -> list[str]:
    """Blocks separated by blank lines; each table row and list item a block of its own. Code blocks
    (fenced) are left out: what they hold is code, not a reference."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    blocks = []
    for block in re.split(r"\n\s*\n", text):
        blocks.extend(re.split(r"\n(?=\s*(?:\||[-*] |\d+\. ))", block))
    return blocks


# ---------------------------------------------------------------------------------------------
# Headings and anchors
# ---------------------------------------------------------------------------------------------


HTML_ANCHOR = re.compile(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']\s*>\s*</a>""")
"""An anchor written into the text: ``<a id="section-3"></a>`` (a heading's, or anywhere in a cell)."""


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: HTML tags dropped, lower case, punctuation but hyphens and
    underscores dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]*>", "", heading).strip()
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", text).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _text(path: Path) -> str:
    """A page's text, or a notebook's markdown cells', without fenced code."""
    if path.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def headings(path: Path) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*#*\s*$", _text(path), re.M)]


def anchors(path: Path) -> set[str]:
    """Every anchor a link may name: each heading's slug, and each ``<a id="...">`` of the text."""
    text = _text(path)
    return {slug(h) for h in headings(path)} | set(HTML_ANCHOR.findall(text))


def sections(path: Path) -> set[str]:
    """A notebook's numbered sections ("5") and appendices ("appendix C")."""
    found = set()
    for h in headings(path):
        if m := re.match(r"(\d+)\.\s", h):
            found.add(m.group(1))
        if m := re.match(r"Appendix ([A-Z])\b", h):
            found.add(f"appendix {m.group(1)}")
    return found


def notebook_path(number: str, near: Path) -> Path | None:
    folder = near.parent if near.suffix == ".ipynb" else NOTEBOOKS
    matches = sorted(folder.glob(f"{number}_*.ipynb"))
    return matches[0] if matches else None


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------

LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
MENTION = re.compile(
    r"\b(?:[Nn]otebooks?\s+(\d\d)\b|(\d\d)(?:'s)?\s+(?=§|[Aa]ppendi|cells?\s+\d)|(\d\d)_\w+\.ipynb)"
)
REFERENCE = re.compile(
    r"§\s?(?P<sec>\d+)"
    r"|\b[Ss]ections?\s+(?P<secs>\d+(?:(?:,\s+|\s+and\s+|\s+or\s+|\s+to\s+)\d+)*)\b"
    r"|\b[Aa]ppendix\s+(?P<app>[A-Z])\b"
    r"|\b[Aa]ppendices\s+(?P<apps>[A-Z](?:(?:,\s+|\s+and\s+)[A-Z])*)\b"
    r"|\bcells?\s+(?P<cells>\d+(?:(?:,\s+|\s+and\s+)\d+)*)\b"
)


def broken_links(name: str, path: Path, paragraph: str) -> list[str]:
    problems = []
    for match in LINK.finditer(paragraph):
        target = match.group(1)
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            problems.append(f"{name}: link to {target}: no such file")
        elif anchor and resolved.suffix in (".md", ".ipynb") and anchor not in anchors(resolved):
            problems.append(f"{name}: link to {target}: no heading with that anchor")
    return problems


def unresolved_references(name: str, path: Path, paragraph: str, own: str | None) -> list[str]:
    problems = []
    paragraph = re.sub(r"`[^`]*`", "``", paragraph)  # code spans quote, they do not refer
    mentions = [(m.start(), next(g for g in m.groups() if g)) for m in MENTION.finditer(paragraph)]
    for match in REFERENCE.finditer(paragraph):
        before = [number for at, number in mentions if at < match.start()]
        number = before[-1] if before else own
        quoted = match.group(0)
        if number is None:
            problems.append(f"{name}: {quoted!r} names no notebook")
            continue
        notebook = notebook_path(number, path)
        if notebook is None:
            problems.append(f"{name}: {quoted!r}: no notebook {number}")
            continue
        if match.group("cells"):
            count = len(_cells(notebook))
            problems += [
                f"{name}: {quoted!r}: notebook {number} has {count} cells"
                for n in re.findall(r"\d+", match.group("cells"))
                if int(n) >= count
            ]
            continue
        wanted = (
            [match.group("sec")]
            if match.group("sec")
            else re.findall(r"\d+", match.group("secs"))
            if match.group("secs")
            else [
                f"appendix {x}"
                for x in re.findall(r"[A-Z]", match.group("app") or match.group("apps"))
            ]
        )
        if match.group("secs") and re.search(r"\sto\s", match.group("secs")):
            low, high = map(int, re.findall(r"\d+", match.group("secs"))[:2])
            wanted = [str(n) for n in range(low, high + 1)]
        have = sections(notebook)
        problems += [
            f"{name}: {quoted!r}: notebook {notebook.name} has no {'section ' + w if w.isdigit() else w}"
            for w in wanted
            if w not in have
        ]
    return problems


def problems_in(docs) -> list[str]:
    problems = []
    for name, path, paragraphs, own in docs:
        for paragraph in paragraphs:
            problems += broken_links(name, path, paragraph)
            problems += unresolved_references(name, path, paragraph, own)
    return problems


def test_every_link_and_reference_resolves():
    assert problems_in(documents()) == []


def next_links(folder: Path = NOTEBOOKS) -> dict[str, str | None]:
    """Each notebook's last "Next:" link target (None if it has none)."""
    found = {}
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        targets = [
            LINK.search(m.group(0))
            for c in _cells(path)
            if c["cell_type"] == "markdown"
            for m in re.finditer(r"^Next:.*(?:\n(?!\n).*)*", "".join(c["source"]), re.M)
        ]
        targets = [t.group(1) for t in targets if t]
        found[path.name] = targets[-1] if targets else None
    return found


def wrong_next(links: dict[str, str | None]) -> list[str]:
    names = sorted(links)
    expected = {name: following for name, following in zip(names, names[1:])}
    expected[names[-1]] = "../docs/answer.md"
    return [
        f"{name}: Next leads to {links[name]}, not {expected[name]}"
        for name in names
        if links[name] != expected[name]
    ]


def test_every_next_leads_to_the_next_notebook():
    assert wrong_next(next_links()) == []


# ---------------------------------------------------------------------------------------------
# The checks find what they are meant to find
# ---------------------------------------------------------------------------------------------


def _doc(text: str, own: str | None = None, path: Path = ROOT / "docs" / "crafted.md"):
    return [("crafted", path, _paragraphs(text), own)]


@pytest.mark.parametrize(
    "text, found",
    [
        ("See [the torture page](torture.md#no-such-heading).", "no heading with that anchor"),
        ("See [a page](no-such-page.md).", "no such file"),
        ("Notebook 06 shows it in section 7.", "notebook 06_dynamodb_lock.ipynb has no section 7"),
        ("[13 §9](../notebooks/13_conflict_matrix.ipynb)", "has no section 9"),
        ("notebook 12's appendices B and D", "has no appendix D"),
        ("Section 2 says so.", "names no notebook"),
        ("notebook 13 cell 999", "notebook 13 has"),
        (
            "[13 §5](../notebooks/13_conflict_matrix.ipynb#section-55)",
            "no heading with that anchor",
        ),
        ("[glossary](glossary.md#no-such-term)", "no heading with that anchor"),
    ],
)
def test_a_broken_reference_is_found(text, found):
    problems = problems_in(_doc(text))
    assert len(problems) == 1 and found in problems[0], problems


def test_references_that_resolve_pass():
    text = (
        "Notebook 12, section 7, and its appendices A, B and C; [09 §5](../notebooks/09_spark_multi_cluster_s3.ipynb); "
        "notebook 13 cell 25; [the probe](store-probe.md#the-s3-lessons-on-versitygw); `section 99` quoted as code."
        "\n\nIn notebook 10, sections 1 to 3, and notebook 06's appendices A and B."
    )
    assert problems_in(_doc(text)) == []


def test_a_solution_refers_to_its_own_notebook():
    assert problems_in(_doc("As section 5 showed, and Appendix B.", own="06")) == []
    assert problems_in(_doc("As section 6 showed.", own="06")) == [
        "crafted: 'section 6': notebook 06_dynamodb_lock.ipynb has no section 6"
    ]


def test_a_next_that_goes_back_is_found():
    links = next_links()
    links["11_commit_throughput.ipynb"] = "../README.md"
    assert wrong_next(links) == [
        "11_commit_throughput.ipynb: Next leads to ../README.md, not 12_torture.ipynb"
    ]


def test_a_sections_anchor_resolves_and_a_missing_one_is_found(tmp_path):
    """A heading's ``<a id="...">`` is an anchor a link may name (the heading's slug too, without the
    tag); an id the notebook does not carry is found."""
    notebook = tmp_path / "notebooks" / "03_crafted.ipynb"
    notebook.parent.mkdir()
    notebook.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "markdown",
                        "metadata": {},
                        "source": [
                            '## 3. The same writers <a id="section-3"></a>\n',
                            "Text.\n\n",
                            '## Appendix B · Two locks <a id="appendix-b"></a>\n',
                        ],
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    assert anchors(notebook) == {
        "section-3",
        "appendix-b",
        "3-the-same-writers",
        "appendix-b--two-locks",
    }
    page = tmp_path / "docs" / "crafted.md"
    page.parent.mkdir()
    good = "[03 §3](../notebooks/03_crafted.ipynb#section-3), [B](../notebooks/03_crafted.ipynb#appendix-b)"
    assert problems_in(_doc(good, path=page)) == []
    assert problems_in(_doc("[03 §4](../notebooks/03_crafted.ipynb#section-4)", path=page)) == [
        "crafted: link to ../notebooks/03_crafted.ipynb#section-4: no heading with that anchor"
    ]
