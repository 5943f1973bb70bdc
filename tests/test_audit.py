"""The auditor: storage's account set against the writers', on S3 in the seeds' era and today."""

from __future__ import annotations

import pytest

from helpers import writers as w
from helpers.ground import eras
from helpers.runs import audit, audit_record, runner
from helpers.stores import tables

N = 4


def test_unsafe_rename_in_the_seeds_era_loses_rows_silently(stores, table_name):
    """deltalake 0.22.3, AWS_S3_ALLOW_UNSAFE_RENAME: everyone reports success, one commit survives."""
    uri, options = tables.s3_uri(table_name), tables.s3_storage_options(unsafe_rename=True)
    runner.create_table(uri, options)
    run = runner.run_writers(uri, options, n=N, era=eras.SEEDS, progress=False)
    assert run.same_snapshot and run.committed == N, run.summary()
    assert run.reported_versions == [1] * N

    checked = audit.audit(run)
    assert checked.rows_expected == 10 * N
    assert checked.rows_actual == 10
    assert checked.rows_lost == 10 * (N - 1) > 0
    assert len(checked.silent_losses) == N - 1 and checked.phantoms == []
    assert checked.commit_versions == [0, 1]
    assert checked.versions_per_commit == {0: 1, 1: N}
    assert checked.max_versions_per_commit == N and checked.max_commits_per_file == N
    assert checked.orphans == N - 1 > 0
    survivor = checked.object_versions.query("commit_version == 1 and is_latest")[
        "writer_id"
    ].tolist()
    assert survivor == list(
        checked.writers.loc[checked.writers["verdict"] == audit_record.OK_COMMITTED, "writer_id"]
    )
    assert len(checked.overwrites) == 1 and checked.overwrites[0].endswith(
        f"{survivor[0]} (last one kept)"
    )
    assert "lost 30" in checked.summary()


def test_conditional_put_today_keeps_one_version_per_commit(stores, table_name):
    """deltalake 1.6.6 on S3 (If-None-Match): all commit with retries, nothing overwritten."""
    uri, options = tables.s3_uri(table_name), tables.s3_storage_options()
    runner.create_table(uri, options)
    run = runner.run_writers(uri, options, n=N, progress=False)
    checked = audit.audit(run)
    assert run.committed == N
    assert checked.rows_lost == 0 and checked.rows_actual == 10 * N
    assert checked.max_versions_per_commit == 1
    assert checked.orphans == 0
    assert checked.versions_consecutive and checked.commits_in_run == N
    assert set(checked.commits["engine"].iloc[1:]) == {"delta-rs:py-1.6.6"}
    writers = checked.writers
    assert writers["attempts"].min() == 1  # the first to commit needed no retry
    # 1.x retries jump to the latest version + 1, so a commit never took more attempts than versions it moved past
    assert (writers["attempts"] <= writers["commit_in_log"] - writers["snapshot_version"]).all()


def test_a_writer_that_says_it_failed_but_committed_is_a_phantom(tmp_path):
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    run = runner.run_writers(uri, n=1, progress=False)
    claimed = run.results.copy()
    claimed.loc[0, "outcome"] = w.FAILED  # what a writer that crashed after committing would report
    checked = audit.audit_table(uri, results=claimed, version_before=0)
    assert checked.phantoms == ["w1"] and checked.rows_unexpected == 10 and checked.rows_lost == 0
    assert checked.rows_phantom == 10


def test_a_phantom_does_not_hide_a_silent_loss(tmp_path):
    """One writer reported failure but committed (a phantom), another reported success but its rows
    are absent (a silent loss): net, the table holds as many rows as reported; gross, 10 are lost."""
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    run = runner.run_writers(uri, n=2, progress=False)
    claimed = run.results.copy()
    claimed.loc[0, "outcome"] = w.FAILED  # committed, yet says it failed
    claimed.loc[1, "batch"] = 999  # says it committed batch 999, which is not in the table
    checked = audit.audit_table(uri, results=claimed, version_before=0)
    assert (checked.phantoms, checked.silent_losses) == (["w1"], ["w2"])
    assert (checked.rows_lost, checked.rows_phantom) == (10, 10)
    assert (
        checked.rows_actual - checked.rows_expected == 10
    )  # the net count that used to read "0 lost"


def test_audit_without_results_reads_the_table_alone(tmp_path):
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    runner.run_writers(uri, n=2, progress=False)
    checked = audit.audit_table(uri)
    assert checked.rows_actual == 20 and checked.rows_lost is None and checked.writers is None
    assert (
        checked.store == "local"
        and checked.versions_per_commit is None
        and checked.max_versions_per_commit is None
    )
    assert "Object versions: not kept" in checked.summary()


def test_audit_refuses_a_missing_table_and_an_unknown_scheme(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(audit.AuditError, match="No commit files"):
        audit.audit_table(str(tmp_path / "empty"))
    with pytest.raises(audit.AuditError, match="gs://b/t"):
        audit.audit_table("gs://b/t")


def test_parse_commit_reads_tags_rows_and_retries():
    body = (
        b'{"add":{"path":"part%2D1.parquet","size":1,"stats":"{\\"numRecords\\":10}"}}\n'
        b'{"commitInfo":{"operation":"WRITE","engineInfo":"delta-rs:py-1.6.6","workbook.writer":"w3",'
        b'"workbook.batch":"7","operationMetrics":{"num_retries":2},"timestamp":1}}\n'
    )
    commit = audit.parse_commit(5, body)
    assert (commit.version, commit.writer_id, commit.batch, commit.num_retries) == (5, "w3", 7, 2)
    assert commit.added == ["part-1.parquet"] and commit.rows_added == 10


def _commit(version: int, writer_id: str | None, added: list[str]) -> audit_record.Commit:
    return audit_record.Commit(
        version=version,
        operation="WRITE",
        engine="delta-rs.1.6.6",
        writer_id=writer_id,
        batch=2,
        timestamp_ms=None,
        num_retries=0,
        added=added,
        rows_added=10,
    )


def test_a_claim_that_matches_its_commit_has_no_problem():
    commit = _commit(3, "w2", ["3-abc-0.parquet"])
    assert audit.claim_problems(commit, "w2", 3, ["3-abc-0.parquet"]) == []


@pytest.mark.parametrize(
    "commit, files, found",
    [
        (
            _commit(3, "w1", ["3-abc-0.parquet"]),
            ["3-abc-0.parquet"],
            "carries the tag of 'w1'",
        ),  # another writer's commit
        (
            _commit(3, "w2", ["3-abc-0.parquet", "3-def-0.parquet"]),
            ["3-abc-0.parquet"],
            "adds ['3-abc-0.parquet', '3-def-0.parquet']",
        ),
        (
            _commit(3, "w2", ["3-xyz-0.parquet"]),
            ["3-abc-0.parquet"],
            "the writer was returned ['3-abc-0.parquet']",
        ),
        (_commit(3, "w2", []), [], "claims no data file"),
        (None, ["3-abc-0.parquet"], "no commit file at version 3"),
    ],
)
def test_a_claim_that_does_not_match_its_commit_is_named(commit, files, found):
    problems = audit.claim_problems(commit, "w2", 3, files)
    assert problems and any(found in p for p in problems), problems
