"""Session builders: SparkSessions with Delta Lake on each store.

(Longer than 400 lines because each store's Spark settings carry the reason for each value, and
the DynamoDB log store's jar is compiled here, where its settings are.)

Spark::

    spark = spark_session("s3")            # Delta + s3a:// pointed at the S3 emulator
    spark = spark_session("local")         # Delta on the local file system only
    spark = spark_session("s3", "dynamodb")  # s3a:// commits coordinated through the DynamoDB lock table

Jars come from Maven Central through ``spark.jars.packages`` into the project's Ivy cache
(``.cache/ivy``), so only the first start downloads them. ``WORKBOOK_SPARK_MASTER`` runs the same
notebook on a real cluster (default ``local[*]``): ``make cluster`` starts one on this machine
(:mod:`helpers.spark.cluster`), whose executors reach the driver at 127.0.0.1 and run its Python.

Table URIs and delta-rs ``storage_options`` are :mod:`helpers.stores.tables`. Every builder reads
endpoints and names from :mod:`helpers.ground.config`; with ``WORKBOOK_PROFILE=cloud`` they leave out the
emulator endpoints and keys, and credentials come from the default chains.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from helpers.ground import config
from helpers.spark import java_build, spark_start
from helpers.spark.releases import (  # noqa: F401  (the builders' public names, kept here)
    SPARK_JAR_EXCLUDES,
    SPARK_STORES,
    SessionError,
    arrow_frame,
    check_era,
    check_stores,
    default_credentials_provider,
    delta_spark_package,
    hadoop_version,
    pyspark_jars_dir,
    running,
    spark_packages,
    spark_version,
)

IVY_SETTINGS = Path(__file__).with_name("ivysettings.xml")
JAVA_DIR = Path(__file__).with_name("java")
JAVA_SOURCES = sorted(JAVA_DIR.rglob("*.java"))
CATALOG_SOURCES = "catalog"
"""The folder of ``JAVA_DIR/workbook`` that builds on Delta 4's catalog-owned commits (notebook 15):
left out of the jar of a Delta release without them (3.3.2)."""
DELTA_DYNAMODB_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"
WORKBOOK_DYNAMODB_LOG_STORE = "workbook.storage.EndpointS3DynamoDBLogStore"
DYNAMODB_LOG_STORE_PREFIX = "spark.io.delta.storage.S3DynamoDBLogStore"
"""Delta's keys for its DynamoDB log store (``ddb.tableName``, ``ddb.region``); ours reads the same."""
DYNAMODB_ENDPOINT_KEY = "spark.workbook.storage.ddb.endpoint"


# ---------------------------------------------------------------------------------------------
# Spark
# ---------------------------------------------------------------------------------------------


def spark_conf(
    *stores: str, app_name: str = "delta-lake-workbook", spark_era: str | None = None
) -> dict[str, str]:
    """Every Spark setting a session for these stores gets (useful to print, or for spark-submit).
    ``spark_era`` (:data:`helpers.ground.eras.SPARK_ERAS`) names the Delta Spark release; None, or
    a name other than this process's, raises SessionError (:func:`helpers.spark.releases.check_era`)."""
    check_era(spark_era)
    check_stores(stores)
    ivy_dir = config.CACHE_DIR / "ivy"
    conf = {
        "spark.app.name": app_name,
        "spark.master": cluster_master() or "local[*]",
        "spark.jars.packages": ",".join(spark_packages(*stores)),
        "spark.jars.excludes": ",".join(SPARK_JAR_EXCLUDES),
        "spark.jars.ivy": str(ivy_dir),
        "spark.jars.ivySettings": str(IVY_SETTINGS),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        # small and quiet, for a laptop or a 2-core CI machine
        "spark.sql.shuffle.partitions": "4",
        "spark.databricks.delta.snapshotPartitions": "2",
        # VACUUM lists the table's folder as a Spark job of this many tasks (default 10,000): with
        # the default, a VACUUM of a 30-file table took 44-69 s on 2 cores, with 4 about 3 s
        "spark.sql.sources.parallelPartitionDiscovery.parallelism": "4",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.driver.memory": os.environ.get("WORKBOOK_SPARK_DRIVER_MEMORY", "2g"),
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.warehouse.dir": str(config.BUILD_DIR / "spark-warehouse"),
        "spark.driver.extraJavaOptions": driver_java_options(),
    }
    if driver_on_loopback(conf["spark.master"]):
        conf["spark.driver.bindAddress"] = config.LOCALHOST
        conf["spark.driver.host"] = config.LOCALHOST
    if "s3" in stores:
        conf.update(_s3a_conf())
    if "azure" in stores:
        conf.update(_abfs_conf())
    if "dynamodb" in stores:
        conf.update(dynamodb_log_store_conf())
    return conf


