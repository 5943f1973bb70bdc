"""Maintenance of a catalog-managed table, tried by Delta Spark 4.4.0 in a driver without Spark's
testing flag (the setting a team runs), each outcome read from what Delta raised and from storage.

The managed tables spec says a catalog may schedule maintenance (this server runs none), and Delta
Spark 4.4.0 refuses OPTIMIZE
(Z-order too), REORG and VACUUM on a catalog-managed table with
``DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION``. A rewrite that marks itself
``dataChange=false`` (the classic hand-made compaction) is not refused by 4.4.0: it commits
through the catalog like any write. Delta 4.4.1 refuses that too ("rearrange-only writes",
delta-io/delta#7603); its jars are not where this workbook downloads its jars.

    outcomes = attempt_all(spark, "orders", location)   # in the driver, after the table is named
    [o["outcome"] for o in outcomes]                     # "refused" or "ran", per operation

Each outcome lists ``_delta_log/`` before and after: a refused operation must leave it as it was.

What 4.4.0 does *not* refuse on such a table, run in the same driver by :func:`upkeep` (the spec
and the record are :mod:`helpers.catalog.upkeep`'s), each cited from Delta's sources at tag
v4.4.0, by line, under ``spark/src/main/scala/org/apache/spark/sql/delta/``:

* **auto compaction** (:func:`auto_compaction`), turned on by the table property
  ``delta.autoOptimize.autoCompact`` or the session setting
  ``spark.databricks.delta.autoCompact.enabled``. A write registers the hook
  (``files/TransactionalWrite.scala`` 566); the hook checks only whether it is on and the files
  it counted (``hooks/AutoCompact.scala`` 60-111, ``hooks/AutoCompactUtils.scala`` 221-273, 337-344;
  ``autoCompact.minNumFiles``, 50 by default, ``sources/DeltaSQLConf.scala`` 389-395), then runs
  ``OptimizeExecutor`` itself (``AutoCompact.scala`` 178-211), not ``OptimizeTableCommand``, whose
  ``run`` is where OPTIMIZE is refused (``commands/OptimizeTableCommand.scala`` 165-167);
* **metadata cleanup** (:func:`metadata_cleanup`): after each checkpoint
  (``hooks/CheckpointHook.scala`` 27-51, ``Checkpoints.scala`` 338-345) Delta deletes the commits,
  checkpoints and checksums older than ``delta.logRetentionDuration`` and before the last
  checkpoint, and the staged commits up to the newest commit it deleted (``MetadataCleanup.scala``
  66-155, 169-178); ``delta.enableExpiredLogCleanup`` is its only switch. Age is a file's
  modification time, cut at the midnight (UTC) before now minus the retention
  (``MetadataCleanup.scala`` 83-84, 307-318), so a log made today is kept until tomorrow whatever
  the retention: :func:`age_log` makes the log two days old first, as a table's older commits are.
  A log retention below ``delta.deletedFileRetentionDuration`` is refused (``DeltaConfig.scala``
  360-380), so both are set short.

And VACUUM's own refusal (:func:`managed_vacuum`): its assertion that a catalog-managed table is
MANAGED in Spark's catalog comes first (``commands/VacuumCommand.scala`` 170-179), so the table is
named MANAGED in this driver's session catalog (``UnityCatalogCommits.nameTable``).
"""

from __future__ import annotations

import os
import re
import time
from urllib.parse import unquote

from helpers.catalog.tables import (
    COLUMNS,
    SCHEMA,
    local_path,
    log_listing,
    open_table,
    wait_published,
)
from helpers.delta import delta_log

REFUSED, RAN = "refused", "ran"
REWRITE = "rewrite, dataChange=false"
OPERATIONS = {
    "OPTIMIZE": "OPTIMIZE {table}",
    "OPTIMIZE ZORDER BY": "OPTIMIZE {table} ZORDER BY (id)",
    "REORG": "REORG TABLE {table} APPLY (PURGE)",
    "VACUUM": "VACUUM {table}",
    REWRITE: (
        'spark.table("{table}").repartition(1).writeTo("{table}")'
        '.option("dataChange", "false").overwrite(lit(True))'
    ),
}
"""Each operation tried, as the code that tries it (``{table}``: ``default.<name>``)."""
ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]+)\]")


