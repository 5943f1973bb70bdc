"""The credentials of catalog-managed tables on object storage: what an operator registers with the
Unity Catalog server, what the catalog vends for each table, and a Delta Spark driver that reaches
the store with that vended credential only (:mod:`helpers.catalog.object_storage` races such drivers).

**The driver's credential, as Unity Catalog and Delta pass it.** A driver starts with the stores'
endpoints but none of the workbook's keys (:func:`helpers.spark.sessions.without_store_keys`),
then asks the catalog for the table's credential itself (:func:`hadoop_options`), through Unity
Catalog's own Hadoop library, ``unitycatalog-hadoop`` 0.6.0 (a dependency of Delta Spark 4.4.0,
on every driver's class path), called as its Spark connector calls it:

* ``UCSingleCatalog.loadV1Table`` (unitycatalog 0.6.0,
  ``connectors/spark/src/main/scala/io/unitycatalog/spark/UCSingleCatalog.scala`` lines 794-808):
  ``UCCredentialHadoopConfs.builder(uri, scheme).tokenProvider(..).enableCredentialRenewal(..)
  .enableCredentialScopedFs(..).hadoopConf(..).buildForTable(tableId, READ_WRITE)``, which asks the
  server's ``temporary-table-credentials``; renewal and the credential-scoped file system are on,
  the connector's defaults (``connectors/spark/.../utils/OptionsUtil.java`` lines 11 and 14);
* what that returns (``connectors/hadoop/.../internal/props/``): for ABFS, ``fs.azure.account.auth.type
  = SAS``, a SAS token provider (``AbfsVendedTokenProvider``) seeded with the vended SAS and its
  expiry (``AbfsCredPropsBuilder.java`` lines 17-20, 43, 53-58); for S3A, the credential provider
  ``AwsVendedTokenProvider`` seeded with the STS session's key, secret, token and expiry
  (``S3CredPropsBuilder.java`` lines 19-21, 36, 46-53). Each provider asks the catalog again 30 s
  before the credential expires (``UCHadoopConfConstants.java`` lines 71-72);
* the connector puts these settings in the table's storage properties (``UCSingleCatalog.scala``
  line 832), and Delta 4.4.0 opens a table's log with the ``fs.*`` storage properties of its
  catalog entry as Hadoop options (``spark/src/main/scala/org/apache/spark/sql/delta/catalog/
  DeltaTableV2.scala`` lines 111-131, ``DeltaLog.scala`` lines 1103-1124). :func:`open_table` does
  the same to the driver's session catalog, which stands in for the connector's (see
  :mod:`helpers.catalog.tables`).

One setting differs, on Azurite only: ``fs.azure.account.hns.enabled`` is ``false`` (the library
sets ``true``, for ADLS Gen2), since Azurite has no hierarchical namespace (:data:`AZURITE_OPTIONS`).

**What the server vends** (olai-uc-server 0.0.11 and its ``olai-credential-vending`` 0.0.2):

* Azure: for Azurite's well-known account the server signs a SAS for the **whole container**
  (``sr=c``), not the table's folder: ``minter_for`` gives that account ``with_emulator()
  .with_container_grants()`` (``src/mint.rs`` lines 81 and 99-103, ``src/azure.rs`` lines 375-385:
  "Azurite has no directory SAS"), while the answer's ``prefix`` still names the table's folder;
* S3: ``STS:AssumeRole`` with a session policy for the table's prefix (``src/aws.rs`` lines
  182-200); moto's STS does not apply it, and moto's S3 checks no signature;
* lifetime: the server asks for none (olai-uc-server's ``src/services/vending.rs`` line 61:
  ``MintRequest::new`` without ``ttl``), so each minter's default applies, :data:`LIFETIME_S`
  (``src/aws.rs`` lines 24 and 190, clamped to 900 s..12 h; ``src/azure.rs`` line 31). Nothing
  sets another: the server's configuration has no such field (``src/config.rs`` lines 30-108), the
  ``temporary-table-credentials`` call takes a table id and an operation, the Delta API's
  credentials call an operation only (olai-uc-delta-api 0.0.6 ``src/router.rs`` lines 192-194,
  346-348). So what a writer sees when its credential expires between staging and commit is not
  measured here (the drivers' provider would ask for a new one 30 s before). A cached credential
  is handed out again for the first half of its life (``src/cache.rs`` line 39): the drivers get
  the one vended at staging.

The driver that creates a table (Spark's testing flag, :mod:`helpers.catalog.tables`) keeps the
workbook's keys: it is the notebook's own session, which also writes tables on local disk. The
staging credential could reach it only as the ``CREATE TABLE``'s ``OPTIONS``, and Delta 4.4.0
writes those, the SAS's signature included, into version 0's ``commitInfo`` (tried on Azurite).

Command line: ``<python> -m helpers.catalog.vended SPEC_JSON_FILE`` is one racing driver
(:func:`run_writer`), started by :func:`helpers.catalog.object_storage.run_race`.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from urllib.parse import parse_qsl

from helpers.catalog import tables
from helpers.catalog.rest import API, DELTA, StagedTable, UnityCatalog
from helpers.ground import config
from helpers.writers.protocol import spec_process_main

CREDENTIAL = "workbook-store"
PROVIDERS = {"azure": "AbfsVendedTokenProvider", "s3": "AwsVendedTokenProvider"}
"""Unity Catalog's own providers, which hand the vended credential to Hadoop's ABFS and S3A."""
ROLE_ARN = "arn:aws:iam::123456789012:role/workbook-catalog"
"""The role the server assumes for S3: the emulator's STS grants any role of its fake account."""
LIFETIME_S = 3600
"""How long the server's credentials live: the minters' default, which it never overrides."""
AZURITE_OPTIONS = {"fs.azure.account.hns.enabled": "false"}
"""What differs from Unity Catalog's ABFS options on Azurite, which has no hierarchical namespace."""
SAS_FIELDS = ("sv", "sr", "sp", "st", "se", "spr")
"""The fields of a SAS that say what it grants and until when (its signature ``sig`` is the secret)."""
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AZURE_STORAGE_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_SAS_TOKEN",
    "AZURE_CLIENT_SECRET",
)
"""Environment variables through which a process could reach a store without the catalog."""


