"""helpers.stores.old_lock: the seeds' lock table (deltalake 0.14.0's dynamodb_lock), on the emulator."""

import uuid

import pytest

from helpers import writers
from helpers.ground import eras
from helpers.runs import runner
from helpers.stores import old_lock, storage, tables


@pytest.fixture(scope="module")
def lock_table(stores):
    name = f"test-old-lock-{uuid.uuid4().hex[:8]}"
    yield old_lock.ensure_table(name)
    storage.dynamodb_client().delete_table(TableName=name)


def test_the_old_table_is_keyed_by_key_alone(lock_table):
    assert old_lock.key_schema(lock_table) == [("key", "HASH")]
    assert old_lock.ensure_table(lock_table) == lock_table  # idempotent


def test_items_are_listed_masked_and_deleted(lock_table):
    owner = str(uuid.uuid4())
    storage.dynamodb_client().put_item(
        TableName=lock_table,
        Item={
            "key": {"S": "t1"},
            "ownerName": {"S": owner},
            "leaseDuration": {"S": "20"},
            "recordVersionNumber": {"S": str(uuid.uuid4())},
        },
    )
    assert [item["key"] for item in old_lock.items(lock_table)] == ["t1"]
    shown = old_lock.items_frame(lock_table)
    assert list(shown.columns) == list(old_lock.ITEM_ATTRIBUTES)
    assert shown.loc[0, "ownerName"] == "<uuid>" and shown.loc[0, "leaseDuration"] == "20"
    assert old_lock.delete_item("t1", lock_table) is True
    assert old_lock.delete_item("t1", lock_table) is False
    assert old_lock.items(lock_table) == []


def test_items_of_a_missing_table_are_none(stores):
    assert old_lock.items(f"no-such-table-{uuid.uuid4().hex[:8]}") == []


def test_a_0_14_writer_commits_through_the_old_lock_and_releases_it(lock_table, table_name):
    uri = tables.s3_uri(f"test-old-lock/{table_name}")
    options = tables.s3_storage_options(
        locking_provider="dynamodb",
        lock_client="dynamodb_lock",
        lock_partition_key=table_name,
        lock_table=lock_table,
    )
    report = runner.create_table_in_era(uri, options, era=eras.OLD_LOCK)
    assert (report["deltalake"], report["created"], report["error"]) == ("0.14.0", True, None)
    run = runner.run_writers(uri, options, n=2, era=eras.OLD_LOCK, progress=False)
    assert run.outcomes == {writers.COMMITTED: 2, writers.FAILED: 0}
    assert runner.table_state(uri, options).rows == 20
    assert old_lock.items(lock_table) == []  # this crate deletes its item when it releases the lock
    storage.remove_table(uri)


def test_a_0_14_writer_refuses_a_retry_setting_it_does_not_have(lock_table, table_name):
    uri = tables.s3_uri(f"test-old-lock/{table_name}")
    options = tables.s3_storage_options(
        locking_provider="dynamodb",
        lock_client="dynamodb_lock",
        lock_partition_key=table_name,
        lock_table=lock_table,
    )
    runner.create_table_in_era(uri, options, era=eras.OLD_LOCK)
    run = runner.run_writers(
        uri, options, n=1, era=eras.OLD_LOCK, max_commit_retries=0, progress=False
    )
    assert run.error_classes == {"UnsupportedSetting": 1}
    assert "no max_commit_retries setting" in run.results["error_message"][0]
    storage.remove_table(uri)
