"""The committer's view of the queue: one bounded listing of what waits, and taking what landed off it.

A marker is deleted once the table holds its data file (its batch committed, or found landed),
so ``_queue/ready/`` holds only markers not yet taken and a listing never reads one the committer
took. A listing asks for at most ``limit`` markers (one request: S3 ``ListObjectsV2`` with
``MaxKeys``, Azure ``List Blobs`` with ``maxresults``, one directory scan on local disk), so its
cost follows the batch, not the queue's length. The table stays the truth of what was taken: a
committer killed between its commit and the deletion finds those markers again, sees the table
holds their files, and deletes them without committing them.

Deletion is one request per batch on S3 (``DeleteObjects``, up to 1,000 keys) and one per marker
on Azure and local disk (sent together from a few threads). Through the stores' own clients
(boto3, azure-storage-blob) with the table's storage options, since deltalake's object store lists
a whole prefix and cannot stop after one page.

Standard library, boto3, azure-storage-blob and deltalake only (runs in the committer's process).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from helpers.producers import layout

DELETE_THREADS = 8
S3_DELETE_MAX = 1000
"""``DeleteObjects`` takes at most 1,000 keys."""


class Queue:
    """The ready markers of one table. :func:`open_queue` picks the subclass; ``listed`` counts
    every marker a listing read (what a test checks), ``listings`` the listings."""

    def __init__(self) -> None:
        self.listed = 0
        self.listings = 0

    def waiting(self, limit: int) -> list[layout.Staged]:
        """At most ``limit`` markers not yet taken off the queue (one listing), in no promised order."""
        names = self._names(limit)
        self.listings += 1
        self.listed += len(names)
        return [s for s in map(layout.parse_marker, names) if s is not None]

    def take(self, staged: list[layout.Staged]) -> None:
        """Delete these markers: call only once the table holds their data files."""
        if staged:
            self._delete([s.marker_path for s in staged])

    def _names(self, limit: int) -> list[str]:
        raise NotImplementedError

    def _delete(self, paths: list[str]) -> None:
        raise NotImplementedError


class LocalQueue(Queue):
    def __init__(self, root: str) -> None:
        super().__init__()
        self.root, self.folder = root, os.path.join(root, layout.READY_DIR)

    def _names(self, limit: int) -> list[str]:
        try:
            with os.scandir(self.folder) as entries:
                found = []
                for entry in entries:
                    if entry.name.endswith(".ready"):
                        found.append(entry.name)
                        if len(found) == limit:
                            break
                return found
        except FileNotFoundError:
            return []

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            try:
                os.unlink(os.path.join(self.root, path))
            except FileNotFoundError:  # deleted already (a clean-up, an earlier try)
                pass


class S3Queue(Queue):
    def __init__(self, bucket: str, prefix: str, options: dict[str, str]) -> None:
        import boto3
        from botocore.config import Config

        super().__init__()
        self.bucket, self.prefix = bucket, f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        kwargs = {"region_name": options.get("AWS_REGION") or options.get("aws_region") or "us-east-1"}
        if options.get("AWS_ENDPOINT_URL"):
            kwargs["endpoint_url"] = options["AWS_ENDPOINT_URL"]
        if options.get("AWS_ACCESS_KEY_ID"):
            kwargs.update(aws_access_key_id=options["AWS_ACCESS_KEY_ID"], aws_secret_access_key=options.get("AWS_SECRET_ACCESS_KEY"))
        self.client = boto3.client("s3", config=Config(retries={"max_attempts": 3}, connect_timeout=5), **kwargs)

    def _names(self, limit: int) -> list[str]:
        page = self.client.list_objects_v2(Bucket=self.bucket, Prefix=f"{self.prefix}{layout.READY_DIR}/", MaxKeys=limit)
        return [item["Key"].rsplit("/", 1)[-1] for item in page.get("Contents", [])]

    def _delete(self, paths: list[str]) -> None:
        for start in range(0, len(paths), S3_DELETE_MAX):
            keys = [{"Key": self.prefix + p} for p in paths[start:start + S3_DELETE_MAX]]
            answer = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True})
            if answer.get("Errors"):
                raise OSError(f"DeleteObjects refused {len(answer['Errors'])} markers: {answer['Errors'][:1]}")


class AzureQueue(Queue):
    def __init__(self, container: str, prefix: str, options: dict[str, str]) -> None:
        from azure.storage.blob import ContainerClient

        super().__init__()
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        account = options.get("account_name") or options.get("azure_storage_account_name")
        endpoint = options.get("azure_storage_endpoint") or f"https://{account}.blob.core.windows.net"
        key = options.get("account_key") or options.get("azure_storage_account_key")
        if key:
            credential = {"account_name": account, "account_key": key}
        else:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        self.client = ContainerClient(endpoint, container, credential=credential, connection_timeout=5)

    def _names(self, limit: int) -> list[str]:
        pages = self.client.list_blobs(name_starts_with=f"{self.prefix}{layout.READY_DIR}/", results_per_page=limit).by_page()
        return [blob.name.rsplit("/", 1)[-1] for blob in next(pages, [])][:limit]

    def _delete(self, paths: list[str]) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        def delete(path: str) -> None:
            try:
                self.client.delete_blob(self.prefix + path)
            except ResourceNotFoundError:  # deleted already
                pass

        with ThreadPoolExecutor(min(DELETE_THREADS, len(paths))) as pool:
            list(pool.map(delete, paths))


def open_queue(table_uri: str, storage_options: dict[str, str] | None) -> Queue:
    """The queue of the table at ``table_uri`` (a local path, ``s3://`` or ``az://``)."""
    uri, options = str(table_uri), dict(storage_options or {})
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return LocalQueue(parsed.path if parsed.scheme else uri)
    if parsed.scheme in ("s3", "s3a"):
        return S3Queue(parsed.netloc, parsed.path, options)
    if parsed.scheme in ("az", "azure", "abfs", "abfss"):
        return AzureQueue(parsed.netloc.split("@")[0], parsed.path, options)
    raise ValueError(f"No queue for {uri!r}: a local path, s3:// or az://.")