def error_of(error: Exception) -> tuple[str, str]:
    """What Delta raised: its error class (the first ``[DELTA_...]`` along the Java exception's
    causes, since Spark may wrap Delta's error in its own ``INTERNAL_ERROR``; else the first error
    class or Java exception class found) and that exception's first line (:func:`root_cause`
    gives the innermost)."""
    java = getattr(error, "java_exception", None)
    texts = []
    while java is not None and len(texts) < 10:
        texts.append(str(java.toString()))
        java = java.getCause()
    if not texts:
        texts = [str(getattr(error, "desc", None) or error)]
    lines = [next((ln.strip() for ln in t.splitlines() if ln.strip()), "") for t in texts]
    for prefix in ("DELTA_", ""):
        for line in lines:
            found = ERROR_CLASS.search(line)
            if found and found.group(1).startswith(prefix):
                return found.group(1), line[:400]
    return lines[0].split(":", 1)[0], lines[0][:400]


def root_cause(error: Exception) -> str:
    """The first line of the innermost Java exception under ``error`` ("" without one)."""
    java, line = getattr(error, "java_exception", None), ""
    for _ in range(10):
        if java is None:
            break
        line = next((ln.strip() for ln in str(java.toString()).splitlines() if ln.strip()), "")
        java = java.getCause()
    return line[:400]


def tried(run) -> dict:
    """Call ``run()``: ``{"outcome": "ran", ...}``, or what Delta raised (:data:`REFUSED`, its error
    class, first line and root cause, :func:`error_of`)."""
    try:
        run()
    except Exception as error:  # noqa: BLE001 - the error is the measurement
        kind, message = error_of(error)
        return {
            "outcome": REFUSED,
            "error_class": kind,
            "error": message,
            "cause": root_cause(error),
        }
    return {"outcome": RAN, "error_class": "", "error": "", "cause": ""}


def live_files(location: str) -> list[str]:
    """The data files of the table's latest published version, replayed from ``_delta_log/*.json``
    (the commits Delta published; checkpoints are not read, so a table past one is replayed whole)."""
    log = local_path(location) / delta_log.LOG_DIR
    live: set[str] = set()
    for path in sorted(log.glob("*.json")):
        if delta_log.commit_version(delta_log.LOG_DIR + path.name) is None:
            continue
        _, added, removed = delta_log.read_commit(path.read_bytes())
        live -= {unquote(a["path"]) for a in removed}
        live |= {unquote(a["path"]) for a in added}
    return sorted(live)


def attempt(spark, operation: str, name: str, location: str, wait) -> dict:
    """Run one of :data:`OPERATIONS` on ``default.<name>``; ``wait()`` returns once every commit the
    catalog ratified is published (Delta publishes on a thread of its own)."""
    table = f"{SCHEMA}.{name}"
    before, files_before = log_listing(location), live_files(location)
    record = {"operation": operation, "code": OPERATIONS[operation].format(table=table)}

    def run() -> None:
        if operation == REWRITE:  # DataFrameWriter.insertInto would drop the option
            from pyspark.sql.functions import lit

            spark.table(table).repartition(1).writeTo(table).option(
                "dataChange", "false"
            ).overwrite(lit(True))
        else:
            spark.sql(record["code"]).collect()

    record.update(tried(run))
    wait()
    after = log_listing(location)
    record.update(
        log_added=sorted(set(after) - set(before)),
        log_removed=sorted(set(before) - set(after)),
        files_before=len(files_before),
        files_after=len(live_files(location)),
    )
    return record


def attempt_all(spark, name: str, location: str, wait=lambda: None) -> list[dict]:
    """Every operation of :data:`OPERATIONS`, in order (the rewrite last: the others meet the table's
    small files as the appends left them)."""
    return [attempt(spark, operation, name, location, wait) for operation in OPERATIONS]


