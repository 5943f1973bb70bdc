"""The Daft engine of the writer: a real Daft writer process against the S3 emulator, and the
clear errors for what Daft cannot do. Nothing is mocked."""

from __future__ import annotations

import pytest

from helpers import writers as w
from helpers.delta import landing
from helpers.ground import eras
from helpers.runs import audit, runner
from helpers.stores import tables
from helpers.writers import daft_engine


@pytest.fixture(scope="module")
def s3():
    from helpers.stores import services, storage

    services.require("s3", "dynamodb")
    storage.ensure_bucket()
    storage.ensure_lock_table()


def _spec(**changes) -> dict:
    spec = dict(
        writer_id="w1",
        era=eras.CURRENT,
        engine="daft",
        table_uri="s3://delta-root/nowhere",
        landing_file="x.jsonl",
        result_path="r.json",
        hold_snapshot=False,
    )
    spec.update(changes)
    return spec


def _run_writer(spec: dict, era: str | None = None) -> tuple[int, dict | None]:
    done, result = runner.run_single_writer(spec, era=era, timeout_s=240)
    return done.returncode, result


# ---------------------------------------------------------------------------------------------
# What the spec may ask of Daft (checked before anything is imported)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"hold_snapshot": True}, "hold_snapshot=false"),
        ({"max_commit_retries": 0}, "max_commit_retries=null"),
        ({"table_uri": "az://delta/t"}, "s3://, s3a:// or local paths"),
        ({"storage_options": {"conditional_put": "disabled"}}, "cannot pass storage option"),
        (
            {"storage_options": {"AWS_S3_LOCKING_PROVIDER": "dynamodb"}},
            "needs DELTA_DYNAMO_TABLE_NAME",
        ),
        (
            {
                "storage_options": {
                    "AWS_S3_LOCKING_PROVIDER": "zookeeper",
                    "DELTA_DYNAMO_TABLE_NAME": "t",
                }
            },
            "must be 'dynamodb'",
        ),
        ({"storage_options": {"AWS_S3_ALLOW_UNSAFE_RENAME": "yes"}}, "'true' or 'false'"),
        (
            {"table_uri": "/tmp/t", "storage_options": {"AWS_REGION": "us-east-1"}},
            "local table takes no storage_options",
        ),
    ],
)
def test_what_daft_cannot_do_is_refused_by_name(changes, message):
    with pytest.raises(w.SpecError, match=message):
        w.WriterSpec.from_dict(_spec(**changes))


def test_the_workbook_s3_options_translate_to_daft_parameters():
    plain = w.WriterSpec.from_dict(_spec(storage_options=tables.s3_storage_options()))
    assert daft_engine.DaftEngine.write_arguments(plain) == {
        "dynamo_table_name": None,
        "allow_unsafe_rename": False,
    }
    unsafe = w.WriterSpec.from_dict(
        _spec(storage_options=tables.s3_storage_options(unsafe_rename=True))
    )
    assert daft_engine.DaftEngine.write_arguments(unsafe) == {
        "dynamo_table_name": None,
        "allow_unsafe_rename": True,
    }
    locked = w.WriterSpec.from_dict(
        _spec(storage_options=tables.s3_storage_options(locking_provider="dynamodb"))
    )
    assert daft_engine.DaftEngine.write_arguments(locked)["dynamo_table_name"] == "delta_log"


def test_io_config_carries_the_emulator_settings_to_delta_rs():
    options = tables.s3_storage_options()
    spec = w.WriterSpec.from_dict(_spec(storage_options=options))
    derived = daft_engine.DaftEngine.delta_storage_options(
        spec
    )  # what Daft hands delta-rs, from the IOConfig
    assert derived["endpoint_url"] == options["AWS_ENDPOINT_URL"]
    assert derived["access_key_id"] == options["AWS_ACCESS_KEY_ID"]
    assert derived["secret_access_key"] == options["AWS_SECRET_ACCESS_KEY"]
    assert derived["region"] == options["AWS_REGION"]
    assert derived["allow_http"] == "true"
    assert "skip_signature" not in derived  # anonymous=False


# ---------------------------------------------------------------------------------------------
# Real writer processes
# ---------------------------------------------------------------------------------------------


def test_a_single_daft_writer_commits_on_s3(s3, table_name, tmp_path):
    uri = tables.s3_uri(f"tests/{table_name}")
    options = tables.s3_storage_options()
    runner.create_table(uri, options)
    spec = _spec(
        table_uri=uri,
        storage_options=options,
        landing_file=str(landing.landing_file(2)),
        batch=2,
        result_path=str(tmp_path / "results" / "w1.json"),
    )  # as the runner lays out a run folder
    code, result = _run_writer(spec)
    assert result is not None, f"no result (exit {code})"
    assert result["outcome"] == w.COMMITTED, result["error_message"]
    assert (
        result["engine"] == "daft"
        and result["deltalake_version"] == eras.era(eras.CURRENT).deltalake_version
    )
    assert (result["snapshot_version"], result["reported_version"]) == (0, 1)
    assert (
        "found in the log" in result["reported_version_source"]
        and "read v0" in result["reported_version_source"]
    )

    checked = audit.audit_table(uri, options, results=_frame(result), version_before=0)
    assert checked.rows_lost == 0 and checked.rows_actual == 10
    assert list(checked.commits["writer_id"]) == [None, "w1"], "the commit carries the writer's tag"
    assert [f.split("-")[0] for f in checked.data_files] == ["1"], (
        "Daft names its file after the version it aimed at"
    )
    returned = daft_engine.returned_files(tmp_path)
    assert list(returned) == ["w1"] and [f.split("-")[0] for f in returned["w1"]] == ["1"]
    assert (
        audit.own_commit_problems(uri, {"w1": (result["reported_version"], returned["w1"])}) == []
    )
    assert audit.own_commit_problems(uri, {"w1": (0, returned["w1"])}), (
        "version 0 is not this writer's commit"
    )


