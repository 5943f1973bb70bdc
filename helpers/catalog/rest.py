"""What the workbook asks a Unity Catalog server itself, over its REST API: the catalog and schema
a table lives in, the two steps that make a catalog-managed table (reserve it, then register
version 0), and what the catalog knows of a table's commits.

Delta Spark calls the same server for every commit after version 0 (its
``UCDeltaTokenBasedRestClient``); the two creation steps are what Unity Catalog's Spark connector
would call, and the workbook runs without that connector (see :mod:`helpers.catalog.tables`).
Every call raises :class:`CatalogError` with the server's own message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

API = "/api/2.1/unity-catalog"
DELTA = f"{API}/delta/v1"
TIMEOUT_S = 60


class CatalogError(RuntimeError):
    """The server refused a call; ``status`` is its HTTP status (None: it did not answer)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class StagedTable:
    """A table the catalog has reserved: its id and the location version 0 must be written to."""

    name: str
    table_id: str
    location: str
    required_properties: dict[str, str | None]
    required_protocol: dict = field(default_factory=dict)
    """The server's ``required-protocol``: ``reader-features`` and ``writer-features`` (and minimum
    versions) version 0 must declare."""

    def table_properties(self) -> dict[str, str]:
        """The table properties version 0 must carry, read from the server's answer, as the managed
        tables spec asks a client to: each required feature as ``delta.feature.<name> = supported``
        and each required property with a value (the table id among them). A property the server
        names without a value (``null``) is one Delta fills in itself."""
        protocol = self.required_protocol
        features = dict.fromkeys(
            [*protocol.get("reader-features", []), *protocol.get("writer-features", [])]
        )
        return {
            **{f"delta.feature.{name}": "supported" for name in features},
            **{key: value for key, value in self.required_properties.items() if value is not None},
        }


@dataclass
class CatalogView:
    """What the catalog says of a table (its Delta API's ``loadTable``)."""

    table_id: str
    location: str
    latest_version: int
    """The latest version the catalog ratified."""
    unpublished: list[dict]
    """Commits ratified but not yet published to ``_delta_log/<version>.json`` (version, file-name, ...)."""


class UnityCatalog:
    """A Unity Catalog server at ``uri`` (its root, e.g. ``http://127.0.0.1:8181``)."""

    def __init__(self, uri: str, token: str = "anonymous") -> None:
        self.uri = uri.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: dict | None = None) -> Any:
        """One request; the decoded JSON answer ({} for an empty one)."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.uri + path,
            data=data,
            method=method,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "Authorization": f"Bearer {self.token}",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise CatalogError(
                f"{method} {path}: HTTP {error.code}: {error.read().decode(errors='replace')[:1000]}",
                error.code,
            ) from None
        except OSError as error:
            raise CatalogError(
                f"{method} {self.uri}{path}: no answer ({error}); is the server running?"
            ) from None
        return json.loads(text) if text.strip() else {}

    # -- where tables live -----------------------------------------------------------------------

    def create_schema(self, catalog: str, schema: str) -> None:
        """The catalog and its schema, created unless they exist (a server starts empty)."""
        for path, body in (
            (f"{API}/catalogs", {"name": catalog}),
            (f"{API}/schemas", {"name": schema, "catalog_name": catalog}),
        ):
            try:
                self.call("POST", path, body)
            except CatalogError as error:
                if error.status != 409:  # already there
                    raise

    # -- a catalog-managed table -----------------------------------------------------------------

    def stage(self, catalog: str, schema: str, name: str) -> StagedTable:
        """Step 1: the catalog reserves a table id and a location for ``name``, and says what version 0
        must declare (:meth:`StagedTable.table_properties`)."""
        answer = self.call(
            "POST", f"{DELTA}/catalogs/{catalog}/schemas/{schema}/staging-tables", {"name": name}
        )
        return StagedTable(
            name,
            answer["table-id"],
            answer["location"],
            answer.get("required-properties") or {},
            answer.get("required-protocol") or {},
        )

    def register(
        self, catalog: str, schema: str, staged: StagedTable, version_zero: list[dict]
    ) -> dict:
        """Step 2, after the writer wrote version 0 at the staged location: the catalog checks its
        protocol and properties and starts ratifying the table's commits."""
        actions = {next(iter(action)): next(iter(action.values())) for action in version_zero}
        protocol, metadata = actions["protocol"], actions["metaData"]
        info = actions.get("commitInfo", {})
        body = {
            "name": staged.name,
            "location": staged.location,
            "table-type": "MANAGED",
            "columns": json.loads(metadata["schemaString"]),
            "partition-columns": metadata.get("partitionColumns", []),
            "protocol": {
                "min-reader-version": protocol["minReaderVersion"],
                "min-writer-version": protocol["minWriterVersion"],
                "reader-features": protocol.get("readerFeatures", []),
                "writer-features": protocol.get("writerFeatures", []),
            },
            "properties": metadata.get("configuration", {}),
            "last-commit-timestamp-ms": int(info.get("inCommitTimestamp") or info.get("timestamp")),
        }
        return self.call("POST", f"{DELTA}/catalogs/{catalog}/schemas/{schema}/tables", body)

    def ratify(
        self,
        catalog: str,
        schema: str,
        name: str,
        table_id: str,
        version: int,
        file_name: str,
        file_size: int,
        timestamp_ms: int,
        *,
        published: int | None = None,
    ) -> dict:
        """Ask the catalog to ratify a staged commit as ``version``: the request Delta's REST client
        sends for each commit (``add-commit``), here without Delta, to show the catalog's rule.
        ``published``: also report every version up to it published, as Delta does with each commit."""
        commit = {
            "version": version,
            "timestamp": timestamp_ms,
            "file-name": file_name,
            "file-size": file_size,
            "file-modification-timestamp": timestamp_ms,
        }
        updates = [{"action": "add-commit", "commit": commit}]
        if published is not None:
            updates.append(
                {"action": "set-latest-backfilled-version", "latest-published-version": published}
            )
        return self.call(
            "POST",
            f"{DELTA}/catalogs/{catalog}/schemas/{schema}/tables/{name}",
            {"requirements": [{"type": "assert-table-uuid", "uuid": table_id}], "updates": updates},
        )

    def table(self, catalog: str, schema: str, name: str) -> CatalogView:
        """What the catalog knows of the table now."""
        answer = self.call("GET", f"{DELTA}/catalogs/{catalog}/schemas/{schema}/tables/{name}")
        metadata = answer["metadata"]
        return CatalogView(
            metadata["table-uuid"],
            metadata["location"],
            int(answer.get("latest-table-version", 0)),
            sorted(answer.get("commits") or [], key=lambda c: c["version"]),
        )