def cluster_master() -> str | None:
    """``WORKBOOK_SPARK_MASTER`` (a cluster's master URL), or None: each session runs in its own JVM."""
    return os.environ.get("WORKBOOK_SPARK_MASTER") or None


def on_this_machine(master: str) -> bool:
    """A standalone master on loopback (``make cluster``): its executors reach the driver at 127.0.0.1."""
    from urllib.parse import urlparse

    parsed = urlparse(master)
    return parsed.scheme == "spark" and parsed.hostname in (config.LOCALHOST, "localhost")


def driver_on_loopback(master: str) -> bool:
    """Local mode, or a cluster of this machine: the driver binds to and is reached at 127.0.0.1."""
    return master.startswith("local") or on_this_machine(master)


def driver_java_options(*extra: str, archive: bool = True) -> str:
    """The driver JVM's options: Derby (Spark's metastore) kept in ``build/``, the compiler and
    collector of :data:`helpers.spark.spark_start.DRIVER_JVM_OPTIONS`, the class-data archive when
    there is one (:mod:`helpers.spark.spark_start`), the proxy of :func:`proxy_java_options`, plus ``extra``."""
    shared = spark_start.class_archive_options() if archive else []
    return " ".join(
        [
            f"-Dderby.system.home={config.BUILD_DIR / 'derby'}",
            *spark_start.DRIVER_JVM_OPTIONS,
            *shared,
            *proxy_java_options(),
            *extra,
        ]
    )


JAVA_DIRECT_HOSTS = (
    "localhost",
    "127.*",
    "[::1]",
)  # Java's own default: loopback never goes through a proxy


def proxy_java_options(environ: dict[str, str] | None = None) -> list[str]:
    """Java's proxy properties from ``HTTPS_PROXY`` / ``HTTP_PROXY`` and ``NO_PROXY``, the variables
    uv, npm, boto3 and the Azure SDK already follow; Java ignores them, so without these Ivy could
    not fetch the jars behind a corporate proxy. Loopback (the emulators) always goes direct."""
    from urllib.parse import urlparse

    environ = os.environ if environ is None else environ
    options = []
    for scheme in ("https", "http"):
        value = environ.get(f"{scheme.upper()}_PROXY") or environ.get(f"{scheme}_proxy")
        if not value:
            continue
        parsed = urlparse(value if "://" in value else f"http://{value}")
        try:
            port = parsed.port or (443 if parsed.scheme == "https" else 80)
        except ValueError:
            port = None
        if not parsed.hostname or port is None:
            raise SessionError(
                f"{scheme.upper()}_PROXY={value!r} is not a proxy address: set it like http://proxy.example.com:3128."
            )
        options += [f"-D{scheme}.proxyHost={parsed.hostname}", f"-D{scheme}.proxyPort={port}"]
    if options:
        no_proxy = environ.get("NO_PROXY") or environ.get("no_proxy") or ""
        extra = [
            f"*{h}" if h.startswith(".") else h
            for h in (h.strip() for h in no_proxy.split(","))
            if h
        ]
        options.append(
            f"-Dhttp.nonProxyHosts={'|'.join(dict.fromkeys([*JAVA_DIRECT_HOSTS, *extra]))}"
        )
    return options


def _s3a_conf() -> dict[str, str]:
    names = config.names()
    conf = {
        "spark.hadoop.fs.s3a.endpoint.region": names.aws_region,
        "spark.hadoop.fs.s3a.path.style.access": "true",
    }
    if config.profile() == "local":
        conf.update(
            {
                "spark.hadoop.fs.s3a.endpoint": config.aws_endpoint("s3"),
                "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
                "spark.hadoop.fs.s3a.access.key": config.EMULATOR_AWS_ACCESS_KEY_ID,
                "spark.hadoop.fs.s3a.secret.key": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
                "spark.hadoop.fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
            }
        )
    else:
        conf["spark.hadoop.fs.s3a.path.style.access"] = "false"
        if os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get(
            "AWS_ENDPOINT_URL"
        ):  # as boto3 and delta-rs read them
            conf["spark.hadoop.fs.s3a.endpoint"] = config.aws_endpoint("s3")
        conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = default_credentials_provider()
    return conf


