"""Code that fits the page: the helpers, the tests and the notebooks' code are formatted by ruff
(pinned in pyproject.toml, line length 100), and no line of a notebook's code is longer than 100
characters, so that JupyterLab shows every cell without a horizontal scroll bar.

``make format`` formats everything in place; these tests say which file is not formatted.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers.ground import config

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
