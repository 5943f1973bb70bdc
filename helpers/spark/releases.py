"""Which jars a Spark session asks for: Delta Spark, Hadoop's cloud connectors and the AWS SDK,
each derived from the pyspark this process imports, so they cannot drift apart.

The workbook runs two Delta Spark releases (:data:`helpers.ground.eras.SPARK_ERAS`): 4.4.0 on
Spark 4.2 in the kernel, and 3.3.2 on Spark 3.5 (AWS Glue 5, EMR 7) in an environment of its own.
A process runs the release its pyspark belongs to (:func:`running`); a driver of the other release
is a process started in that release's environment (:func:`helpers.ground.eras.start_in_era`).

The two lines differ in what S3 needs: Hadoop 3.5's S3A (Spark 4.2) is built on the AWS SDK v2,
Hadoop 3.3.4's (Spark 3.5) on the SDK v1. Each declares the SDK's "bundle" of every service (686 MB
and 280 MB); both are excluded, and only the modules S3A and the DynamoDB log store use are fetched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from helpers.ground import config, eras

SPARK_STORES = ("local", "s3", "azure", "dynamodb")
"""``dynamodb`` is not a store of its own: it makes ``s3`` commits go through Delta's multi-cluster
log store (the DynamoDB lock table) instead of the default single-driver one."""
AWS_SDK_V1_VERSION = "1.12.780"
"""The AWS SDK v1 DynamoDB client for Delta 4.4.0's own class (real-cloud profile only)."""
HADOOP_3_3_SDK_V1_VERSION = "1.12.262"
"""The AWS SDK v1 that Hadoop 3.3.4's S3A is built and tested with (its ``aws-java-sdk.version``;
Delta 3.3.2's DynamoDB module is built against the same)."""
AWS_SDK_V2_MODULES = ("s3", "s3-transfer-manager", "sts", "dynamodb")
"""The AWS SDK v2 modules in place of its bundle: S3A's clients (``s3``, its transfer manager,
``sts`` for assumed roles) and DynamoDB (the workbook's log store). Each brings the SDK's core
modules and its HTTP clients."""
AWS_SDK_V1_MODULES = ("s3", "sts", "dynamodb")
"""Hadoop 3.3.4's S3A on the SDK v1, its modules in place of the bundle: the S3 client (with its
transfer manager), ``sts`` for assumed roles, and DynamoDB for Delta's own log store in the cloud."""

# Jars the packages declare but that pyspark already bundles (a Hadoop client with its shaded
# Guava, httpclient, commons-codec) or that only the removed wasb:// driver used. Delta's pom alone
# would add a second Hadoop client.
SPARK_JAR_EXCLUDES = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.apache.hadoop.thirdparty:hadoop-shaded-guava",
    "org.apache.httpcomponents:httpclient",
    "org.apache.httpcomponents:httpcore",
    "commons-codec:commons-codec",
    "com.microsoft.azure:azure-storage",
    "com.microsoft.azure:azure-keyvault-core",
    "org.hdrhistogram:HdrHistogram",
    "software.amazon.awssdk:bundle",
    "com.amazonaws:aws-java-sdk-bundle",
    # the AWS SDK modules' Netty 4.1 (pyspark brings its own Netty, which the SDK's client runs on)
    *(
        f"io.netty:netty-{name}"
        for name in (
            "buffer",
            "codec",
            "codec-http",
            "codec-http2",
            "common",
            "handler",
            "resolver",
            "transport",
            "transport-classes-epoll",
            "transport-native-unix-common",
        )
    ),
)


class SessionError(RuntimeError):
    """A session cannot be built as asked; the message says what to do."""


def check_stores(stores: Iterable[str]) -> None:
    unknown = [s for s in stores if s not in SPARK_STORES]
    if unknown:
        raise SessionError(f"Unknown store {unknown[0]!r}; choose from {', '.join(SPARK_STORES)}.")
    if "dynamodb" in stores and "s3" not in stores:
        raise SessionError(
            '"dynamodb" coordinates commits to s3a:// tables: ask for it with "s3", e.g. spark_session("s3", "dynamodb").'
        )


def pyspark_jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def spark_version() -> str:
    import pyspark

    return pyspark.__version__


def running() -> eras.SparkEra:
    """The Spark era of this process: the one whose Spark line its pyspark is."""
    line = ".".join(spark_version().split(".")[:2])
    for spark in eras.SPARK_ERAS.values():
        if spark.spark_line == line:
            return spark
    raise SessionError(
        f"pyspark {spark_version()} is of no Spark era of the workbook "
        f"({', '.join(f'{s.name}: Spark {s.spark_line}' for s in eras.SPARK_ERAS.values())}); "
        "run `make install` (or `make spark-era`) and use that environment's Python."
    )


