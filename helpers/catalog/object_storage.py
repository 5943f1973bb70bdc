"""Catalog-managed tables on object storage: Azure Blob (Azurite) and S3 (the S3 emulator), created
through the Unity Catalog server and raced by Delta Spark drivers as on local disk, each driver
holding only the credential the catalog vends for the table.

The server (:mod:`helpers.catalog.server`) is started with its managed storage root on the store,
and the store is registered with it as a storage credential and an external location, as an
operator registers theirs (:func:`helpers.catalog.vended.register_store`):

* **Azure** (``abfs://<container>@devstoreaccount1.dfs.core.windows.net/...``): an
  ``azure_storage_key`` credential for Azurite's well-known account, for which the server mints
  SAS tokens by itself (its Azure vending recognises the emulator's account);
* **S3** (``s3a://<bucket>/...``): an ``aws_iam_role`` credential, for which the server calls
  ``STS:AssumeRole``. Released olai-uc-server calls AWS's STS only (the finding
  ``olai-uc-server-s3-vending-only-through-aws-sts``); the workbook's patched build calls the STS
  named by :data:`~helpers.catalog.server.STS_ENDPOINT_VARIABLE`, here the emulator's.

Each racing driver (:func:`helpers.catalog.vended.run_writer`, started by :func:`run_race`)
starts without the workbook's keys and asks the catalog for the table's credential itself,
through Unity Catalog's own Hadoop library, as its Spark connector does (:mod:`helpers.catalog.vended`
says how, and what the server vends). The driver that creates the table is the caller's session
(Spark's testing flag, the workbook's keys).

:func:`race_on` is one store's whole run (server, registration, table, race, checks, writes
outside the table's folder with the vended credential), as notebook 15's appendix C runs it.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

from helpers.catalog import credential_reach, server, tables, vended
from helpers.catalog.race import CatalogCheck, Race, check_table, run_drivers
from helpers.catalog.rest import CatalogError, StagedTable, UnityCatalog
from helpers.catalog.tables import COLUMNS
from helpers.catalog.writer import ROWS_PER_BATCH, batches_of
from helpers.ground import config

STORES = ("azure", "s3")


# -- where a table lives, and reading it -------------------------------------------------------------


def managed_root(store: str, run: str) -> str:
    """The server's managed storage root for one run: a folder of its own in the workbook's
    container (``abfs://``, as Spark's ABFS driver names Azurite's account) or bucket (``s3a://``)."""
    names = config.names()
    if store == "azure":
        return f"abfs://{names.azure_container}@{config.azure_account_name()}.dfs.core.windows.net/catalog-{run}"
    if store == "s3":
        return f"s3a://{names.s3_bucket}/catalog-{run}"
    raise ValueError(f"store must be one of {STORES}, not {store!r}")


def split(location: str) -> tuple[str, str, str]:
    """(store, container or bucket, key prefix without slashes at its ends) of a table's location."""
    parsed = urlparse(location)
    if parsed.scheme in ("abfs", "abfss"):
        return "azure", parsed.username or "", parsed.path.strip("/")
    if parsed.scheme in ("s3", "s3a"):
        return "s3", parsed.netloc, parsed.path.strip("/")
    raise ValueError(f"{location!r} is not on Azure Blob (abfs://) or S3 (s3a://)")


def list_keys(location: str) -> list[str]:
    """Every object under the table's location, as paths relative to it (without the empty objects
    by which Hadoop's ABFS and S3A drivers mark a folder on a store without folders)."""
    from helpers.stores import storage

    store, bucket, prefix = split(location)
    if store == "azure":
        container = storage.blob_service().get_container_client(bucket)
        names = [
            blob.name
            for blob in container.list_blobs(name_starts_with=prefix + "/", include=["metadata"])
            if (blob.metadata or {}).get("hdi_isfolder") != "true"  # ABFS's marker of a folder
        ]
    else:
        pages = (
            storage.s3_client()
            .get_paginator("list_objects_v2")
            .paginate(Bucket=bucket, Prefix=prefix + "/")
        )
        names = [
            item["Key"]
            for page in pages
            for item in page.get("Contents", [])
            if not item["Key"].endswith("/")  # S3A's marker of a folder
        ]
    return sorted(name[len(prefix) + 1 :] for name in names)


def read_object(location: str, relative: str) -> bytes:
    """One object of the table (``relative`` to its location)."""
    from helpers.stores import storage

    store, bucket, prefix = split(location)
    if store == "azure":
        blob = storage.blob_service().get_blob_client(bucket, f"{prefix}/{relative}")
        return blob.download_blob().readall()
    return storage.s3_client().get_object(Bucket=bucket, Key=f"{prefix}/{relative}")["Body"].read()


def delete_object(location: str, relative: str) -> None:
    """Remove one object of the table (a crafted break for the checks)."""
    from helpers.stores import storage

    store, bucket, prefix = split(location)
    if store == "azure":
        storage.blob_service().get_blob_client(bucket, f"{prefix}/{relative}").delete_blob()
    else:
        storage.s3_client().delete_object(Bucket=bucket, Key=f"{prefix}/{relative}")


def mirror(location: str, folder: Path) -> Path:
    """Copy every object of the table into ``folder`` byte for byte (its log, staged commits and
    data files), so that the race's checks (:func:`helpers.catalog.race.check_table`) read what the
    store holds."""
    for relative in list_keys(location):
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(read_object(location, relative))
    return folder


@dataclass
class _MirroredCatalog:
    """The catalog, with the table's location replaced by its copy on local disk."""

    catalog: UnityCatalog
    folder: Path

    @property
    def uri(self) -> str:
        return self.catalog.uri

    def table(self, catalog: str, schema: str, name: str):
        return replace(self.catalog.table(catalog, schema, name), location=self.folder.as_uri())


def check(
    catalog: UnityCatalog, name: str, folder: Path, expected: dict | None = None
) -> CatalogCheck:
    """The race's checks of the table ``name``, read from the store (copied to ``folder`` first) and
    from the catalog: :func:`helpers.catalog.race.check_table`."""
    view = catalog.table(tables.CATALOG, tables.SCHEMA, name)
    mirror(view.location, folder)
    found = check_table(_MirroredCatalog(catalog, folder), name, expected)
    found.catalog = replace(found.catalog, location=view.location)
    return found


# -- the server, the store's registration, the table ---------------------------------------------------


def start_server(root: Path, store: str) -> tuple[server.UCServer, str]:
    """A server whose managed tables live on ``store``, its state under ``root``; returns it and
    its managed storage root, on the workbook's bucket or container (made if missing). For S3 the
    patched build's setting names the emulator's STS."""
    from helpers.stores import storage

    storage.ensure_container() if store == "azure" else storage.ensure_bucket()
    base = managed_root(store, uuid.uuid4().hex[:8])
    environment = {}
    if store == "s3" and config.profile() == "local":
        environment = {
            server.STS_ENDPOINT_VARIABLE: config.moto_endpoint(),
            server.S3_ENDPOINT_VARIABLE: config.aws_endpoint("s3"),
        }
    return server.start(root, managed_storage_root=base, environment=environment), base


def create(spark, catalog: UnityCatalog, staged: StagedTable, columns: str = COLUMNS) -> None:
    """Steps 2 and 3 of a table's creation on the store: Delta writes version 0 at the staged
    location, then the catalog registers it (:func:`helpers.catalog.tables.create` on local disk)."""
    properties = {**tables.TABLE_PROPERTIES, tables.TABLE_ID_PROPERTY: staged.table_id}
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    spark.sql(
        f"CREATE TABLE {tables.SCHEMA}.{staged.name} ({columns}) USING delta "
        f"LOCATION '{staged.location}' TBLPROPERTIES ({listed})"
    )
    body = read_object(staged.location, f"_delta_log/{0:020d}.json").decode()
    catalog.register(
        tables.CATALOG,
        tables.SCHEMA,
        staged,
        [json.loads(line) for line in body.splitlines() if line.strip()],
    )


# -- the race --------------------------------------------------------------------------------------


def run_race(
    catalog: UnityCatalog,
    store: str,
    name: str,
    location: str,
    *,
    writers: int,
    batches_per_writer: int,
    run_dir: Path,
) -> Race:
    """:func:`helpers.catalog.race.run_race` on the store: ``writers`` drivers
    (:func:`helpers.catalog.vended.run_writer`) released together at a barrier, each appending
    ``batches_per_writer`` batches; the checks read from the store and the catalog (:func:`check`)."""
    batches = {f"w{n}": batches_of(n, batches_per_writer) for n in range(1, writers + 1)}
    specs = {
        writer: {
            "module": "helpers.catalog.vended",
            "store": store,
            "table": name,
            "location": location,
            "batches": batches[writer],
        }
        for writer in batches
    }
    results, seconds = run_drivers(catalog, specs, run_dir, f"{writers} drivers on {store}")
    expected = {(w, b): ROWS_PER_BATCH for w, bs in batches.items() for b in bs}
    return Race(batches, results, check(catalog, name, run_dir / "store-copy", expected), seconds)


def without_the_setting(root: Path) -> CatalogError:
    """What the patched build answers when its setting is not set: a table staged on S3 from a server
    started without :data:`~helpers.catalog.server.STS_ENDPOINT_VARIABLE`, the call it makes to
    AWS's STS sent to a port of 127.0.0.1 where nothing listens (so nothing leaves the machine).
    Returns the catalog's refusal."""
    from helpers.ground import local_processes

    base = managed_root("s3", "unset")
    environment = {
        server.STS_ENDPOINT_VARIABLE: "",
        "HTTPS_PROXY": f"http://{config.LOCALHOST}:{local_processes.free_port()}",
    }
    with server.start(root, managed_storage_root=base, environment=environment) as uc:
        catalog = UnityCatalog(uc.uri)
        vended.register_store(catalog, "s3", base)
        try:
            vended.stage(catalog, "orders")
        except CatalogError as refused:
            return refused
    raise AssertionError(
        "the server staged a table on S3 without the setting: the patch is not inert"
    )


# -- one store's whole run --------------------------------------------------------------------------


@dataclass
class StoreRun:
    """A catalog-managed table on one store, created through the catalog and raced: what the catalog
    vended for it, what each driver held, what the store holds, and the race's checks."""

    store: str
    root: str
    """The server's managed storage root on the store."""
    location: str
    """Where the catalog put the table."""
    vended: list[dict]
    """The credentials the catalog vended with the table, masked (:func:`helpers.catalog.vended.masked`)."""
    sts_minted: bool
    """S3 only: the vended key is a session key from the store's STS (``ASIA...``), not the server's own."""
    race: Race
    keys: list[str]
    """The table's objects on the store after the race, relative to its location."""
    on_local_disk: list[str]
    """Files the server's local folder holds for tables: none when the table lives on the store."""
    outside: list[dict]
    """Writes outside the table's folder with the credential the catalog vends for it
    (:func:`helpers.catalog.credential_reach.outside_writes`)."""
    lifetime_s: float
    """From the staging call to the vended credential's expiry (:data:`helpers.catalog.vended.LIFETIME_S`)."""
    staging_s: float
    """How long the staging call took: the credential was minted within it."""

    @property
    def drivers(self) -> dict[str, dict]:
        """Each racing driver's credential (masked), the places it held a workbook key (none), and
        Spark's testing flag in it (None), as it recorded them."""
        return {
            writer: {k: result.get(k) for k in ("credential", "workbook_keys", "testing_flag")}
            for writer, result in self.race.results.items()
        }

    def row(self) -> dict:
        found = self.race.check
        held = [d["credential"] or {} for d in self.drivers.values()]
        return {
            "store": self.store,
            "credential vended": ", ".join(sorted(k for c in self.vended for k in c["config"])),
            "for exactly the table": [c["prefix"] for c in self.vended] == [self.location],
            "drivers' credential": sorted({vended.shown(c) for c in held}),
            "workbook keys in drivers": sum(
                len(d["workbook_keys"] or []) for d in self.drivers.values()
            ),
            "written outside the table": [
                f"{a['where']}: refused, {a['status']} {a['error']}"
                if a["refused"]
                else f"{a['where']}: written"
                for a in self.outside
            ],
            "lifetime (min)": round(self.lifetime_s / 60),
            "versions published": f"0..{max(found.published)}" if found.published else "none",
            "catalog's latest": found.catalog.latest_version,
            "staged commits": sum(k.startswith("_delta_log/_staged_commits/") for k in self.keys),
            "losers": len(found.losers),
            "rows per batch": sorted(set(found.rows.values())),
            "problems": len(found.problems),
        }


@contextlib.contextmanager
def store_server(store: str, root: Path):
    """A server whose managed storage is on ``store`` (:func:`start_server`), with the store
    registered (:func:`helpers.catalog.vended.register_store`); yields it and its managed storage root, then stops it."""
    uc, base = start_server(root, store)
    try:
        vended.register_store(UnityCatalog(uc.uri), store, base)
        yield uc, base
    finally:
        uc.stop()


def race_on(
    spark,
    store: str,
    run_dir: Path,
    *,
    writers: int,
    batches_per_writer: int,
) -> StoreRun:
    """A table ``default.orders_<store>`` created through a server of its own whose managed storage
    is on ``store`` (:func:`store_server`, stopped at the end) by ``spark`` (a session that creates
    tables, with the store's jars: :func:`helpers.catalog.tables.spark_session`), then raced by
    ``writers`` drivers, each appending ``batches_per_writer`` batches, and checked from the store
    and the catalog."""
    with store_server(store, run_dir / "server") as (uc, base):
        return _race(spark, store, run_dir, uc, base, writers, batches_per_writer)


def _race(spark, store, run_dir, uc, base, writers, batches_per_writer) -> StoreRun:
    """:func:`race_on`'s run, on the server ``uc`` with its managed storage root ``base``."""
    catalog = UnityCatalog(uc.uri)
    name = f"orders_{store}"  # one session names both stores' tables in its session catalog
    tables.forget(spark, name)
    asked = time.time()
    staged, credentials = vended.stage(catalog, name)
    answered = time.time()
    key = next((c["config"].get("s3.access-key-id", "") for c in credentials), "")
    previous = spark.conf.get(tables.URI_KEY, None)
    spark.conf.set(tables.URI_KEY, uc.uri)
    try:
        create(spark, catalog, staged)
    finally:
        if previous is not None:
            spark.conf.set(tables.URI_KEY, previous)
    race = run_race(
        catalog,
        store,
        name,
        staged.location,
        writers=writers,
        batches_per_writer=batches_per_writer,
        run_dir=run_dir / "race",
    )
    return StoreRun(
        store,
        base,
        staged.location,
        vended.masked(credentials),
        key.startswith("ASIA") and key != config.EMULATOR_AWS_ACCESS_KEY_ID,
        race,
        list_keys(staged.location),
        sorted(str(p.relative_to(uc.tables)) for p in uc.tables.rglob("*") if p.is_file())
        if uc.tables.exists()
        else [],
        credential_reach.outside_writes(
            vended.table_credential(catalog, name), *split(staged.location)
        ),
        credential_reach.lifetime_s(credentials[0], asked),
        answered - asked,
    )
