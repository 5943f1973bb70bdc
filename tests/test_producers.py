"""helpers.producers: the staging names, the committer's exactly-once protocol on a local table,
clean-up, the notebook's calls to copy (delta-rs and Spark), the Spark run's pure parts, and the answer page's
section from the committed run."""

from __future__ import annotations

import ast
import json
import re
import uuid

import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from helpers.ground import config
from helpers.producers import __main__ as cli
from helpers.producers import (
    answer,
    cleanup,
    commit_steps,
    committer,
    figures,
    layout,
    producer,
    queue,
    results,
    run,
    scenarios,
    spark_stream,
)
from helpers.producers.check import exactly_once
from helpers.writers.protocol import BATCH_TAG, WRITER_TAG

NOTEBOOK = config.NOTEBOOKS_DIR / "14_many_producers.ipynb"


def test_a_marker_name_says_what_the_committer_needs():
    staged = layout.Staged(producer=3, seq=12, token="1f2e3d4c", rows=10, size=1534)
    assert staged.marker_path == "_queue/ready/p03-00000012-1f2e3d4c-10-1534.ready"
    assert layout.parse_marker(staged.marker_path) == staged
    assert layout.producer_and_seq(staged.data_path) == (3, 12)
    assert layout.parse_marker("_queue/ready/p03-00000012-1f2e3d4c-10.ready") is None
    assert len(layout.expected_ids({1: 2, 2: 3}, 10)) == 50


@pytest.fixture
def local_table(tmp_path):
    uri = str(tmp_path / "table")
    (tmp_path / "table").mkdir()
    DeltaTable.create(uri, layout.schema())
    return uri


def _staged(uri: str, producer_number: int, seqs) -> list[tuple[str, int, int]]:
    fs = layout.filesystem(uri, {})
    made = [producer.produce(fs, producer_number, seq, 10) for seq in seqs]
    return [(s.data_path, s.size, s.rows) for s in made]


def test_commit_batch_commits_a_batch_once_however_often_it_is_asked(local_table):
    files = _staged(local_table, 1, (1, 2))
    table = DeltaTable(local_table)
    assert committer.commit_batch(table, "c", 1, files) == "committed"
    assert (
        committer.commit_batch(DeltaTable(local_table), "c", 1, files) == "landed already"
    )  # a restart, a retry
    verdict = exactly_once(local_table, {}, layout.expected_ids({1: 2}, 10))
    assert verdict.exactly_once, verdict
    assert DeltaTable(local_table).version() == 1


def test_the_check_finds_a_batch_committed_twice_that_a_reader_counts_once(local_table):
    files = _staged(local_table, 1, (1,))
    committer.commit_blindly(DeltaTable(local_table), "c", 1, files)
    committer.commit_blindly(DeltaTable(local_table), "c", 1, files)
    verdict = exactly_once(local_table, {}, layout.expected_ids({1: 1}, 10))
    assert verdict.rows_read == 10  # deltalake reads a file added twice once
    assert verdict.rows_the_log_adds == 20
    assert verdict.batches_twice == {("c", 1): [1, 2]}
    assert list(verdict.files_added_twice.values()) == [[1, 2]]
    assert not verdict.exactly_once


def test_commits_carry_the_workbook_tags_the_auditor_reads(local_table):
    committer.commit_batch(DeltaTable(local_table), "c", 1, _staged(local_table, 2, (1,)))
    info = DeltaTable(local_table).history(1)[0]
    assert (info[WRITER_TAG], info[BATCH_TAG]) == ("c", "1")


def test_clean_up_deletes_landed_markers_and_orphans_never_a_file_the_table_holds(local_table):
    files = _staged(local_table, 1, (1, 2))
    committer.commit_batch(DeltaTable(local_table), "c", 1, files[:1])  # file 2 waits in the queue
    fs = layout.filesystem(local_table, {})
    pq.write_table(
        layout.file_rows(1, 3, 10), layout.data_path(1, 3, "deadbeef"), filesystem=fs
    )  # a killed producer's
    assert cleanup.clean_up(local_table, {}, orphans_older_than_s=0.0) == {
        "markers": 1,
        "orphaned data files": 1,
        "waiting": 1,
    }
    assert layout.listed(fs, layout.PRODUCED_DIR) == sorted(path for path, _, _ in files)
    assert [s.data_path for s in layout.ready(fs)] == [files[1][0]]


