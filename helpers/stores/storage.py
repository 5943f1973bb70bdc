"""Clients for the object stores and the lock table, and the resources the notebooks need.

``s3_client()``, ``dynamodb_client()`` and ``blob_service()`` talk to the emulators (or, with
``WORKBOOK_PROFILE=cloud``, to real AWS / Azure through the default credential chains).
``ensure_bucket``, ``ensure_container`` and ``ensure_lock_table`` create what a notebook writes
to, idempotently.

A table's files, wherever it lives, through one dispatch on its URI's scheme (:func:`table_store`)::

    storage.list_table("s3://delta-root/05/t")    # every file under the table, relative to it
    storage.table_store(uri).read("_delta_log/00000000000000000001.json")
    storage.table_store(uri).versions("_delta_log/")  # every S3 object version (versioned buckets)
    storage.remove_table(uri)                     # empty it, so a notebook can run again

Local paths and ``file://``, ``s3://`` / ``s3a://``, ``az://`` and ``abfs[s]://`` are understood.

How a client is built is in :mod:`helpers.stores.store_clients`, what a StorageError says in
:mod:`helpers.stores.store_trouble`, and the probe of a writer's store in
:mod:`helpers.stores.store_check`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from helpers.ground import config
from helpers.stores import store_clients, store_trouble


class StorageError(RuntimeError):
    """A store cannot be reached or used; the message says what to do."""


# ---------------------------------------------------------------------------------------------
# AWS (S3 + DynamoDB)
# ---------------------------------------------------------------------------------------------


def s3_client(endpoint_url: str | None = None):
    """A boto3 S3 client for the emulator (or real S3 in the cloud profile); ``endpoint_url``:
    another door to the emulator, such as the commit gate's."""
    return store_clients.aws_client("s3", **store_clients.aws_kwargs("s3", endpoint_url))


def dynamodb_client(endpoint_url: str | None = None):
    """A boto3 DynamoDB client for the emulator (or real DynamoDB in the cloud profile); ``endpoint_url``
    as for :func:`s3_client`."""
    return store_clients.aws_client(
        "dynamodb", **store_clients.aws_kwargs("dynamodb", endpoint_url)
    )


def ensure_bucket(bucket: str | None = None, *, versioned: bool = True) -> str:
    """Make sure the bucket exists with object versioning on (so overwritten commits stay visible
    as older versions). Returns the bucket name.

    On the emulator it is created if missing. In the cloud profile nothing is created or changed
    (the workbook's IAM policy does not allow it): a missing or unversioned bucket raises
    StorageError with the command that fixes it."""
    from botocore.exceptions import BotoCoreError, ClientError

    bucket = bucket or config.names().s3_bucket
    client = s3_client()
    local = config.profile() == "local"
    try:
        client.head_bucket(Bucket=bucket)
    except (BotoCoreError, ClientError) as error:
        trouble = store_trouble.aws_trouble("S3", client, f"bucket {bucket!r}", error)
        if trouble:
            raise StorageError(trouble) from error
        code = (
            error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
        )
        if code not in ("404", "NoSuchBucket", "NotFound"):
            raise StorageError(
                f"Cannot use bucket {bucket!r} at {client.meta.endpoint_url}: {error}"
            ) from error
        if not local:
            raise StorageError(
                f"Bucket {bucket!r} does not exist at {client.meta.endpoint_url}. Create it (`aws s3api create-bucket "
                f"--bucket {bucket}`) or point WORKBOOK_S3_BUCKET at yours."
            ) from error
        client.create_bucket(Bucket=bucket)
    if versioned and local:
        client.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    elif versioned and client.get_bucket_versioning(Bucket=bucket).get("Status") != "Enabled":
        raise StorageError(
            f"Bucket {bucket!r} has versioning off; the notebooks show overwritten commits as object versions. "
            f"`aws s3api put-bucket-versioning --bucket {bucket} --versioning-configuration Status=Enabled`"
        )
    return bucket


