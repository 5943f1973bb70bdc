"""Whether a table's store answers and accepts the credentials, reached as delta-rs would reach it
with a writer's ``storage_options``: :func:`check_store`, the quick probe the runner makes before
an era's writer starts (some eras' own errors name no endpoint).

Imports: :mod:`helpers.ground` and :mod:`helpers.stores.storage` (whose StorageError it raises);
botocore and azure-core when it probes.
"""

from __future__ import annotations

import os

from helpers.ground import config
from helpers.stores import storage, store_clients, store_trouble


def _aws_client_for_options(service: str, options: dict[str, str]):
    """A boto3 client that reaches ``service`` where delta-rs would with these ``storage_options``
    (what they leave out comes from the environment, as it does for delta-rs)."""
    kwargs = {"region_name": options.get("AWS_REGION") or config.names().aws_region}
    endpoint = options.get(f"AWS_ENDPOINT_URL_{service.upper()}") or options.get("AWS_ENDPOINT_URL")
    if endpoint:
        kwargs["endpoint_url"] = endpoint
    if options.get("AWS_ACCESS_KEY_ID"):
        kwargs.update(
            aws_access_key_id=options["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=options.get("AWS_SECRET_ACCESS_KEY"),
        )
    return store_clients.aws_client(service, **kwargs)


def check_store(
    table_uri: str | os.PathLike, storage_options: dict[str, str] | None = None
) -> None:
    """Raise StorageError, naming the endpoint actually used and the settings to check, unless the
    store of ``table_uri`` answers and accepts the credentials, reached as delta-rs would reach it
    with ``storage_options`` (and, when it locks through DynamoDB, its lock table too). Local
    paths pass. A quick probe before an era's writer starts: some eras' own errors name no endpoint
    (deltalake 1.5.1: "error in DynamoDb")."""
    from urllib.parse import urlparse

    parsed = urlparse(str(table_uri))
    options = dict(storage_options or {})
    upper = {key.upper(): value for key, value in options.items()}
    if parsed.scheme in ("s3", "s3a"):
        from botocore.exceptions import BotoCoreError, ClientError

        probes = [
            (
                "S3",
                "s3",
                f"bucket {parsed.netloc!r}",
                lambda client: client.head_bucket(Bucket=parsed.netloc),
            )
        ]
        lock_table = upper.get("DELTA_DYNAMO_TABLE_NAME") or upper.get("DYNAMO_LOCK_TABLE_NAME")
        if upper.get("AWS_S3_LOCKING_PROVIDER") == "dynamodb" and lock_table:
            probes.append(
                (
                    "DynamoDB",
                    "dynamodb",
                    f"table {lock_table!r}",
                    lambda client: client.describe_table(TableName=lock_table),
                )
            )
        for what, service, resource, probe in probes:
            client = _aws_client_for_options(service, upper)
            try:
                probe(client)
            except (BotoCoreError, ClientError) as error:
                trouble = store_trouble.aws_trouble(what, client, resource, error)
                if trouble:
                    raise storage.StorageError(trouble) from error
                if (
                    isinstance(error, ClientError)
                    and error.response.get("Error", {}).get("Code") == "ResourceNotFoundException"
                ):
                    continue  # it answered; a writer whose lock creates its table will do so
                raise storage.StorageError(
                    f"Cannot use {resource} at {client.meta.endpoint_url}: {error}"
                ) from error
    elif parsed.scheme in ("az", "azure", "abfs", "abfss"):
        from azure.core.exceptions import AzureError

        container = parsed.netloc.split("@")[0]
        lower = {key.lower(): value for key, value in options.items()}
        if lower.get("account_key"):
            service = store_clients.blob_client(
                lower.get("azure_storage_endpoint") or config.blob_endpoint(),
                {
                    "account_name": lower.get("account_name") or config.azure_account_name(),
                    "account_key": lower["account_key"],
                },
            )
        else:
            service = storage.blob_service()
        endpoint = service.url.rstrip("/")
        try:
            service.get_container_client(container).get_container_properties()
        except AzureError as error:
            raise storage.StorageError(
                store_trouble.azure_trouble("Azure Blob", endpoint, container, error)
            ) from error
