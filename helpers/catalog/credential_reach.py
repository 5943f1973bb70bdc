"""What a credential the catalog vends for a table reaches, and how long it lives: a write outside
the table's folder tried with it on each store (:func:`outside_writes`; what was written is removed
with the workbook's keys), and its lifetime (:func:`lifetime_s`). Why the emulators take such a
write is :data:`OUTSIDE_REASONS`; :mod:`helpers.catalog.vended` says how the credential is vended
and used."""

from __future__ import annotations

import uuid

from helpers.ground import config


def lifetime_s(credential: dict, asked_at: float) -> float:
    """Seconds from ``asked_at`` (a ``time.time()``) to the credential's ``expiration-time-ms``."""
    return credential["expiration-time-ms"] / 1000 - asked_at


OUTSIDE_REASONS = {
    "azure": "the server signs Azurite's account a SAS for the whole container (sr=c): Azurite has "
    "no directory SAS",
    "s3": "moto's STS ignores the session policy the server sends, and moto's S3 checks no "
    "signature: a made-up key writes too",
}
"""Why a write outside the table's folder is not refused, by store (the module's docstring)."""


def outside_writes(credential: dict, store: str, bucket: str, prefix: str) -> list[dict]:
    """Write one object with the vended ``credential`` outside the table's folder (``bucket`` and
    ``prefix``, :func:`helpers.catalog.object_storage.split`): beside the table under its root, and
    on Azure in another container too (on S3 also with a made-up key, to show what the emulator
    checks). Each attempt's record: where, refused or not, the store's status and error code, and
    on success why (:data:`OUTSIDE_REASONS`); what was written is removed with the workbook's keys."""
    beside = f"{prefix.split('/')[0]}/outside-the-table-{uuid.uuid4().hex[:8]}"
    if store == "azure":
        attempts = [("beside the table", bucket, credential["config"]["azure.sas-token"])]
        attempts.append(("another container", f"{bucket}-outside", attempts[0][2]))
        return [_azure_write(where, container, beside, sas) for where, container, sas in attempts]
    secrets = credential["config"]
    keys = (
        secrets["s3.access-key-id"],
        secrets["s3.secret-access-key"],
        secrets["s3.session-token"],
    )
    made_up = ("AKIAMADEUPKEY0000000", "made-up-secret", None)
    return [
        _s3_write(where, bucket, beside, key)
        for where, key in (("beside the table", keys), ("beside the table, a made-up key", made_up))
    ]


def _record(where: str, key: str, store: str, error=None) -> dict:
    status = code = None
    if error is not None:
        response = getattr(error, "response", None)
        if isinstance(response, dict):  # botocore
            status = response["ResponseMetadata"]["HTTPStatusCode"]
            code = response["Error"]["Code"]
        else:  # azure-core
            status, code = error.status_code, getattr(error.error_code, "value", error.error_code)
    return {
        "where": where,
        "key": key,
        "refused": error is not None,
        "status": status,
        "error": code,
        "why not refused": None if error is not None else OUTSIDE_REASONS[store],
    }


def _azure_write(where: str, container: str, key: str, sas: str) -> dict:
    from azure.core.exceptions import HttpResponseError

    from helpers.stores import storage, store_clients

    own = storage.blob_service().get_container_client(container)
    made = not own.exists()
    if made:
        own.create_container()
    blob = store_clients.blob_client(config.blob_endpoint(), sas).get_blob_client(container, key)
    try:
        blob.upload_blob(b"outside", overwrite=True)
    except HttpResponseError as refused:
        return _record(where, f"{container}/{key}", "azure", refused)
    else:
        if not made:
            own.delete_blob(key)
        return _record(where, f"{container}/{key}", "azure")
    finally:
        if made:
            own.delete_container()


def _s3_write(where: str, bucket: str, key: str, keys: tuple) -> dict:
    from botocore.exceptions import ClientError

    from helpers.stores import storage, store_clients

    kwargs = store_clients.aws_kwargs("s3")
    kwargs.update(aws_access_key_id=keys[0], aws_secret_access_key=keys[1])
    if keys[2]:
        kwargs["aws_session_token"] = keys[2]
    try:
        written = store_clients.aws_client("s3", **kwargs).put_object(
            Bucket=bucket, Key=key, Body=b"outside"
        )
    except ClientError as refused:
        return _record(where, f"{bucket}/{key}", "s3", refused)
    version = {"VersionId": written["VersionId"]} if written.get("VersionId") else {}
    storage.s3_client().delete_object(Bucket=bucket, Key=key, **version)
    return _record(where, f"{bucket}/{key}", "s3")
