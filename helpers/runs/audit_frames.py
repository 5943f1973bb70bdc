"""The auditor's tables as pandas DataFrames: one row per commit file, and one row per writer with
what it reported, what the table holds of its batch and the verdict, with the row figures
(expected, lost, unexpected, phantom) set against the writers' reports.
"""

from __future__ import annotations

from helpers import writers
from helpers.runs.audit_record import OK_COMMITTED, OK_FAILED, PARTIAL, PHANTOM, SILENT_LOSS, Commit


def commits_frame(commits: list[Commit]):
    """One row per commit file: its version, operation, engine, writer, batch, rows and files added."""
    import pandas as pd

    rows = [
        {
            "version": c.version,
            "operation": c.operation,
            "engine": c.engine,
            "writer_id": c.writer_id,
            "batch": c.batch,
            "rows_added": c.rows_added,
            "files_added": len(c.added),
            "num_retries": c.num_retries,
            "committed_at": pd.to_datetime(c.timestamp_ms, unit="ms", utc=True)
            if c.timestamp_ms
            else None,
        }
        for c in commits
    ]
    frame = pd.DataFrame(
        rows,
        columns=[
            "version",
            "operation",
            "engine",
            "writer_id",
            "batch",
            "rows_added",
            "files_added",
            "num_retries",
            "committed_at",
        ],
    )
    for column in ("batch", "rows_added", "num_retries"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _attempts(commit: Commit | None, snapshot_version: int | None) -> tuple[int | None, str | None]:
    """How many commit attempts a writer's surviving commit took, and how that is known.

    deltalake 1.x records ``num_retries`` in the commit's operationMetrics. deltalake 0.x does
    not, but it tries ``snapshot + 1``, ``snapshot + 2``, ... one version per attempt, so the
    distance from the snapshot to the commit is the attempt count."""
    if commit is None:
        return None, None
    if commit.num_retries is not None:
        return int(commit.num_retries) + 1, "commitInfo operationMetrics.num_retries + 1"
    if snapshot_version is not None and (commit.engine or "").startswith("delta-rs.0."):
        return (
            commit.version - snapshot_version,
            "commit version - snapshot version (0.x: one version per attempt)",
        )
    return None, None


def _verdict(reported: str, rows_reported, rows_present: int) -> str:
    if rows_present and rows_reported and rows_present < rows_reported:
        return PARTIAL
    if reported == writers.COMMITTED:
        return OK_COMMITTED if rows_present else SILENT_LOSS
    return PHANTOM if rows_present else OK_FAILED


def _writers_frame(
    results,
    before: dict[int, int],
    after: dict[int, int],
    commits: list[Commit],
    version_before: int | None,
):
    """One row per writer: what it reported, what the table holds of its batch, and the verdict."""
    import pandas as pd

    start = -1 if version_before is None else version_before
    by_writer = {(c.writer_id, c.batch): c for c in commits if c.version > start and c.writer_id}
    rows = []
    for r in results.to_dict("records"):
        batch = None if pd.isna(r.get("batch")) else int(r["batch"])
        present = (after.get(batch, 0) - before.get(batch, 0)) if batch is not None else 0
        rows_reported = None if pd.isna(r.get("rows")) else int(r["rows"])
        commit = by_writer.get((r["writer_id"], batch))
        reported_version = r.get("reported_version")
        snapshot = None if pd.isna(r.get("snapshot_version")) else int(r["snapshot_version"])
        attempts, attempts_source = _attempts(commit, snapshot)
        rows.append(
            {
                "writer_id": r["writer_id"],
                "batch": batch,
                "reported": r["outcome"],
                "reported_version": None if pd.isna(reported_version) else int(reported_version),
                "rows_reported": rows_reported,
                "rows_present": present,
                "snapshot_version": snapshot,
                "commit_in_log": commit.version if commit else None,
                "attempts": attempts,
                "attempts_source": attempts_source,
                "verdict": _verdict(r["outcome"], rows_reported, present),
                "error_class": r.get("error_class"),
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "writer_id",
            "batch",
            "reported",
            "reported_version",
            "rows_reported",
            "rows_present",
            "snapshot_version",
            "commit_in_log",
            "attempts",
            "verdict",
            "error_class",
            "attempts_source",
        ],
    )
    for column in (
        "batch",
        "reported_version",
        "rows_reported",
        "snapshot_version",
        "commit_in_log",
        "attempts",
    ):
        frame[column] = frame[column].astype("Int64")
    return frame


def writer_figures(
    results,
    before: dict[int, int],
    after: dict[int, int],
    commits: list[Commit],
    version_before: int | None,
    rows_before: int,
    rows_actual: int,
):
    """The writers' table (:func:`_writers_frame`) and the row figures set against it:
    ``(per_writer, rows_expected, rows_lost, rows_unexpected, rows_phantom)``."""
    per_writer = _writers_frame(results, before, after, commits, version_before)
    reported_rows = int(
        per_writer.loc[per_writer["reported"] == writers.COMMITTED, "rows_reported"].fillna(0).sum()
    )
    rows_expected = rows_before + reported_rows
    rows_lost, rows_phantom = _gross_rows(per_writer)
    rows_unexpected = max(rows_actual - rows_expected, 0)
    return per_writer, rows_expected, rows_lost, rows_unexpected, rows_phantom


def _gross_rows(per_writer) -> tuple[int, int]:
    """(rows lost, phantom rows), each summed writer by writer: the rows missing of every writer
    that reported success, and the rows present of every writer that reported failure."""
    committed = per_writer["reported"] == writers.COMMITTED
    missing = (per_writer["rows_reported"].fillna(0) - per_writer["rows_present"]).clip(lower=0)
    return int(missing[committed].sum()), int(
        per_writer.loc[~committed, "rows_present"].clip(lower=0).sum()
    )


def writers_with(per_writer, verdict: str) -> list[str]:
    """The ids of the writers given ``verdict``; [] without a writers' table."""
    if per_writer is None:
        return []
    return list(per_writer.loc[per_writer["verdict"] == verdict, "writer_id"])