LOCK_TABLE_KEYS = (("tablePath", "HASH"), ("fileName", "RANGE"))
"""The key schema Delta Spark's S3DynamoDBLogStore and delta-rs both expect."""


def ensure_lock_table(name: str | None = None) -> str:
    """Create the DynamoDB lock table the way the real log store expects it (``tablePath`` hash
    key, ``fileName`` range key, on-demand capacity, TTL on ``expireTime``). Returns its name."""
    from botocore.exceptions import BotoCoreError, ClientError

    name = name or config.names().dynamodb_lock_table
    client = dynamodb_client()
    try:
        client.describe_table(TableName=name)
    except (BotoCoreError, ClientError) as error:
        trouble = store_trouble.aws_trouble("DynamoDB", client, f"table {name!r}", error)
        if trouble:
            raise StorageError(trouble) from error
        if (
            not isinstance(error, ClientError)
            or error.response.get("Error", {}).get("Code") != "ResourceNotFoundException"
        ):
            raise StorageError(
                f"Cannot use DynamoDB table {name!r} at {client.meta.endpoint_url}: {error}"
            ) from error
        try:
            client.create_table(
                TableName=name,
                AttributeDefinitions=[
                    {"AttributeName": key, "AttributeType": "S"} for key, _ in LOCK_TABLE_KEYS
                ],
                KeySchema=[
                    {"AttributeName": key, "KeyType": kind} for key, kind in LOCK_TABLE_KEYS
                ],
                BillingMode="PAY_PER_REQUEST",
            )
            created = True
        except ClientError as raced:  # another process created it since describe_table
            if raced.response.get("Error", {}).get("Code") != "ResourceInUseException":
                raise
            created = False
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
        )
        if created:  # the process that created it turns TTL on
            client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": "expireTime"},
            )
    return name


def lock_entries(
    table_uri: str, lock_table: str | None = None, *, under: bool = False
) -> list[dict]:
    """The DynamoDB log-store items of one table (one per commit that went through the lock), as
    plain dicts sorted by ``tablePath`` and ``fileName``; [] if the lock table does not exist.
    ``under=True`` also returns the items of every table below ``table_uri`` (a folder of tables)."""
    from botocore.exceptions import ClientError

    lock_table = lock_table or config.names().dynamodb_lock_table
    base = table_uri.rstrip("/")
    client = dynamodb_client()
    try:
        if under:  # a scan: the hash key cannot be queried by prefix
            pages = client.get_paginator("scan").paginate(
                TableName=lock_table,
                FilterExpression="begins_with(tablePath, :p)",
                ExpressionAttributeValues={":p": {"S": base}},
            )
            items = [
                item
                for page in pages
                for item in page["Items"]
                if item["tablePath"]["S"].rstrip("/") == base
                or item["tablePath"]["S"].startswith(base + "/")
            ]
        else:  # log stores write the path with or without a trailing slash
            items = []
            for path in (base, base + "/"):
                pages = client.get_paginator("query").paginate(
                    TableName=lock_table,
                    KeyConditionExpression="tablePath = :p",
                    ExpressionAttributeValues={":p": {"S": path}},
                )
                items += [item for page in pages for item in page["Items"]]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    plain = [{k: next(iter(v.values())) for k, v in item.items()} for item in items]
    return sorted(plain, key=lambda item: (item["tablePath"], item["fileName"]))


def delete_lock_entries(
    table_uri: str, lock_table: str | None = None, *, under: bool = False
) -> int:
    """Delete a table's log-store items (``under=True``: also those of every table below it), so a
    table created again under the same path starts with a clean lock history (old items would
    claim its versions). Returns how many were deleted."""
    lock_table = lock_table or config.names().dynamodb_lock_table
    entries = lock_entries(table_uri, lock_table, under=under)
    client = dynamodb_client()
    for entry in entries:
        client.delete_item(
            TableName=lock_table,
            Key={"tablePath": {"S": entry["tablePath"]}, "fileName": {"S": entry["fileName"]}},
        )
    return len(entries)


