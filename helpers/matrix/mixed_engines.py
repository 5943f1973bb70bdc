"""The two engines of the mixed DynamoDB setting, and what the lock table says of a race.

* :class:`DynamoSpark`: Delta Spark as notebook 09 §4–5 configure it, ``s3a://`` commits through the
  DynamoDB log store (:func:`helpers.spark.sessions.dynamodb_log_store_conf`), with the conflict matrix's
  speed settings; its DynamoDB endpoint is a :class:`helpers.matrix.ddb_hold.ClaimHold` in front of
  the emulator, so a race can hold it as B at its claim (:meth:`DynamoSpark.run_held`).
* deltalake 1.5.1 with ``AWS_S3_LOCKING_PROVIDER=dynamodb`` and the same lock table (notebook 09 §5,
  notebook 06), in its own process (:class:`helpers.matrix.remote.RemoteEngine`), given the table as
  ``s3a://``.

:func:`lock_evidence` reads the lock table's items of a race's table beside its log: which engine
staged each commit after the base (Delta Spark stages ``.tmp/N.json.<uuid>``, delta-rs
``_commit_<uuid>.json.tmp``), whether every commit has one complete item, every item its commit
file, and how many ``tablePath`` values the table's items use (one: the engines share the lock).
"""

from __future__ import annotations

import os

from helpers.delta import delta_log
from helpers.ground import config, eras
from helpers.matrix import engines, layouts
from helpers.matrix import spark as matrix_spark
from helpers.matrix.remote import RemoteEngine, for_delta_rs
from helpers.spark import sessions
from helpers.stores import storage, tables

RS = eras.DYNAMODB_INTEROP
"""deltalake 1.5.1: the releases from 1.3.0 to 1.6.0 speak Delta Spark's DynamoDB protocol."""
HOLD_TIMEOUT_S = 240.0
"""A safety bound only: how long B may take to reach its claim before the pair fails."""
_SESSION = None

SPEED = (
    "spark.sql.codegen.wholeStage",
    "spark.sql.codegen.factoryMode",
    "spark.sql.adaptive.enabled",
    "spark.sql.shuffle.partitions",
    "spark.databricks.delta.snapshotPartitions",
    "spark.driver.extraJavaOptions",
)
"""The matrix's speed settings (:func:`helpers.matrix.spark.session_conf`), taken over unchanged;
its held log stores and held file system are not: here the log store is the DynamoDB one."""


def session_conf(claim_endpoint: str) -> dict[str, str]:
    """The mixed matrix's additions to the workbook's ``spark_session("s3", "dynamodb")``."""
    matrix = matrix_spark.session_conf()
    return {
        **{key: matrix[key] for key in SPEED},
        # VACUUM RETAIN 0 HOURS, for this session only (as the matrix's)
        "spark.databricks.delta.retentionDurationCheck.enabled": "false",
        # the DynamoDB log store's endpoint: the claim hold, which forwards to the emulator
        sessions.DYNAMODB_ENDPOINT_KEY: claim_endpoint,
    }


def session(claim_endpoint: str):
    global _SESSION
    if _SESSION is None:
        _SESSION = sessions.spark_session(
            "s3",
            "dynamodb",
            app_name="conflict-matrix-mixed-dynamodb",
            extra_conf=session_conf(claim_endpoint),
        )
    return _SESSION


class DynamoSpark(matrix_spark.DeltaSpark):
    """Delta Spark through the DynamoDB log store; B of a race held at its claim."""

    def __init__(self, hold) -> None:  # not DeltaSpark's: another session
        self.name = engines.spark_here()
        self.layout = layouts.SHARED_FILES
        self.hold_at_data = False
        self.results_name = self.name
        self.hold = hold
        self.spark = session(hold.endpoint)

    def run_held(self, op: str, path: str, first) -> dict:
        """As :meth:`helpers.matrix.spark.DeltaSpark.run_held`, held at the claim of the lock table
        (:mod:`helpers.matrix.ddb_hold`) instead of in the log store."""
        where = matrix_spark.location(path)
        self.hold.arm(where)
        return engines.race_held(
            op,
            lambda: self.run(op, where, path),
            lambda: self.hold.wait_held(HOLD_TIMEOUT_S),
            self.hold.release,
            self.hold.abandon,
            first,
        )


def remote_rs(python: str | None = None) -> RemoteEngine:
    """deltalake 1.5.1 in its era's process (or the deltalake of ``python``), with the DynamoDB log
    store on the workbook's lock table."""
    env = {**os.environ, **tables.s3_storage_options(locking_provider="dynamodb")}
    return RemoteEngine(RS, env=env, python=python)


def prepare_s3() -> None:
    """The emulator up, the bucket and the lock table there; the kernel's reader pointed at them."""
    from helpers.stores import services

    if config.profile() == "local":
        services.up(["moto"], quiet=True)
    storage.ensure_bucket()
    storage.ensure_lock_table()
    os.environ.update(tables.s3_storage_options())


def _writer(temp_path: str) -> str:
    if temp_path.startswith(".tmp/"):
        return "spark"
    if "_commit_" in temp_path:
        return "delta-rs"
    return f"? ({temp_path})"


def lock_evidence(path: str, after_version: int) -> dict:
    """The lock table beside the log of the table at ``path``, for the commits after ``after_version``:
    ``lock_commits`` ("13 delta-rs, 14 spark": who staged each commit, by its item), ``lock_table_paths``
    (distinct ``tablePath`` values of the table's items) and ``lock_problems`` (a commit without a
    complete item, an item without its commit file; "" if none)."""
    from helpers.matrix import stores

    items = storage.lock_entries(for_delta_rs(path))
    versions = [v for v in stores.for_location(path).versions(path) if v > after_version]
    by_file = {item["fileName"]: item for item in items}
    commits, problems = [], []
    for version in versions:
        item = by_file.get(delta_log.commit_file_name(version))
        if item is None:
            commits.append(f"{version} no item")
            problems.append(f"commit {version} has no lock item")
            continue
        commits.append(f"{version} {_writer(item.get('tempPath', ''))}")
        if item.get("complete") != "true":
            problems.append(f"item of {version} is not complete")
    in_log = {delta_log.commit_file_name(v) for v in stores.for_location(path).versions(path)}
    problems += [f"item {name} has no commit file" for name in by_file if name not in in_log]
    return {
        "lock_commits": ", ".join(commits),
        "lock_table_paths": len({item["tablePath"] for item in items}),
        "lock_problems": "; ".join(problems),
    }
