"""The runner: argument checks, the barrier, timeouts, and the optimistic-concurrency end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from helpers import writers as w
from helpers.delta import landing
from helpers.ground import eras
from helpers.runs import audit, run_processes, runner
from helpers.stores import tables

N = 4


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def test_unknown_era_is_an_era_error(tmp_path):
    with pytest.raises(eras.EraError, match="deltalake-0.1.0"):
        runner.run_writers(str(tmp_path / "t"), n=2, era="deltalake-0.1.0", progress=False)


def test_missing_table_is_named(tmp_path):
    missing = str(tmp_path / "nope")
    with pytest.raises(runner.RunnerError, match="No Delta table at .*nope.*create_table"):
        runner.run_writers(missing, n=2, progress=False)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"n": 0}, "n must be"),
        ({"n": 2, "batches": [1]}, "one per writer"),
        ({"n": 2, "batches": [3, 3]}, "repeat"),
        ({"n": 2, "max_commit_retries": -1}, "max_commit_retries"),
        ({"n": 2, "timeout_s": 0}, "timeout_s"),
        ({"n": 2, "engine": "polars"}, "Unknown engine"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(kwargs, message, tmp_path):
    with pytest.raises(runner.RunnerError, match=message):
        runner.run_writers(str(tmp_path / "t"), progress=False, **kwargs)
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    "mix, message",
    [
        ([], "one \\(engine, era\\) pair"),
        ([("deltalake",)], "one \\(engine, era\\) pair"),
        ([("deltalake", "deltalake-0.1.0")], "deltalake-0.1.0"),
    ],
)
def test_a_bad_mix_is_refused(mix, message, tmp_path):
    with pytest.raises((runner.RunnerError, eras.EraError), match=message):
        runner.run_writers(str(tmp_path / "t"), mix=mix, progress=False)


def test_create_table_refuses_an_existing_table(tmp_path):
    assert runner.create_table(str(tmp_path / "t")) == 0
    with pytest.raises(runner.RunnerError, match="already exists"):
        runner.create_table(str(tmp_path / "t"))


def test_a_writer_without_a_result_is_failed_with_its_exit_code_and_stderr(tmp_path):
    crash = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stderr.write('terminate called'); sys.exit(134)"],
        stderr=open(tmp_path / "w1.err", "wb"),
    )
    crash.wait()
    record = run_processes.WriterProcess(
        name="w1",
        era=eras.CURRENT,
        module="helpers.writers",
        spec_path=tmp_path / "s.json",
        batch=1,
        engine="deltalake",
        result_path=tmp_path / "none.json",
        stdout_path=tmp_path / "w1.out",
        stderr_path=tmp_path / "w1.err",
        process=crash,
    )
    row = run_processes.result_row(record, "t", 10)
    assert row["outcome"] == w.FAILED and row["error_class"] == "NoResult"
    assert row["exit_code"] == 134 and "terminate called" in row["stderr_tail"]


def test_timeout_kills_stragglers_and_marks_them_failed(tmp_path):
    """Deterministic by construction, however fast or slow the machine: each writer's landing file
    is a named pipe nobody writes to, so no writer can ever reach the barrier; the runner's
    timeout is the only way out, and it must keep the barrier shut and kill both."""
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    run_dir = tmp_path / "run"
    (run_dir / "landing").mkdir(parents=True)
    batches = [901, 902]
    for batch in batches:
        os.mkfifo(run_dir / "landing" / landing.landing_file_name(batch))
    run = runner.run_writers(
        uri, n=2, batches=batches, timeout_s=1, progress=False, run_dir=run_dir
    )
    assert run.t_released is None, "the barrier opened although no writer was ready"
    assert run.timed_out == ["w1", "w2"]
    assert list(run.results["error_class"]) == ["Timeout", "Timeout"]
    assert run.failed == 2
    assert runner.table_state(uri).version == 0


def test_a_writer_at_the_barrier_gives_up_when_its_runner_is_gone(tmp_path):
    """No clock: the writer waits for go while its runner lives, and stops once the runner is gone."""
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    stand_in = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(3600)"]
    )  # plays the runner
    spec = w.WriterSpec(
        writer_id="w1",
        era=eras.CURRENT,
        table_uri=uri,
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
        batch=1,
        barrier_dir=str(tmp_path / "barrier"),
        runner_pid=stand_in.pid,
    )
    (tmp_path / "barrier").mkdir()
    writer = eras.start_in_era(eras.CURRENT, ["-m", w.MODULE, spec.to_json()])
    try:
        while not w.ready_file(tmp_path / "barrier", "w1").exists():
            assert writer.poll() is None, "the writer exited before reaching the barrier"
            time.sleep(0.01)
        assert writer.poll() is None, "the writer left the barrier while its runner lived"
        stand_in.kill()
        stand_in.wait()
        assert writer.wait(timeout=300) == 1
    finally:
        for process in (stand_in, writer):
            if process.poll() is None:
                process.kill()
    result = json.loads((tmp_path / "r.json").read_text())
    assert (result["outcome"], result["stage"], result["error_class"]) == (
        w.FAILED,
        "barrier",
        "BarrierTimeout",
    )
    assert f"runner (pid {stand_in.pid}) is gone" in result["error_message"]
    assert runner.table_state(uri).version == 0


# ---------------------------------------------------------------------------------------------
# End to end: optimistic concurrency where the store has an atomic put-if-absent
# ---------------------------------------------------------------------------------------------


def _table(store: str, name: str) -> tuple[str, dict]:
    if store == "local":
        return str(tables.local_table_path(name)), {}
    return tables.azure_uri(name), tables.azure_storage_options()


@pytest.mark.parametrize("store", ["local", "azure"])
def test_retries_off_one_wins_then_retries_on_all_commit(store, stores, table_name):
    uri, options = _table(store, table_name)
    runner.create_table(uri, options)

    race = runner.run_writers(uri, options, n=N, max_commit_retries=0, progress=False)
    assert race.same_snapshot and race.snapshot_versions == [0]
    assert race.outcomes == {"committed": 1, "failed": N - 1}, race.summary()
    assert race.error_classes == {"CommitFailedError": N - 1}
    assert race.reported_versions == [1]
    checked = audit.audit(race)
    assert checked.rows_lost == 0 and checked.rows_phantom == 0 and checked.rows_actual == 10
    assert checked.silent_losses == [] and checked.phantoms == []
    assert checked.orphans == N - 1  # the losers' data files stay behind

    retry = runner.run_writers(uri, options, n=N, progress=False)
    assert retry.committed == N, retry.summary() + (
        " (deltalake 1.x lists the log with List Blobs' startFrom, which Azurite ignores before 3.37.0)"
        if "Invalid table version" in " ".join(retry.results["error_message"].dropna())
        else ""
    )
    winner = int(race.results.loc[race.results["outcome"] == w.COMMITTED, "batch"].iloc[0])
    assert retry.batches == list(
        range(winner + 1, winner + 1 + N)
    )  # ids not in the table yet: rows stay attributable
    assert sorted(retry.reported_versions) == list(range(2, 2 + N))
    checked = audit.audit(retry)
    assert checked.rows_actual == checked.rows_before + 10 * N == 10 + 10 * N
    assert checked.rows_lost == 0
    assert checked.versions_consecutive and checked.version_after == 1 + N
    assert list(checked.writers["commit_in_log"]) == list(checked.writers["reported_version"])
    writers = checked.writers
    assert writers["attempts"].min() == 1
    assert (writers["attempts"] <= writers["commit_in_log"] - writers["snapshot_version"]).all()


def test_a_mixed_run_races_two_eras_for_one_version(tmp_path):
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    run = runner.run_writers(
        uri,
        mix=[("deltalake", eras.CURRENT), ("deltalake", eras.DYNAMODB_INTEROP)],
        max_commit_retries=0,
        progress=False,
    )
    assert (run.n, run.era) == (2, f"{eras.CURRENT} + {eras.DYNAMODB_INTEROP}")
    assert list(run.results["era"]) == [eras.CURRENT, eras.DYNAMODB_INTEROP]
    assert run.same_snapshot and run.outcomes == {"committed": 1, "failed": 1}, run.summary()
    assert list(run.table().columns[:2]) == ["engine", "era"]
    checked = audit.audit(run)
    assert (checked.rows_lost, checked.rows_phantom, checked.silent_losses, checked.phantoms) == (
        0,
        0,
        [],
        [],
    )
    assert checked.rows_actual == 10  # the winner's rows, and the loser's are not there


def test_timeline_has_a_lane_per_writer(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    uri = str(tmp_path / "t")
    runner.create_table(uri)
    run = runner.run_writers(uri, n=3, max_commit_retries=0, progress=False)
    figure = run.timeline(title="three writers", audit=audit.audit(run))
    left, right = figure.axes[:2]
    assert [t.get_text() for t in left.get_yticklabels()] == ["w3", "w2", "w1"]
    labels = [t.get_text() for t in right.texts]
    assert sum(label.startswith("committed v1") for label in labels) == 1
    assert sum(label.startswith("failed: CommitFailedError") for label in labels) == 2
    assert figure._suptitle.get_text() == "three writers"


def test_create_table_in_era_reports_a_refusal_and_a_success(stores, table_name):
    uri = tables.s3_uri(table_name)
    refused = runner.create_table_in_era(uri, tables.s3_storage_options(), era=eras.SEEDS)
    assert (refused["deltalake"], refused["created"], refused["error"]) == (
        "0.22.3",
        False,
        "DeltaProtocolError",
    )
    assert "LockClient" in refused["message"]
    made = runner.create_table_in_era(
        uri, tables.s3_storage_options(unsafe_rename=True), era=eras.SEEDS, first_batch=1
    )
    assert made["created"] and made["appended"] and made["version"] == 1
    assert runner.table_state(uri, tables.s3_storage_options()).rows == 10
