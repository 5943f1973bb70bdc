"""How the stores' clients are built, for :mod:`helpers.stores.storage` and
:mod:`helpers.stores.store_check`: boto3 clients with the emulator's keys in the local profile (the
default credential chain in the cloud one), and an Azure BlobServiceClient; both give up on an
endpoint that does not answer within about 20 s.

Imports: :mod:`helpers.ground` only; boto3 and azure-storage-blob when a client is built.
"""

from __future__ import annotations

from helpers.ground import config


def aws_kwargs(service: str, endpoint_url: str | None = None) -> dict[str, str]:
    kwargs = {"region_name": config.names().aws_region}
    if config.profile() == "local":
        kwargs.update(
            endpoint_url=endpoint_url or config.aws_endpoint(service),
            aws_access_key_id=config.EMULATOR_AWS_ACCESS_KEY_ID,
            aws_secret_access_key=config.EMULATOR_AWS_SECRET_ACCESS_KEY,
        )
    return kwargs


def aws_client(service: str, **kwargs):
    import boto3
    from botocore.config import Config

    return boto3.client(
        service, config=Config(retries={"max_attempts": 2}, connect_timeout=5), **kwargs
    )


def blob_client(endpoint: str, credential):
    """A BlobServiceClient that gives up on an endpoint that does not answer within about 20 s, as
    the boto3 clients do: 5 s to connect, 3 attempts, 1 s and 3 s between them (the SDK's default
    waits 15 s, 18 s and 24 s between 4 attempts, about 90 s in all)."""
    from azure.storage.blob import BlobServiceClient, ExponentialRetry

    retry = ExponentialRetry(
        initial_backoff=1, increment_base=2, retry_total=2, random_jitter_range=1
    )
    return BlobServiceClient(
        endpoint, credential=credential, retry_policy=retry, connection_timeout=5
    )