def test_the_profile_times_the_committers_own_commit_step_by_step(local_table, monkeypatch):
    """The profile times :func:`committer.commit_batch` itself (its table's calls timed as steps),
    so what it measures is what the committer runs: a commit through it lands once, with its
    transaction id, and every step of the table has its span, in order."""
    fs = layout.filesystem(local_table, {})
    made = [producer.produce(fs, 1, seq, 10) for seq in (1, 2)]
    called = []
    monkeypatch.setattr(
        committer,
        "commit_batch",
        lambda *args, original=committer.commit_batch, **kwargs: (
            called.append(args[2]) or original(*args, **kwargs)
        ),
    )
    table = DeltaTable(local_table)
    for batch, ask in ((1, True), (2, False)):
        clock = commit_steps._Clock()
        commit_steps._commit_once(
            table,
            "profile",
            batch,
            lambda: [made[batch - 1]],
            keep=lambda s: True,
            take=10,
            q=None,
            clock=clock,
            listed_markers=[],
            ask=ask,
        )
        assert sorted(clock.steps) == sorted(commit_steps.STEPS)
        spans = [clock.steps[step] for step in commit_steps.STEPS]
        assert all(duration >= 0 for _, duration in spans)
        assert [start for start, _ in spans] == sorted(start for start, _ in spans)
        if not ask:  # as the committer once answered: not asked, a step of no time
            assert clock.steps["transaction_version"][1] == 0.0
    assert called == [1, 2]
    assert DeltaTable(local_table).transaction_version("profile") == 2
    with pytest.raises(RuntimeError, match="batch 2 is in the table already"):
        commit_steps._commit_once(
            DeltaTable(local_table),
            "profile",
            2,
            lambda: [],
            keep=lambda s: True,
            take=10,
            q=None,
            clock=commit_steps._Clock(),
            listed_markers=[],
        )


def _committer(uri: str, tmp_path, max_files: int) -> committer.Committer:
    (
        tmp_path / "stop"
    ).touch()  # stopping from the start: the loop ends once a listing finds nothing waiting
    return committer.Committer(
        {"committer": "c1", "table_uri": uri, "storage_options": {}, "max_files": max_files}
    )


def _drain(found: committer.Committer, tmp_path) -> list[dict]:
    commits: list[dict] = []
    found.run(tmp_path / "stop", commits)
    return commits


def test_the_committers_listing_never_reads_a_marker_it_took(local_table, tmp_path):
    _staged(local_table, 1, range(1, 26))
    first = _committer(local_table, tmp_path, max_files=10)
    first_commits = _drain(first, tmp_path)
    _staged(local_table, 2, range(1, 8))
    restarted = _committer(local_table, tmp_path, max_files=10)
    restarted_commits = _drain(restarted, tmp_path)
    verdict = exactly_once(local_table, {}, layout.expected_ids({1: 25, 2: 7}, 10))
    assert verdict.exactly_once and verdict.staged_left == [], verdict
    assert [c["files"] for c in first_commits] == [10, 10, 5]
    assert (first.queue.listed, first.queue.listings) == (
        25,
        4,
    )  # each marker read once; the last listing found none
    assert [c["files"] for c in restarted_commits] == [7]
    assert restarted.queue.listed == 7  # none of the 25 the table holds


def test_a_committer_killed_before_deleting_its_markers_takes_them_off_without_committing_again(
    local_table, tmp_path
):
    _staged(local_table, 1, range(1, 5))
    killed = _committer(local_table, tmp_path, max_files=10)
    killed.one_batch(killed.queue.waiting(10))  # committed, and killed before the markers went
    restarted = _committer(local_table, tmp_path, max_files=10)
    assert (restarted.batch, _drain(restarted, tmp_path), restarted.queue.listed) == (1, [], 4)
    verdict = exactly_once(local_table, {}, layout.expected_ids({1: 4}, 10))
    assert verdict.exactly_once and verdict.staged_left == [], verdict


