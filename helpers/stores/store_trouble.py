"""What to say when a store cannot be used: it does not answer, it refuses the credentials (or
their permissions), or the container is missing. Each message names the endpoint actually used and
the settings to check, locally (the emulators) or with ``WORKBOOK_PROFILE=cloud``;
:mod:`helpers.stores.storage` raises them as its ``StorageError``.

Imports: :mod:`helpers.ground` only; botocore and azure-core when an error is looked at.
"""

from __future__ import annotations

from helpers.ground import config

AWS_REFUSALS = (
    "403",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AccessDenied",
    "AccessDeniedException",
    "ExpiredToken",
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "InvalidClientTokenId",
)
"""Error codes with which S3 or DynamoDB refuse a request's credentials or permissions."""


AZURE_REFUSALS = (
    "AuthorizationFailure",
    "AuthenticationFailed",
    "AuthorizationPermissionMismatch",
    "InvalidAuthenticationInfo",
)
"""Error codes with which Azure Blob refuses a request's credentials or permissions."""


def unreachable(what: str, endpoint: str, error: Exception) -> str:
    """``what`` (S3, DynamoDB, Azure Blob) did not answer at ``endpoint``, the one actually used."""
    if config.profile() == "local":
        advice = (
            "Start the emulators with `make services` (or `python -m helpers.stores.services up`), or check "
            "WORKBOOK_MOTO_PORT and WORKBOOK_AZURITE_PORT."
        )
    else:
        settings = (
            config.CLOUD_AZURE_SETTINGS if what.startswith("Azure") else config.CLOUD_AWS_SETTINGS
        )
        advice = f"WORKBOOK_PROFILE=cloud: check {settings}."
    return f"{what} does not answer at {endpoint} ({type(error).__name__}: {error}). {advice}"


def refused(what: str, endpoint: str, resource: str, code: str) -> str:
    """``what`` answered at ``endpoint`` but refused the credentials (or their permissions) for ``resource``."""
    if config.profile() == "local":
        advice = "Locally the emulators' keys come from helpers/ground/config.py; is WORKBOOK_PROFILE meant to be cloud?"
    else:
        credentials = (
            config.CLOUD_AZURE_CREDENTIALS
            if what.startswith("Azure")
            else config.CLOUD_AWS_CREDENTIALS
        )
        advice = f'WORKBOOK_PROFILE=cloud: check {credentials}, and the permissions in docs/running.md ("Real cloud").'
    return f"{what} at {endpoint} refused the credentials for {resource} ({code}). {advice}"


def aws_trouble(what: str, client, resource: str, error: Exception) -> str | None:
    """The message for a botocore error that says the service is unreachable or refuses the
    credentials; None for any other error (the caller decides)."""
    from botocore.exceptions import ClientError, ConnectionError, NoCredentialsError

    endpoint = client.meta.endpoint_url
    if isinstance(error, ConnectionError):
        return unreachable(what, endpoint, error)
    if isinstance(error, NoCredentialsError):
        return refused(what, endpoint, resource, "no credentials found")
    if (
        isinstance(error, ClientError)
        and error.response.get("Error", {}).get("Code") in AWS_REFUSALS
    ):
        return refused(what, endpoint, resource, error.response["Error"]["Code"])
    return None


def azure_trouble(what: str, endpoint: str, container: str, error: Exception) -> str:
    """The message for an azure-core error met on ``container``: missing, unreachable, refused."""
    from azure.core.exceptions import (
        ClientAuthenticationError,
        HttpResponseError,
        ResourceNotFoundError,
        ServiceRequestError,
    )

    if isinstance(error, ResourceNotFoundError):
        return (
            f"Container {container!r} does not exist at {endpoint}. Create it (`az storage container create "
            f"--name {container}`) or point WORKBOOK_AZURE_CONTAINER at yours."
        )
    if isinstance(error, ServiceRequestError):
        return unreachable(what, endpoint, error)
    code = getattr(error, "error_code", None)
    if (
        isinstance(error, ClientAuthenticationError)
        or code in AZURE_REFUSALS
        or not isinstance(error, HttpResponseError)
    ):
        return refused(what, endpoint, f"container {container!r}", code or type(error).__name__)
    return f"Cannot use container {container!r} at {endpoint}: {error}"
