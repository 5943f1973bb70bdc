"""Catalog-managed Delta tables with Delta Spark 4.4, committed through a Unity Catalog server.

A catalog-managed table (Delta 4.1.0+, table feature ``catalogManaged``) lets the catalog decide
each commit: a writer stages its commit as ``_delta_log/_staged_commits/<v>.<uuid>.json``, asks
the catalog to ratify it as version ``v``, and only then publishes it as ``_delta_log/<v>.json``.
Two writers that stage the same version are told by the catalog which one won; the other checks
for conflicts and tries the next version, as on any store. No put-if-absent, no lock table.

What the workbook adds, and why (everything else is Delta's and the server's code):

* **The commit coordinator for ``spark_catalog``.** Delta Spark looks a catalog-managed table's
  coordinator up by the name of the catalog the table is in. It builds one by itself only for
  Unity Catalog's Spark connector (``io.unitycatalog.spark.UCSingleCatalog``), which is not
  published where this workbook downloads its jars. The session extension
  ``workbook.catalog.UnityCatalogCommits`` (``helpers/spark/java/``) registers a builder for the session
  catalog that returns Delta's own ``UCCommitCoordinatorClient`` over Delta's own REST client,
  at ``spark.workbook.unityCatalog.uri``: :func:`session_conf`.
* **Creating the table.** The connector would reserve the table in the catalog, let Delta write
  version 0 there and register it. :func:`create` does those two calls itself
  (:mod:`helpers.catalog.rest`) around Delta's ``CREATE TABLE``. Delta Spark 4.4 refuses to create
  a catalog-managed table in any catalog but the connector's
  (``DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_CREATION``) unless the JVM runs with Spark's testing
  flag (``-Dspark.testing=true``, :data:`TESTING_FLAG`); that flag is the one setting of these
  sessions Delta does not intend for users.
* **The name in each driver.** The table's name lives in Spark's own session catalog, which is
  in memory and private to each driver; :func:`open_table` registers the catalog's table under its
  name in another driver (``CREATE TABLE ... LOCATION``). With the connector, every driver would
  read the name from Unity Catalog. Commits go through the server either way.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

from helpers.catalog.rest import StagedTable, UnityCatalog
from helpers.ground import config
from helpers.spark import sessions

CATALOG = "spark_catalog"
"""The Unity Catalog catalog that mirrors Spark's session catalog: Delta names a table's coordinator
and its catalog-side identifier (``catalog.schema.table``) after the Spark catalog it is in."""
SCHEMA = "default"
COLUMNS = "id BIGINT, writer STRING, batch INT"
"""The columns of every table the catalog's writers race on."""
EXTENSION = "workbook.catalog.UnityCatalogCommits"
URI_KEY = "spark.workbook.unityCatalog.uri"
TESTING_FLAG = "-Dspark.testing=true"
TABLE_PROPERTIES = {
    "delta.feature.catalogManaged": "supported",
    # what olai-uc-server 0.0.11 requires of a managed table beside the catalogManaged feature (and
    # the in-commit timestamps Delta turns on by itself for it): V2 checkpoints with both kinds of
    # stats. :func:`create` does not use it: it reads the server's own answer
    # (:meth:`helpers.catalog.rest.StagedTable.table_properties`); tests compare the two
    "delta.checkpointPolicy": "v2",
    "delta.checkpoint.writeStatsAsStruct": "true",
    "delta.checkpoint.writeStatsAsJson": "true",
}
TABLE_ID_PROPERTY = "io.unitycatalog.tableId"


def session_conf(uri: str, *, creates_tables: bool = False) -> dict[str, str]:
    """The settings a Delta Spark session needs, on top of the workbook's, to commit catalog-managed
    tables through the Unity Catalog server at ``uri``; ``creates_tables``: also Spark's testing
    flag, without which Delta refuses to create one (:data:`TESTING_FLAG`)."""
    return {
        "spark.sql.extensions": f"io.delta.sql.DeltaSparkSessionExtension,{EXTENSION}",
        URI_KEY: uri,
        "spark.jars": str(sessions.log_store_jar()),
        "spark.driver.extraJavaOptions": sessions.driver_java_options(
            *([TESTING_FLAG] if creates_tables else [])
        ),
    }


def spark_session(
    uri: str,
    *stores: str,
    creates_tables: bool = False,
    app_name: str = "catalog-managed",
    extra_conf: dict[str, str] | None = None,
    store_keys: bool = True,
):
    """A Delta Spark session whose catalog-managed tables commit through the server at ``uri``, with
    the settings and jars of ``stores`` (default: local disk only; ``"azure"``, ``"s3"`` for tables
    on object storage, :mod:`helpers.catalog.object_storage`); ``store_keys=False``: without the
    workbook's own keys (:func:`workbook_keys`)."""
    conf = {**session_conf(uri, creates_tables=creates_tables), **(extra_conf or {})}
    if not store_keys:
        conf.update(dict.fromkeys(workbook_keys(*stores)))
    spark = sessions.spark_session(*(stores or ("local",)), app_name=app_name, extra_conf=conf)
    spark.conf.set(
        URI_KEY, uri
    )  # a session already running (a notebook run again) takes the new server
    return spark