# -- what the operator registers, what the catalog vends ----------------------------------------------


def credential_body(store: str) -> dict:
    """The storage credential an operator registers for ``store`` (the emulators' well-known keys)."""
    if store == "azure":
        return {
            "name": CREDENTIAL,
            "purpose": "STORAGE",
            "azure_storage_key": {
                "account_name": config.azure_account_name(),
                "account_key": config.AZURITE_ACCOUNT_KEY,
            },
        }
    return {
        "name": CREDENTIAL,
        "purpose": "STORAGE",
        "aws_iam_role": {
            "role_arn": ROLE_ARN,
            "region": config.names().aws_region,
            "access_key_id": config.EMULATOR_AWS_ACCESS_KEY_ID,
            "secret_access_key": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
        },
    }


def register_store(catalog: UnityCatalog, store: str, base: str) -> None:
    """The store's credential, and an external location at the managed root that it governs: what
    the server mints each table's credential from."""
    catalog.create_schema(tables.CATALOG, tables.SCHEMA)
    catalog.call("POST", f"{API}/credentials", credential_body(store))
    catalog.call(
        "POST",
        f"{API}/external-locations",
        {"name": CREDENTIAL, "url": base, "credential_name": CREDENTIAL},
    )


def stage(catalog: UnityCatalog, name: str) -> tuple[StagedTable, list[dict]]:
    """Step 1 of a table's creation, and the storage credentials the catalog vended with it (the
    answer's ``storage-credentials``: prefix, operation, config, secrets included: show them with
    :func:`masked`)."""
    answer = catalog.call(
        "POST",
        f"{DELTA}/catalogs/{tables.CATALOG}/schemas/{tables.SCHEMA}/staging-tables",
        {"name": name},
    )
    staged = StagedTable(
        name, answer["table-id"], answer["location"], answer.get("required-properties") or {}
    )
    return staged, answer.get("storage-credentials") or []


def table_credential(catalog: UnityCatalog, name: str) -> dict:
    """The credential the catalog vends for ``default.<name>`` now, read and write (its Delta API's
    credentials call), secrets included."""
    path = f"{DELTA}/catalogs/{tables.CATALOG}/schemas/{tables.SCHEMA}/tables/{name}/credentials"
    return catalog.call("GET", f"{path}?operation=READ_WRITE")["storage-credentials"][0]


def masked(vended: list[dict]) -> list[dict]:
    """Vended credentials as a page may show them: every value of their config masked but the
    access key's first four letters (``ASIA`` marks a key STS minted)."""
    return [
        {
            **credential,
            "config": {
                key: value[:4] + "..." if key == "s3.access-key-id" else config.MASKED
                for key, value in (credential.get("config") or {}).items()
            },
        }
        for credential in vended
    ]


def sas_fields(token: str) -> dict[str, str]:
    """A SAS's :data:`SAS_FIELDS`: what it grants (``sr=c`` a container, ``sp`` the permissions)
    and until when (``se``)."""
    return {k: v for k, v in parse_qsl(token) if k in SAS_FIELDS}


