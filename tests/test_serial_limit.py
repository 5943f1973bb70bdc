"""The committer at the serial limit (helpers/producers/serial_limit.py): its own checkpoint every
K commits, read from the table's log; the refresh it may leave out only with the fix, shown failing
on deltalake 1.6.6 as released; the variants a run measures; the fix's patch and the tool that
applies it. Small runs on local disk; `make producers` measures the variants on every store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from deltalake import DeltaTable

from helpers.ground import tools
from helpers.producers import committer, deltalake_fix, layout, producer, serial_limit


def _committer(uri: str, **spec) -> committer.Committer:
    return committer.Committer(
        {"committer": "limit-test", "table_uri": uri, "storage_options": {}, **spec}
    )


def _commit_files(mine: committer.Committer, uri: str, batches: int) -> list[dict]:
    fs = layout.filesystem(uri, {})
    records = []
    for seq in range(1, batches + 1):
        staged = producer.produce(fs, 1, seq, 10)
        records.append(mine.one_batch([staged]))
    return records


@pytest.fixture
def local_table(tmp_path) -> str:
    uri = str(tmp_path / "table")
    (tmp_path / "table").mkdir()
    DeltaTable.create(uri, layout.schema())
    return uri


def _checkpoints(uri: str) -> list[int]:
    return sorted(
        int(p.name.split(".")[0]) for p in (Path(uri) / "_delta_log").glob("*.checkpoint.parquet")
    )


def test_the_committer_checkpoints_every_k_of_its_commits(local_table):
    # batch n is version n (version 0 created the table); 1.6.6 as released checkpoints the
    # version its table object holds after commit n: the one before
    records = _commit_files(_committer(local_table, checkpoint_every=3), local_table, 7)
    assert [r["batch"] for r in records if r.get("checkpoint")] == [3, 6]
    assert _checkpoints(local_table) == [2, 5]
    assert all(r["errors"] == [] for r in records)
    assert DeltaTable(local_table).version() == 7
    assert len(DeltaTable(local_table).get_add_actions(flatten=True)) == 7


def test_by_default_the_committer_leaves_checkpoints_to_the_table(local_table):
    _commit_files(_committer(local_table), local_table, 4)
    assert _checkpoints(local_table) == []
    assert committer.CHECKPOINT_EVERY is None or committer.CHECKPOINT_EVERY > 4


def test_without_its_refresh_released_deltalake_meets_the_committers_own_last_commit(
    local_table,
):
    """The finding, from the table: after an answered commit, 1.6.6's DeltaTable is still at the
    version it read, so the next commit without a refresh is refused as a concurrent transaction,
    and lands only on the try after it (which refreshes and asks first). With the fix built, the
    same committer commits each batch on its first try (`make producers`' variant rows)."""
    records = _commit_files(_committer(local_table, refresh=False), local_table, 4)
    assert records[0]["attempts"] == 1 and records[0]["errors"] == []
    for record in records[1:]:
        assert record["attempts"] == 2, record
        assert record["outcome"] == "committed", record
        assert record["errors"] == [
            "CommitFailedError: Failed to commit transaction: Concurrent transaction failed."
        ], record
    table = DeltaTable(local_table)
    assert table.version() == 4 and len(table.get_add_actions(flatten=True)) == 4
    assert table.transaction_version(committer.layout.app_id("limit-test")) == 4


def test_a_run_measures_the_fixs_variants_only_when_it_is_built(monkeypatch):
    monkeypatch.setattr(deltalake_fix, "built", lambda: False)
    names = serial_limit.variants()
    assert names and all(serial_limit.VARIANTS[n]["build"] == serial_limit.RELEASED for n in names)
    assert {10, 25, 50} <= {serial_limit.VARIANTS[n]["checkpoint_every"] for n in names}
    assert serial_limit.variants(with_all=False) == [serial_limit.default_variant()]
    monkeypatch.setattr(deltalake_fix, "built", lambda: True)
    assert "fix, no refresh" in serial_limit.variants()
    assert set(serial_limit.MEASURED) <= set(serial_limit.VARIANTS)
    default = serial_limit.VARIANTS[serial_limit.default_variant()]
    assert default["build"] == serial_limit.RELEASED and default["refresh"]
    assert default["checkpoint_every"] == committer.CHECKPOINT_EVERY


def test_a_small_run_at_the_limit_counts_checkpoints_and_refreshes_from_its_process():
    rows = serial_limit.variant_rows(
        "local",
        "local",
        "producers/test-serial-limit/local",
        producers=2,
        max_files=10,
        rounds=2,
        block=10,
        names=["checkpoint every 10", "no refresh"],
    )
    by = {r["variant"]: r for r in rows}
    assert all(r["exactly_once"] and r["commits"] == 20 for r in rows), rows
    # 21 commits in all (one warm-up first): batches 10 and 20 checkpoint, after the warm-up
    assert by["checkpoint every 10"]["checkpoints"] == 2
    assert by["checkpoint every 10"]["refreshes"] == 20 and by["checkpoint every 10"]["errors"] == 0
    # no refresh on 1.6.6 as released: every measured commit is refused once, then refreshed
    assert by["no refresh"]["errors"] == 20
    assert "Concurrent transaction failed" in by["no refresh"]["first_error"]
    assert by["no refresh"]["deltalake"] == "1.6.6"


def test_the_fix_is_one_set_state_in_create_write_transaction():
    patch = committer.FIX_PATCH.read_text()
    assert patch.startswith("--- a/python/src/lib.rs\n+++ b/python/src/lib.rs\n")
    added = [line[1:].strip() for line in patch.splitlines() if line.startswith("+ ")]
    assert added == ["let commit = rt().block_on(", "self.set_state(Some(commit.snapshot))"]
    assert re.search(r"1\.6\.6.*sha256 [0-9a-f]{12}", deltalake_fix.stamp_text())


def test_a_patch_applies_where_its_lines_are_found_once_and_names_the_hunk_that_does_not(
    tmp_path,
):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text("fn a() {\n    Ok(())\n}\n")
    patch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn a() {\n-    Ok(())\n+    done()\n }\n"
    tools.apply_patch(patch, tmp_path)
    assert (tmp_path / "src" / "lib.rs").read_text() == "fn a() {\n    done()\n}\n"
    with pytest.raises(ValueError, match="hunk 1 does not apply to lib.rs \\(0 matches\\)"):
        tools.apply_patch(patch, tmp_path)


def _ways(ratios: dict[str, dict[str, float]]):
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "backend": store,
                "variant": name,
                "build": serial_limit.VARIANTS[name]["build"],
                "commits": 300,
                "ratio_to_serial": ratio,
                "refreshes": 0 if name == "fix, no refresh" else 300,
                "refresh_p50_ms": float("nan") if name == "fix, no refresh" else 5.0,
                "refresh_p99_ms": float("nan") if name == "fix, no refresh" else 9.0,
                "errors": 0,
            }
            for name, by_store in ratios.items()
            for store, ratio in by_store.items()
        ]
    )


