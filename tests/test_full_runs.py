"""helpers.runs.full_runs: a full run's tables published to data/ and read back as the notebooks read
them; and the student edition keeping the outputs of the cells that show them."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from helpers.bench import run as bench
from helpers.ground import config
from helpers.jupyter import student
from helpers.runs import full_runs
from helpers.torture import run as torture


def _torture_run(folder):
    """A finished torture run's folder, as `helpers.torture.run.torture` writes one (two operations, no restart)."""
    folder.mkdir(parents=True)
    pd.DataFrame(
        [{"protocol": "azure", "safe": True, "operations": 2, "lost": 0, "loss_rate": 0.0}]
    ).to_csv(folder / "protocols.csv", index=False)
    pd.DataFrame(
        [
            {
                "protocol": "azure",
                "writer": "w1",
                "op": 1,
                "outcome": "acknowledged",
                "error": None,
            },
            {"protocol": "azure", "writer": "w1", "op": 2, "outcome": "killed", "error": "gone"},
        ]
    ).to_csv(folder / "operations.csv", index=False)
    pd.DataFrame([{"protocol": "azure", "point": "claimed", "t": 1.5, "slot": 1}]).to_csv(
        folder / "kills.csv", index=False
    )
    pd.DataFrame(columns=list(torture.RESTART_COLUMNS)).to_csv(folder / "restarts.csv", index=False)
    (folder / "meta.json").write_text(
        json.dumps({"run_id": "full", "date": "2026-11-25", "machine": {"cpus": 2}})
    )
    return folder


@pytest.fixture
def places(tmp_path, monkeypatch):
    """build/ and data/full_runs/ in a scratch folder."""
    monkeypatch.setattr(config, "BUILD_DIR", tmp_path / "build")
    monkeypatch.setattr(full_runs, "PUBLISHED_DIR", tmp_path / "data" / "full_runs")
    return tmp_path


def test_a_published_run_reads_back_as_the_run_it_came_from(places):
    made = _torture_run(config.BUILD_DIR / "torture" / "full")
    published = full_runs.publish("torture", made)
    assert published == full_runs.PUBLISHED_DIR / "torture"
    assert sorted(p.name for p in published.iterdir()) == [
        "kills.csv.gz",
        "meta.json",
        "operations.csv.gz",
        "protocols.csv.gz",
        "restarts.csv.gz",
    ]
    original, copy = torture.load(made), torture.load(published)
    for table in full_runs.TABLES["torture"]:
        pd.testing.assert_frame_equal(getattr(copy, table), getattr(original, table))
    assert copy.meta == {**original.meta, "published_from": config.shown(made)}
    before = {p.name: p.read_bytes() for p in published.iterdir()}
    full_runs.publish(
        "torture", made
    )  # again: the same bytes, so a republished run is no change to commit
    assert {p.name: p.read_bytes() for p in published.iterdir()} == before
    assert list(copy.restarts.columns) == list(
        torture.RESTART_COLUMNS
    )  # a run without restarts keeps its columns


def test_the_committed_copy_comes_first_the_machine_s_own_run_when_asked_then_a_clear_error(
    places, monkeypatch
):
    """A run of this machine never changes what a notebook shows (``make test`` holds the committed
    figures) unless WORKBOOK_SHOW_OWN_RUNS=1 asks for it, or nothing is committed."""
    monkeypatch.delenv(full_runs.OWN_RUNS, raising=False)
    with pytest.raises(full_runs.FullRunError, match="`make torture` makes one"):
        full_runs.location("torture")
    here = _torture_run(config.BUILD_DIR / "torture" / "full")
    assert full_runs.location("torture") == here  # nothing committed: this machine's run
    full_runs.publish("torture", _torture_run(places / "elsewhere"))
    assert full_runs.location("torture") == full_runs.PUBLISHED_DIR / "torture"
    assert full_runs.describe(full_runs.location("torture")).startswith("the committed copy")
    monkeypatch.setenv(full_runs.OWN_RUNS, "1")
    assert full_runs.location("torture") == here
    assert full_runs.describe(here).startswith("this machine's run")