# -- a driver that holds the vended credential only ------------------------------------------------


def hadoop_options(spark, uri: str, table_id: str, location: str) -> dict[str, str]:
    """The Hadoop options that give a driver the catalog's credential for the table ``table_id``
    at ``location``: asked of the catalog at ``uri`` by Unity Catalog's own library, as its Spark
    connector asks (the module's docstring), then :data:`AZURITE_OPTIONS` on Azurite."""
    jvm = spark._jvm
    token = jvm.java.util.HashMap()
    token.put("type", "static")
    token.put("token", "anonymous")  # the server runs without authentication
    confs = jvm.io.unitycatalog.hadoop.UCCredentialHadoopConfs
    operation = getattr(jvm.io.unitycatalog.hadoop, "UCCredentialHadoopConfs$TableOperation")
    options = dict(
        confs.builder(uri, location.split(":", 1)[0])
        .tokenProvider(jvm.io.unitycatalog.client.auth.TokenProvider.create(token))
        .enableCredentialRenewal(True)
        .enableCredentialScopedFs(True)
        .hadoopConf(spark._jsparkSession.sessionState().newHadoopConf())
        .buildForTable(table_id, operation.READ_WRITE)
    )
    if location.startswith("abfs") and config.profile() == "local":
        options.update(AZURITE_OPTIONS)
    return options


def _scala_map(spark, options: dict[str, str]):
    java = spark._jvm.java.util.HashMap()
    for key, value in options.items():
        java.put(key, value)
    return spark._jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(java)


def _entry(spark, name: str):
    jvm = spark._jvm
    identifier = jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
        name, jvm.scala.Option.apply(tables.SCHEMA)
    )
    return spark._jsparkSession.sessionState().catalog().getTableMetadata(identifier)


def open_table(spark, name: str, location: str, options: dict[str, str]) -> None:
    """Name the catalog's table ``default.<name>`` in this driver's session catalog
    (:func:`helpers.catalog.tables.open_table`) with ``options`` (:func:`hadoop_options`) as its
    storage properties (beside any it has), where Delta reads a table's Hadoop options from. Naming
    it reads the location once, so ``options`` are the session's settings for that step only."""
    for key, value in options.items():
        spark.conf.set(key, value)
    try:
        tables.open_table(spark, name, tables.COLUMNS, location)
    finally:
        for key in options:
            spark.conf.unset(key)
    entry = _entry(spark, name)
    count = next(
        m.getParameterCount()
        for m in entry.getClass().getMethods()
        if m.getName() == "withNewStorage"
    )
    fields = [getattr(entry, f"withNewStorage$default${i}")() for i in range(1, count + 1)]
    if not fields[5].equals(entry.storage().properties()):
        raise RuntimeError(
            "withNewStorage's sixth field is not the storage properties in this Spark"
        )
    held = dict(spark._jvm.scala.jdk.javaapi.CollectionConverters.asJava(fields[5]))
    fields[5] = _scala_map(spark, {**held, **options})
    spark._jsparkSession.sessionState().catalog().alterTable(entry.withNewStorage(*fields))


def exists(spark, options: dict[str, str], uri: str) -> bool:
    """Whether the object at ``uri`` exists, asked through Hadoop with ``options`` only."""
    conf = spark._jsparkSession.sessionState().newHadoopConfWithOptions(_scala_map(spark, options))
    path = spark._jvm.org.apache.hadoop.fs.Path(uri)
    system = path.getFileSystem(conf)
    try:
        return system.exists(path)
    finally:
        system.close()


def described(options: dict[str, str]) -> dict:
    """What a driver's options (:func:`hadoop_options`) say of its credential, masked: the provider
    that hands it to Hadoop, the SAS's :data:`SAS_FIELDS` or the STS key's first four letters, and
    when it expires."""
    sas = options.get("fs.azure.init.sas.token")
    expires = options.get("fs.azure.init.sas.token.expired.time") or options.get(
        "fs.s3a.init.credential.expired.time"
    )
    provider = options.get("fs.azure.sas.token.provider.type") or options.get(
        "fs.s3a.aws.credentials.provider", ""
    )
    return {
        "provider": provider.rsplit(".", 1)[-1],
        "sas": sas_fields(sas) if sas else None,
        "key": options["fs.s3a.init.access.key"][:4] + "..." if not sas else None,
        "expires": datetime.fromtimestamp(int(expires) / 1000, UTC).isoformat()
        if expires
        else None,
    }


