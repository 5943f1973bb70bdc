"""helpers.tables: table URIs and the delta-rs storage_options of each store and era."""

import pytest

from helpers import config, tables


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
