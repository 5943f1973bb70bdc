"""One truth: a verdict about a race has one home, the answer's data, and prose anywhere is held to it.

Every sentence of the prose a reader meets (the notebooks' markdown, the solutions, README, the
notebooks' README and ``docs/``, all but the generated answer page) that names a race between
operations and says what came of it (a loss, rows twice, rows back, a refusal, both committing,
nothing lost) must carry a tag, an HTML comment right after it, which renders as nothing:

* ``<!-- verdict: rs-put-today/optimize -->`` binds it to a cell of the answer page (row key of
  :mod:`helpers.page.table_rows` / column key of :mod:`helpers.page.columns`);
  ``<!-- verdict: deltalake-1.6.6:delete/delete -->`` to pairs of
  the conflict matrix (engine or fnmatch pattern : first / second), several separated by ``;``. The
  sentence is classed with the vocabulary of ``tests/test_answer_claims.py`` and must agree with each
  cell's verdict, or with the verdict the cell gives under one of its conditions or in one order.
* ``<!-- measured: <check> -->`` binds it to its own notebook's measurement: the check's name as
  the notebook's code writes it (``measured 12: <check>`` from a solutions or docs page).
* ``<!-- verdict: none (why) -->`` says the sentence only looks like a verdict (a definition, a
  description of a harness).

A new sentence that states a verdict without a tag fails, and so does a tagged one that contradicts
the data, in either direction. Each is shown failing on a crafted sentence below.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_answer_claims import agrees, claim_classes

from helpers.ground import config
from helpers.page import decision

TAG = re.compile(r"<!--\s*(verdict|measured(?: \d\d)?):\s*(.*?)\s*-->", re.S)
OPS = {
    "append": r"\bappend(?:s|ed|ing)?\b",
    "overwrite": r"\boverwrit\w*|\breplaceWhere\b|\breplace_where\b",
    "delete": r"\bDELETEs?\b|\bdelet(?:e|es|ed|ing)\b",
    "update": r"\bUPDATEs?\b",
    "merge": r"\bMERGEs?\b",
    "optimize": r"\bOPTIMIZEs?\b|\bZ-orders?\b|\bcompaction\b",
    "vacuum": r"\bVACUUM\b",
    "rerun": r"\brerun\w*|\bretried\b|\bre-run\w*",
}
PAIR_CUE = re.compile(
    r"\btwo\b|\bsecond\b|\bboth\b|\banother\b|\bbeside\b|\bconcurrent\w*|\bat once\b|from one snapshot"
    r"|older snapshot|stale snapshot|\braces?\b|\bagainst\b",
    re.I,
)
VERDICT_WORDS = re.compile(
    r"\bcaught\b|\bconflicts?\b|\bsurviv\w*|\bsafe(?:ly)?\b|\bunsafe\b|\bharmless\b", re.I
)
"""Words that state an outcome beyond the vocabulary of tests/test_answer_claims.py: a sentence with them
must carry a tag too, and say its verdict in that vocabulary's words."""
ENGINES_TOGETHER = re.compile(
    r"(?=.*\bSpark\b)(?=.*\b(?:deltalake|delta-rs)\b)(?=.*\b(?:same|one) table|\bshare)",
    re.I | re.S,
)
PROSE = (
    "README.md",
    "notebooks/README.md",
    "notebooks/solutions/*.md",
    "docs/*.md",
    "notebooks/*.ipynb",
)
GENERATED = {"docs/answer.md"}


@dataclass(frozen=True)
class Sentence:
    where: str
    text: str
    tags: tuple[tuple[str, str], ...]


def operations(sentence: str) -> set[str]:
    found = {name for name, pattern in OPS.items() if re.search(pattern, sentence)}
    if ENGINES_TOGETHER.search(sentence):
        found.add("other engine")
    return found


