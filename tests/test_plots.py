"""helpers.runs.plots: the timeline of a run, drawn from crafted results (no writer, no store)."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib
import pandas as pd
import pytest

from helpers.runs import audit_record, plots, run_result

matplotlib.use("Agg")

GO = 1_000.0


def _row(
    writer_id: str, outcome: str, *, version=None, error=None, reached_barrier=True, write_ms=20.0
) -> dict:
    row = {
        "writer_id": writer_id,
        "outcome": outcome,
        "reported_version": version,
        "error_class": error,
        "t_launched": GO - 3.0,
        "t_start": GO - 2.8,
        "t_imported": GO - 2.0,
        "t_landing_loaded": GO - 1.9,
        "t_snapshot_loaded": GO - 1.0,
        "t_barrier_released": GO,
        "t_write_finished": GO + write_ms / 1000,
        "t_exited": GO + write_ms / 1000 + 0.01,
    }
    if not reached_barrier:
        row.update(
            t_snapshot_loaded=None,
            t_barrier_released=None,
            t_write_finished=None,
            t_exited=GO - 1.5,
        )
    return row


def _run(rows: list[dict], **extra):
    frame = pd.DataFrame(rows).reindex(columns=run_result.RESULT_COLUMNS)
    frame["reported_version"] = frame["reported_version"].astype(
        "Int64"
    )  # as the runner's frame has it
    return SimpleNamespace(
        results=frame,
        t_released=GO,
        n=len(rows),
        era="deltalake-0.22.3",
        max_commit_retries=0,
        **extra,
    )


def _texts(figure) -> list[str]:
    return [t.get_text() for axis in figure.axes for t in axis.texts]


@pytest.fixture(autouse=True)
def close_figures():
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def test_one_lane_per_writer_in_writer_order():
    figure = plots.timeline(
        _run(
            [
                _row("w1", "committed", version=1),
                _row("w2", "failed", error="CommitFailedError"),
                _row("w3", "failed", error="CommitFailedError"),
            ]
        )
    )
    left, right = figure.axes
    assert [t.get_text() for t in left.get_yticklabels()] == ["w3", "w2", "w1"]  # w1 on top
    assert _texts(figure) == [
        "reported v1",
        "failed: CommitFailedError",
        "failed: CommitFailedError",
    ]
    assert figure._suptitle.get_text() == "3 writers, deltalake-0.22.3, max_commit_retries=0"


def test_the_audit_turns_reported_success_into_rows_lost_and_adds_attempts():
    rows = [
        _row("w1", "committed", version=2),
        _row("w2", "committed", version=2),
        _row("w3", "failed", error="Boom"),
    ]
    verdicts = pd.DataFrame(
        [
            {
                "writer_id": "w1",
                "verdict": audit_record.OK_COMMITTED,
                "commit_in_log": 2,
                "attempts": 3,
            },
            {
                "writer_id": "w2",
                "verdict": audit_record.SILENT_LOSS,
                "commit_in_log": None,
                "attempts": None,
            },
            {"writer_id": "w3", "verdict": audit_record.PHANTOM, "commit_in_log": 3, "attempts": 1},
        ]
    )
    figure = plots.timeline(_run(rows), audit=SimpleNamespace(writers=verdicts), title="audited")
    assert _texts(figure) == [
        "committed v2, 3 attempts",
        "reported v2, rows lost",
        "reported Boom, rows present",
    ]
    legend = [t.get_text() for t in figure.legends[0].get_texts()]
    assert {"reported success, rows lost", "reported failure, rows present", "committed"} <= set(
        legend
    )
    assert "failed" not in legend  # only fates that happened are explained
    assert figure._suptitle.get_text() == "audited"


def test_a_commit_the_log_puts_elsewhere_shows_both_versions():
    verdicts = pd.DataFrame(
        [
            {
                "writer_id": "w1",
                "verdict": audit_record.OK_COMMITTED,
                "commit_in_log": 3,
                "attempts": 1,
            }
        ]
    )
    figure = plots.timeline(
        _run([_row("w1", "committed", version=1)]), audit=SimpleNamespace(writers=verdicts)
    )
    assert _texts(figure) == ["committed v3, 1 attempt (reported v1)"]


def test_a_writer_that_never_reached_the_barrier_is_marked_before_go():
    figure = plots.timeline(
        _run(
            [
                _row("w1", "committed", version=1),
                _row("w2", "failed", error="TableNotFoundError", reached_barrier=False),
            ]
        )
    )
    left, right = figure.axes
    assert [t.get_text() for t in left.texts] == ["failed: TableNotFoundError"]
    assert left.texts[0].xy[0] < 0  # drawn in the seconds before go
    assert [t.get_text() for t in right.texts] == ["reported v1"]
    assert right.texts[0].xy[0] == pytest.approx(20.0)  # milliseconds after go


def test_draws_into_given_axes():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    assert plots.timeline(_run([_row("w1", "committed", version=1)]), ax=axes) is fig


def _history(versions_files_bytes, operations):
    return pd.DataFrame(
        {
            "version": [v for v, _, _ in versions_files_bytes],
            "operation": operations,
            "live_files": [f for _, f, _ in versions_files_bytes],
            "live_bytes": [b for _, _, b in versions_files_bytes],
        }
    )


def test_files_per_version_draws_each_table_and_names_the_maintenance_commits():
    rs = _history(
        [(0, 0, 0), (1, 1, 1024), (2, 2, 2048), (3, 1, 1536), (4, 1, 1536), (5, 1, 1536)],
        ["CREATE TABLE", "WRITE", "WRITE", "OPTIMIZE", "VACUUM START", "VACUUM END"],
    )
    spark = _history(
        [(0, 0, 0), (1, 1, 1024), (2, 2, 2048), (3, 2, 2560)],
        ["CREATE TABLE", "WRITE", "WRITE", "MERGE"],
    )
    figure = plots.files_per_version(
        {"delta-rs": rs, "Spark": spark},
        listed={"delta-rs": [(2, 2), (3, 3), (5, 4), (5, 1)]},
        title="story",
    )
    top, bottom = figure.axes
    assert [t.get_text() for t in top.texts] == [
        "OPTIMIZE",
        "VACUUM START",
        "VACUUM END",
        "MERGE",
    ]  # appends unnamed
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    assert legend == [
        "delta-rs: live files (log)",
        "delta-rs: Parquet files in the bucket (listed)",
        "Spark: live files (log)",
    ]
    (listed_line,) = [line for line in top.get_lines() if line.get_linestyle() == "--"]
    # in the order listed: two listings of one version (before and after a VACUUM that commits nothing) stay in order
    assert list(listed_line.get_xdata()) == [2, 3, 5, 5] and list(listed_line.get_ydata()) == [
        2,
        3,
        4,
        1,
    ]
    assert max(bottom.get_lines()[0].get_ydata()) == 2.0  # bytes shown in KiB
    assert figure._suptitle.get_text() == "story"


def test_files_per_version_without_listing_has_a_default_title():
    figure = plots.files_per_version(
        {"t": _history([(0, 0, 0), (1, 1, 10)], ["CREATE TABLE", "WRITE"])}
    )
    assert figure._suptitle.get_text() == "Data files per table version"
    assert [t.get_text() for t in figure.axes[0].texts] == []