class _AfterTheLastTaken(queue.LocalQueue):
    """A crafted break: every listing starts after the last name listed, never again from the first
    (as if markers were handed over in name order)."""

    last = ""

    def _names(self, limit: int, cursor) -> tuple[list[str], object]:
        names = sorted(n for n in super()._names(10**6, None)[0] if n > self.last)[:limit]
        self.last = max(names, default=self.last)
        return names, None


def test_a_listing_that_skips_a_marker_fails_the_exactly_once_check(local_table, tmp_path):
    found = _committer(local_table, tmp_path, max_files=10)
    found.queue = _AfterTheLastTaken(local_table)
    _staged(local_table, 2, (1, 2))
    _drain(found, tmp_path)
    _staged(
        local_table, 1, (1,)
    )  # handed over later, named before producer 2's: the cursor skips it
    _drain(found, tmp_path)
    verdict = exactly_once(local_table, {}, layout.expected_ids({1: 1, 2: 2}, 10))
    assert (verdict.missing_ids, verdict.exactly_once) == (10, False)


@pytest.mark.parametrize("backend", ["s3", "azure"])
def test_on_a_store_that_lists_in_order_each_marker_is_listed_once_and_one_handed_over_behind_the_cursor_is_found(
    stores, backend
):
    table = run.Table.fresh(backend, f"test-producers/queue-{uuid.uuid4().hex[:8]}")
    try:
        commit_steps.stage(table, 2, range(1, 26), data=False)
        found = queue.open_queue(table.uri, table.options)
        seen: list[str] = []
        first = found.waiting(10)
        commit_steps.stage(
            table, 1, (1,), data=False
        )  # handed over mid-pass, named before every marker listed
        batch = first
        while batch or not found.from_start:
            seen += [s.marker_path for s in batch]
            found.take(batch)  # deleted in the background while the pass goes on
            batch = found.waiting(10)
        found.settle()
        assert (len(seen), len(set(seen)), found.listed) == (26, 26, 26)
        assert found.waiting(10) == [] and found.from_start
    finally:
        table.remove()


def _never_from_the_start(found: queue.Queue) -> queue.Queue:
    """A crafted break of a store's listing: a pass never ends, so the next listing always starts
    after the last name listed and never from the first (markers go at once, as if nothing could
    be handed over behind the cursor)."""
    names, last = found._names, {"name": None}

    def after_the_last(limit: int, cursor) -> tuple[list[str], object]:
        listed, _ = names(limit, cursor if cursor is not None else last["name"])
        if listed:
            last["name"] = found.prefix + layout.READY_DIR + "/" + listed[-1]
        return listed, None

    found._names, found._pool, found._lister = after_the_last, None, None
    return found


@pytest.mark.parametrize("backend", ["s3"])
def test_a_store_listing_that_never_starts_again_from_the_first_name_fails_the_exactly_once_check(
    stores, backend, tmp_path
):
    table = run.Table.fresh(backend, f"test-producers/skip-{uuid.uuid4().hex[:8]}")
    try:
        (tmp_path / "stop").touch()
        found = committer.Committer(
            {"committer": "c1", "table_uri": table.uri, "storage_options": table.options}
        )
        found.queue = _never_from_the_start(queue.open_queue(table.uri, table.options))
        commit_steps.stage(table, 2, (1, 2))
        _drain(found, tmp_path)
        commit_steps.stage(table, 1, (1,))  # handed over later, named before producer 2's: skipped
        _drain(found, tmp_path)
        verdict = table.verdict({1: 1, 2: 2})
        assert (verdict.missing_ids, verdict.exactly_once) == (10, False)
    finally:
        table.remove()


def _function(source: str, name: str) -> ast.FunctionDef:
    return next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef) and node.name == name
    )


def _body(function: ast.FunctionDef) -> list[str]:
    """The statements of a function, without its docstring and imports."""
    return [
        ast.dump(s)
        for s in function.body
        if not isinstance(s, (ast.Import, ast.ImportFrom))
        and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]


