"""helpers.storage: resources the notebooks need, and clear errors when a store refuses or is absent."""

import socket
import uuid

import pytest

from helpers import config, services, storage


@pytest.fixture(scope="module", autouse=True)
def emulators():
    services.require("s3", "dynamodb", "azure")


def test_wrong_azure_key_is_explained(monkeypatch):
    monkeypatch.setattr(config, "AZURITE_ACCOUNT_KEY", "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
    with pytest.raises(storage.StorageError, match="refused the credentials"):
        storage.ensure_container(f"wrong-key-{uuid.uuid4().hex[:8]}")


def test_unreachable_s3_is_explained(monkeypatch):
    with socket.socket() as sock:
        sock.bind((config.LOCALHOST, 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(port))
    with pytest.raises(storage.StorageError, match="does not answer"):
        storage.ensure_bucket()


def test_bucket_is_versioned():
    bucket = storage.ensure_bucket()
    assert storage.s3_client().get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"


def test_remove_table_clears_objects_and_lock_items():
    uri = f"s3://{storage.ensure_bucket()}/test-storage-{uuid.uuid4().hex[:8]}"
    table = storage.ensure_lock_table()
    storage.s3_client().put_object(Bucket=uri.split("/")[2], Key=uri.split("/", 3)[3] + "/_delta_log/00000000000000000000.json", Body=b"{}")
    storage.dynamodb_client().put_item(
        TableName=table, Item={"tablePath": {"S": uri}, "fileName": {"S": "00000000000000000000.json"}, "complete": {"S": "true"}}
    )
    assert [e["fileName"] for e in storage.lock_entries(uri)] == ["00000000000000000000.json"]
    assert storage.remove_table(uri) == 2  # one object version + one lock item
    assert storage.lock_entries(uri) == []


def test_remove_table_refuses_an_unknown_scheme():
    with pytest.raises(storage.StorageError, match="unknown scheme 'gs'"):
        storage.remove_table("gs://bucket/table")