def commit_of(location: str, version: int) -> dict:
    """What a published commit did: its operation and the ``dataChange`` flag of each file it added
    or removed (``{"operation": ..., "data_change": [...]}``)."""
    body = (local_path(location) / delta_log.LOG_DIR / f"{version:020d}.json").read_bytes()
    info, added, removed = delta_log.read_commit(body)
    return {
        "operation": info.get("operation"),
        "data_change": sorted({a.get("dataChange") for a in [*added, *removed]}, key=str),
    }


# -- what 4.4.0 does not refuse, in a driver without the testing flag ------------------------------

BY_PROPERTY, BY_SETTING = "table property", "session setting"
"""The two ways auto compaction is turned on: :data:`AUTO_COMPACT_PROPERTY` on the table, or
:data:`AUTO_COMPACT_SETTING` in the writer's session (which wins when set)."""
AUTO_COMPACT_PROPERTY = "delta.autoOptimize.autoCompact"
AUTO_COMPACT_SETTING = "spark.databricks.delta.autoCompact.enabled"
MIN_NUM_FILES_SETTING = "spark.databricks.delta.autoCompact.minNumFiles"
"""Small files this driver must have added to a table before it compacts (Delta's default: 50)."""
CLEANUP_PROPERTIES = {
    "delta.logRetentionDuration": "interval 1 seconds",
    "delta.deletedFileRetentionDuration": "interval 1 seconds",
    "delta.enableExpiredLogCleanup": "true",
}
"""The log kept as briefly as Delta accepts (its retention may not be below the data files')."""
WRITER = "job"
"""The ``writer`` column of the rows :func:`append_batch` appends."""


def set_properties(spark, name: str, properties: dict[str, str]) -> dict:
    """``ALTER TABLE default.<name> SET TBLPROPERTIES (...)``, a commit through the catalog: its
    outcome (:func:`tried`)."""
    listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
    return tried(
        lambda: spark.sql(f"ALTER TABLE {SCHEMA}.{name} SET TBLPROPERTIES ({listed})").collect()
    )


def append_batch(spark, name: str, batch: int, rows: int) -> dict:
    """Append batch ``batch`` to ``default.<name>`` by name, one commit: ``rows`` rows, ids
    ``batch * 100 + 1`` onwards, tagged :data:`WRITER`; its outcome (:func:`tried`)."""
    frame = spark.range(batch * 100 + 1, batch * 100 + 1 + rows).selectExpr(
        "id", f"'{WRITER}' AS writer", f"CAST({batch} AS INT) AS batch"
    )
    return tried(lambda: frame.writeTo(f"{SCHEMA}.{name}").append())


def age_log(location: str, days: float) -> int:
    """Give every file of the table's ``_delta_log/`` (as
    :func:`~helpers.catalog.tables.log_listing` lists it) a modification time ``days`` back, as if
    its commits had been made then (the age Delta's metadata cleanup reads); how many files."""
    when = time.time() - days * 86400
    aged = log_listing(location)
    for name in aged:
        os.utime(local_path(location) / delta_log.LOG_DIR / name, (when, when))
    return len(aged)


def auto_compaction(spark, catalog, spec: dict) -> dict:
    """In the driver: for each table of ``spec["tables"]`` (way -> ``{"name", "location"}``, way
    :data:`BY_PROPERTY` or :data:`BY_SETTING`), turn auto compaction on that way, then append
    ``spec["appends"]`` batches of ``spec["rows"]`` rows, with ``spec["min_num_files"]`` as
    :data:`MIN_NUM_FILES_SETTING`. Way -> ``{"setting": outcome, "appends": [outcome, ...]}``; what
    was committed is read from storage and the catalog afterwards."""
    spark.conf.set(MIN_NUM_FILES_SETTING, str(spec["min_num_files"]))
    measured = {}
    for way, table in spec["tables"].items():
        open_table(spark, table["name"], COLUMNS, table["location"])
        if way == BY_PROPERTY:
            setting = set_properties(spark, table["name"], {AUTO_COMPACT_PROPERTY: "true"})
        else:
            setting = tried(lambda: spark.conf.set(AUTO_COMPACT_SETTING, "true"))
        appends = [
            append_batch(spark, table["name"], batch, spec["rows"])
            for batch in range(1, spec["appends"] + 1)
        ]
        spark.conf.unset(AUTO_COMPACT_SETTING)
        wait_published(catalog, table["name"])
        measured[way] = {"setting": setting, "appends": appends}
    return measured


