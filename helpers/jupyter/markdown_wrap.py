"""The notebooks' markdown wrapped at 100 characters, the rule ruff keeps for their code, so that a
change to a sentence is a change to its own lines.

Command line (``make format`` runs it; tests/test_format.py checks that it has nothing to do)::

    python -m helpers.jupyter.markdown_wrap             # every notebook in notebooks/, in place
    python -m helpers.jupyter.markdown_wrap --check     # change nothing; exit 1 naming each cell
    python -m helpers.jupyter.markdown_wrap PATH ...    # these notebooks

In a markdown cell it changes two kinds of line and leaves every other line as it is:

* a line over :data:`WIDTH` characters is split into lines of about equal length, at spaces outside
  code spans, links and HTML, continuation lines indented as the list item they belong to;
* an HTML comment within a line of text (a verdict or measured tag, tests/test_one_truth.py) goes
  on a line of its own, indented :data:`TAG_INDENT` spaces past its paragraph's text. Indented so,
  it stays inside its paragraph, as it was: at a line's start a comment would end the paragraph.

A line never starts with what would open another block (``-``, ``1.``, ``#``, ``>``, ...): the
word before it moves down with it. Headings, table rows, fenced code, HTML, an optional part's one
line (``*Optional: ...*``, tests/test_lessons.py) and a piece that cannot break (a long link or
code span) stay as they are; :func:`long_lines` names the lines over :data:`WIDTH` that are
neither a tag, nor a table row, nor such a piece.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Sequence

from helpers.ground import config

WIDTH = 100
TAG_INDENT = 4
COMMENT = re.compile(r"<!--.*?-->", re.S)
UNBROKEN = re.compile(
    r"<!--.*?-->"  # a comment
    r"|(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)"  # a code span
    r"|!?\[[^\]\n]*\]\([^)\n]*\)"  # a link or an image
    r"|<[A-Za-z/][^<>\n]*>",  # an HTML tag
)
STARTS_A_BLOCK = re.compile(r"(?:[-+*=_]+|#{1,6}|\d{1,9}[.)]|[>|<].*|[`~]{3,}.*)")
"""A word that, first on a line, would open a block: a list item, a heading, a quote, a table..."""
LIST_ITEM = re.compile(r"^( *)([-+*]|\d{1,9}[.)])( +)(?=\S)")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
BLOCK = re.compile(
    r" {0,3}#{1,6}(?:\s|$)"  # a heading
    r"|\s*\|"  # a table row
    r"|\s*([-*_=])(?:\s*\1){2,}\s*$"  # a rule, a heading's underline
)
"""A line that is a block of its own: kept as it is, and the next line opens a paragraph."""
KEPT = re.compile(
    r"\s*[<>]"  # HTML (a tag on its own line), a quote
    r"|\*Optional[:.]\s.+\*\s*$"  # an optional part's one line
)


def pieces(text: str) -> list[str]:
    """``text`` split at its spaces, except those inside a code span, a link, a comment or a tag."""
    masked = UNBROKEN.sub(lambda m: m.group(0).replace(" ", "\0"), text)
    return [piece.replace("\0", " ") for piece in masked.split()]


def _greedy(words: list[str], first: str, rest: str, width: int) -> list[str]:
    lines: list[list[str]] = []
    current: list[str] = []
    for word in words:
        prefix = rest if lines else first
        if not current or len(prefix + " ".join([*current, word])) <= width:
            current.append(word)
        elif not STARTS_A_BLOCK.fullmatch(word):
            lines.append(current)
            current = [word]
        elif len(current) > 1:  # the word before it moves down with it
            lines.append(current[:-1])
            current = [current[-1], word]
        else:  # alone on its line, it would open a block: it stays, the line runs long
            current.append(word)
    lines += [current] if current else []
    return [(rest if n else first) + " ".join(line) for n, line in enumerate(lines)]


def fill(words: list[str], first: str, rest: str, width: int = WIDTH) -> list[str]:
    """``words`` as the fewest lines within ``width`` (a word longer than that alone on its line),
    each about as long as the others: ``first`` opens the first line, ``rest`` every other."""
    widest = _greedy(words, first, rest, width)

    def even(lines: list[str]) -> bool:
        return len(lines) <= len(widest) and all(
            len(line) <= width or len(line.split()) == 1 for line in lines
        )

    narrowest = max(max(map(len, words)), math.ceil(len(" ".join(words)) / len(widest)))
    return next(
        (
            lines
            for narrow in range(min(narrowest, width), width)
            if even(lines := _greedy(words, first, rest, narrow))
        ),
        widest,
    )


def _refill(line: str, text_indent: int, first_of_paragraph: bool) -> list[str]:
    """One line over :data:`WIDTH`, or with a comment among its words, as the lines that replace
    it."""
    item = LIST_ITEM.match(line)
    if item:
        first, text_indent = item.group(0), len(item.group(0))
    else:
        first = " " * text_indent
    rest = " " * text_indent
    out: list[str] = []
    text = line[len(first) :] if item else line.strip()
    for n, part in enumerate(re.split(f"({COMMENT.pattern})", text, flags=re.S)):
        words = [] if n % 2 else pieces(part)
        if n % 2:  # a comment
            opens = not out and (item or first_of_paragraph)
            out.append((first if opens else " " * (text_indent + TAG_INDENT)) + part)
        elif out and words and STARTS_A_BLOCK.fullmatch(words[0]):
            out[-1] += " " + words.pop(0)  # after the comment, not first on a line of its own
        if words:
            out += fill(words, rest if out else first, rest)
    return out


def wrap(markdown: str) -> str:
    """A markdown cell's text, wrapped (this module's docstring says how)."""
    out: list[str] = []
    fence = ""
    text_indent = 0  # where the text of the list item the line belongs to starts
    blank = True  # the line before was blank, or there was none
    code = False  # in an indented code block
    for line in markdown.split("\n"):
        opening = FENCE.match(line)
        if fence or opening:
            if not fence:
                fence = opening.group(1)
            elif line.strip().startswith(fence[0] * len(fence)):
                fence = ""
            out.append(line)
            blank = False
            continue
        if not line.strip():
            out.append(line)
            blank = True
            continue
        indent = len(line) - len(line.lstrip(" "))
        code = indent >= text_indent + 4 and (blank or code)
        item = None if code else LIST_ITEM.match(line)
        if item:
            text_indent = len(item.group(0))
        elif blank and not code:
            text_indent = indent
        if code or BLOCK.match(line) or KEPT.match(line):
            out.append(line)
        elif len(line) <= WIDTH and not COMMENT.search(line):
            out.append(line)
        else:
            out += _refill(line, max(indent, text_indent), blank)
        blank = bool(BLOCK.match(line))
    return "\n".join(out)


def long_lines(markdown: str) -> list[str]:
    """The lines over :data:`WIDTH` characters that are neither a tag on its own line, nor a table
    row, nor one piece that cannot break (a long link or code span)."""
    return [
        line
        for line in markdown.split("\n")
        if len(line) > WIDTH
        and not COMMENT.fullmatch(line.strip())
        and not line.lstrip().startswith("|")
        and len(pieces(line[len(m.group(0)) :] if (m := LIST_ITEM.match(line)) else line)) > 1
    ]


def notebooks() -> list[Path]:
    return sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def wrap_notebook(path: Path, write: bool = True) -> list[int]:
    """Wrap a notebook's markdown cells; return the numbers of those that changed (written back
    only if ``write``, as the workbook writes notebooks: JSON indented by one, a final newline)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    changed = []
    for number, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        source = "".join(cell["source"])
        wrapped = wrap(source)
        if wrapped != source:
            cell["source"] = wrapped.splitlines(keepends=True)
            changed.append(number)
    if changed and write:
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.jupyter.markdown_wrap", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/NN_*)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    args = parser.parse_args(argv)
    cells = 0
    for path in args.paths or notebooks():
        changed = wrap_notebook(path, write=not args.check)
        cells += len(changed)
        if changed:
            verb = "to wrap" if args.check else "wrapped"
            print(f"{config.shown(path)}: markdown cells {verb}: {', '.join(map(str, changed))}")
    return 1 if args.check and cells else 0


if __name__ == "__main__":
    sys.exit(main())
