"""The writer process (``python -m helpers.writers``): spec validation, results, barrier, and its failures."""

from __future__ import annotations

import json
import time

import pytest

from helpers import writers as w
from helpers.delta import delta_log, landing
from helpers.ground import config, eras, local_processes
from helpers.runs import runner
from helpers.stores import tables
from helpers.writers import __main__ as writer_main

# ---------------------------------------------------------------------------------------------
# The spec
# ---------------------------------------------------------------------------------------------


def _spec(**changes) -> dict:
    spec = dict(
        writer_id="w1",
        era=eras.CURRENT,
        table_uri="/nowhere",
        landing_file="x.jsonl",
        result_path="r.json",
    )
    spec.update(changes)
    return spec


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"colour": "red"}, "Unknown spec field"),
        ({"max_commit_retries": -1}, "max_commit_retries"),
        ({"max_commit_retries": "3"}, "max_commit_retries"),
        ({"storage_options": {"AWS_ALLOW_HTTP": True}}, "storage_options"),
        ({"engine": "flink"}, "Unknown engine"),
        ({"table_uri": ""}, "table_uri"),
        ({"batch": 0}, "batch"),
    ],
)
def test_bad_spec_fields_are_named(changes, message):
    with pytest.raises(w.SpecError, match=message):
        w.WriterSpec.from_dict(_spec(**changes))


def test_missing_spec_field_is_named():
    data = _spec()
    del data["table_uri"]
    with pytest.raises(w.SpecError, match="lacks table_uri"):
        w.WriterSpec.from_dict(data)


def test_spec_round_trips_through_json():
    spec = w.WriterSpec.from_dict(_spec(batch=3, max_commit_retries=0, storage_options={"a": "b"}))
    assert writer_main.load_spec(spec.to_json()) == spec


# ---------------------------------------------------------------------------------------------
# The process
# ---------------------------------------------------------------------------------------------


def _run_writer(spec: dict, era: str | None = None, timeout: float = 120):
    return runner.run_single_writer(spec, era=era, timeout_s=timeout)


def _local_table(tmp_path) -> str:
    uri = str(tmp_path / "table")
    runner.create_table(uri)
    return uri


def _batch_spec(tmp_path, batch: int, **changes) -> dict:
    """A writer of landing batch ``batch``, appending to a new local table."""
    return _spec(
        table_uri=_local_table(tmp_path),
        landing_file=str(landing.landing_file(batch)),
        result_path=str(tmp_path / "r.json"),
        batch=batch,
        **changes,
    )


def test_writer_commits_and_reports(tmp_path):
    uri = _local_table(tmp_path)
    spec = _spec(
        table_uri=uri,
        landing_file=str(landing.landing_file(2)),
        result_path=str(tmp_path / "r.json"),
        batch=2,
    )
    done, result = _run_writer(spec)
    assert result is not None, done.stderr
    assert result["outcome"] == w.COMMITTED and done.returncode == 0
    assert (result["snapshot_version"], result["reported_version"]) == (0, 1)
    assert (result["rows"], result["id_min"], result["id_max"]) == (10, 201, 210)
    stamps = [
        result[k]
        for k in (
            "t_process_start",
            "t_start",
            "t_imported",
            "t_landing_loaded",
            "t_snapshot_loaded",
            "t_barrier_released",
            "t_write_finished",
        )
    ]
    assert stamps == sorted(stamps)
    assert result["deltalake_version"] == eras.era(eras.CURRENT).deltalake_version


def test_writer_names_a_missing_table(tmp_path):
    missing = str(tmp_path / "no-such-table")
    spec = _spec(
        table_uri=missing,
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
    )
    done, result = _run_writer(spec)
    assert done.returncode == 1
    assert result["outcome"] == w.FAILED and result["stage"] == "snapshot"
    assert result["error_class"] == "TableNotFoundError"
    assert missing in result["error_message"]


def test_writer_fails_clearly_on_an_unreachable_endpoint(tmp_path):
    port = next(p for p in range(59000, 59100) if local_processes.port_is_free(p))
    options = tables.s3_storage_options()
    options["AWS_ENDPOINT_URL"] = f"http://{config.LOCALHOST}:{port}"
    spec = _spec(
        table_uri="s3://delta-root/unreachable",
        storage_options=options,
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
    )
    done, result = _run_writer(spec, timeout=300)
    assert result["outcome"] == w.FAILED and result["stage"] == "snapshot"
    assert f"{config.LOCALHOST}:{port}" in result["error_message"]


def test_unusable_spec_exits_2_and_still_leaves_a_result(tmp_path):
    spec = _spec(result_path=str(tmp_path / "r.json"), max_commit_retries=-1)
    done, result = _run_writer(spec)
    assert done.returncode == 2
    assert "max_commit_retries" in done.stderr
    assert result["error_class"] == "SpecError" and result["stage"] == "spec"


def test_writer_waits_at_the_barrier_until_go(tmp_path):
    uri = _local_table(tmp_path)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    spec = _spec(
        table_uri=uri,
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
        batch=1,
        barrier_dir=str(barrier),
    )
    process = eras.start_in_era(eras.CURRENT, ["-m", w.MODULE, json.dumps(spec)])
    try:
        while not w.ready_file(
            barrier, "w1"
        ).exists():  # the writer holds its snapshot, then says so
            assert process.poll() is None, "the writer exited before reaching the barrier"
            time.sleep(0.01)
        assert runner.table_state(uri).version == 0, "the writer committed before go"
        opened = w.open_barrier(barrier)
        assert process.wait(timeout=300) == 0
    finally:
        if process.poll() is None:
            process.kill()
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["outcome"] == w.COMMITTED and result["reported_version"] == 1
    assert result["t_barrier_released"] >= opened - 0.01  # it saw go only once go existed