def states_a_verdict(sentence: str) -> bool:
    """A sentence that names a race (two operations, or one with a word that makes it a pair) and what
    came of it. Questions and table rows are not sentences of this kind."""
    if sentence.rstrip().endswith("?") or sentence.lstrip().startswith("|"):
        return False
    ops = operations(sentence)
    return (
        bool(ops)
        and (len(ops) >= 2 or "other engine" in ops or bool(PAIR_CUE.search(sentence)))
        and (bool(claim_classes(sentence)) or bool(VERDICT_WORDS.search(sentence)))
    )


def _split(text: str) -> list[str]:
    text = re.sub(
        r"\n\s*(?:[-*]|\d+\.) ", "\n\n", text
    )  # a bullet or a numbered item is a sentence of its own
    out = []
    for block in re.split(r"\n\s*\n", text):
        if block.lstrip().startswith(("|", "#", "```")):
            continue
        block = re.sub(r"\s+", " ", block.replace("**", "")).strip()
        out += [s for s in re.split(r"(?<!e\.g\.)(?<!i\.e\.)(?<=[.!?])\s+", block) if s]
    return out


def sentences(where: str, text: str) -> list[Sentence]:
    """The sentences of a text, each with the tags that follow it (a tag belongs to the sentence
    before it, also when it stands after that sentence's full stop)."""
    tags: list[tuple[str, str]] = []

    def mark(match: re.Match) -> str:
        tags.append((match.group(1), match.group(2)))
        return f" \u27e6{len(tags) - 1}\u27e7"

    text = re.sub(
        r"`[^`\n]*`", lambda m: "`a tag`" if "<!--" in m.group(0) else m.group(0), text
    )  # an example
    found: list[Sentence] = []
    for piece in _split(TAG.sub(mark, text)):
        leading = re.match("^(?:\u27e6\\d+\u27e7\\s*)+", piece)
        if leading and found:  # tags that open a piece close the sentence before it
            last = found.pop()
            found.append(
                Sentence(
                    last.where,
                    last.text,
                    last.tags + tuple(tags[int(i)] for i in re.findall("\\d+", leading.group(0))),
                )
            )
            piece = piece[leading.end() :]
        marks = [int(m) for m in re.findall("\u27e6(\\d+)\u27e7", piece)]
        body = re.sub(" ?\u27e6\\d+\u27e7", "", piece).strip()
        if body:
            found.append(Sentence(where, body, tuple(tags[i] for i in marks)))
        elif marks and found:
            last = found.pop()
            found.append(Sentence(last.where, last.text, last.tags + tuple(tags[i] for i in marks)))
    return found


def prose(root: Path = config.ROOT) -> dict[str, str]:
    """Every prose text a reader meets, by its path (a notebook's markdown cells joined, each cell a
    paragraph of its own)."""
    texts = {}
    for pattern in PROSE:
        for path in sorted(root.glob(pattern)):
            name = path.relative_to(root).as_posix()
            if name in GENERATED:
                continue
            if path.suffix == ".ipynb":
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
                texts[name] = "\n\n".join(
                    "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
                )
            else:
                texts[name] = path.read_text(encoding="utf-8")
    return texts


