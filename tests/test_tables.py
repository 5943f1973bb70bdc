"""helpers.stores.tables: table URIs and the delta-rs storage_options of each store and era."""

import pytest

from helpers.ground import config
from helpers.stores import tables


def test_storage_options_carry_the_era_switches_explicitly():
    plain = tables.s3_storage_options()
    assert plain["AWS_ENDPOINT_URL"] == config.moto_endpoint()
    assert "AWS_S3_ALLOW_UNSAFE_RENAME" not in plain and "AWS_S3_LOCKING_PROVIDER" not in plain
    assert tables.s3_storage_options(unsafe_rename=True)["AWS_S3_ALLOW_UNSAFE_RENAME"] == "true"
    locked = tables.s3_storage_options(locking_provider="dynamodb")
    assert locked["DELTA_DYNAMO_TABLE_NAME"] == config.names().dynamodb_lock_table
    assert locked["AWS_ENDPOINT_URL_DYNAMODB"] == config.moto_endpoint()
    with pytest.raises(tables.TableError, match="locking_provider"):
        tables.s3_storage_options(locking_provider="zookeeper")


def test_cloud_profile_uses_no_emulator_endpoint_or_key(monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "realaccount")
    options = tables.s3_storage_options(locking_provider="dynamodb")
    assert not any("ENDPOINT" in k or "SECRET" in k for k in options)
    assert tables.azure_storage_options() == {"account_name": "realaccount"}
    assert tables.abfs_uri("t").startswith("abfss://delta@realaccount.dfs.core.windows.net/")


def test_uris():
    assert tables.s3_uri("a/b") == "s3://delta-root/a/b"
    assert tables.s3_uri("a", scheme="s3a") == "s3a://delta-root/a"
    assert tables.azure_uri("a") == "az://delta/a"
    with pytest.raises(tables.TableError):
        tables.s3_uri("a", scheme="gs")
    assert tables.abfs_uri("/t/") == "abfs://delta@devstoreaccount1.dfs.core.windows.net/t"


def test_the_kernel_drops_only_the_lock_options_it_no_longer_has():
    locked = tables.s3_storage_options(locking_provider="dynamodb")
    kept = tables.kernel_storage_options(locked)
    assert not set(kept) & set(tables.KERNEL_IGNORES)
    assert kept["AWS_ENDPOINT_URL_DYNAMODB"] == locked["AWS_ENDPOINT_URL_DYNAMODB"]
    assert {k: v for k, v in locked.items() if k not in tables.KERNEL_IGNORES} == kept


def test_the_seeds_lock_client_has_its_own_keys():
    old = tables.s3_storage_options(
        locking_provider="dynamodb", lock_client="dynamodb_lock", lock_partition_key="06/t"
    )
    assert old["AWS_S3_LOCKING_PROVIDER"] == "dynamodb"
    assert old["DYNAMO_LOCK_TABLE_NAME"] == tables.OLD_LOCK_TABLE == "delta_rs_lock_table"
    assert old["DYNAMO_LOCK_PARTITION_KEY_VALUE"] == "06/t"
    assert old["DYNAMO_LOCK_REFRESH_PERIOD_MILLIS"] == str(tables.OLD_LOCK_REFRESH_MILLIS)
    assert "DELTA_DYNAMO_TABLE_NAME" not in old
    named = tables.s3_storage_options(
        locking_provider="dynamodb",
        lock_client="dynamodb_lock",
        lock_partition_key="06/t",
        lock_table="delta_log",
    )
    assert named["DYNAMO_LOCK_TABLE_NAME"] == "delta_log"
    assert (
        tables.s3_storage_options(locking_provider="dynamodb", lock_table="other")[
            "DELTA_DYNAMO_TABLE_NAME"
        ]
        == "other"
    )
    assert not set(tables.kernel_storage_options(old)) & {
        "DYNAMO_LOCK_TABLE_NAME",
        "DYNAMO_LOCK_PARTITION_KEY_VALUE",
    }


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"locking_provider": "dynamodb", "lock_client": "dynamodb_lock"},
            "needs lock_partition_key",
        ),
        (
            {"locking_provider": "dynamodb", "lock_client": "zookeeper"},
            "lock_client must be one of",
        ),
        ({"lock_table": "delta_log"}, "need locking_provider"),
        (
            {"locking_provider": "dynamodb", "lock_partition_key": "k"},
            "belongs to lock_client='dynamodb_lock'",
        ),
    ],
)
def test_lock_options_that_cannot_work_are_refused(kwargs, message):
    with pytest.raises(tables.TableError, match=message):
        tables.s3_storage_options(**kwargs)
