"""helpers.matrix.mixed: Delta Spark (DynamoDB log store) and deltalake 1.5.1 (its DynamoDB lock) on
one S3 table through one lock table. One pair raced end to end on the S3 emulator, judged from what
storage holds: the table's rows, its log and the lock table's items.

The whole run (``make matrix-mixed``) is committed in data/conflict_matrix_mixed_dynamodb.csv."""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import Counter

import pytest

from helpers.delta import delta_log
from helpers.ground import config
from helpers.matrix import engines, classify, mixed, worker
from helpers.matrix import operations as ops
from helpers.matrix import stores as table_stores
from helpers.matrix.deltars import read_table
from helpers.matrix.remote import for_delta_rs
from helpers.stores import storage, tables


def test_the_committed_results_cover_every_pair_in_both_orders():
    with mixed.DATA_CSV.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    raced = Counter((r["order"], r["first"], r["second"]) for r in rows)
    assert set(raced) == {(o, a, b) for o in mixed.ORDERS for a, b in mixed.default_pairs()}
    # once per Delta Spark release: 4.4.0's run and 3.3.2's, each under its own engine names
    assert set(raced.values()) == {len(engines.SPARK_OF_ERA)}
    assert {r["engine"] for r in rows} == {
        mixed.engine_name(order, spark=spark)
        for order in mixed.ORDERS
        for spark in engines.SPARK_OF_ERA.values()
    }
    assert {r["outcome"] for r in rows} <= set(classify.OUTCOMES)
    # every race's commits after the base went through the one lock table, under one tablePath
    assert {r["lock_table_paths"] for r in rows if r["outcome"] != classify.ERROR} == {"1"}


@pytest.mark.services
@pytest.mark.spark
def test_a_deltalake_commit_then_a_held_spark_append_through_one_lock_table(
    stores, tmp_path, monkeypatch
):
    """deltalake 1.5.1 appends (A); Delta Spark's append (B), which read the same version and was held
    at its claim in the lock table, then commits after it: both appends are in the table, each
    commit has its one complete item, and B's commit says it read the base version."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.matrix.mixed",
            "--ops",
            "append",
            "--orders",
            "deltalake-first",
            "--out",
            str(tmp_path),
            "--keep",
        ],
        check=False,
        cwd=config.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (row,) = list(csv.DictReader((tmp_path / "matrix.csv").open(encoding="utf-8")))
    root = worker.s3_root(str(tmp_path), mixed.engine_name("deltalake-first"))
    race = f"{root}/pairs/append--append/race"
    for key, value in tables.s3_storage_options().items():  # the kernel's reader, as the oracle's
        monkeypatch.setenv(key, value)
    try:
        state = read_table(race)
        versions = table_stores.for_location(race).versions(race)
        items = storage.lock_entries(for_delta_rs(race))
        assert row["outcome"] == classify.SERIALIZABLE, row["detail"]
        # from storage: the base rows and both appends' rows (each append writes ids 101-104)
        ids = Counter(r[0] for r in state["rows"])
        assert {i: ids[i] for i, _ in ops.APPEND_ROWS} == {i: 2 for i, _ in ops.APPEND_ROWS}
        base, a_version, b_version = versions[-3], versions[-2], versions[-1]
        # B (Delta Spark) read the base version, as A did: it committed from the older snapshot
        assert table_stores.for_location(race).commit_info(race, b_version)["readVersion"] == base
        by_file = {item["fileName"]: item for item in items}
        a_item = by_file[delta_log.commit_file_name(a_version)]
        b_item = by_file[delta_log.commit_file_name(b_version)]
        assert "_commit_" in a_item["tempPath"]  # staged by delta-rs
        assert b_item["tempPath"].startswith(".tmp/")  # staged by Delta Spark
        assert a_item["complete"] == b_item["complete"] == "true"
        assert {item["tablePath"] for item in items} == {for_delta_rs(race)}
        assert row["lock_commits"] == f"{a_version} delta-rs, {b_version} spark"
    finally:
        table_stores.for_location(root).remove(root)
        storage.delete_lock_entries(for_delta_rs(root), under=True)
