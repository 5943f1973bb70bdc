"""The committer's view of the queue: bounded listings of what waits, and taking what landed off it.

A marker is deleted once the table holds its data file (its batch committed, or found landed),
so ``_queue/ready/`` holds only markers not yet taken. A listing asks for at most a page of
markers (one request: S3 ``ListObjectsV2`` with ``MaxKeys``, Azure ``List Blobs`` with
``maxresults``, one directory scan on local disk), so its cost follows the page, not the queue's
length. The table stays the truth of what was taken: a committer killed between its commit and the
deletion finds those markers again, sees the table holds their files, and deletes them without
committing them.

S3 and Azure list in name order, so a pass through the queue goes on from a cursor: a listing
reads a page of names (:data:`PAGE`, or a batch if it is larger) and the next batches are served
from it; when it came back full, the next one starts after its last name (S3 ``StartAfter``,
Azure's continuation token), and is sent while the committer commits what the last one found (a
listing reads names only, none of them taken). The markers taken during a pass are deleted once
the pass ends (a listing that came back short), in the background, as few requests as the store
allows; the next pass starts from the first name once every deletion has finished, which picks
up markers handed over behind the cursor. So a listing never reads a marker the committer took,
no marker is passed over for more than one pass, and no deletion competes with a commit while
markers wait (measured on Azurite: with 10,000 blobs in the container, deleting 10 of them took
about a second, and held up every other request meanwhile).
Local disk lists in no order: there each listing starts from the first entry, and a batch's
markers go (one ``unlink`` each) before the next listing.

Deletion is one request per 1,000 markers on S3 (``DeleteObjects``) and per 256 on Azure (a Blob
Batch of deletes). Through the stores' own clients (boto3, azure-storage-blob) with the
table's storage options, since deltalake's object store lists a whole prefix and cannot stop
after one page.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from urllib.parse import urlparse

from helpers.producers import layout

PAGE = 100
"""Names one listing reads where the store lists in order, however few a commit takes."""
S3_DELETE_MAX, AZURE_BATCH_MAX = 1000, 256
"""``DeleteObjects`` takes at most 1,000 keys, a Blob Batch request 256 subrequests."""


class Queue:
    """The ready markers of one table. :func:`open_queue` picks the subclass; ``listed`` counts
    every marker a listing handed to the committer (what a test checks), ``listings`` the
    listings; ``from_start`` says whether the last listing began at the first name (a short one
    from there: nothing waits)."""

    in_order = False
    """Does the store list in name order (so a listing can start after a name)?"""

    def __init__(self) -> None:
        self.listed = self.listings = 0
        self.from_start = True
        self._cursor = None
        self._taken: list[str] = []
        self._buffer: list[layout.Staged] = []
        """Markers a listing read and no call has returned yet (stores that list in order)."""
        self._deleting: list[Future] = []
        self._next: tuple[int, Future] | None = None
        """The listing sent ahead: (its limit, its answer)."""
        self._pool = ThreadPoolExecutor(1) if self.in_order else None
        self._lister = ThreadPoolExecutor(1) if self.in_order else None

    def waiting(self, limit: int) -> list[layout.Staged]:
        """At most ``limit`` markers not yet taken off the queue. Where the store lists in order, a
        listing reads up to :data:`PAGE` names (or ``limit``, if more) and the next calls are
        served from them; when it came back full, the next one (after its last name) is sent at
        once, while the caller commits. On local disk, one listing of ``limit`` each call."""
        if self._buffer:
            found, self._buffer = self._buffer[:limit], self._buffer[limit:]
            self.from_start = False
            return found
        self.from_start = self._cursor is None
        if self.from_start:
            self.settle()  # a pass from the first name: the markers taken so far are gone
        page = max(limit, PAGE) if self.in_order else limit
        ahead, self._next = self._next, None
        if ahead is not None and ahead[0] == page:
            names, self._cursor = ahead[1].result()
        else:
            if ahead is not None:
                ahead[1].result()
            names, self._cursor = self._names(page, self._cursor)
        self.listings += 1
        self.listed += len(names)
        if self._cursor is not None and self._lister is not None:
            self._next = (page, self._lister.submit(self._names, page, self._cursor))
        staged = [s for s in map(layout.parse_marker, names) if s is not None]
        found, self._buffer = staged[:limit], staged[limit:]
        return found

    def take(self, staged: list[layout.Staged]) -> None:
        """Take these markers off the queue: call only once the table holds their data files.
        Where the store lists in order they are deleted once the pass ends, in the background;
        on local disk at once."""
        paths = [s.marker_path for s in staged]
        if self._pool is None:
            if paths:
                self._delete(paths)
            return
        self._taken += paths
        if (
            self._cursor is None and not self._buffer and self._taken
        ):  # the pass ended: nothing is listed past these
            taken, self._taken = self._taken, []
            self._deleting.append(self._pool.submit(self._delete, taken))

    def settle(self) -> None:
        """Delete every marker taken and wait for every deletion under way; raise the first that failed."""
        if self._taken:
            taken, self._taken = self._taken, []
            self._delete(taken)
        deleting, self._deleting = self._deleting, []
        for future in deleting:
            future.result()

    def _names(self, limit: int, cursor) -> tuple[list[str], object]:
        """(marker names, where the next listing starts: None for the first name)."""
        raise NotImplementedError

    def _delete(self, paths: list[str]) -> None:
        raise NotImplementedError


class LocalQueue(Queue):
    def __init__(self, root: str) -> None:
        super().__init__()
        self.root, self.folder = root, os.path.join(root, layout.READY_DIR)

    def _names(self, limit: int, cursor) -> tuple[list[str], object]:
        found = []
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    if entry.name.endswith(".ready"):
                        found.append(entry.name)
                        if len(found) == limit:
                            break
        except FileNotFoundError:
            pass
        return found, None

    def _delete(self, paths: list[str]) -> None:
        for path in paths:
            try:
                os.unlink(os.path.join(self.root, path))
            except FileNotFoundError:  # deleted already (a clean-up, an earlier try)
                pass


class S3Queue(Queue):
    in_order = True

    def __init__(self, bucket: str, prefix: str, options: dict[str, str]) -> None:
        import boto3
        from botocore.config import Config

        super().__init__()
        self.bucket, self.prefix = bucket, f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        kwargs = {
            "region_name": options.get("AWS_REGION") or options.get("aws_region") or "us-east-1"
        }
        if options.get("AWS_ENDPOINT_URL"):
            kwargs["endpoint_url"] = options["AWS_ENDPOINT_URL"]
        if options.get("AWS_ACCESS_KEY_ID"):
            kwargs.update(
                aws_access_key_id=options["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=options.get("AWS_SECRET_ACCESS_KEY"),
            )
        self.client = boto3.client(
            "s3", config=Config(retries={"max_attempts": 3}, connect_timeout=5), **kwargs
        )

    def _names(self, limit: int, cursor) -> tuple[list[str], object]:
        after = {"StartAfter": cursor} if cursor else {}
        page = self.client.list_objects_v2(
            Bucket=self.bucket, Prefix=f"{self.prefix}{layout.READY_DIR}/", MaxKeys=limit, **after
        )
        keys = [item["Key"] for item in page.get("Contents", [])]
        return [k.rsplit("/", 1)[-1] for k in keys], keys[-1] if len(keys) == limit and page.get(
            "IsTruncated"
        ) else None

    def _delete(self, paths: list[str]) -> None:
        for start in range(0, len(paths), S3_DELETE_MAX):
            keys = [{"Key": self.prefix + p} for p in paths[start : start + S3_DELETE_MAX]]
            answer = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": keys, "Quiet": True}
            )
            if answer.get("Errors"):
                raise OSError(
                    f"DeleteObjects refused {len(answer['Errors'])} markers: {answer['Errors'][:1]}"
                )


class AzureQueue(Queue):
    in_order = True

    def __init__(self, container: str, prefix: str, options: dict[str, str]) -> None:
        from azure.storage.blob import ContainerClient

        super().__init__()
        self.prefix = f"{prefix.strip('/')}/" if prefix.strip("/") else ""
        account = options.get("account_name") or options.get("azure_storage_account_name")
        endpoint = (
            options.get("azure_storage_endpoint") or f"https://{account}.blob.core.windows.net"
        )
        key = options.get("account_key") or options.get("azure_storage_account_key")
        if key:
            credential = {"account_name": account, "account_key": key}
        else:
            from azure.identity import DefaultAzureCredential

            credential = DefaultAzureCredential()
        self.client = ContainerClient(
            endpoint, container, credential=credential, connection_timeout=5
        )

    def _names(self, limit: int, cursor) -> tuple[list[str], object]:
        pages = self.client.list_blobs(
            name_starts_with=f"{self.prefix}{layout.READY_DIR}/", results_per_page=limit
        ).by_page(cursor)
        names = [blob.name.rsplit("/", 1)[-1] for blob in next(pages, [])]
        return names, pages.continuation_token or None

    def _delete(self, paths: list[str]) -> None:
        for start in range(0, len(paths), AZURE_BATCH_MAX):
            names = [self.prefix + p for p in paths[start : start + AZURE_BATCH_MAX]]
            answers = self.client.delete_blobs(*names, raise_on_any_failure=False)
            refused = [
                a.status_code for a in answers if a.status_code not in (202, 404)
            ]  # 404: deleted already
            if refused:
                raise OSError(
                    f"Blob Batch refused {len(refused)} marker deletions (status {refused[0]})"
                )


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
