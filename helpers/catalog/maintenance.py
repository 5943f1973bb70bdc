"""Maintenance of a catalog-managed table, tried by Delta Spark 4.4.0 in a driver without Spark's
testing flag (the setting a team runs), each outcome read from what Delta raised and from storage.

The managed tables spec leaves maintenance to the catalog, and Delta Spark 4.4.0 refuses OPTIMIZE
(Z-order too), REORG and VACUUM on a catalog-managed table with
``DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION``. A rewrite that marks itself
``dataChange=false`` (the classic hand-made compaction) is not refused by 4.4.0: it commits
through the catalog like any write. Delta 4.4.1 refuses that too ("rearrange-only writes",
delta-io/delta#7603); its jars are not where this workbook downloads its jars.

    outcomes = attempt_all(spark, "orders", location)   # in the driver, after the table is named
    [o["outcome"] for o in outcomes]                     # "refused" or "ran", per operation

Each outcome lists ``_delta_log/`` before and after: a refused operation must leave it as it was.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from helpers.catalog.tables import SCHEMA, local_path, log_listing
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
    try:
        if operation == REWRITE:  # DataFrameWriter.insertInto would drop the option
            from pyspark.sql.functions import lit

            spark.table(table).repartition(1).writeTo(table).option(
                "dataChange", "false"
            ).overwrite(lit(True))
        else:
            spark.sql(record["code"]).collect()
        record.update(outcome=RAN, error_class="", error="", cause="")
    except Exception as error:  # noqa: BLE001 - the error is the measurement
        kind, message = error_of(error)
        record.update(outcome=REFUSED, error_class=kind, error=message, cause=root_cause(error))
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
