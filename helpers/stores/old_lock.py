"""The seeds' lock table: the ``dynamodb_lock`` crate that deltalake 0.14.0 and earlier used on S3.

Before 0.15.0, delta-rs serialised its S3 commits with a *lease*: one DynamoDB item per lock,
whose partition key ``key`` holds ``DYNAMO_LOCK_PARTITION_KEY_VALUE`` (default ``delta-rs``, so
every table shared one lock unless told otherwise). The holder writes ``ownerName``,
``recordVersionNumber``, ``leaseDuration`` and, while it renames, ``data`` (the rename's source
and destination); releasing the lock sets ``isReleased``. The item stays after the last release.
Today's shape (``tablePath`` + ``fileName``, one item per commit) is
:func:`helpers.stores.storage.ensure_lock_table`'s::

    old_lock.ensure_table()                    # "delta_rs_lock_table", hash key "key"
    options = tables.s3_storage_options(locking_provider="dynamodb", lock_client="dynamodb_lock",
                                        lock_partition_key="06/people")
    old_lock.items()                           # one dict per lock item
    old_lock.delete_item("06/people")          # so a notebook starts from no lock item

(Meant to move into :mod:`helpers.stores.storage` beside the log-store table's functions.)
"""

from __future__ import annotations

from helpers.ground import config
from helpers.stores import storage, tables

PARTITION_KEY = "key"
"""The crate's partition key attribute (``PARTITION_KEY_NAME`` in its sources)."""
ITEM_ATTRIBUTES = ("key", "ownerName", "recordVersionNumber", "leaseDuration", "isReleased", "data")
"""The attributes a lock item can carry, in the order they are shown."""


def ensure_table(name: str = tables.OLD_LOCK_TABLE) -> str:
    """Create the old lock table as the seeds did (hash key ``key``, a string; on-demand capacity),
    unless it exists. Returns its name. Raises StorageError if DynamoDB does not answer or
    refuses; an existing table of another shape is left as it is (see :func:`key_schema`)."""
    from botocore.exceptions import ClientError, EndpointConnectionError

    client = storage.dynamodb_client()
    try:
        client.describe_table(TableName=name)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
            raise storage.StorageError(f"Cannot use DynamoDB table {name!r}: {error}") from error
        client.create_table(
            TableName=name,
            AttributeDefinitions=[{"AttributeName": PARTITION_KEY, "AttributeType": "S"}],
            KeySchema=[{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 30}
        )
    except EndpointConnectionError as error:
        raise storage.StorageError(
            f"DynamoDB does not answer at {config.aws_endpoint('dynamodb')}: {error}"
        ) from error
    return name


def key_schema(name: str) -> list[tuple[str, str]]:
    """A DynamoDB table's key schema as ``[(attribute, "HASH" | "RANGE"), ...]``."""
    table = storage.dynamodb_client().describe_table(TableName=name)["Table"]
    return [(k["AttributeName"], k["KeyType"]) for k in table["KeySchema"]]


def items(name: str = tables.OLD_LOCK_TABLE) -> list[dict]:
    """Every item of a lock table as plain dicts (string values), sorted by ``key``; [] if the
    table does not exist. Works on any shape: a scan, not a query."""
    from botocore.exceptions import ClientError

    client = storage.dynamodb_client()
    try:
        pages = client.get_paginator("scan").paginate(TableName=name)
        found = [item for page in pages for item in page["Items"]]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return []
        raise
    plain = [{k: str(next(iter(v.values()))) for k, v in item.items()} for item in found]
    return sorted(plain, key=lambda item: item.get(PARTITION_KEY, ""))


def delete_item(partition_key_value: str, name: str = tables.OLD_LOCK_TABLE) -> bool:
    """Delete the lock item whose ``key`` is ``partition_key_value``; True if there was one."""
    answer = storage.dynamodb_client().delete_item(
        TableName=name, Key={PARTITION_KEY: {"S": partition_key_value}}, ReturnValues="ALL_OLD"
    )
    return bool(answer.get("Attributes"))


def items_frame(name: str = tables.OLD_LOCK_TABLE):
    """:func:`items` as a pandas DataFrame to show, one column per attribute of
    :data:`ITEM_ATTRIBUTES` (absent ones empty), with every uuid (owner, record version, temporary
    commit file) shown as ``<uuid>`` so the table reads the same on every run."""
    import pandas as pd

    frame = pd.DataFrame(items(name), columns=list(ITEM_ATTRIBUTES))
    return frame.replace(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>", regex=True
    )