def check_era(name: str | None) -> eras.SparkEra:
    """The Spark era ``name`` if this process runs it (None: whichever it runs); otherwise a
    SessionError saying which Python runs it."""
    here = running()
    if name is None or name == here.name:
        return here
    try:
        wanted = eras.spark_era(name)
    except eras.EraError as error:
        raise SessionError(str(error)) from None
    raise SessionError(
        f"This process runs {here.name} (pyspark {spark_version()}); a session of {wanted.name} "
        f"runs in its own Python ({config.shown(wanted.python)}): start the driver there, e.g. "
        f"with helpers.ground.eras.start_in_era({wanted.name!r}, ...)."
    )


def hadoop_version() -> str:
    """The Hadoop version bundled with pyspark (hadoop-aws must match it exactly)."""
    jars = sorted(pyspark_jars_dir().glob("hadoop-client-api-*.jar"))
    if not jars:
        raise SessionError(
            f"No hadoop-client-api jar in {config.shown(pyspark_jars_dir())}; reinstall with `make install`."
        )
    return jars[0].name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def s3a_on_sdk_v1() -> bool:
    """Hadoop 3.3's S3A (Spark 3.5) speaks the AWS SDK v1; Hadoop 3.4 and later the SDK v2."""
    major, minor = (int(part) for part in hadoop_version().split(".")[:2])
    return (major, minor) < (3, 4)


def delta_spark_package() -> str:
    """The Maven coordinate of Delta Spark for the installed Spark (``io.delta:delta-spark_4.2_2.13:4.4.0``;
    3.x jars name only the Scala version: ``io.delta:delta-spark_2.12:3.3.2``)."""
    spark = running()
    if int(spark.delta_version.split(".")[0]) >= 4:
        return f"io.delta:delta-spark_{spark.spark_line}_{spark.scala}:{spark.delta_version}"
    return f"io.delta:delta-spark_{spark.scala}:{spark.delta_version}"


def spark_packages(*stores: str) -> list[str]:
    """Maven packages a session for these stores needs."""
    check_stores(stores)
    delta = running().delta_version
    packages = [delta_spark_package()]
    if "s3" in stores:
        # hadoop-aws declares the AWS SDK's bundle: it is excluded (SPARK_JAR_EXCLUDES), and only
        # the modules S3A and the DynamoDB log store use are fetched instead
        packages.append(f"org.apache.hadoop:hadoop-aws:{hadoop_version()}")
        if s3a_on_sdk_v1():
            packages += [
                f"com.amazonaws:aws-java-sdk-{module}:{HADOOP_3_3_SDK_V1_VERSION}"
                for module in AWS_SDK_V1_MODULES
            ]
        # the workbook's DynamoDB log store speaks the SDK v2 on both lines
        modules = ("dynamodb",) if s3a_on_sdk_v1() else AWS_SDK_V2_MODULES
        packages += [
            f"software.amazon.awssdk:{module}:{config.AWS_SDK_V2_VERSION}" for module in modules
        ]
    if "azure" in stores:
        packages.append(f"org.apache.hadoop:hadoop-azure:{hadoop_version()}")
    if "dynamodb" in stores and config.profile() == "cloud":
        # Delta's own S3DynamoDBLogStore and the AWS SDK v1 client it declares as "provided"
        packages.append(f"io.delta:delta-storage-s3-dynamodb:{delta}")
        if not s3a_on_sdk_v1():
            packages.append(f"com.amazonaws:aws-java-sdk-dynamodb:{AWS_SDK_V1_VERSION}")
    return packages


def default_credentials_provider() -> str:
    """The credential chain S3A is given in the cloud profile, in its SDK's own class."""
    if s3a_on_sdk_v1():
        return "com.amazonaws.auth.DefaultAWSCredentialsProviderChain"
    return "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"


def arrow_frame(spark, table):
    """A DataFrame of an Arrow table, with its schema: Spark 4 takes the table as it is; Spark 3.5's
    ``createDataFrame`` has no Arrow input, so the rows go through pandas with the table's schema."""
    if int(spark_version().split(".")[0]) >= 4:
        return spark.createDataFrame(table)
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame(table.to_pandas(), schema=from_arrow_schema(table.schema))
