"""The Spark engine: appends with Spark and Delta Spark, one JVM ("one cluster") per writer."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from helpers.delta.delta_log import WRITER_TAG, commit_tags
from helpers.ground import config
from helpers.spark import sessions
from helpers.writers.protocol import (
    READ_LANDING,
    Engine,
    EngineUnavailable,
    SpecError,
    TableNotFoundError,
    WriterSpec,
    literal,
    one_line,
    writer_tags,
)


class SparkEngine(Engine):
    """Appends with Spark + Delta Spark: ``df.write.format("delta").mode("append").save(s3a_uri)``.

    Each writer process starts its own JVM, so each is "its own cluster" (a driver with
    ``local[1]``): the lock Delta Spark's default S3 LogStore (``S3SingleDriverLogStore``) takes
    before it writes a commit file lives in that one JVM and is invisible to the others. What this
    engine does about Spark's ways:

    * **Session.** Built in :meth:`load` (it needs the writer id) with
      ``helpers.spark.sessions.spark_session("s3", app_name="writer-<id>", extra_conf=...)``, so jars,
      endpoint and keys are the notebooks' own.
      The JVM start (tens of seconds) falls between ``t_landing_loaded`` and ``t_snapshot_loaded``;
      ``reported_version_source`` also gives it.
    * **Settings.** The same ``storage_options`` a delta-rs writer gets work here, translated
      (:meth:`session_conf`): ``AWS_ENDPOINT_URL`` becomes ``fs.s3a.endpoint``;
      ``AWS_S3_LOCKING_PROVIDER=dynamodb`` selects Delta Spark's multi-cluster log store (the
      session store ``dynamodb``), with ``DELTA_DYNAMO_TABLE_NAME`` as its ``ddb.tableName`` and
      ``AWS_ENDPOINT_URL_DYNAMODB`` as its endpoint. Keys and region otherwise come from
      ``helpers.ground.config``, as for every session. Keys that start with ``spark.`` are Spark settings
      for this writer's session, applied last. Options Spark has no counterpart for (unsafe
      rename, ``conditional_put``) are refused by name. Defaults (:data:`DEFAULT_CONF`), for a JVM
      that lives for one append beside three others on 2 cores: ``spark.master=local[1]``, driver
      memory 1g, and Spark SQL expressions interpreted instead of compiled; with the JIT's first
      tier only and the serial GC that every driver has (``spark_start.DRIVER_JVM_OPTIONS``),
      measured alone: JVM start 18 → 16 s, first append 11.5 → 8.5 s. With ``WORKBOOK_SPARK_MASTER`` set, the driver runs its executors on that cluster
      instead (``make cluster``: one application, one core).
    * **Snapshot.** Before the barrier the table is opened (``DeltaLog.forTable``, which starts
      S3A and reads the log: the slow part, ~10 s); ``snapshot_version`` is the version it saw. Spark
      cannot append against a held snapshot: its write starts a transaction that refreshes the
      log first. So the spec must say ``hold_snapshot=false``; released together, the writers
      still all read the same latest version after go.
    * **Retries.** ``max_commit_retries=None`` keeps Delta's default
      (``spark.databricks.delta.maxCommitAttempts``, ten million); ``k`` sets it to ``k + 1``.
      A blind append that finds its version taken retries at the next one.
    * **Tags.** Delta Spark writes no custom top-level commitInfo keys; it writes ``userMetadata``
      (one string). The engine puts ``{"workbook.writer": ..., "workbook.batch": ...}`` there as
      JSON (:func:`commit_tags` reads it back).
    * ``reported_version``: the version Delta says it committed (its post-commit snapshot,
      ``DeltaLog.unsafeVolatileSnapshot().version()``, read right after the write);
      ``reported_version_source`` adds whether the commit file at that version now carries this
      writer's tag, or another writer's (overwritten), as the log says.
    """

    name = "spark"
    holds_snapshot = False
    refresh_reason = (
        "Delta Spark's append starts a transaction that refreshes the log first, so it cannot "
        "commit against a snapshot held across the barrier."
    )
    URI_SCHEMES = ("s3a",)
    DELTA_RS_S3_KEYS = (
        "AWS_REGION",
        "AWS_ENDPOINT_URL",
        "AWS_ALLOW_HTTP",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_S3_LOCKING_PROVIDER",
        "DELTA_DYNAMO_TABLE_NAME",
        "AWS_ENDPOINT_URL_DYNAMODB",
    )
    REFUSED_KEYS = {
        "DYNAMO_LOCK_TABLE_NAME": "the old delta-rs lock table; Delta Spark's log store takes DELTA_DYNAMO_TABLE_NAME",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "Delta Spark never renames on S3; it writes the commit file directly",
        "conditional_put": "the S3A analogue is spark.hadoop.fs.s3a.create.conditional.enabled",
    }
    DEFAULT_CONF = {
        "spark.master": "local[1]",
        "spark.driver.memory": "1g",
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }
    MAX_COMMIT_ATTEMPTS = "spark.databricks.delta.maxCommitAttempts"

    def __init__(self) -> None:
        try:
            import pyspark
            from delta import tables  # noqa: F401  (delta-spark, the Python side)
        except ImportError as error:
            raise EngineUnavailable(
                f"Spark cannot run in this environment ({Path(sys.prefix).name}, {sys.executable}): {error}. "
                "Only the kernel's era (deltalake-1.6.6) has pyspark and delta-spark: run Spark writers with era='deltalake-1.6.6'."
            ) from None
        self.spark_version = pyspark.__version__
        self.version = (
            f"delta-spark {sessions.running().delta_version} (Spark {pyspark.__version__})"
        )
        self.spark = None
        self.start_seconds: float | None = None
        self._snapshot_version = -1

    # -- the spec ------------------------------------------------------------------------------

    @classmethod
    def check_spec(cls, spec: WriterSpec) -> None:
        """Refuse what a Spark writer cannot do, naming the field. Runs without starting Spark."""
        from urllib.parse import urlparse

        scheme = urlparse(spec.table_uri).scheme
        if scheme not in cls.URI_SCHEMES:
            hint = f" (use s3a://{spec.table_uri.split('://', 1)[1]})" if scheme == "s3" else ""
            raise SpecError(
                f"The spark engine writes to s3a:// tables (Hadoop's S3A), not {spec.table_uri!r}{hint}."
            )
        refused = sorted(set(spec.storage_options) & set(cls.REFUSED_KEYS))
        if refused:
            raise SpecError(
                "The spark engine cannot use storage option(s) "
                + "; ".join(f"{key} ({cls.REFUSED_KEYS[key]})" for key in refused)
                + "."
            )
        unknown = sorted(
            k
            for k in spec.storage_options
            if not k.startswith("spark.") and k not in cls.DELTA_RS_S3_KEYS
        )
        if unknown:
            raise SpecError(
                f"The spark engine does not know storage option(s) {', '.join(unknown)}: it takes Spark settings "
                f"(keys starting with 'spark.') and delta-rs's {', '.join(cls.DELTA_RS_S3_KEYS)}."
            )
        provider = spec.storage_options.get("AWS_S3_LOCKING_PROVIDER")
        if provider is not None and provider.lower() != "dynamodb":
            raise SpecError(
                f"AWS_S3_LOCKING_PROVIDER={provider!r}: the only locking provider is 'dynamodb'."
            )
        if cls.MAX_COMMIT_ATTEMPTS in spec.storage_options and spec.max_commit_retries is not None:
            raise SpecError(
                f"Give either max_commit_retries or {cls.MAX_COMMIT_ATTEMPTS}, not both."
            )

    @staticmethod
    def stores(spec: WriterSpec) -> tuple[str, ...]:
        """The session stores: ``s3``, plus ``dynamodb`` when the options ask for the DynamoDB lock."""
        locked = spec.storage_options.get("AWS_S3_LOCKING_PROVIDER", "").lower() == "dynamodb"
        return ("s3", "dynamodb") if locked else ("s3",)

    @classmethod
    def session_conf(cls, spec: WriterSpec) -> dict[str, str]:
        """The settings this writer's session gets on top of ``helpers.spark.sessions.spark_conf(*stores(spec))``:
        the delta-rs options translated, then the ``spark.*`` options as given."""
        options = spec.storage_options
        conf = dict(cls.DEFAULT_CONF)
        if (
            sessions.cluster_master()
        ):  # the driver's executors run on that cluster, not in its own JVM
            del conf["spark.master"]
        if "AWS_ENDPOINT_URL" in options:
            conf["spark.hadoop.fs.s3a.endpoint"] = options["AWS_ENDPOINT_URL"]
        if "dynamodb" in cls.stores(spec):
            if "DELTA_DYNAMO_TABLE_NAME" in options:
                conf[f"{sessions.DYNAMODB_LOG_STORE_PREFIX}.ddb.tableName"] = options[
                    "DELTA_DYNAMO_TABLE_NAME"
                ]
            if "AWS_ENDPOINT_URL_DYNAMODB" in options:
                conf[sessions.DYNAMODB_ENDPOINT_KEY] = options["AWS_ENDPOINT_URL_DYNAMODB"]
        conf.update({k: v for k, v in options.items() if k.startswith("spark.")})
        if spec.max_commit_retries is not None:
            conf[cls.MAX_COMMIT_ATTEMPTS] = str(spec.max_commit_retries + 1)
        return conf

    @staticmethod
    def user_metadata(spec: WriterSpec) -> str:
        """The commit's ``userMetadata``: this writer's tags as JSON."""
        return json.dumps(writer_tags(spec), sort_keys=True)

    @classmethod
    def write_options(cls, spec: WriterSpec) -> dict[str, str]:
        """The options of this writer's ``df.write`` (its tags, as ``userMetadata``)."""
        return {"userMetadata": cls.user_metadata(spec)}

    @classmethod
    def full_conf(cls, spec: WriterSpec) -> dict[str, str]:
        """Every setting of this writer's session, as :meth:`load` asks ``sessions.spark_session`` for it."""
        return {
            **sessions.spark_conf(*cls.stores(spec), app_name=cls.app_name(spec)),
            **cls.session_conf(spec),
        }

    @staticmethod
    def app_name(spec: WriterSpec) -> str:
        return f"writer-{spec.writer_id}"

    @classmethod
    def code(cls, spec: WriterSpec) -> str:
        """What the writer process runs for ``spec`` (:meth:`load` and :meth:`append` use the same
        :meth:`full_conf` and :meth:`write_options`), as Python to copy; credentials masked."""
        conf = {
            key: config.without_machine_paths(re.sub(r"\s*-XX:SharedArchiveFile=\S+", "", value))
            for key, value in config.masked(cls.full_conf(spec)).items()
        }
        write = "".join(
            f".option({literal(key)}, {literal(value)})"
            for key, value in cls.write_options(spec).items()
        )
        return "\n".join(
            [
                "from pyspark.sql import SparkSession",
                "",
                "from helpers.delta import landing",
                "",
                "# every setting of the writer's session but one: its JVM also maps a class-data archive built",
                "# for this machine (-XX:SharedArchiveFile, helpers/spark/spark_start.py), which only makes it start faster",
                f"conf = {literal(conf)}",
                "builder = SparkSession.builder",
                "for key, value in conf.items():",
                "    builder = builder.config(key, value)",
                f"spark = builder.getOrCreate()  # Delta Spark {sessions.running().delta_version}: one JVM per writer, 'one cluster' each",
                READ_LANDING,
                f'spark.createDataFrame(data).write.format("delta").mode("append"){write}.save({literal(spec.table_uri)})',
            ]
        )

    # -- the steps -----------------------------------------------------------------------------

    def _delta_log(self, uri: str):
        jvm = self.spark._jvm
        return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, uri)

    def load(self, spec: WriterSpec):
        """Start this writer's Spark and open the table (its log), before the barrier. Raises
        TableNotFoundError (named for the URI) if there is no Delta table there."""
        started = time.monotonic()
        self.spark = sessions.spark_session(
            *self.stores(spec), app_name=self.app_name(spec), extra_conf=self.session_conf(spec)
        )
        self.start_seconds = time.monotonic() - started
        from delta.tables import DeltaTable

        self._snapshot_version = int(
            self._delta_log(spec.table_uri).unsafeVolatileSnapshot().version()
        )
        if self._snapshot_version < 0:
            raise TableNotFoundError(
                f"No Delta table at {spec.table_uri} (Spark found no _delta_log there); create it before starting writers."
            )
        return DeltaTable.forPath(self.spark, spec.table_uri)

    def snapshot_version(self, table) -> int:
        return self._snapshot_version

    def append(self, table, data, spec: WriterSpec) -> tuple[int | None, str]:
        """Append with Delta Spark; return (the version Delta says it committed, how that is known;
        no version when reading the log back after the write failed)."""
        frame = sessions.arrow_frame(self.spark, data)
        frame.write.format("delta").mode("append").options(**self.write_options(spec)).save(
            spec.table_uri
        )
        # save() returned: Delta says the append committed. What follows only reads the log back, so
        # a failure there is not the write's and must not turn this writer's report into "failed".
        try:
            version = int(self._delta_log(spec.table_uri).unsafeVolatileSnapshot().version())
            found = self.find_commits(spec, after=self._snapshot_version)
        except Exception as error:  # noqa: BLE001 - any error of the read-back, named in the report
            return None, (
                f"none: save() returned (Delta committed the append), then reading the log back failed: "
                f"{type(error).__name__}: {one_line(str(error))}"
            )
        if found.get(version) == spec.writer_id:
            check = "the log's commit at that version carries this writer's tag"
        elif version in found:
            check = f"but the log's commit at that version carries {found[version]}'s tag: this commit was overwritten"
        else:
            check = "but the log's commit at that version carries no workbook tag"
        others = sorted(v for v, w in found.items() if w == spec.writer_id and v != version)
        if others:
            check += f"; this writer's tag is also at v{', v'.join(map(str, others))}"
        return version, (
            f"Delta's post-commit snapshot version (DeltaLog.unsafeVolatileSnapshot after the write); {check}; "
            f"JVM started in {self.start_seconds:.1f} s"
        )

    def find_commits(self, spec: WriterSpec, after: int = -1) -> dict[int, str]:
        """Version -> writer id of every commit after ``after`` whose userMetadata carries workbook
        tags, read with ``DeltaTable.history()`` (it numbers commits by their file names)."""
        from delta.tables import DeltaTable

        rows = (
            DeltaTable.forPath(self.spark, spec.table_uri)
            .history()
            .select("version", "userMetadata")
            .collect()
        )
        found = {}
        for row in rows:
            tags = commit_tags({"userMetadata": row["userMetadata"]})
            if int(row["version"]) > after and WRITER_TAG in tags:
                found[int(row["version"])] = tags[WRITER_TAG]
        return found


ENGINE = SparkEngine