def test_an_unfinished_run_is_not_published_and_what_was_there_stays(places):
    full_runs.publish("torture", _torture_run(places / "first"))
    unfinished = _torture_run(places / "second")
    (unfinished / "meta.json").unlink()  # a run that stopped before writing its meta.json
    with pytest.raises(full_runs.FullRunError, match="no finished torture run"):
        full_runs.publish("torture", unfinished)
    assert torture.load(full_runs.PUBLISHED_DIR / "torture").meta["run_id"] == "full"
    with pytest.raises(
        full_runs.FullRunError, match="Unknown kind of run 'bnech'; choose from bench, torture"
    ):
        full_runs.location("bnech")


def test_the_benchmark_reads_its_published_copy(places):
    folder = config.BUILD_DIR / "bench" / "full"
    folder.mkdir(parents=True)
    pd.DataFrame([{"protocol": "azure", "writers": 1, "commits": 8}]).to_csv(
        folder / "runs.csv", index=False
    )
    pd.DataFrame([{"protocol": "azure", "writers": 1, "outcome": "committed"}]).to_csv(
        folder / "commits.csv", index=False
    )
    (folder / "probe.csv").write_text("\n")  # a run made without the probe
    (folder / "meta.json").write_text(json.dumps({"run_id": "full"}))
    copy = bench.load(full_runs.publish("bench", folder))
    pd.testing.assert_frame_equal(copy.runs, bench.load(folder).runs)
    assert copy.probe.empty and len(copy.commits) == 1


def test_the_student_edition_keeps_only_the_tagged_cells_outputs(tmp_path):
    shown = {
        "output_type": "execute_result",
        "execution_count": 7,
        "data": {"text/plain": ["12 runs"]},
        "metadata": {},
    }
    cells = [
        {
            "cell_type": "code",
            "metadata": {"tags": [student.KEEP_OUTPUTS_TAG]},
            "source": ["full.runs"],
            "outputs": [shown],
            "execution_count": 7,
        },
        {
            "cell_type": "code",
            "metadata": {},
            "source": ["small.runs"],
            "outputs": [shown],
            "execution_count": 8,
        },
    ]
    source = tmp_path / "nb.ipynb"
    source.write_text(
        json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    released = tmp_path / "released.ipynb"  # what nbgrader writes: every output cleared
    released.write_text(
        json.dumps(
            {
                "cells": [{**c, "outputs": [], "execution_count": None} for c in cells],
                "metadata": {},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    target = tmp_path / "student.ipynb"
    student._keep_committed_outputs(source, released, target)
    kept = json.loads(target.read_text())["cells"]
    assert kept[0]["outputs"] == [{**shown, "execution_count": None}]
    assert kept[1]["outputs"] == []

    changed = json.loads(released.read_text())
    changed["cells"][0]["source"] = [
        "# YOUR CODE HERE"
    ]  # a tagged cell nbgrader rewrote: an exercise
    released.write_text(json.dumps(changed))
    with pytest.raises(
        student.StudentEditionError, match="tag only cells that display committed results"
    ):
        student._keep_committed_outputs(source, released, target)


@pytest.mark.parametrize("name", ["11_commit_throughput", "12_torture"])
def test_the_committed_student_copies_show_the_full_runs(name):
    """The cells that show a full run read it from data/full_runs/ (committed), and student/ keeps
    their outputs: a learner sees the figures before running anything."""
    notebook = json.loads((config.NOTEBOOKS_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))
    copy = json.loads((student.STUDENT_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))
    tagged = student.kept_cells(notebook)
    assert tagged, f"{name}: no cell tagged {student.KEEP_OUTPUTS_TAG!r}"
    for i in tagged:
        assert "full" in "".join(notebook["cells"][i]["source"]), i
        assert copy["cells"][i]["outputs"], f"{name}: cell {i} has no output in student/"
        shown = json.dumps(copy["cells"][i]["outputs"])
        assert "No finished" not in shown and "none committed" not in shown, (
            f"{name}: cell {i} shows no full run"
        )