def workbook_secrets() -> tuple[str, ...]:
    """The workbook's own store secrets: the emulators' well-known ones, and any in this process's
    environment (the cloud profile's)."""
    found = (os.environ.get(v) for v in ("AWS_SECRET_ACCESS_KEY", "AZURE_STORAGE_ACCOUNT_KEY"))
    return (
        config.EMULATOR_AWS_SECRET_ACCESS_KEY,
        config.AZURITE_ACCOUNT_KEY,
        *filter(None, found),
    )


def workbook_keys_in(spark, name: str | None = None) -> list[str]:
    """Where this driver holds a workbook secret (:func:`workbook_secrets`) or a variable of
    :data:`CREDENTIAL_VARIABLES`: its Spark settings, its session's Hadoop settings, its JVM's
    properties and environment, its process's environment, and (``name``) the storage properties of
    the table ``default.<name>``. Empty: it can reach a store only through what the catalog vends."""
    system = spark._jvm.java.lang.System
    hadoop = spark._jvm.java.io.StringWriter()
    spark._jsparkSession.sessionState().newHadoopConf().writeXml(hadoop)
    places = {
        "Spark settings": repr(spark.sparkContext.getConf().getAll()),
        "Hadoop settings": hadoop.toString(),
        "JVM properties": system.getProperties().toString(),
        "JVM environment": system.getenv().toString(),
        "process environment": repr(dict(os.environ)),
    }
    if name:
        places["table properties"] = _entry(spark, name).storage().properties().toString()
    secrets = workbook_secrets()
    found = [place for place, text in places.items() if any(s in text for s in secrets)]
    return found + [f"${v}" for v in CREDENTIAL_VARIABLES if os.environ.get(v) or system.getenv(v)]


def shown(credential: dict) -> str:
    """A driver's credential (:func:`described`) in a few words: the provider
    that hands it to Hadoop, and the SAS's scope and permissions or the STS key's prefix."""
    sas = credential.get("sas")
    what = (
        f"SAS sr={sas.get('sr')} sp={sas.get('sp')}" if sas else f"{credential.get('key')} session"
    )
    return f"{credential.get('provider')}: {what}"


PUBLISH_WAIT_S = tables.PUBLISH_WAIT_S


def wait_published(spark, catalog: UnityCatalog, name: str, options: dict[str, str]) -> int:
    """:func:`helpers.catalog.tables.wait_published` on the store, asked by a driver through Hadoop
    with its vended credential (``options``): wait until the latest version the catalog ratified is
    published as ``_delta_log/<v>.json``, and return it."""
    view = catalog.table(tables.CATALOG, tables.SCHEMA, name)
    last = f"_delta_log/{view.latest_version:020d}.json"
    deadline = time.monotonic() + PUBLISH_WAIT_S
    while not exists(spark, options, f"{view.location}/{last}"):
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"version {view.latest_version} of {name} was ratified by the catalog but not "
                f"published to {last} within {PUBLISH_WAIT_S:.0f} s"
            )
        time.sleep(0.2)
    return view.latest_version


def run_writer(spec: dict) -> dict:
    """One racing driver on the store: :mod:`helpers.catalog.writer`'s appends, from a session
    without Spark's testing flag and without the workbook's keys, that asks the catalog for the
    table's credential and holds it as the table's storage properties
    (:func:`hadoop_options`, :func:`open_table`).
    Its result also records that credential, masked (``credential``), and every place it holds a
    workbook key (``workbook_keys``: none)."""
    from helpers.catalog.writer import append_batches, new_result, refuse_testing, testing_flag
    from helpers.writers.processes import run_at_barrier

    result = new_result(spec)
    catalog = UnityCatalog(spec["uri"])
    options: dict[str, str] = {}

    def prepare():
        spark = tables.spark_session(
            spec["uri"],
            spec["store"],
            app_name=f"catalog-{spec['store']}-{spec['process']}",
            extra_conf={"spark.master": "local[1]", "spark.driver.memory": "1g"},
            store_keys=False,
        )
        result["testing_flag"] = testing_flag(spark)
        refuse_testing(spark)
        table_id = catalog.table(tables.CATALOG, tables.SCHEMA, spec["table"]).table_id
        options.update(hadoop_options(spark, spec["uri"], table_id, spec["location"]))
        open_table(spark, spec["table"], spec["location"], options)
        result["credential"] = described(options)
        result["workbook_keys"] = workbook_keys_in(spark, spec["table"])
        spark.table(f"{tables.SCHEMA}.{spec['table']}").limit(1).collect()
        return spark

    def work(spark) -> None:
        append_batches(spark, spec, result)
        wait_published(spark, catalog, spec["table"], options)

    return run_at_barrier(spec, result, prepare, work)


if __name__ == "__main__":
    spec_process_main("helpers.catalog.vended", run_writer)