# ---------------------------------------------------------------------------------------------
# Azure Blob
# ---------------------------------------------------------------------------------------------


def blob_service(endpoint_url: str | None = None):
    """An azure-storage-blob BlobServiceClient for Azurite (or a real account in the cloud profile).
    ``endpoint_url``: another door to Azurite (e.g. the benchmark's request meter), as ``http://host:port``."""
    if config.profile() == "local":
        blob_endpoint = (
            f"{endpoint_url}/{config.AZURITE_ACCOUNT_NAME}"
            if endpoint_url
            else config.azurite_blob_endpoint()
        )
        return store_clients.blob_client(
            blob_endpoint,
            {
                "account_name": config.AZURITE_ACCOUNT_NAME,
                "account_key": config.AZURITE_ACCOUNT_KEY,
            },
        )
    account = config.azure_account_name()
    key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY")
    if key:
        return store_clients.blob_client(
            config.blob_endpoint(), {"account_name": account, "account_key": key}
        )
    from azure.identity import (
        DefaultAzureCredential,
    )  # az login, a managed identity, AZURE_CLIENT_*

    return store_clients.blob_client(config.blob_endpoint(), DefaultAzureCredential())


def ensure_container(container: str | None = None) -> str:
    """Make sure the blob container exists (delta-rs never creates it). Returns its name.

    On the emulator it is created if missing. In the cloud profile nothing is created (the
    workbook's role is scoped to the container): a missing one raises StorageError."""
    from azure.core.exceptions import AzureError, ResourceExistsError

    container = container or config.names().azure_container
    service = blob_service()
    what = "Azure Blob (Azurite)" if config.profile() == "local" else "Azure Blob"
    endpoint = service.url.rstrip("/")
    try:
        if config.profile() == "local":
            service.create_container(container)
        else:
            service.get_container_client(container).get_container_properties()
    except ResourceExistsError:
        pass
    except AzureError as error:
        raise StorageError(store_trouble.azure_trouble(what, endpoint, container, error)) from error
    return container


# ---------------------------------------------------------------------------------------------
# A table's files, whatever store holds them
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectVersion:
    key: str
    """Relative to the table's folder."""
    version_id: str
    last_modified: object
    is_latest: bool
    body: bytes


class TableStore:
    """The files of one table's folder in one store. :func:`table_store` picks the subclass."""

    kind = "?"

    def list(self) -> list[str]:
        """Every file under the table's folder, as sorted paths relative to it ([] if there is none)."""
        raise NotImplementedError

    def read(self, relative: str) -> bytes:
        raise NotImplementedError

    def versions(self, relative_prefix: str) -> list[ObjectVersion] | None:
        """Every stored version of the objects under the prefix, oldest first per key; None when
        the store keeps no versions."""
        return None

    def remove(self) -> int:
        """Delete everything under the table's folder; return how many files (object versions) went."""
        raise NotImplementedError


class LocalStore(TableStore):
    kind = "local"

    def __init__(self, root: Path) -> None:
        self.root = root

    def list(self) -> list[str]:
        return sorted(
            p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()
        )

    def read(self, relative: str) -> bytes:
        return (self.root / relative).read_bytes()

    def remove(self) -> int:
        import shutil

        count = len(self.list()) if self.root.exists() else 0
        shutil.rmtree(self.root, ignore_errors=True)
        return count


