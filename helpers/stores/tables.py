"""Where each table lives, and the storage options each engine and era needs to reach it.

URIs::

    tables.local_table_path("01_local_delta_table", "t")   # build/tables/01_local_delta_table/t
    tables.s3_uri("05/t")                                  # s3://delta-root/05/t  (delta-rs)
    tables.s3_uri("09/t", scheme="s3a")                    # s3a://delta-root/09/t (Spark's S3A; delta-rs takes it too)
    tables.azure_uri("02/t")                               # az://delta/02/t       (delta-rs)
    tables.abfs_uri("02/t")                                # abfs://delta@devstoreaccount1.dfs.core.windows.net/02/t (Spark)

delta-rs ``storage_options``, with each era's switches explicit::

    write_deltalake(tables.s3_uri("t"), data, storage_options=tables.s3_storage_options(unsafe_rename=True))

Endpoints and names come from :mod:`helpers.ground.config`; with ``WORKBOOK_PROFILE=cloud`` the emulator
endpoints and keys are left out and credentials come from the default chains. The Spark side of
the same stores is :mod:`helpers.spark.sessions`.
"""

from __future__ import annotations

from pathlib import Path

from helpers.ground import config

LOCKING_PROVIDERS = (None, "dynamodb")
LOCK_CLIENTS = ("log-store", "dynamodb_lock")
"""Which DynamoDB lock ``locking_provider="dynamodb"`` configures: ``log-store`` (deltalake 0.15.0
to 1.6.0, Delta Spark's protocol: table ``delta_log`` keyed by ``tablePath`` + ``fileName``) or
``dynamodb_lock`` (deltalake 0.14.0 and earlier, the seeds' lease: one item keyed by ``key``)."""
OLD_LOCK_TABLE = "delta_rs_lock_table"
"""The ``dynamodb_lock`` crate's default table name (deltalake <= 0.14.0)."""
OLD_LOCK_REFRESH_MILLIS = 100
"""How often a 0.14.0 writer asks again for a held lock (``DYNAMO_LOCK_REFRESH_PERIOD_MILLIS``; the
crate waits longer by default). It sets the pace of a queue of waiting writers, not a deadline: a
waiting writer gives up only when one holder keeps the lock past its whole lease."""
KERNEL_IGNORES = (
    "AWS_S3_LOCKING_PROVIDER",
    "DELTA_DYNAMO_TABLE_NAME",
    "DYNAMO_LOCK_TABLE_NAME",
    "DYNAMO_LOCK_PARTITION_KEY_VALUE",
    "DYNAMO_LOCK_REFRESH_PERIOD_MILLIS",
)
"""Lock options of earlier eras that the kernel's deltalake (1.6.6) no longer has (it logs a warning for them)."""


class TableError(ValueError):
    """A table address or storage option cannot be built as asked; the message says what to use."""


def local_table_path(*parts: str) -> Path:
    """A folder for a local table, under build/tables/ (``make clean`` removes it)."""
    return config.LOCAL_TABLES_DIR.joinpath(*parts)


def s3_uri(table: str, scheme: str = "s3") -> str:
    """``s3://<bucket>/<table>``; ``scheme="s3a"`` for the URI Spark uses (delta-rs accepts both)."""
    if scheme not in ("s3", "s3a"):
        raise TableError(f"scheme must be 's3' or 's3a', not {scheme!r}")
    return f"{scheme}://{config.names().s3_bucket}/{table.strip('/')}"


def abfs_uri(table: str) -> str:
    """The URI Spark's ABFS driver takes for the same table: ``abfs[s]://<container>@<account>.dfs.core.windows.net/<table>``.

    The host must be the ``.dfs.`` one even against Azurite: ABFS reads the account name from it."""
    scheme = "abfs" if config.profile() == "local" else "abfss"
    return f"{scheme}://{config.names().azure_container}@{config.azure_account_name()}.dfs.core.windows.net/{table.strip('/')}"


def azure_uri(table: str) -> str:
    """``az://<container>/<table>``, the form delta-rs takes for Azure Blob and ADLS Gen2."""
    return f"az://{config.names().azure_container}/{table.strip('/')}"