def dynamodb_log_store_conf() -> dict[str, str]:
    """Spark settings that make ``s3a://`` commits go through the DynamoDB lock table.

    Delta's multi-cluster class, ``io.delta.storage.S3DynamoDBLogStore``, has no DynamoDB endpoint
    setting, so it cannot reach the emulator (and its module cannot be fetched here). Locally the
    workbook uses its own class, ``workbook.storage.EndpointS3DynamoDBLogStore`` (``helpers/spark/java/``),
    which speaks the same protocol to the same table with the same ``ddb.*`` keys, plus an endpoint.
    With ``WORKBOOK_PROFILE=cloud`` it is Delta's own class, from Maven Central.
    """
    names = config.names()
    conf = {
        f"{DYNAMODB_LOG_STORE_PREFIX}.ddb.tableName": names.dynamodb_lock_table,
        f"{DYNAMODB_LOG_STORE_PREFIX}.ddb.region": names.aws_region,
    }
    if config.profile() == "cloud":
        conf["spark.delta.logStore.s3a.impl"] = DELTA_DYNAMODB_LOG_STORE
        return conf
    conf.update(
        {
            "spark.delta.logStore.s3a.impl": WORKBOOK_DYNAMODB_LOG_STORE,
            DYNAMODB_ENDPOINT_KEY: config.aws_endpoint("dynamodb"),
            "spark.jars": str(log_store_jar()),
        }
    )
    return conf


def log_store_jar() -> Path:
    """The jar of ``workbook.storage.EndpointS3DynamoDBLogStore`` (and of the conflict matrix's held
    log stores, ``workbook.matrix``, and notebook 15's catalog extension, ``workbook.catalog``), compiled from ``helpers/spark/java/``
    with the JDK's javac the first time it is needed (and again when the source changes). It
    compiles against the Delta and AWS SDK jars in the Ivy cache, fetching them first if needed."""
    delta = running().delta_version
    own = delta == config.DELTA_JARS_VERSION
    sources = [
        source
        for source in JAVA_SOURCES
        if own or CATALOG_SOURCES not in source.relative_to(JAVA_DIR).parts
    ]
    name = "workbook-log-store.jar" if own else f"workbook-log-store-delta-{delta}.jar"
    return java_build.compile_jar(
        config.BUILD_DIR / "jars" / name,
        sources,
        _log_store_classpath,
        JAVA_DIR,
        SessionError,
    )


def _log_store_classpath() -> list[Path]:
    """pyspark's jars, Delta's storage and Spark jars (the catalog extension builds on the latter)
    and the AWS SDK v2 modules fetched for ``s3`` (fetched with the "s3" jars if the Ivy cache lacks them)."""
    jars_dir = config.CACHE_DIR / "ivy" / "jars"
    patterns = [
        f"io.delta_delta-storage-{running().delta_version}.jar",
        "software.amazon.awssdk_dynamodb-*.jar",
        f"io.delta_delta-spark_*-{running().delta_version}.jar",
    ]

    def found() -> list[Path]:
        return [match for pattern in patterns for match in sorted(jars_dir.glob(pattern))[-1:]]

    if len(found()) < len(patterns):
        fetch_jars("s3")
    if len(found()) < len(patterns):
        raise SessionError(
            f"{' and '.join(patterns)} not in {config.shown(jars_dir)} after fetching the Spark jars; run `make install`."
        )
    return [
        pyspark_jars_dir() / "*",
        *found(),
        *sorted(jars_dir.glob("software.amazon.awssdk_*.jar")),
    ]


def _abfs_conf() -> dict[str, str]:
    """Hadoop ABFS settings. Hadoop 3.5 removed wasb://, and Azurite has no ADLS Gen2 (dfs) endpoint,
    so locally ABFS runs in its Blob-endpoint mode against Azurite; each setting below is needed
    (docs/troubleshooting.md, "Spark on Azurite", says what fails without it)."""
    account = config.azure_account_name()
    host = f"{account}.dfs.core.windows.net"
    if config.profile() == "cloud":
        key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY")
        return {f"spark.hadoop.fs.azure.account.key.{host}": key} if key else {}
    return {
        # send requests to http://127.0.0.1:<port>/<account>/<container>/... instead of <account>.dfs...
        "spark.hadoop.fs.azure.abfs.endpoint": f"{config.azurite_host()}:{config.azurite_port()}",
        "spark.hadoop.fs.azure.always.use.https": "false",
        # the default Apache client fails on plain http ("SSL socket factory may not be null")
        "spark.hadoop.fs.azure.networking.library": "JDK_HTTP_URL_CONNECTION",
        f"spark.hadoop.fs.azure.account.key.{host}": config.AZURITE_ACCOUNT_KEY,
        "spark.hadoop.fs.azure.account.auth.type": "SharedKey",
        # a flat-namespace (Blob) account: no DFS endpoint to probe
        "spark.hadoop.fs.azure.account.hns.enabled": "false",
        "spark.hadoop.fs.azure.fns.account.service.type": "BLOB",
        "spark.hadoop.fs.azure.metrics.collection.enabled": "false",
    }