class S3Store(TableStore):
    kind = "s3"

    def __init__(self, bucket: str, prefix: str) -> None:
        self.bucket, self.prefix = bucket, prefix.strip("/") + "/"
        self.client = s3_client()

    def list(self) -> list[str]:
        keys = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        ):
            keys += [item["Key"][len(self.prefix) :] for item in page.get("Contents", [])]
        return sorted(keys)

    def read(self, relative: str) -> bytes:
        return self.client.get_object(Bucket=self.bucket, Key=self.prefix + relative)["Body"].read()

    def versioned(self) -> bool:
        return self.client.get_bucket_versioning(Bucket=self.bucket).get("Status") == "Enabled"

    def _listed_versions(self, relative_prefix: str = "") -> tuple[list[dict], list[dict]]:
        versions, markers = [], []
        pages = self.client.get_paginator("list_object_versions").paginate(
            Bucket=self.bucket, Prefix=self.prefix + relative_prefix
        )
        for page in pages:
            versions += page.get("Versions", [])
            markers += page.get("DeleteMarkers", [])
        return versions, markers

    def versions(self, relative_prefix: str) -> list[ObjectVersion] | None:
        if not self.versioned():
            return None
        result = []
        # S3 lists the versions of a key newest first; reverse to get them in the order they were written
        for item in reversed(self._listed_versions(relative_prefix)[0]):
            body = self.client.get_object(
                Bucket=self.bucket, Key=item["Key"], VersionId=item["VersionId"]
            )["Body"].read()
            result.append(
                ObjectVersion(
                    item["Key"][len(self.prefix) :],
                    item["VersionId"],
                    item["LastModified"],
                    item["IsLatest"],
                    body,
                )
            )
        return result

    def remove(self) -> int:
        """Every object and every version of it (delete markers too), then the table's DynamoDB
        log-store items under both schemes (delta-rs and Spark name the same table differently)."""
        versions, markers = self._listed_versions()
        doomed = [{"Key": v["Key"], "VersionId": v["VersionId"]} for v in versions + markers]
        for start in range(0, len(doomed), 1000):  # DeleteObjects takes at most 1,000 keys
            self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": doomed[start : start + 1000], "Quiet": True}
            )
        path = "/" + self.prefix.rstrip("/")
        return len(doomed) + sum(
            delete_lock_entries(f"{scheme}://{self.bucket}{path}", under=True)
            for scheme in ("s3", "s3a")
        )


class AzureStore(TableStore):
    kind = "azure"

    def __init__(self, container: str, prefix: str) -> None:
        self.prefix = prefix.strip("/") + "/"
        self.client = blob_service().get_container_client(container)

    def list(self) -> list[str]:
        return sorted(
            b.name[len(self.prefix) :] for b in self.client.list_blobs(name_starts_with=self.prefix)
        )

    def read(self, relative: str) -> bytes:
        return self.client.download_blob(self.prefix + relative).readall()

    def remove(self) -> int:
        names = [self.prefix + name for name in self.list()]
        for name in sorted(names, key=len, reverse=True):
            self.client.delete_blob(name)
        return len(names)


def table_store(location: str | os.PathLike) -> TableStore:
    """The store holding a table: a local path or ``file://``, ``s3://`` / ``s3a://``, ``az://``, or
    ``abfs[s]://container@account.dfs.core.windows.net/...``. The one place that reads a URI's scheme."""
    from urllib.parse import unquote, urlparse

    location = str(location)
    parsed = urlparse(location)
    if parsed.scheme in ("", "file"):
        return LocalStore(Path(unquote(parsed.path) if parsed.scheme else location))
    if parsed.scheme in ("s3", "s3a"):
        return S3Store(parsed.netloc, parsed.path)
    if parsed.scheme in ("az", "azure"):
        return AzureStore(parsed.netloc, parsed.path)
    if parsed.scheme in ("abfs", "abfss"):
        return AzureStore(parsed.netloc.split("@")[0], parsed.path)
    raise StorageError(
        f"Unknown scheme {parsed.scheme!r} in {location!r}: the workbook knows local paths, file://, "
        "s3://, s3a://, az:// and abfs[s]://."
    )


def list_table(location: str | os.PathLike) -> list[str]:
    """Every file under a table's folder, sorted, relative to it (``_delta_log/...``, ``part-....parquet``)."""
    return table_store(location).list()


def remove_table(location: str | os.PathLike) -> int:
    """Delete everything under a table location so a notebook can create it afresh (on S3 also every
    object version and its DynamoDB log-store items); return how many files, versions and items went."""
    return table_store(location).remove()
