"""The Spark engine of the writer: real Spark writer processes (each its own JVM) against the S3
emulator, and the clear errors for what a Spark writer cannot do. Nothing is mocked.

The two process tests start a JVM each (about a minute apiece on a 2-core machine)."""

from __future__ import annotations

import json
import uuid

import pytest

from helpers import writers as w
from helpers.delta import delta_log, landing
from helpers.ground import eras
from helpers.runs import audit, runner
from helpers.spark import sessions
from helpers.stores import storage, tables
from helpers.writers import spark_engine

WRITER_TIMEOUT_S = 400


@pytest.fixture(scope="module")
def s3():
    from helpers.stores import services

    services.require("s3", "dynamodb")
    storage.ensure_bucket()
    storage.ensure_lock_table()


@pytest.fixture
def empty_table(s3) -> str:
    """A new empty table (landing schema, version 0); returns its name."""
    name = f"test-spark-writer-{uuid.uuid4().hex[:8]}"
    runner.create_table(tables.s3_uri(name), tables.s3_storage_options())
    return name


def _spec(**changes) -> dict:
    spec = dict(
        writer_id="w1",
        era=eras.CURRENT,
        engine="spark",
        table_uri="s3a://delta-root/nowhere",
        landing_file="x.jsonl",
        result_path="r.json",
        hold_snapshot=False,
    )
    spec.update(changes)
    return spec


def _run_writer(spec: dict) -> tuple[int, dict | None]:
    done, result = runner.run_single_writer(spec, timeout_s=WRITER_TIMEOUT_S)
    return done.returncode, result


# ---------------------------------------------------------------------------------------------
# What the spec may ask of Spark (checked before any JVM starts)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"table_uri": "s3://delta-root/t"}, r"s3a:// tables .*use s3a://delta-root/t"),
        ({"table_uri": "/tmp/t"}, "s3a:// tables"),
        ({"table_uri": "az://delta/t"}, "s3a:// tables"),
        ({"hold_snapshot": True}, "hold_snapshot=false"),
        (
            {"storage_options": {"AWS_S3_LOCKING_PROVIDER": "zookeeper"}},
            "only locking provider is 'dynamodb'",
        ),
        ({"storage_options": {"DYNAMO_LOCK_TABLE_NAME": "locks"}}, "DELTA_DYNAMO_TABLE_NAME"),
        ({"storage_options": {"conditional_put": "disabled"}}, "fs.s3a.create.conditional.enabled"),
        ({"storage_options": {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}}, "never renames"),
        ({"storage_options": {"colour": "red"}}, "does not know storage option"),
        (
            {
                "max_commit_retries": 0,
                "storage_options": {"spark.databricks.delta.maxCommitAttempts": "1"},
            },
            "not both",
        ),
    ],
)
def test_what_spark_cannot_do_is_refused_by_name(changes, message):
    with pytest.raises(w.SpecError, match=message):
        w.WriterSpec.from_dict(_spec(**changes))


def test_the_workbook_s3_options_are_accepted_and_spark_keys_reach_the_session():
    options = dict(
        tables.s3_storage_options(), **{"spark.hadoop.fs.s3a.create.conditional.enabled": "false"}
    )
    spec = w.WriterSpec.from_dict(_spec(storage_options=options, max_commit_retries=2))
    conf = spark_engine.SparkEngine.session_conf(spec)
    assert conf["spark.master"] == "local[1]"
    assert conf["spark.hadoop.fs.s3a.create.conditional.enabled"] == "false"
    assert conf["spark.databricks.delta.maxCommitAttempts"] == "3"  # retries + the first attempt
    assert not any(key.startswith("AWS_") for key in conf)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == options["AWS_ENDPOINT_URL"]
    assert spark_engine.SparkEngine.stores(spec) == ("s3",)
    default = spark_engine.SparkEngine.session_conf(w.WriterSpec.from_dict(_spec()))
    assert "spark.databricks.delta.maxCommitAttempts" not in default  # Delta's own default


def test_the_delta_rs_dynamodb_options_select_the_multi_cluster_log_store():
    options = dict(
        tables.s3_storage_options(locking_provider="dynamodb"),
        AWS_ENDPOINT_URL="http://127.0.0.1:1",
        DELTA_DYNAMO_TABLE_NAME="other_locks",
    )
    spec = w.WriterSpec.from_dict(_spec(storage_options=options))
    assert spark_engine.SparkEngine.stores(spec) == ("s3", "dynamodb")
    conf = spark_engine.SparkEngine.session_conf(spec)
    assert (
        conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:1"
    )  # S3 only: DynamoDB keeps its own
    assert conf[f"{sessions.DYNAMODB_LOG_STORE_PREFIX}.ddb.tableName"] == "other_locks"
    assert conf[sessions.DYNAMODB_ENDPOINT_KEY] == options["AWS_ENDPOINT_URL_DYNAMODB"]


