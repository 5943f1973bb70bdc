"""Where the pair runner keeps its tables: a local folder, or a prefix of the S3 emulator's bucket.

:class:`helpers.matrix.pairs.Runner` copies tables, lists commit versions, reads a commit's
``commitInfo``, checks a table's log (:func:`helpers.delta.integrity.check_table`) and removes tables;
each store does these on its own storage. A table is named by a string: a local path (relative to
the workbook's folder, as the worker runs there) or ``s3://<bucket>/<prefix>`` (engines map it to
what they take: delta-rs ``s3://``, Spark ``s3a://``).

The S3 store talks to the emulator with boto3 (:func:`helpers.stores.storage.s3_client`). Its bucket keeps
object versions (:func:`helpers.stores.storage.ensure_bucket`), so removing a table deletes every version
of every object under its prefix, not only the latest.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from helpers.delta import delta_log, integrity
from helpers.stores import storage


def problems(location: str) -> list[dict]:
    """What :func:`helpers.delta.integrity.check_table` finds wrong with the table's log, as dicts."""
    check = integrity.check_table(location)
    return [
        {"kind": p.kind, "file": p.file, "version": p.version, "detail": p.detail}
        for p in check.problems
    ]


def _commit_info(body: bytes) -> dict:
    return delta_log.read_commit(body)[0]


class LocalTables:
    """Tables in folders on this machine."""

    kind = "local"

    def join(self, root: str, *parts: str) -> str:
        return str(Path(root, *parts))

    def reset(self, root: str) -> None:
        shutil.rmtree(root, ignore_errors=True)
        Path(root).mkdir(parents=True)

    def copy(self, source: str, target: str) -> str:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        return target

    def remove(self, table: str) -> None:
        shutil.rmtree(table, ignore_errors=True)

    def versions(self, table: str) -> list[int]:
        log = Path(table) / "_delta_log"
        found = (
            [delta_log.commit_version(f"_delta_log/{p.name}") for p in log.iterdir()]
            if log.is_dir()
            else []
        )
        return sorted(v for v in found if v is not None)

    def commit_info(self, table: str, version: int) -> dict:
        return _commit_info((Path(table) / delta_log.commit_file(version)).read_bytes())

    def shown(self, table: str) -> list[str]:
        """The forms of the table's name an engine's error message may use (replaced by ``<table>``)."""
        folder = str(Path(table).resolve())
        return [folder, folder.lstrip("/")]


class S3Tables:
    """Tables under prefixes of one bucket of the S3 emulator (or of S3 with the cloud profile)."""

    kind = "s3"

    def __init__(self) -> None:
        self._client = None

    @property
    def client(self):
        if self._client is None:
            self._client = storage.s3_client()
        return self._client

    @staticmethod
    def _split(table: str) -> tuple[str, str]:
        rest = table.split("://", 1)[1]
        bucket, _, prefix = rest.partition("/")
        return bucket, prefix.strip("/") + "/"

    def join(self, root: str, *parts: str) -> str:
        return "/".join([root.rstrip("/"), *parts])

    def reset(self, root: str) -> None:
        storage.ensure_bucket(self._split(root)[0])
        self.remove(root)

    def _keys(self, table: str) -> list[str]:
        bucket, prefix = self._split(table)
        keys = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            keys += [item["Key"] for item in page.get("Contents", [])]
        return keys

    def copy(self, source: str, target: str) -> str:
        self.remove(target)
        bucket, prefix = self._split(source)
        _, into = self._split(target)
        from concurrent.futures import ThreadPoolExecutor

        def copy(key: str) -> None:
            self.client.copy_object(
                Bucket=bucket,
                Key=into + key[len(prefix) :],
                CopySource={"Bucket": bucket, "Key": key},
            )

        with ThreadPoolExecutor(
            max_workers=8
        ) as pool:  # a table is some 20 objects: one round trip, not 20
            list(pool.map(copy, self._keys(source)))
        return target

    def remove(self, table: str) -> None:
        """Every version of every object under the table's prefix (delete markers too)."""
        bucket, prefix = self._split(table)
        doomed = []
        for page in self.client.get_paginator("list_object_versions").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            doomed += [
                {"Key": v["Key"], "VersionId": v["VersionId"]}
                for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
            ]
        for start in range(0, len(doomed), 1000):  # DeleteObjects takes at most 1,000 keys
            self.client.delete_objects(
                Bucket=bucket, Delete={"Objects": doomed[start : start + 1000], "Quiet": True}
            )

    def versions(self, table: str) -> list[int]:
        found = [
            delta_log.commit_version(key) for key in self._keys(self.join(table, "_delta_log"))
        ]
        return sorted(v for v in found if v is not None)

    def commit_info(self, table: str, version: int) -> dict:
        bucket, prefix = self._split(table)
        return _commit_info(
            self.client.get_object(Bucket=bucket, Key=prefix + delta_log.commit_file(version))[
                "Body"
            ].read()
        )

    def shown(self, table: str) -> list[str]:
        rest = table.split("://", 1)[1].rstrip("/")
        return [f"s3a://{rest}", f"s3://{rest}", rest, rest.partition("/")[2]]


_STORES = {"local": LocalTables(), "s3": None}


def for_location(table: str):
    """The store of a table's name: :class:`S3Tables` for ``s3://`` / ``s3a://``, else :class:`LocalTables`."""
    if table.startswith(("s3://", "s3a://")):
        if _STORES["s3"] is None:
            _STORES["s3"] = S3Tables()
        return _STORES["s3"]
    return _STORES["local"]