def workbook_keys(*stores: str) -> list[str]:
    """The settings by which a session for ``stores`` gets the workbook's own store keys
    (:func:`helpers.spark.sessions.spark_conf`'s secrets, :func:`helpers.ground.config.is_secret`):
    what a driver leaves out when its access comes from the credential the catalog vends."""
    return [key for key in sessions.spark_conf(*stores) if config.is_secret(key)]


def local_path(location: str) -> Path:
    """The folder of a ``file://`` location."""
    parsed = urlparse(location)
    if parsed.scheme != "file":
        raise ValueError(f"{location!r} is not on local disk (file://)")
    return Path(unquote(parsed.path))


PUBLISH_WAIT_S = 300.0
"""How long :func:`wait_published` waits for Delta's background thread to publish a commit: a
bound against a hang, not a measurement (on an idle machine it takes milliseconds)."""


def wait_published(catalog: UnityCatalog, name: str) -> int:
    """Wait until every version the catalog has ratified for ``default.<name>`` is published to
    ``_delta_log/<v>.json``, and return the latest.

    Delta Spark 4.4's ``UCCommitCoordinatorClient`` publishes ("backfills") on a thread of its own
    after the catalog's yes, so an ``INSERT`` returns before its copy exists, and a driver that
    stops at once may never write it (the thread is a daemon). Publishing is in version order,
    so the latest version's file means all are there."""
    view = catalog.table(CATALOG, SCHEMA, name)
    last = local_path(view.location) / "_delta_log" / f"{view.latest_version:020d}.json"
    deadline = time.monotonic() + PUBLISH_WAIT_S
    while not last.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"version {view.latest_version} of {name} was ratified by the catalog but not "
                f"published to {last.name} within {PUBLISH_WAIT_S:.0f} s: is the driver that "
                "committed it still running?"
            )
        time.sleep(0.05)
    return view.latest_version


def version_zero(location: str) -> list[dict]:
    """The actions of ``_delta_log/00000000000000000000.json`` at ``location``."""
    body = (local_path(location) / "_delta_log" / f"{0:020d}.json").read_text()
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def create(spark, catalog: UnityCatalog, name: str, columns: str) -> StagedTable:
    """A catalog-managed table ``default.<name>`` with ``columns`` (SQL, e.g. ``"id BIGINT, batch INT"``):
    reserved in the catalog, version 0 written by Delta with the features and properties the
    server's answer requires (:meth:`~helpers.catalog.rest.StagedTable.table_properties`), then
    registered in the catalog."""
    catalog.create_schema(CATALOG, SCHEMA)
    staged = catalog.stage(CATALOG, SCHEMA, name)
    properties = {TABLE_ID_PROPERTY: staged.table_id, **staged.table_properties()}
    if properties.get("delta.feature.catalogManaged") != "supported":
        raise ValueError(
            f"the catalog's answer for {name} does not require the catalogManaged feature: "
            f"{staged.required_protocol}"
        )
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    spark.sql(
        f"CREATE TABLE {SCHEMA}.{name} ({columns}) USING delta LOCATION '{staged.location}' TBLPROPERTIES ({listed})"
    )
    catalog.register(CATALOG, SCHEMA, staged, version_zero(staged.location))
    return staged


def forget(spark, *names: str) -> None:
    """Drop these names from this driver's session catalog (their files stay): a notebook run again
    in the same kernel names new tables of a new server."""
    for name in names:
        spark._jvm.workbook.catalog.UnityCatalogCommits.forgetTable(
            spark._jsparkSession, SCHEMA, name
        )


def log_listing(location: str) -> list[str]:
    """The files under the table's ``_delta_log/``, relative to it, without Hadoop's ``.crc`` checksums
    of each file (``.<name>.crc``)."""
    log = local_path(location) / "_delta_log"
    return sorted(
        str(p.relative_to(log))
        for p in log.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    )


def open_table(spark, name: str, columns: str, location: str) -> None:
    """Make the catalog's table ``default.<name>`` (``columns`` as SQL) known by name to this
    driver's session catalog (``UnityCatalogCommits.nameTable`` says how, and why not by
    ``CREATE TABLE ... LOCATION``)."""
    spark._jvm.workbook.catalog.UnityCatalogCommits.nameTable(
        spark._jsparkSession, SCHEMA, name, columns, location
    )


def published_versions(location: str) -> list[int]:
    """The versions with a published commit, ``_delta_log/<v>.json``, at a ``file://`` location."""
    from helpers.delta import delta_log

    log = local_path(location) / "_delta_log"
    return sorted(
        v
        for p in log.glob("*.json")
        if (v := delta_log.commit_version(delta_log.LOG_DIR + p.name)) is not None
    )


def undeclared(staged: StagedTable, version_zero_actions: list[dict]) -> dict[str, str]:
    """What the server required (:meth:`~helpers.catalog.rest.StagedTable.table_properties`) that
    version 0 (its actions) does not declare: a feature missing from its protocol's lists, or a
    property missing from its configuration or with another value. Empty when all is there."""
    actions = {next(iter(a)): next(iter(a.values())) for a in version_zero_actions}
    protocol, configuration = actions["protocol"], actions["metaData"].get("configuration", {})
    features = {*protocol.get("readerFeatures", []), *protocol.get("writerFeatures", [])}
    return {
        key: value
        for key, value in staged.table_properties().items()
        if not (key.startswith("delta.feature.") and key.removeprefix("delta.feature.") in features)
        and configuration.get(key) != value
    }