def _frame(result: dict):
    import pandas as pd

    return pd.DataFrame([result])


def test_daft_writer_names_a_missing_table(s3, table_name, tmp_path):
    uri = tables.s3_uri(f"tests/{table_name}")
    spec = _spec(
        table_uri=uri,
        storage_options=tables.s3_storage_options(),
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
    )
    code, result = _run_writer(spec)
    assert code == 1 and result["outcome"] == w.FAILED
    assert result["stage"] == "snapshot" and result["error_class"] == "TableNotFoundError"
    assert uri in result["error_message"]


def test_daft_in_an_era_without_daft_is_a_clear_failure(tmp_path):
    spec = _spec(
        era=eras.DYNAMODB_INTEROP,
        table_uri=str(tmp_path / "t"),
        landing_file=str(landing.landing_file(1)),
        result_path=str(tmp_path / "r.json"),
    )
    code, result = _run_writer(spec, era=eras.DYNAMODB_INTEROP)
    assert code == 1 and result["outcome"] == w.FAILED and result["stage"] == "landing"
    assert result["error_class"] == "EngineUnavailable"
    assert (
        "Daft is not installed" in result["error_message"]
        and eras.CURRENT in result["error_message"]
    )
    assert "deltalake 1.5.1" in result["error_message"] and eras.SEEDS in result["error_message"]


def test_daft_of_the_seeds_era_cannot_append_to_an_existing_s3_table(s3, table_name, tmp_path):
    """Daft 0.7.9 adds its fallback key after it opened the table: the commit never sees it."""
    uri = tables.s3_uri(f"tests/{table_name}")
    options = tables.s3_storage_options()
    runner.create_table(uri, options)
    spec = _spec(
        era=eras.SEEDS,
        table_uri=uri,
        storage_options=options,
        landing_file=str(landing.landing_file(2)),
        batch=2,
        result_path=str(tmp_path / "results" / "w1.json"),
    )
    code, result = _run_writer(spec, era=eras.SEEDS)
    assert result["outcome"] == w.FAILED and result["stage"] == "write", result
    assert (
        result["error_class"] == "DeltaProtocolError"
        and "requires a LockClient" in result["error_message"]
    )
    checked = audit.audit_table(uri, options)
    assert checked.commit_versions == [0] and checked.orphans == 1, (
        "Daft wrote its data file, no commit references it"
    )
    assert daft_engine.returned_files(tmp_path) == {"w1": []}, "Daft raised: it returned no file"
    assert any(
        "Defaulting to unsafe writes" in warning
        for warning in daft_engine.daft_warnings(tmp_path)["w1"]
    )


def test_daft_first_write_in_the_seeds_era_falls_back_to_unsafe_rename(s3, table_name, tmp_path):
    """On a table that does not exist yet, Daft 0.7.9 creates it with AWS_S3_ALLOW_UNSAFE_RENAME=true,
    which deltalake 0.22.3 alone refuses to do without a lock client."""
    import json

    uri = tables.s3_uri(f"tests/{table_name}")
    options = tables.s3_storage_options()
    done = eras.run_in_era(
        eras.SEEDS,
        [
            "-m",
            "helpers.writers.daft_engine",
            "--first-write",
            uri,
            json.dumps(options),
            str(landing.landing_file(3)),
            "w1",
        ],
        timeout=240,
    )
    report = json.loads([line for line in done.stdout.splitlines() if line.startswith("{")][-1])
    assert (report["daft"], report["deltalake"], report["outcome"]) == (
        "0.7.9",
        "0.22.3",
        "committed",
    ), report
    assert any("Defaulting to unsafe writes" in warning for warning in report["warnings"])
    assert audit.own_commit_problems(uri, {"w1": (0, report["files"])}) == []
    refused = runner.create_table_in_era(
        tables.s3_uri(f"tests/{table_name}-plain"), options, era=eras.SEEDS
    )
    assert refused["error"] == "DeltaProtocolError" and "LockClient" in refused["message"]


def test_runner_with_daft_and_a_held_snapshot_fails_every_writer_clearly(s3, table_name):
    uri = tables.s3_uri(f"tests/{table_name}")
    options = tables.s3_storage_options()
    runner.create_table(uri, options)
    run = runner.run_writers(uri, options, n=2, engine="daft", hold_snapshot=True, progress=False)
    assert run.outcomes == {"committed": 0, "failed": 2}
    assert run.error_classes == {"SpecError": 2}
    assert all("hold_snapshot=false" in m for m in run.results["error_message"])
