"""The lost-answer run's parts that need no store: what a trial's outcome is, how commits are read
from a log, which request the gate takes for a commit, and the answer page's cells from the data."""

from __future__ import annotations

import json

import pytest

from helpers.lost_answer import gate, run, trials
from helpers.page import lost_answer_cells
from helpers.page.table_rows import ROWS


def _commit(adds: int, rows_each: int = 3) -> bytes:
    lines = [json.dumps({"commitInfo": {"operation": "WRITE"}})]
    lines += [
        json.dumps(
            {"add": {"path": f"part-{i}.parquet", "stats": json.dumps({"numRecords": rows_each})}}
        )
        for i in range(adds)
    ]
    return "\n".join(lines).encode()


def test_outcomes_put_the_count_of_commits_before_what_the_job_was_told():
    assert trials.outcome_of(True, 1) == trials.ONCE
    assert trials.outcome_of(False, 1) == trials.TOLD_FAILED
    assert trials.outcome_of(True, 2) == trials.TWICE
    assert trials.outcome_of(False, 3) == trials.TWICE
    assert trials.outcome_of(False, 0) == trials.REFUSED
    assert trials.outcome_of(True, 0) == trials.LOST
    assert trials.outcome_of(True, 1, later=False) == trials.STUCK
    assert trials.outcome_of(False, 1, later=False) == trials.STUCK
    assert trials.outcome_of(True, 2, later=False) == trials.TWICE
    assert trials.worst([trials.ONCE, trials.TOLD_FAILED, trials.REFUSED]) == trials.TOLD_FAILED
    assert trials.worst([trials.TWICE, trials.LOST]) == trials.LOST


def test_commits_of_counts_commits_after_the_creation_that_add_data():
    log = [(0, _commit(1, 1)), (1, _commit(1)), (2, _commit(0)), (3, _commit(2))]
    assert trials.commits_of(log) == (2, 9, False)
    assert trials.commits_of([(0, _commit(1))]) == (0, 0, False)
    later = _commit(1, trials.LATER_ROWS)
    assert trials.commits_of([(0, _commit(1, 1)), (1, _commit(1)), (2, later)]) == (1, 3, True)


def _headers(**named) -> list[tuple[str, str]]:
    return [(k.replace("_", "-"), v) for k, v in named.items()]


@pytest.mark.parametrize(
    ("kind", "method", "path", "headers", "body", "expected"),
    [
        (
            "conditional-put",
            "PUT",
            "/b/t/_delta_log/00000000000000000001.json",
            _headers(If_None_Match="*"),
            b"",
            ("b/t", 1),
        ),
        ("conditional-put", "PUT", "/b/t/_delta_log/00000000000000000001.json", [], b"", None),
        ("put", "PUT", "/b/t/_delta_log/00000000000000000001.json", [], b"", ("b/t", 1)),
        (
            "put",
            "PUT",
            "/b/t/_delta_log/00000000000000000001.json",
            _headers(If_None_Match="*"),
            b"",
            None,
        ),
        ("put", "PUT", "/b/t/part-0.parquet", [], b"", None),
        ("put", "GET", "/b/t/_delta_log/00000000000000000001.json", [], b"", None),
        (
            "dynamodb-claim",
            "POST",
            "/",
            _headers(X_Amz_Target="DynamoDB_20120810.PutItem"),
            json.dumps(
                {
                    "TableName": "delta_log",
                    "ConditionExpression": "attribute_not_exists(fileName)",
                    "Item": {
                        "tablePath": {"S": "s3://b/t"},
                        "fileName": {"S": "00000000000000000001.json"},
                        "tempPath": {"S": ".tmp/x.json"},
                        "complete": {"S": "false"},
                    },
                }
            ).encode(),
            ("s3://b/t", 1),
        ),
    ],
)
def test_the_gate_knows_a_commit_request_of_its_kind(kind, method, path, headers, body, expected):
    chosen = gate.LostAnswerGate.__new__(gate.LostAnswerGate)
    chosen.kind = kind
    assert chosen._commit(method, path, headers, body) == expected


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(gate.GateError, match="conditional-put"):
        gate.LostAnswerGate("conditional_put")


def test_every_row_of_the_page_has_a_lost_answer_cell_from_the_data():
    assert set(lost_answer_cells.ROW_PATHS) == {row.key for row in ROWS}
    measured = {(t.path, t.release) for t in trials.read_csv()}
    for key, paths in lost_answer_cells.ROW_PATHS.items():
        if key in lost_answer_cells.NOT_RUN_YET:  # said "not measured" by name
            spark = {(path, release) for path, release in paths if path.startswith("spark")}
            assert not spark & measured and lost_answer_cells.cell(key).verdict == "not measured"
            continue
        assert set(paths) <= measured, key
        found = lost_answer_cells.cell(key)
        assert (
            found.verdict in lost_answer_cells.VERDICT_OF.values()
            or found.verdict == "not measured"
        )


def test_a_cell_is_the_worst_of_its_trials(monkeypatch):
    made = [
        trials.Trial(
            "deltalake-s3-conditional-put",
            "deltalake",
            "1.6.6",
            "S3",
            "conditional-put",
            remedy,
            n,
            True,
            told,
            "",
            commits,
            3 * commits,
            True,
        )
        for remedy, n, told, commits in [
            ("none", 1, "success", 1),
            ("none", 2, "success", 2),
            ("app-transaction", 1, "success", 1),
            ("app-transaction", 2, "failed", 1),
            ("app-transaction-no-retries", 1, "success", 1),
            ("app-transaction-no-retries", 2, "success", 1),
        ]
    ]
    monkeypatch.setattr(lost_answer_cells, "_trials", lambda: tuple(made))
    found = lost_answer_cells.cell("rs-put-today")
    assert found.verdict == lost_answer_cells.VERDICT_OF[trials.TWICE]
    assert "1 of 2 trials" in found.text
    assert "set to 0" in found.remedy.split(";")[0]  # the remedy that held every time, first
    assert found.remedy_verdict == "safe"


def test_a_run_that_missed_a_drop_or_a_part_is_not_published(tmp_path):
    meta = {"problems": [], "parts": ["deltalake"], "trials_per_cell": 3}
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    found = run.folder_problems(tmp_path)
    assert any("spark" in p for p in found) and any("3 trials" in p for p in found)
    missed = trials.Trial(
        "p", "deltalake", "1.6.6", "S3", "put", "none", 1, False, "success", "", 1, 3, True
    )
    assert run.problems([missed]) and "1 trials" in run.problems([missed])[0]