def _code_of(name: str, root: Path) -> str:
    cells = json.loads((root / "notebooks" / name).read_text(encoding="utf-8"))["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _notebook_named(number: str, root: Path) -> str:
    found = sorted(p.name for p in (root / "notebooks").glob(f"{number}_*.ipynb"))
    assert found, f"no notebook {number}"
    return found[0]


def cell_verdicts(item: str, grid: dict, results: decision.Results) -> tuple[str, set[str]]:
    """What one tag item binds to, and the verdicts it allows: the cell's own and those of its
    conditions and orders (a matrix item: the verdict of its rows, and of each row alone)."""
    if ":" in item:
        engine, pair = item.split(":", 1)
        first, second = (p.strip() for p in pair.split("/"))
        rows = [
            r
            for r in results.rows
            if fnmatch.fnmatchcase(r["engine"], engine.strip())
            and r["first"] == first
            and r["second"] == second
        ]
        assert rows, f"the conflict matrix has no rows {item!r}"
        return f"matrix {item}", {decision.verdict_of(rows)} | {
            decision.verdict_of([r]) for r in rows
        }
    row, _, column = item.partition("/")
    assert (row, column) in grid, (
        f"the answer has no cell {item!r} (row/column keys of helpers.page.decision)"
    )
    cell = grid[row, column]
    return f"answer {item}", {cell.verdict} | {v for _, v in cell.conditions} | {
        v for _, v in cell.orders
    }


def problems(texts: dict[str, str], root: Path = config.ROOT) -> list[str]:
    """Every untagged verdict, every tag whose sentence contradicts what it binds to."""
    grid = decision.grid_of(results := decision.Results.load())
    found = []
    for where, text in texts.items():
        for s in sentences(where, text):
            if not s.tags:
                if states_a_verdict(s.text):
                    found.append(f"{where}: states a verdict with no tag: {s.text[:160]!r}")
                continue
            for kind, body in s.tags:
                if kind.startswith("measured"):
                    number = kind.split()[1] if " " in kind else where.split("/")[-1][:2]
                    code = _code_of(_notebook_named(number, root), root)
                    if body not in code:
                        found.append(
                            f"{where}: measured by {body!r}, which notebook {number}'s code does not check"
                        )
                    continue
                if body.startswith("none"):
                    continue
                classes = claim_classes(s.text)
                for item in (i.strip() for i in body.split(";")):
                    try:
                        bound, verdicts = cell_verdicts(item, grid, results)
                    except AssertionError as error:
                        found.append(f"{where}: {error}")
                        continue
                    if not any(agrees(v, classes) for v in verdicts if v != decision.NOT_MEASURED):
                        found.append(
                            f"{where}: {s.text[:160]!r} reads as {sorted(classes)}, but {bound} is "
                            f"{' / '.join(sorted(verdicts))}"
                        )
    return found


def test_every_verdict_in_the_prose_agrees_with_the_answers_data():
    assert problems(prose()) == []


@pytest.mark.parametrize(
    "where, sentence, message",
    [
        (
            "notebooks/07_transaction_retries.ipynb",
            "With deltalake 1.6.6, two OPTIMIZEs from one snapshot are refused: "
            "the second fails loudly.",
            "states a verdict with no tag",
        ),
        (
            "notebooks/solutions/13.md",
            "With deltalake 1.6.6, two OPTIMIZEs from one snapshot are refused: the second "
            "fails loudly. <!-- verdict: rs-put-today/optimize -->",
            r"reads as \['refused'\], but answer rs-put-today/optimize",
        ),
        (
            "docs/torture.md",
            "Two appends from one snapshot lose rows. <!-- verdict: rs-put-today/append -->",
            r"reads as \['loss'\], but answer rs-put-today/append is safe",
        ),
        (
            "docs/running.md",
            "A DELETE and an OPTIMIZE are refused either way round. <!-- verdict: deltalake-1.6.6:optimize/delete_all -->",
            "matrix deltalake-1.6.6:optimize/delete_all is wrong result",
        ),
        (
            "notebooks/12_torture.ipynb",
            "Two OPTIMIZEs commit both. <!-- measured: no such check -->",
            "which notebook 12's code does not check",
        ),
    ],
)
def test_a_sentence_that_contradicts_the_data_is_caught(where, sentence, message):
    texts = prose()
    texts[where] = texts[where] + "\n\n" + sentence + "\n"
    found = [p for p in problems(texts) if re.search(message, p)]
    assert found, f"no problem matched {message!r}"


def test_a_tag_after_the_full_stop_belongs_to_the_sentence_before_it():
    found = sentences(
        "x", "Two appends both commit. <!-- verdict: rs-put-today/append --> Next one."
    )
    assert [(s.text, s.tags) for s in found] == [
        ("Two appends both commit.", (("verdict", "rs-put-today/append"),)),
        ("Next one.", ()),
    ]
