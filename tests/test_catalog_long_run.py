"""The catalog's long run (:mod:`helpers.catalog.long_run`): what keeps a run from being published,
and the committed run that notebook 15 shows."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.catalog import long_run


def finished(folder: Path, **meta) -> Path:
    """A run's folder as :func:`long_run.run` leaves it: every part's file, then ``meta.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    whole = {
        "parts": list(long_run.PARTS),
        "sizes": dict(long_run.FULL),
        "problems": [],
        "seconds": {p: 1.0 for p in long_run.PARTS},
        "dates": {p: "2026-12-07" for p in long_run.PARTS},
        **meta,
    }
    for part in whole["parts"]:
        (folder / f"{part}.json").write_text(json.dumps({"record": {}, "summary": part}))
    (folder / "meta.json").write_text(json.dumps(whole))
    return folder


def test_a_whole_run_at_the_committed_sizes_may_be_published(tmp_path: Path):
    assert long_run.folder_problems(finished(tmp_path)) == []


def test_a_run_with_a_problem_a_part_left_out_or_a_small_size_is_not(tmp_path: Path):
    found = long_run.folder_problems(
        finished(
            tmp_path,
            parts=["kernel"],
            sizes=dict(long_run.SMALL),
            problems=["kernel: runs with problems"],
        )
    )
    assert found[0] == "kernel: runs with problems"
    assert "left out outage, outage-refused, cost, upkeep" in found[1]
    assert "outage_s" in found[2] and "kernel_runs" in found[2]


def test_a_part_run_again_keeps_the_others_only_at_the_same_sizes(tmp_path: Path):
    finished(tmp_path)
    assert long_run._earlier(tmp_path, ["cost"], dict(long_run.FULL))["parts"] == list(
        long_run.PARTS
    )
    finished(tmp_path)
    assert long_run._earlier(tmp_path, ["cost"], dict(long_run.SMALL)) == {}


def test_published_is_every_part_and_the_meta_in_one_file(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(long_run, "COMMITTED", tmp_path / "catalog_run.json")
    long_run.publish(finished(tmp_path / "run"))
    whole = long_run.committed(tmp_path / "catalog_run.json")
    assert sorted(whole) == sorted(["meta", *long_run.PARTS])
    assert whole["kernel"]["summary"] == "kernel"


def test_the_committed_run_has_every_part_at_its_sizes_and_no_problem():
    whole = long_run.committed()
    assert whole["meta"]["parts"] == list(long_run.PARTS)
    assert whole["meta"]["sizes"] == long_run.FULL
    assert whole["meta"]["problems"] == []
    assert all(whole[part]["summary"] for part in long_run.PARTS)
