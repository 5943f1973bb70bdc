"""helpers.runs.driver_jobs: the gate's data-first hold and commitInfo read from the store, with real
emulators; nothing is mocked. The jobs of one Spark driver racing through the hold are notebook
09's section 2, which asserts what they leave in the log (one snapshot, consecutive versions, one
object version per commit file) in every `make test`."""

from __future__ import annotations

import json
import threading
import time

import pytest

from helpers.delta import delta_log
from helpers.delta.delta_log import commit_tags
from helpers.ground import config
from helpers.runs import driver_jobs, runner
from helpers.runs.commitgate import GateError
from helpers.stores import storage, tables


@pytest.fixture
def gate(stores):
    with driver_jobs.DataFirstGate() as proxy:
        yield proxy


def _put_commit_in_thread(s3, key: str) -> threading.Thread:
    thread = threading.Thread(
        target=s3.put_object, kwargs={"Bucket": config.names().s3_bucket, "Key": key, "Body": b"{}"}
    )
    thread.start()
    return thread


def _wait_until_held(gate, count: int) -> None:
    while gate.held_for_data() < count:  # the gate holds it; no clock decides anything here
        time.sleep(0.01)


def test_commit_puts_wait_until_the_tables_data_files_are_written(gate, table_name):
    s3, bucket = storage.s3_client(gate.endpoint), config.names().s3_bucket
    gate.hold_until_data(tables.s3_uri(table_name, scheme="s3a"), data_files=2, max_wait_s=3600)
    commit = _put_commit_in_thread(s3, f"{table_name}/{delta_log.commit_file(1)}")
    _wait_until_held(gate, 1)
    s3.put_object(
        Bucket=bucket, Key=f"{table_name}-other/part-0.parquet", Body=b"x"
    )  # another table's file
    s3.put_object(
        Bucket=bucket, Key=f"{table_name}/{delta_log.LOG_DIR}x.checkpoint.parquet", Body=b"x"
    )  # not data
    s3.put_object(Bucket=bucket, Key=f"{table_name}/part-1.parquet", Body=b"x")
    assert gate.held_for_data() == 1 and commit.is_alive()
    s3.put_object(Bucket=bucket, Key=f"{table_name}/part-2.parquet", Body=b"x")
    commit.join()
    log = gate.data_first_log()
    assert list(log["kind"]) == ["data", "data", "commit"]
    assert list(log["file"]) == ["part-1.parquet", "part-2.parquet", delta_log.commit_file_name(1)]
    last = log.iloc[-1]
    assert (bool(last["held"]), last["released_by"], last["data_files_before"], last["status"]) == (
        True,
        driver_jobs.RELEASED_BY_DATA,
        2,
        200,
    )
    s3.put_object(
        Bucket=bucket, Key=f"{table_name}/{delta_log.commit_file(2)}", Body=b"{}"
    )  # later ones pass
    assert not bool(gate.data_first_log().iloc[-1]["held"])


def test_the_time_limit_is_a_safety_only_and_says_so(gate, table_name):
    gate.hold_until_data(tables.s3_uri(table_name), data_files=1, max_wait_s=0.2)
    storage.s3_client(gate.endpoint).put_object(
        Bucket=config.names().s3_bucket, Key=f"{table_name}/{delta_log.commit_file(1)}", Body=b"{}"
    )
    assert gate.data_first_log().iloc[-1]["released_by"] == driver_jobs.RELEASED_BY_MAX_WAIT


def test_open_lets_a_held_commit_go(gate, table_name):
    gate.hold_until_data(tables.s3_uri(table_name), data_files=1, max_wait_s=3600)
    commit = _put_commit_in_thread(
        storage.s3_client(gate.endpoint), f"{table_name}/{delta_log.commit_file(1)}"
    )
    _wait_until_held(gate, 1)
    gate.open()
    commit.join()
    assert gate.data_first_log().iloc[-1]["released_by"] == driver_jobs.RELEASED_BY_OPEN


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"table_uri": "az://c/t", "data_files": 1}, "S3 tables"),
        ({"table_uri": "s3://b/t", "data_files": 0}, "data_files"),
        ({"table_uri": "s3://b/t", "data_files": 1, "max_wait_s": 0}, "max_wait_s"),
    ],
)
def test_bad_holds_are_refused(gate, kwargs, message):
    with pytest.raises(GateError, match=message):
        gate.hold_until_data(**{"max_wait_s": 1.0, **kwargs})


def test_job_tags_are_the_workbook_tags():
    assert commit_tags({"userMetadata": driver_jobs.job_tags("j2", 2)}) == {
        "workbook.writer": "j2",
        "workbook.batch": "2",
    }


def test_commit_infos_reads_read_version_and_tags_from_the_store(tmp_path):
    table = tmp_path / "t"
    runner.create_table(table)  # version 0, by delta-rs (which records no readVersion)
    spark_like = {
        "commitInfo": {
            "operation": "WRITE",
            "readVersion": 0,
            "isBlindAppend": True,
            "isolationLevel": "Serializable",
            "engineInfo": "Apache-Spark/4.2.0 Delta-Lake/4.4.0",
            "userMetadata": driver_jobs.job_tags("j1", 1),
        }
    }
    (table / delta_log.commit_file(1)).write_text(json.dumps(spark_like) + "\n")
    infos = driver_jobs.commit_infos(str(table))
    assert list(infos["version"]) == [0, 1]
    assert infos["readVersion"].isna().iloc[0] and infos["readVersion"].iloc[1] == 0
    row = infos.iloc[1]
    assert (row["isBlindAppend"], row["writer_id"], row["batch"], row["operation"]) == (
        True,
        "j1",
        1,
        "WRITE",
    )