def test_barrier_timeout_is_a_failed_result(tmp_path):
    uri = _local_table(tmp_path)
    (tmp_path / "barrier").mkdir()
    spec = _spec(
        table_uri=uri,
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
        barrier_dir=str(tmp_path / "barrier"),
        barrier_timeout_s=0.5,
    )
    _, result = _run_writer(spec)
    assert result["outcome"] == w.FAILED and result["error_class"] == "BarrierTimeout"
    assert result["stage"] == "barrier"


@pytest.mark.parametrize("era", [eras.SEEDS, eras.CURRENT])
def test_retries_off_still_tries_once_in_every_era(era, tmp_path):
    """deltalake 0.22.3 reads max_commit_retries=0 as 'no attempt at all'; the writer must not."""
    spec = _batch_spec(tmp_path, 1, era=era, max_commit_retries=0)
    done, result = _run_writer(spec, era=era)
    assert result["outcome"] == w.COMMITTED, result["error_message"]
    assert result["library_max_commit_retries"] == (1 if era == eras.SEEDS else 0)


# ---------------------------------------------------------------------------------------------
# The code a writer shows: what it runs, copyable
# ---------------------------------------------------------------------------------------------


def test_the_code_shown_before_a_run_is_the_code_of_the_spec_the_run_used(tmp_path):
    table = str(tmp_path / "shown")
    runner.create_table(table)
    arguments = dict(era=eras.CURRENT, max_commit_retries=0)
    run = runner.run_writers(table, n=1, progress=False, run_dir=tmp_path / "run", **arguments)
    used = w.WriterSpec.from_dict(json.loads((run.run_dir / "specs" / "w1.json").read_text()))
    assert runner.writer_code(table, batch=run.batches[0], **arguments) == w.code(used)


def test_the_deltalake_code_shown_commits_when_run_as_it_is(tmp_path):
    table = str(tmp_path / "copied")
    runner.create_table(table)
    shown = runner.writer_code(table, max_commit_retries=0, batch=3)
    assert 'write_deltalake(table, data, mode="append", commit_properties=properties)' in shown
    exec(compile(shown, "shown", "exec"), {"landing_file": str(landing.landing_file(3))})  # noqa: S102  (a learner's paste)
    state = runner.table_state(table)
    assert (state.version, state.rows) == (1, len(landing.batch_ids(3)))
    from deltalake import DeltaTable

    info = DeltaTable(table).history(1)[0]  # the commit the pasted code made, tagged
    assert (info.get(delta_log.WRITER_TAG), info.get(delta_log.BATCH_TAG)) == ("w1", "3")
    assert DeltaTable(table).transaction_version(landing.landing_file_name(3)) == 3  # its id
    rerun = runner.writer_code(table, max_commit_retries=0, batch=3)  # the same job, run again
    exec(compile(rerun, "rerun", "exec"), {"landing_file": str(landing.landing_file(3))})  # noqa: S102
    assert runner.table_state(table).version == 1  # it found its id in the table: nothing appended


@pytest.mark.parametrize("era", [eras.SEEDS, eras.CURRENT])
def test_a_writer_run_again_on_its_landing_file_appends_nothing(era, tmp_path):
    """Each append carries the idempotent-write id (the landing file's name, its batch number), and a
    writer asks the table for it first: the second writer of one landing file appends nothing."""
    spec = _batch_spec(tmp_path, 2, era=era)
    uri = spec["table_uri"]
    first = _run_writer(spec, era=era)[1]
    second = _run_writer(spec, era=era)[1]
    assert (first["outcome"], first["reported_version"]) == (w.COMMITTED, 1), first
    assert second["reported_version_source"].startswith("landed already"), second
    state = runner.table_state(uri)
    assert (state.version, state.rows) == (1, len(landing.batch_ids(2)))
    from deltalake import DeltaTable

    assert DeltaTable(uri).transaction_version(landing.landing_file_name(2)) == 2


@pytest.mark.parametrize(
    "engine, era, uri",
    [
        ("deltalake", eras.CURRENT, "az"),
        ("deltalake", "deltalake-0.22.3", "s3"),
        ("deltalake", "deltalake-0.14.0", "s3"),
        ("daft", eras.CURRENT, "s3"),
        ("spark", eras.CURRENT, "s3a"),
    ],
)
def test_the_code_shown_masks_every_credential_and_names_no_machine_path(engine, era, uri):
    if uri == "az":
        table, options = tables.azure_uri("shown/t"), tables.azure_storage_options()
    else:
        table, options = (
            tables.s3_uri("shown/t").replace("s3://", f"{uri}://"),
            tables.s3_storage_options(),
        )
    if engine == "spark":
        options = {}
    shown = runner.writer_code(table, options, era=era, engine=engine, batch=1)  # no table needed
    secrets = [
        config.EMULATOR_AWS_SECRET_ACCESS_KEY,
        config.AZURITE_ACCOUNT_KEY,
    ]  # (the access key id, "workbook", is masked too)
    assert not [secret for secret in secrets if secret in shown]
    assert (
        config.MASKED in shown
        and str(config.ROOT) not in shown
        and "-XX:SharedArchiveFile=" not in shown
    )
    compile(shown, "shown", "exec")  # valid Python