def test_user_metadata_carries_the_workbook_tags():
    spec = w.WriterSpec.from_dict(_spec(writer_id="w7", batch=7))
    assert delta_log.commit_tags(
        {"userMetadata": spark_engine.SparkEngine.user_metadata(spec)}
    ) == {
        delta_log.WRITER_TAG: "w7",
        delta_log.BATCH_TAG: "7",
    }
    assert delta_log.commit_tags({"userMetadata": "a note from someone"}) == {}
    assert delta_log.commit_tags({"userMetadata": None}) == {}
    assert delta_log.commit_tags(
        {delta_log.WRITER_TAG: "w2", delta_log.BATCH_TAG: "2", "operation": "WRITE"}
    ) == {
        delta_log.WRITER_TAG: "w2",
        delta_log.BATCH_TAG: "2",
    }


def test_a_non_s3a_uri_leaves_a_failed_result_without_starting_spark(tmp_path):
    spec = _spec(
        table_uri="s3://delta-root/t",
        landing_file=str(landing.landing_file(1)),
        batch=1,
        result_path=str(tmp_path / "w1.json"),
    )
    code, result = _run_writer(spec)
    assert code == 2
    assert result["outcome"] == w.FAILED and result["stage"] == "spec"
    assert result["error_class"] == "SpecError" and "s3a://delta-root/t" in result["error_message"]


# ---------------------------------------------------------------------------------------------
# Real Spark writers on the S3 emulator
# ---------------------------------------------------------------------------------------------


def test_a_missing_table_gives_a_clear_failed_result(s3, tmp_path):
    uri = tables.s3_uri(f"test-spark-no-table-{uuid.uuid4().hex[:8]}", scheme="s3a")
    spec = _spec(
        table_uri=uri,
        landing_file=str(landing.landing_file(1)),
        batch=1,
        result_path=str(tmp_path / "w1.json"),
    )
    code, result = _run_writer(spec)
    assert code == 1
    assert result["outcome"] == w.FAILED and result["stage"] == "snapshot"
    assert result["error_class"] == "TableNotFoundError"
    assert f"No Delta table at {uri}" in result["error_message"]


def test_a_spark_writer_reports_its_version_then_delta_rs_1_5_takes_its_turn_through_the_dynamodb_log_store(
    empty_table, tmp_path
):
    # one JVM for both: the Spark writer's result and its commit, then delta-rs 1.5.1 through the same lock table
    uri = tables.s3_uri(empty_table, scheme="s3a")
    options = tables.s3_storage_options(locking_provider="dynamodb")
    spec = _spec(
        table_uri=uri,
        landing_file=str(landing.landing_file(1)),
        batch=1,
        result_path=str(tmp_path / "w1.json"),
        storage_options=options,
    )
    code, result = _run_writer(spec)
    assert result is not None, "the writer left no result"
    assert (code, result["outcome"], result["stage"]) == (0, w.COMMITTED, "done"), result.get(
        "error_message"
    )
    assert result["snapshot_version"] == 0 and result["reported_version"] == 1
    assert "carries this writer's tag" in result["reported_version_source"]
    assert result["deltalake_version"].startswith("delta-spark ")
    assert (result["rows"], result["id_min"], result["id_max"]) == (10, 101, 110)
    assert (
        result["t_landing_loaded"]
        <= result["t_snapshot_loaded"]
        <= result["t_barrier_released"]
        <= result["t_write_finished"]
    )
    # storage agrees: the rows are there, in one commit that Spark wrote with this writer's tags
    found = audit.audit_table(tables.s3_uri(empty_table), tables.s3_storage_options())
    assert found.rows_actual == 10 and found.commit_versions == [0, 1] and found.orphans == 0
    assert found.commits.set_index("version").loc[1]["engine"].startswith("Apache-Spark/")
    body = storage.table_store(uri).read(delta_log.commit_file(1)).decode()
    info = next(
        json.loads(line)["commitInfo"] for line in body.splitlines() if "commitInfo" in line
    )
    assert delta_log.commit_tags(info) == {delta_log.WRITER_TAG: "w1", delta_log.BATCH_TAG: "1"}

    rs = dict(
        spec,
        writer_id="w2",
        era=eras.DYNAMODB_INTEROP,
        engine="deltalake",
        batch=2,
        hold_snapshot=True,
        landing_file=str(landing.landing_file(2)),
        result_path=str(tmp_path / "w2.json"),
    )
    done, second = runner.run_single_writer(rs, timeout_s=WRITER_TIMEOUT_S)
    assert (
        second is not None and second["outcome"] == w.COMMITTED and second["reported_version"] == 2
    ), done.stderr[-800:]

    items = storage.lock_entries(uri)
    assert [i["fileName"] for i in items] == [
        "00000000000000000001.json",
        "00000000000000000002.json",
    ]
    assert all(
        i["complete"] == "true" and i["tablePath"] == uri for i in items
    )  # one key: they see each other
    assert items[0]["tempPath"].startswith(
        ".tmp/00000000000000000001.json."
    )  # Delta Spark's staging name
    assert items[1]["tempPath"].startswith("_commit_")  # delta-rs's
    assert (
        audit.audit_table(tables.s3_uri(empty_table), tables.s3_storage_options()).rows_actual == 20
    )
