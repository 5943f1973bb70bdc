"""Code that fits the page: the helpers, the tests and the notebooks' code are formatted by ruff
(pinned in pyproject.toml, line length 100), and no line of a notebook's code is longer than 100
characters, so that JupyterLab shows every cell without a horizontal scroll bar. The notebooks'
markdown keeps the same width (helpers/jupyter/markdown_wrap.py), each verdict tag on a line of its
own, so that a change to a sentence is a change to its own lines: no markdown line is longer than
100 characters but a tag, a table row or a link or code span that cannot break.

``make format`` formats everything in place; these tests say which file is not formatted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers.ground import config
from helpers.jupyter import markdown_wrap

RUFF = Path(sys.executable).parent / "ruff"
FORMATTED = ["helpers", "tests", "notebooks"]


def ruff(*args: str, cwd: Path = config.ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), *args], cwd=cwd, capture_output=True, text=True, check=False)


def test_the_code_is_formatted():
    result = ruff("format", "--check", *FORMATTED)
    assert result.returncode == 0, f"run `make format`:\n{result.stdout}{result.stderr}"


def test_no_notebook_line_is_longer_than_100_characters():
    result = ruff("check", "--select", "E501", "--output-format", "concise", "notebooks")
    assert result.returncode == 0, f"lines over 100 characters:\n{result.stdout}"


def test_an_unformatted_file_and_a_long_line_are_found(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 100\n")
    (tmp_path / "crafted.py").write_text("x = {'a':1}\n" + f"y = '{'z' * 120}'\n")
    assert ruff("format", "--check", "crafted.py", cwd=tmp_path).returncode == 1
    long = ruff(
        "check", "--select", "E501", "--output-format", "concise", "crafted.py", cwd=tmp_path
    )
    assert long.returncode == 1 and "E501" in long.stdout


def markdown(path: Path) -> list[tuple[int, str]]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(n, "".join(c["source"])) for n, c in enumerate(cells) if c["cell_type"] == "markdown"]


def test_the_notebooks_markdown_is_wrapped():
    unwrapped = [
        f"{path.name} cell {n}"
        for path in markdown_wrap.notebooks()
        for n, text in markdown(path)
        if markdown_wrap.wrap(text) != text
    ]
    assert unwrapped == [], "run `make format`"


def test_no_notebook_markdown_line_is_longer_than_100_characters():
    long = [
        f"{path.name} cell {n}: {line}"
        for path in markdown_wrap.notebooks()
        for n, text in markdown(path)
        for line in markdown_wrap.long_lines(text)
    ]
    assert long == [], "shorten each (a heading, an optional part's one line) or run `make format`"


CRAFTED = f"""## 1. A heading <a id="section-1"></a>
{"A sentence that runs on " * 5}and on. <!-- verdict: none (a tag on a line of its own) --> Then the
- {"an item, " * 12}with `a code span that stays whole`, [a link](../docs/glossary.md) and 1. more
    <!-- measured: a tag on its own line may be long: {"x" * 80} -->
| {"a table row | " * 9}

{"w" * 101} and [a link whose text cannot break](https://example.org/{"y" * 90})
"""


def test_a_long_markdown_line_is_found_and_wrapped_as_it_renders():
    from markdown_it import MarkdownIt

    lines = CRAFTED.splitlines()
    assert markdown_wrap.long_lines(CRAFTED) == [lines[1], lines[2], lines[6]]
    wrapped = markdown_wrap.wrap(CRAFTED)
    assert wrapped.splitlines() == [
        lines[0],
        "A sentence that runs on A sentence that runs on A sentence that",
        "runs on A sentence that runs on A sentence that runs on and on.",
        "    <!-- verdict: none (a tag on a line of its own) -->",
        "Then the",
        "- " + "an item, " * 10 + "an",
        "  item, an item, with `a code span that stays whole`, "
        "[a link](../docs/glossary.md) and 1. more",
        *lines[3:6],
        "w" * 101,
        "and",
        lines[6].split(" and ")[1],
    ]
    assert markdown_wrap.long_lines(wrapped) == []  # a tag, a table row, a piece that cannot break
    assert markdown_wrap.wrap(wrapped) == wrapped
    render = MarkdownIt("commonmark").enable("table").render
    assert " ".join(render(wrapped).split()) == " ".join(render(CRAFTED).split())


def test_a_wrapped_line_never_starts_a_list_or_a_heading():
    for word in ("1.", "-", "#", ">"):
        lines = markdown_wrap.fill(["x", "aaa", word, "b"], "", "", width=6)
        assert " ".join(lines) == f"x aaa {word} b"
        assert not any(line.startswith(word) for line in lines), lines


def test_every_parameter_default_is_a_plain_literal():
    """papermill reads a parameters cell's defaults as text, one line each: a value the formatter
    wrapped in parentheses (a long trailing comment does that) reads as "(2)". Comments go above."""
    import ast
    import json

    import papermill

    wrong = []
    for path in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        if not any("parameters" in c["metadata"].get("tags", []) for c in cells):
            continue
        for name, parameter in papermill.inspect_notebook(str(path)).items():
            try:
                ast.literal_eval(parameter["default"])
            except (ValueError, SyntaxError):
                wrong.append(f"{path.name}: {name} = {parameter['default']}")
            else:
                if parameter["default"].startswith("("):
                    wrong.append(f"{path.name}: {name} = {parameter['default']}")
    assert wrong == []