def test_the_answer_names_only_the_ways_that_reach_the_target_on_every_store():
    from types import SimpleNamespace

    from helpers.producers import answer

    ways = _ways(
        {
            "refresh before each commit": {"local": 0.95, "s3@versitygw": 0.85},
            "checkpoint every 10": {"local": 0.93, "s3@versitygw": 0.91},
            "fix, no refresh": {"local": 1.2, "s3@versitygw": 1.1},
        }
    )
    text = "\n".join(answer._variants(SimpleNamespace(limit_variants=ways)))
    assert "| 1.6.6 | refresh before each commit | 0.95 | 0.85 | 5.0 / 9.0 | 0 of 600 |" in text
    assert "| 1.6.6 + fix | fix, no refresh | 1.20 | 1.10 | none | 0 of 600 |" in text
    assert text.endswith(
        "on every store in this run: checkpoint every 10 (1.6.6); fix, no refresh (1.6.6 + fix).\n"
    )
    # crafted break: no way reaches it everywhere
    short = ways.assign(ratio_to_serial=ways.ratio_to_serial.where(ways.backend == "local", 0.5))
    text = "\n".join(answer._variants(SimpleNamespace(limit_variants=short)))
    assert "No way reaches 0.9 of the serial limit on every store in this run." in text
    assert answer._variants(SimpleNamespace(limit_variants=None)) == []