def copy_cell_matches(cell: str) -> bool:
    """Does the notebook's ``commit_batch`` make the committer's calls, statement for statement?"""
    import inspect

    return _body(_function(cell, "commit_batch")) == _body(
        _function(inspect.getsource(committer), "commit_batch")
    )


def _copy_cell() -> str:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    return next(
        "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and "def commit_batch(" in "".join(c["source"])
    )


def test_the_notebooks_call_to_copy_is_the_committers():
    assert copy_cell_matches(_copy_cell())


def test_a_copy_cell_without_the_check_is_found():
    crafted = _copy_cell().replace(
        "if ask_first and (table.transaction_version(app_id) or 0) >= batch:", "if False:"
    )
    assert not copy_cell_matches(crafted)


def test_the_answer_section_is_rendered_from_the_committed_run():
    found = results.load(config.DATA_DIR / "full_runs" / results.KIND)
    text = answer.what_to_build(found)
    assert text.startswith(answer.HEADING)
    top = found.runs[found.runs.producers == found.runs.producers.max()]
    # two tables of a header, its rule and a row a store; then one of a row a way at the limit
    ways = found.limit_variants.variant.nunique() if found.limit_variants is not None else -2
    assert text.count("\n| ") == 2 * (2 + len(top)) + 2 + ways
    for store, row in top.set_index("backend").iterrows():  # s3, or s3@moto and s3@versitygw
        assert (
            f"| {answer.STORES[store]} | {row.commits_per_s:.1f} | {row.rows_per_s:.0f} |" in text
        )
    assert found.meta["date"][:10] in text


def test_the_answer_section_sets_each_queue_length_beside_a_plain_append_and_times_the_refresh():
    found = results.load(config.DATA_DIR / "full_runs" / results.KIND)
    text = answer.what_to_build(found)
    whole = found.queue[found.queue.step == "whole commit"]
    for backend, group in whole.groupby("backend", sort=False):
        ms = {
            v: " / ".join(
                f"{t * 1000:.0f}"
                for t in group[group.variant == v].sort_values("waiting").seconds_median
            )
            for v in ("committer", "plain append")
        }
        assert (
            f"{answer.STORES[backend]} {ms['committer']} ms against {ms['plain append']} (" in text
        )
    assert set(whole[whole.variant == "committer"].markers_listed_median) == {10}
    table = figures.queue_table(found.queue)
    assert (table["committer / plain append"] > 0).all() and len(table) == len(whole) // 3
    refresh = found.profile[
        (found.profile.step == "refresh") & (found.profile.variant == "committer")
    ]
    assert (refresh.commits == 100).all() and refresh.seconds_median_late.notna().all()
    assert "first 20 commits → commits 80 to 99" in text
    header, *cause_rows = [
        line for line in text.splitlines() if line.startswith("| ") and " → " in line
    ]
    assert "first 20 commits → commits 80 to 99 |" in header
    assert len(cause_rows) == len(refresh)  # the cause's table: one row a store
    for backend, row in refresh.set_index("backend").iterrows():
        early, late = row.seconds_median_early * 1000, row.seconds_median_late * 1000
        assert any(
            line.startswith(f"| {answer.STORES[backend]} | ")
            and line.endswith(f"| {early:.1f} → {late:.1f} |")
            for line in cause_rows
        )


# -- §5, Spark: the pure parts (the run itself is the notebook's) --------------------------------------


def _spark_copy_cell() -> str:
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    return next(
        "".join(c["source"])
        for c in cells
        if c["cell_type"] == "code" and "def append_batch(" in "".join(c["source"])
    )


def spark_copy_cell_matches(cell: str) -> bool:
    """Do the notebook's ``append_batch`` and ``start_stream`` make the driver's calls, statement for statement?"""
    import inspect

    source = inspect.getsource(spark_stream)
    return all(
        _body(_function(cell, name)) == _body(_function(source, name))
        for name in ("append_batch", "start_stream")
    )


def test_the_notebooks_spark_call_to_copy_is_the_drivers():
    assert spark_copy_cell_matches(_spark_copy_cell())


def test_a_spark_copy_cell_without_the_txn_options_is_found():
    cell = _spark_copy_cell()
    crafted = re.sub(r'\s*\.option\("txn(?:AppId|Version)", \w+\)', "", cell)
    assert crafted != cell  # the options were there, however the formatter laid them out
    assert not spark_copy_cell_matches(crafted)


def test_the_checkpoint_says_which_batches_were_planned_and_which_done(tmp_path):
    for folder, names in {"offsets": ("0", "1", ".1.crc"), "commits": ("0", ".0.crc")}.items():
        (tmp_path / folder).mkdir()
        for name in names:
            (tmp_path / folder / name).write_text("v1")
    assert spark_stream.checkpoint_batches(tmp_path) == {"offsets": [0, 1], "commits": [0]}
    assert spark_stream.checkpoint_batches(tmp_path / "none") == {"offsets": [], "commits": []}


def test_a_batch_two_drivers_ran_is_a_replay():
    events = [
        {"process": "driver-1", "event": "session"},
        {"process": "driver-1", "event": "batch", "batch": 0},
        {"process": "driver-1", "event": "batch", "batch": 1},
        {"process": "driver-2", "event": "batch", "batch": 1},
        {"process": "driver-2", "event": "batch", "batch": 2},
    ]
    assert spark_stream.replayed(events) == [1]
    assert spark_stream.replayed(events[:3] + events[4:]) == []


def test_the_log_shows_each_commits_txn_and_batch(local_table):
    committer.commit_batch(DeltaTable(local_table), "c", 1, _staged(local_table, 1, (1, 2)))
    found = spark_stream.log_commits(local_table)
    assert found == [
        {"version": 0, "batch": None, "txn": [], "files": 0, "rows": 0},
        {"version": 1, "batch": 1, "txn": ["c:1"], "files": 2, "rows": 20},
    ]


def test_the_inputs_hold_the_producers_ids(tmp_path):
    ids = spark_stream.stage_inputs(tmp_path / "inbox", producers=2, files=3, rows=10)
    read = pq.read_table(tmp_path / "inbox").column("id").to_pylist()
    assert sorted(read) == sorted(ids) and len(ids) == 60


def test_the_run_at_the_limit_plans_only_commits_its_staged_files_can_fill(monkeypatch):
    # the committer makes one warm-up commit and `rounds` blocks of `block` commits, each of
    # max_files files; a commit it cannot fill waits for files nobody stages (it hung with 6)
    for staged in range(scenarios.limit_files_needed(10, rounds=4), 400):
        block = scenarios.limit_block(staged, 10, rounds=4)
        assert block >= 1 and (1 + 4 * block) * 10 <= staged
    assert scenarios.limit_block(8 * 40, 10, rounds=4) == 7  # 4 rounds: 29 of 32 commits measured
    with pytest.raises(run.ProducersError, match="at least 110 staged files"):
        scenarios.limit_block(2 * 3, 10)

    def staged_anyway(*args, **kwargs):
        raise AssertionError("files were staged for a run that cannot use them")

    monkeypatch.setattr(scenarios, "Phase", staged_anyway)
    with pytest.raises(run.ProducersError, match="not 6"):
        scenarios.at_the_limit(None, None, producers=2, files=3, max_files=10)


def test_the_run_at_the_limit_stages_its_own_files_whatever_files_says():
    # --files sets the producers' runs; the limit's producers stage a warm-up commit and
    # LIMIT_ROUNDS blocks of LIMIT_BLOCK commits, so 3 files each is no longer refused
    parser = cli._parser()
    few = parser.parse_args(["--producers", "1,2", "--files", "3"])
    assert cli._choices(parser, few)[0] == [1, 2]
    for producers in (1, 2, 3, 8):
        files = scenarios.limit_files_per_producer(producers, 10)
        assert scenarios.limit_block(producers * files, 10) == scenarios.LIMIT_BLOCK
        assert (files - 1) * producers < (1 + scenarios.LIMIT_ROUNDS * scenarios.LIMIT_BLOCK) * 10
