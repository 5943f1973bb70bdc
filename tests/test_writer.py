"""The writer process: landing data, spec validation, results, barrier, and its failures."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from helpers import config, eras, runner, services, sessions
from helpers import writer as w


# ---------------------------------------------------------------------------------------------
# Landing data
# ---------------------------------------------------------------------------------------------


def test_shipped_landing_files_are_what_the_generator_makes(tmp_path):
    for batch in range(1, 9):
        shipped = config.DATA_DIR / "landing" / w.landing_file_name(batch)
        assert shipped.read_bytes() == w.write_landing_file(batch, tmp_path).read_bytes(), shipped.name


@pytest.mark.parametrize("batch", [1, 2, 9, 10])
def test_landing_file_loads_with_the_batch_ids(batch, tmp_path):
    path = w.write_landing_file(batch, tmp_path)
    table = w.read_landing_file(path)
    assert table.schema.names == ["id", "name"]
    assert str(table.schema.field("id").type) == "int32"
    assert table.column("id").to_pylist() == list(range(batch * 100 + 1, batch * 100 + 11))
    assert all(name and " " in name for name in table.column("name").to_pylist())
    assert {w.batch_of_id(i) for i in table.column("id").to_pylist()} == {batch}


def test_landing_formats_alternate():
    assert [w.landing_format(b) for b in (1, 2, 3, 4)] == ["jsonl", "csv", "jsonl", "csv"]


@pytest.mark.parametrize("bad", [0, -3, "2", 2.0, True, w.MAX_BATCH + 1])
def test_bad_batch_numbers_are_refused(bad):
    with pytest.raises(w.SpecError, match="batch must be"):
        w.batch_ids(bad)


def test_landing_file_that_does_not_fit_the_schema(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name\nnot-a-number,Ann\n")
    with pytest.raises(w.SpecError, match="does not fit the schema"):
        w.read_landing_file(bad)
    with pytest.raises(w.SpecError, match="neither .jsonl nor .csv"):
        (tmp_path / "x.parquet").write_text("")
        w.read_landing_file(tmp_path / "x.parquet")


# ---------------------------------------------------------------------------------------------
# The spec
# ---------------------------------------------------------------------------------------------


def _spec(**changes) -> dict:
    spec = dict(writer_id="w1", era=eras.CURRENT, table_uri="/nowhere", landing_file="x.jsonl", result_path="r.json")
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
    assert w.load_spec(spec.to_json()) == spec


# ---------------------------------------------------------------------------------------------
# The process
# ---------------------------------------------------------------------------------------------


def _run_writer(spec: dict, era: str | None = None, timeout: float = 120):
    return runner.run_single_writer(spec, era=era, timeout_s=timeout)


def _local_table(tmp_path) -> str:
    uri = str(tmp_path / "table")
    runner.create_table(uri)
    return uri


def test_writer_commits_and_reports(tmp_path):
    uri = _local_table(tmp_path)
    spec = _spec(table_uri=uri, landing_file=str(runner.landing_file(2)), result_path=str(tmp_path / "r.json"), batch=2)
    done, result = _run_writer(spec)
    assert result is not None, done.stderr
    assert result["outcome"] == w.COMMITTED and done.returncode == 0
    assert (result["snapshot_version"], result["reported_version"]) == (0, 1)
    assert (result["rows"], result["id_min"], result["id_max"]) == (10, 201, 210)
    stamps = [result[k] for k in ("t_process_start", "t_start", "t_imported", "t_landing_loaded", "t_snapshot_loaded",
                                  "t_barrier_released", "t_write_finished")]
    assert stamps == sorted(stamps)
    assert result["deltalake_version"] == eras.era(eras.CURRENT).deltalake_version


def test_writer_names_a_missing_table(tmp_path):
    missing = str(tmp_path / "no-such-table")
    spec = _spec(table_uri=missing, landing_file=str(runner.landing_file(1)), result_path=str(tmp_path / "r.json"))
    done, result = _run_writer(spec)
    assert done.returncode == 1
    assert result["outcome"] == w.FAILED and result["stage"] == "snapshot"
    assert result["error_class"] == "TableNotFoundError"
    assert missing in result["error_message"]


def test_writer_fails_clearly_on_an_unreachable_endpoint(tmp_path):
    port = next(p for p in range(59000, 59100) if services.port_is_free(p))
    options = sessions.s3_storage_options()
    options["AWS_ENDPOINT_URL"] = f"http://{config.LOCALHOST}:{port}"
    spec = _spec(table_uri="s3://delta-root/unreachable", storage_options=options,
                 landing_file=str(runner.landing_file(1)), result_path=str(tmp_path / "r.json"))
    started = time.monotonic()
    done, result = _run_writer(spec, timeout=90)
    assert time.monotonic() - started < 60
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
    spec = _spec(table_uri=uri, landing_file=str(runner.landing_file(1)), result_path=str(tmp_path / "r.json"),
                 batch=1, barrier_dir=str(barrier))
    process = eras.start_in_era(eras.CURRENT, [str(runner.WRITER_SCRIPT), json.dumps(spec)])
    try:
        deadline = time.monotonic() + 60
        while not w.ready_file(barrier, "w1").exists():
            assert time.monotonic() < deadline and process.poll() is None, "writer never reached the barrier"
            time.sleep(0.01)
        time.sleep(0.3)
        assert process.poll() is None, "the writer did not wait for go"
        opened = time.time()
        (barrier / w.BARRIER_GO).touch()
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["outcome"] == w.COMMITTED
    assert result["t_barrier_released"] >= opened - 0.01


def test_barrier_timeout_is_a_failed_result(tmp_path):
    uri = _local_table(tmp_path)
    (tmp_path / "barrier").mkdir()
    spec = _spec(table_uri=uri, landing_file=str(runner.landing_file(1)), result_path=str(tmp_path / "r.json"),
                 barrier_dir=str(tmp_path / "barrier"), barrier_timeout_s=0.5)
    _, result = _run_writer(spec)
    assert result["outcome"] == w.FAILED and result["error_class"] == "BarrierTimeout"
    assert result["stage"] == "barrier"


@pytest.mark.parametrize("era", [eras.SEEDS, eras.CURRENT])
def test_retries_off_still_tries_once_in_every_era(era, tmp_path):
    """deltalake 0.22.3 reads max_commit_retries=0 as 'no attempt at all'; the writer must not."""
    uri = _local_table(tmp_path)
    spec = _spec(era=era, table_uri=uri, landing_file=str(runner.landing_file(1)), result_path=str(tmp_path / "r.json"),
                 batch=1, max_commit_retries=0)
    done, result = _run_writer(spec, era=era)
    assert result["outcome"] == w.COMMITTED, result["error_message"]
    assert result["library_max_commit_retries"] == (1 if era == eras.SEEDS else 0)
