"""helpers.delta.table_files: a table's files replayed from its log and listed from its folder (local tables, no emulator)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from deltalake import DeltaTable, write_deltalake

from helpers.delta import delta_log, landing, table_files


def _commit(*actions: dict) -> bytes:
    return "\n".join(json.dumps(action) for action in actions).encode()


def _add(path: str, size: int, rows: int | None, low=None, high=None) -> dict:
    stats = (
        {}
        if rows is None
        else {"numRecords": rows, "minValues": {"name": low}, "maxValues": {"name": high}}
    )
    return {"add": {"path": path, "size": size, "stats": json.dumps(stats), "dataChange": True}}


@pytest.fixture
def small_table(tmp_path):
    """A local table of four appends (one file each), then compacted into one file."""
    path = tmp_path / "t"
    for batch in range(1, 5):
        write_deltalake(str(path), landing.batch(batch), mode="append")
    DeltaTable(str(path)).optimize.compact()
    return str(path)


def test_parse_version_reads_adds_removes_and_commit_info():
    body = _commit(
        {"commitInfo": {"operation": "OPTIMIZE", "engineInfo": "delta-rs:py-1.6.6"}},
        {"remove": {"path": "a%20b.parquet", "deletionTimestamp": 1}},
        _add("c.parquet", 120, 20, "Ann", "Zoe"),
    )
    version = table_files.parse_version(7, body)
    assert (version.version, version.operation, version.engine) == (
        7,
        "OPTIMIZE",
        "delta-rs:py-1.6.6",
    )
    assert version.removed == ("a b.parquet",)  # paths in the log are URL-encoded
    assert version.added == (
        table_files.DataFile("c.parquet", 120, 20, {"name": "Ann"}, {"name": "Zoe"}, 7),
    )


def test_history_counts_live_files_bytes_and_rows_per_version(small_table):
    history = table_files.history(small_table)
    assert list(history["version"]) == [0, 1, 2, 3, 4]
    assert list(history["operation"]) == ["WRITE"] * 4 + ["OPTIMIZE"]
    assert list(history["live_files"]) == [1, 2, 3, 4, 1]
    assert list(history["live_rows"]) == [10, 20, 30, 40, 40]
    assert list(history[["files_added", "files_removed"]].iloc[-1]) == [1, 4]
    assert (
        history["live_bytes"].iloc[-1] < history["live_bytes"].iloc[-2]
    )  # one footer instead of four


def test_live_files_of_a_version_with_column_statistics(small_table):
    files = table_files.live_files(small_table, 1, columns=["id"])  # version 0 is the first append
    assert list(files.columns) == ["path", "bytes", "rows", "version_added", "min_id", "max_id"]
    assert list(files["min_id"]) == [101, 201] and list(files["max_id"]) == [
        110,
        210,
    ]  # sorted by min_id
    assert list(files["version_added"]) == [0, 1]
    latest = table_files.live_files(small_table)
    assert len(latest) == 1 and {"min_id", "max_id", "min_name", "max_name"} <= set(latest.columns)
    with pytest.raises(table_files.TableFilesError, match="versions 0..4, not 9"):
        table_files.live_files(small_table, 9)


def test_overlapping_pairs_and_files_reading():
    files = pd.DataFrame(
        {
            "path": ["a", "b", "c"],
            "min_name": ["Ann", "Kim", "Max"],
            "max_name": ["Lee", "Max", "Zoe"],
        }
    )
    assert table_files.overlapping_pairs(files, "name") == [
        ("a", "b"),
        ("b", "c"),
    ]  # touching ends count: both hold "Max"
    assert table_files.files_reading(files, "name", "Max") == ["b", "c"]
    assert table_files.files_reading(files, "name", "Bob") == ["a"]
    disjoint = pd.DataFrame(
        {"path": ["a", "b"], "min_name": ["Ann", "Kim"], "max_name": ["Jo", "Zoe"]}
    )
    assert table_files.overlapping_pairs(disjoint, "name") == []
    with pytest.raises(table_files.TableFilesError, match="No statistics for column 'id'"):
        table_files.overlapping_pairs(files, "id")
    with pytest.raises(table_files.TableFilesError, match="no min/max"):
        table_files.overlapping_pairs(
            pd.DataFrame({"path": ["a"], "min_name": [None], "max_name": ["Zoe"]}), "name"
        )


def test_stored_files_tells_live_replaced_and_orphan(small_table, tmp_path):
    orphan = tmp_path / "t" / "part-orphan.parquet"
    orphan.write_bytes(b"not referenced by any commit")
    stored = table_files.stored_files(small_table)
    assert table_files.count_states(stored) == {"live": 1, "replaced": 4, "orphan": 1}
    assert list(stored.loc[stored["state"] == table_files.ORPHAN, "path"]) == [
        "part-orphan.parquet"
    ]
    assert table_files.count_states(stored.iloc[0:0]) == {"live": 0, "replaced": 0, "orphan": 0}


def test_copy_table_makes_a_twin_that_reads_the_same(small_table, tmp_path):
    twin = str(tmp_path / "twin")
    copied = table_files.copy_table(small_table, twin)
    assert copied == len(list((tmp_path / "t").rglob("*.*")))
    assert DeltaTable(twin).to_pyarrow_table().sort_by("id") == DeltaTable(
        small_table
    ).to_pyarrow_table().sort_by("id")
    assert table_files.history(twin).equals(table_files.history(small_table))
    with pytest.raises(table_files.TableFilesError, match="not empty"):
        table_files.copy_table(small_table, twin)
    with pytest.raises(table_files.TableFilesError, match="S3 to S3 or local to local"):
        table_files.copy_table(small_table, "s3://bucket/elsewhere")


def test_a_log_that_cannot_be_replayed_says_why(tmp_path):
    with pytest.raises(table_files.TableFilesError, match="No commit files"):
        table_files.read_log(str(tmp_path / "nothing"))
    log = tmp_path / "t" / delta_log.LOG_DIR
    log.mkdir(parents=True)
    (tmp_path / "t" / delta_log.commit_file(3)).write_bytes(
        _commit(_add("x.parquet", 1, 1, "a", "b"))
    )
    with pytest.raises(table_files.TableFilesError, match="every JSON commit from version 0"):
        table_files.read_log(str(tmp_path / "t"))


def test_history_without_statistics_has_unknown_rows(tmp_path):
    (tmp_path / "t" / delta_log.LOG_DIR).mkdir(parents=True)
    (tmp_path / "t" / delta_log.commit_file(0)).write_bytes(
        _commit({"commitInfo": {"operation": "WRITE"}}, _add("x.parquet", 5, None))
    )
    history = table_files.history(str(tmp_path / "t"))
    assert history["live_files"].tolist() == [1] and pd.isna(history["live_rows"].iloc[0])
    assert history["live_bytes"].tolist() == [5]