def s3_storage_options(
    *,
    unsafe_rename: bool = False,
    locking_provider: str | None = None,
    conditional_put: str | None = None,
    lock_client: str = "log-store",
    lock_table: str | None = None,
    lock_partition_key: str | None = None,
) -> dict[str, str]:
    """``storage_options`` for delta-rs on S3 (the emulator, or real S3 with ``WORKBOOK_PROFILE=cloud``).

    The era-specific switches are explicit:

    * ``unsafe_rename=True`` sets ``AWS_S3_ALLOW_UNSAFE_RENAME`` (needed by deltalake < 0.23 to write
      at all without a lock; unsafe with more than one writer).
    * ``locking_provider="dynamodb"`` sets ``AWS_S3_LOCKING_PROVIDER`` and the lock table
      (deltalake < 1.6.1; later releases ignore it and log that they do).
    * ``conditional_put`` passes ``conditional_put`` through (e.g. ``"disabled"``; deltalake >= 1.0).
    * ``lock_client`` (with ``locking_provider="dynamodb"``): ``"log-store"`` sets
      ``DELTA_DYNAMO_TABLE_NAME`` (deltalake 0.15.0 to 1.6.0); ``"dynamodb_lock"`` sets the seeds'
      ``DYNAMO_LOCK_TABLE_NAME`` and ``DYNAMO_LOCK_PARTITION_KEY_VALUE`` (deltalake <= 0.14.0),
      which needs ``lock_partition_key``: the lock's name, the same for every writer of a table.
    * ``lock_table``: the DynamoDB table to name (default: ``delta_log`` from the config for the
      log store, ``delta_rs_lock_table`` for ``dynamodb_lock``).

    Raises TableError for an unknown provider or lock client, or a lock option without its provider.
    """
    if locking_provider not in LOCKING_PROVIDERS:
        raise TableError(
            f"locking_provider must be one of {LOCKING_PROVIDERS}, not {locking_provider!r}"
        )
    if lock_client not in LOCK_CLIENTS:
        raise TableError(f"lock_client must be one of {LOCK_CLIENTS}, not {lock_client!r}")
    if locking_provider is None and (
        lock_table or lock_partition_key or lock_client != "log-store"
    ):
        raise TableError(
            "lock_client, lock_table and lock_partition_key need locking_provider='dynamodb'."
        )
    if lock_client == "dynamodb_lock" and locking_provider and not lock_partition_key:
        raise TableError(
            "lock_client='dynamodb_lock' needs lock_partition_key (DYNAMO_LOCK_PARTITION_KEY_VALUE): without it "
            "every table shares the crate's default lock 'delta-rs'. Use one value per Delta table."
        )
    if lock_client == "log-store" and lock_partition_key:
        raise TableError(
            "lock_partition_key belongs to lock_client='dynamodb_lock'; the log store keys its items by tablePath."
        )
    names = config.names()
    options = {"AWS_REGION": names.aws_region}
    if config.profile() == "local":
        options.update(
            {
                "AWS_ENDPOINT_URL": config.aws_endpoint("s3"),
                "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": config.EMULATOR_AWS_ACCESS_KEY_ID,
                "AWS_SECRET_ACCESS_KEY": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
            }
        )
    if unsafe_rename:
        options["AWS_S3_ALLOW_UNSAFE_RENAME"] = "true"
    if locking_provider == "dynamodb":
        options["AWS_S3_LOCKING_PROVIDER"] = "dynamodb"
        if lock_client == "log-store":
            options["DELTA_DYNAMO_TABLE_NAME"] = lock_table or names.dynamodb_lock_table
        else:  # the crate reaches DynamoDB at AWS_ENDPOINT_URL; the line below is for later eras
            options["DYNAMO_LOCK_TABLE_NAME"] = lock_table or OLD_LOCK_TABLE
            options["DYNAMO_LOCK_PARTITION_KEY_VALUE"] = lock_partition_key
            options["DYNAMO_LOCK_REFRESH_PERIOD_MILLIS"] = str(OLD_LOCK_REFRESH_MILLIS)
        if config.profile() == "local":
            options["AWS_ENDPOINT_URL_DYNAMODB"] = config.aws_endpoint("dynamodb")
    if conditional_put is not None:
        options["conditional_put"] = conditional_put
    return options


def kernel_storage_options(storage_options: dict[str, str] | None) -> dict[str, str]:
    """Options of any era as the kernel's deltalake (1.6.6) takes them: the DynamoDB log-store keys
    are left out, since 1.6.1 and later no longer have that store and would only log a warning
    about them; its reads and conditional-put writes are unaffected."""
    return {k: v for k, v in (storage_options or {}).items() if k not in KERNEL_IGNORES}


def azure_storage_options() -> dict[str, str]:
    """``storage_options`` for delta-rs on Azure Blob: Azurite locally, ADLS Gen2 with ``WORKBOOK_PROFILE=cloud``
    (credentials then come from AZURE_STORAGE_ACCOUNT_KEY, AZURE_CLIENT_* or ``az login``
    with AZURE_USE_AZURE_CLI=true, which delta-rs reads from the environment)."""
    if config.profile() == "cloud":
        return {"account_name": config.azure_account_name()}
    return {
        "account_name": config.AZURITE_ACCOUNT_NAME,
        "account_key": config.AZURITE_ACCOUNT_KEY,
        "azure_storage_endpoint": config.azurite_blob_endpoint(),
        "allow_http": "true",
    }
