"""Notebooks run through papermill with other writer counts than their defaults: the lessons still
hold (each notebook's own checks pass) and no number the notebook renders contradicts them."""

from __future__ import annotations

import json
import re

import pytest

from helpers.jupyter import workbook

RUNS = [
    ("03", 2),  # exactly one winner without retries, all commit with them
    ("05", 3),  # rows lost under the unsafe rename while every writer reports success
    ("05", 16),
]


def rendered_text(notebook: dict) -> str:
    """What a reader sees: markdown cells, printed output and rendered Markdown, bold marks removed."""
    parts = []
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = output.get("text") or data.get("text/markdown") or ""
            parts.append("".join(text) if isinstance(text, list) else text)
    return "\n".join(parts).replace("**", "")


def contradictions(text: str, n_writers: int) -> list[str]:
    """Phrases whose numbers cannot be true of a run with ``n_writers`` writers of 10 rows each:
    "X of Y" where Y is neither the writers nor their rows, and counts of writers, batches, copies,
    object versions or orphaned files that are neither all the writers nor all but one."""
    wrong = []
    for match in re.finditer(r"(?<![\d.])(\d+) of (\d+)\b", text):
        if int(match[2]) not in (n_writers, 10 * n_writers) or int(match[1]) > int(match[2]):
            wrong.append(match[0])
    counted = (
        r"(?<![\w.])(\d+) (?:writers?|batch(?:es)?|copies|object versions|orphaned files|orphans)\b"
    )
    for match in re.finditer(counted, text):
        if int(match[1]) not in (0, 1, n_writers - 1, n_writers):
            wrong.append(match[0])
    return wrong


def test_contradictions_are_found_in_crafted_text():
    assert contradictions("7 of 8 writers failed", 2) == ["7 of 8", "8 writers"]
    assert contradictions("1 of 2 writers committed; 10 of 20 rows lost; 1 writer failed", 2) == []
    assert contradictions("commit 2 has 8 object versions and 7 orphaned files", 3) == [
        "8 object versions",
        "7 orphaned files",
    ]
    assert contradictions("Of 16 batches reported as committed", 16) == []
    assert (
        contradictions("16 deltalake 0.22.3 writers: 16/16 done", 16) == []
    )  # a version is not a count


@pytest.mark.parametrize(("number", "n_writers"), RUNS, ids=[f"{n}-n_writers={w}" for n, w in RUNS])
def test_the_lesson_holds_and_the_prose_follows(stores, monkeypatch, tmp_path, number, n_writers):
    monkeypatch.setattr(workbook, "EXECUTED_DIR", tmp_path / "executed")
    (run,) = workbook.run([number], {"n_writers": n_writers, "table_name": f"writers-{n_writers}"})
    assert run.ok, run.error
    text = rendered_text(json.loads(run.output.read_text()))
    assert "All checks passed" in text
    assert f"{n_writers} writers" in text or f"of {n_writers}" in text, (
        "the run's own writer count is rendered"
    )
    assert contradictions(text, n_writers) == [], text
