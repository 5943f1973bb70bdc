"""helpers.stores.storage: resources the notebooks need, and clear errors when a store refuses or is absent."""

import uuid

import pytest

from helpers.delta import delta_log, landing
from helpers.ground import config
from helpers.stores import services, storage, tables


@pytest.fixture(scope="module", autouse=True)
def emulators():
    services.require("s3", "dynamodb", "azure")


def test_wrong_azure_key_is_explained(monkeypatch):
    monkeypatch.setattr(config, "AZURITE_ACCOUNT_KEY", "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
    with pytest.raises(storage.StorageError, match="refused the credentials"):
        storage.ensure_container(f"wrong-key-{uuid.uuid4().hex[:8]}")


def test_unreachable_s3_is_explained(monkeypatch, free_port):
    monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(free_port()))
    with pytest.raises(storage.StorageError, match="does not answer"):
        storage.ensure_bucket()


def test_bucket_is_versioned():
    bucket = storage.ensure_bucket()
    assert storage.s3_client().get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"


def test_remove_table_clears_objects_and_lock_items():
    uri = f"s3://{storage.ensure_bucket()}/test-storage-{uuid.uuid4().hex[:8]}"
    table = storage.ensure_lock_table()
    storage.s3_client().put_object(
        Bucket=uri.split("/")[2],
        Key=uri.split("/", 3)[3] + "/_delta_log/00000000000000000000.json",
        Body=b"{}",
    )
    storage.dynamodb_client().put_item(
        TableName=table,
        Item={
            "tablePath": {"S": uri},
            "fileName": {"S": "00000000000000000000.json"},
            "complete": {"S": "true"},
        },
    )
    assert [e["fileName"] for e in storage.lock_entries(uri)] == ["00000000000000000000.json"]
    assert storage.remove_table(uri) == 2  # one object version + one lock item
    assert storage.lock_entries(uri) == []


@pytest.mark.parametrize("call", [storage.remove_table, storage.list_table, storage.table_store])
def test_an_unknown_scheme_is_refused_by_name(call):
    with pytest.raises(storage.StorageError, match="Unknown scheme 'gs'.*s3a://"):
        call("gs://bucket/table")


def test_one_lister_reads_a_table_in_every_store(tmp_path):
    """The same table written to each store lists the same files, through every URI form."""
    from deltalake import write_deltalake

    name = f"test-storage-list-{uuid.uuid4().hex[:8]}"
    storage.ensure_container()
    local = tmp_path / name
    targets = {
        str(local): {},
        tables.s3_uri(name): tables.s3_storage_options(),
        tables.azure_uri(name): tables.azure_storage_options(),
    }
    for uri, options in targets.items():
        write_deltalake(uri, landing.batch(1), storage_options=options or None)
    expected = storage.list_table(local)
    assert (
        expected[0] == delta_log.commit_file(0)
        and len(expected) == 2
        and expected[1].endswith(".parquet")
    )
    same_table = [
        local.as_uri(),
        tables.s3_uri(name),
        tables.s3_uri(name, scheme="s3a"),
        tables.azure_uri(name),
        tables.abfs_uri(name),
    ]
    for uri in same_table:
        listed = storage.list_table(uri)
        assert [f.split("-", 1)[0] for f in listed] == [f.split("-", 1)[0] for f in expected], uri
        assert storage.table_store(uri).read(delta_log.commit_file(0)).startswith(b"{"), uri
    for uri in targets:
        assert storage.remove_table(uri) >= 2
        assert storage.list_table(uri) == []


def test_a_lock_table_another_process_created_meanwhile_is_used(monkeypatch):
    """Two processes that ensure one new lock table at once: the second sees "not found", then
    meets the first's table on create (make test-heavy's workers did). Here the other process's
    table is made first, and the first describe answers as it did before that."""
    name = f"test-raced-{uuid.uuid4().hex[:8]}"
    storage.ensure_lock_table(name)  # the other process
    client = storage.dynamodb_client()
    real, calls = client.describe_table, []

    def not_yet_then_real(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1:
            raise client.exceptions.ResourceNotFoundException(
                {"Error": {"Code": "ResourceNotFoundException", "Message": "not yet"}},
                "DescribeTable",
            )
        return real(**kwargs)

    monkeypatch.setattr(client, "describe_table", not_yet_then_real)
    monkeypatch.setattr(storage, "dynamodb_client", lambda: client)
    try:
        assert storage.ensure_lock_table(name) == name
        assert len(calls) >= 2  # the not-found answer, then the wait for the table
    finally:
        client.delete_table(TableName=name)