def spark_session(
    *stores: str,
    app_name: str = "delta-lake-workbook",
    extra_conf: dict[str, str] | None = None,
    spark_era: str | None = None,
):
    """A SparkSession with Delta Lake for the given stores (``local``, ``s3``, ``azure``; default ``local``).
    ``spark_era`` names the Delta Spark release it must be (:func:`spark_conf`); None: this
    process's.

    A setting that ``extra_conf`` gives as None is left out. Returns the running session if one
    with the same jars exists in this process. Raises SessionError if Java is missing, or if a
    session with other jars is already running (jars are fixed when the JVM starts: restart the
    kernel).
    """
    from pyspark.sql import SparkSession

    stores = stores or ("local",)
    conf = spark_conf(*stores, app_name=app_name, spark_era=spark_era)
    conf = {k: v for k, v in {**conf, **(extra_conf or {})}.items() if v is not None}
    active = SparkSession.getActiveSession()
    if active is not None:
        started_with = active.sparkContext.getConf()
        missing = set()
        # launch_conf may have replaced the packages by their jars; it keeps what was asked for
        asked_for = (
            (
                "spark.jars.packages",
                started_with.get(spark_start.ASKED_PACKAGES, None)
                or started_with.get("spark.jars.packages", ""),
            ),
            ("spark.jars", started_with.get("spark.jars", "")),
        )
        for key, have in asked_for:
            missing |= set(filter(None, conf.get(key, "").split(","))) - set(
                filter(None, have.split(","))
            )
        if conf.get("spark.delta.logStore.s3a.impl", "") != (
            started_with.get("spark.delta.logStore.s3a.impl", None) or ""
        ):
            missing.add(
                f"the log store {conf.get('spark.delta.logStore.s3a.impl') or 'default'} for s3a://"
            )
        if missing:
            raise SessionError(
                f"A SparkSession without {', '.join(sorted(missing))} is already running in this process, and "
                "jars are fixed when the JVM starts. Restart the kernel, then build the session with every store you need."
            )
        return active
    _check_java()
    launch = spark_start.launch_conf(conf)
    builder = SparkSession.builder
    for key, value in launch.items():
        builder = builder.config(key, value)
    if driver_on_loopback(conf["spark.master"]):
        os.environ.setdefault("SPARK_LOCAL_IP", config.LOCALHOST)
    if on_this_machine(
        conf["spark.master"]
    ):  # executors on this machine run Python UDFs with the driver's Python
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    log_file = spark_start.spark_log_file(app_name)
    started = time.monotonic()
    try:
        with spark_start.output_to(log_file):
            session = builder.getOrCreate()
    except Exception as error:  # py4j / JVM start failures arrive as bare exceptions
        raise SessionError(spark_start.explain_start_failure(error, log_file)) from error
    spark_start.remember_resolved_jars(
        launch, conf, session.sparkContext.getConf().get("spark.jars", "")
    )
    session.sparkContext.setLogLevel(os.environ.get("WORKBOOK_SPARK_LOG_LEVEL", "ERROR"))
    session.conf.set("workbook.startSeconds", f"{time.monotonic() - started:.1f}")
    return session


def _check_java() -> None:
    from helpers.ground import tools

    problem = tools.check_java()
    if problem:
        raise SessionError(problem)


def fetch_jars(*stores: str) -> float:
    """Resolve and download the jars for these stores into the Ivy cache; return the seconds it took.

    Starts the JVM once (Spark's own resolver, so exactly what a session will ask for) and stops it.
    """
    from pyspark.sql import SparkSession

    started = time.monotonic()
    session = spark_session(*stores, app_name="fetch-jars")
    session.stop()
    SparkSession._instantiatedSession = None
    return time.monotonic() - started