def metadata_cleanup(spark, catalog, spec: dict) -> dict:
    """In the driver, on ``spec["name"]`` at ``spec["location"]``: :data:`CLEANUP_PROPERTIES` and a
    checkpoint every ``spec["checkpoint_interval"]`` versions set, ``spec["appends_before"]``
    appends, the log listed (``today``), aged ``spec["aged_days"]`` (:func:`age_log`), then as many
    appends as the interval (one of them reaches the next checkpoint) and the log listed again
    (``after``); then the rows a reader by name counts, and a read of version 1 (time travel).
    ``started`` and ``listed`` say when the log listed as ``today`` was begun and listed."""
    name, location, interval = spec["name"], spec["location"], spec["checkpoint_interval"]
    open_table(spark, name, COLUMNS, location)
    properties = {**CLEANUP_PROPERTIES, "delta.checkpointInterval": str(interval)}
    record = {"started": time.time(), "appends": []}
    record["setting"] = set_properties(spark, name, properties)
    batches = range(1, spec["appends_before"] + interval + 1)
    for batch in batches:
        if batch == spec["appends_before"] + 1:
            wait_published(catalog, name)
            record.update(today=log_listing(location), listed=time.time())
            record["aged"] = age_log(location, spec["aged_days"])
        record["appends"].append(append_batch(spark, name, batch, spec["rows"]))
    wait_published(catalog, name)
    table = f"{SCHEMA}.{name}"
    record.update(
        after=log_listing(location),
        rows=spark.table(table).count(),
        time_travel=tried(lambda: spark.read.option("versionAsOf", 1).table(table).count()),
    )
    return record


def managed_vacuum(spark, catalog, spec: dict) -> dict:
    """In the driver: name ``spec["name"]`` (at ``spec["location"]``) MANAGED in the session
    catalog, as the connector's catalog would; append one batch; try VACUUM and OPTIMIZE
    (:func:`attempt`); then try to create ``spec["created"]`` as a catalog-managed table, which is
    how a MANAGED name would otherwise come about in a driver without the testing flag."""
    name, location = spec["name"], spec["location"]
    spark._jvm.workbook.catalog.UnityCatalogCommits.nameTable(
        spark._jsparkSession, SCHEMA, name, COLUMNS, location, True
    )
    described = spark.sql(f"DESCRIBE TABLE EXTENDED {SCHEMA}.{name}").where("col_name = 'Type'")
    table_type = described.first()["data_type"]
    appended = append_batch(spark, name, 1, spec["rows"])
    wait_published(catalog, name)
    return {
        "table_type": table_type,
        "append": appended,
        "vacuum": attempt(spark, "VACUUM", name, location, lambda: None),
        "optimize": attempt(spark, "OPTIMIZE", name, location, lambda: None),
        "created": tried(
            lambda: spark.sql(
                f"CREATE TABLE {SCHEMA}.{spec['created']} ({COLUMNS}) USING delta "
                "TBLPROPERTIES ('delta.feature.catalogManaged' = 'supported')"
            ).collect()
        ),
    }


MEASURES = {
    "auto_compaction": auto_compaction,
    "metadata_cleanup": metadata_cleanup,
    "managed_vacuum": managed_vacuum,
}


def upkeep(spark, catalog, spec: dict) -> dict:
    """In a driver without the testing flag: each measure of :data:`MEASURES` that ``spec`` names,
    with its part of the spec (:func:`helpers.catalog.upkeep.run` writes it); name -> its record."""
    return {
        key: measure(spark, catalog, spec[key]) for key, measure in MEASURES.items() if key in spec
    }
