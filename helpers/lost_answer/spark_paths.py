"""Delta Spark's commit paths on S3 with a lost answer, with and without each remedy.

Each trial is a fresh ``s3a://`` table: created with one row (version 0) through the gate
unharmed, then one append of three rows whose commit answer the gate drops
(:mod:`helpers.lost_answer.gate`), done as :data:`helpers.lost_answer.trials.REMEDIES` says. One
driver (one JVM, :mod:`helpers.lost_answer.spark_worker`) runs all the trials of a log store; the
AWS SDK's and S3A's retries keep their defaults. The paths (:data:`PATHS`), and what the trials
showed (20 each; the same in every trial, the gate's log of each in the run's ``work/`` folder),
with its cause in Delta 4.4.0's source (delta-io/delta, tag ``v4.4.0``):

* ``spark-s3-default``: the default log store from one driver,
  ``storage/.../S3SingleDriverLogStore.java`` ``write``: ``fs.exists`` (HEAD), then
  ``fs.create(path, overwrite=false)``, which S3A sends as a plain PUT of ``N.json`` on close (no
  ``If-None-Match``). The gate drops the PUT's answer; S3A sends the same PUT again, S3 stores the
  same bytes again and answers 200, and ``write`` returns. **Committed once**, the job told
  success, with every remedy: nothing reaches Delta's commit loop to be remedied.
* ``spark-s3-dynamodb-claim``: the DynamoDB log store's claim, its conditional ``PutItem`` of the
  item of ``N.json`` (``BaseExternalLogStore.write``, step 2.2, ``putExternalEntry(entry, false)``).
  DynamoDB writes the item, the gate drops the answer, the AWS SDK sends the PutItem again and
  DynamoDB refuses it (400, ``ConditionalCheckFailedException``).
  ``storage-s3-dynamodb/.../S3DynamoDBLogStore.java`` ``putExternalEntry`` turns every refusal into
  ``java.nio.file.FileAlreadyExistsException`` without reading the item; the item is this
  writer's own, incomplete, and the next listing finishes it (``BaseExternalLogStore.listFrom`` →
  ``fixDeltaLog``: its staged file copied to ``N.json``). ``OptimisticTransaction``'s commit loop
  takes the exception for a lost race, checks its actions against the winning commit (its own:
  a blind append against a blind append, no conflict) and commits them again at N+1 (a second
  claim, accepted, and a second commit file). So:

  * ``none``: **committed twice** (versions 1 and 2 add the same three rows, 6 rows in all), the job
    told success; the lock table holds a complete item for each;
  * ``idempotency-check``: ``OptimisticTransaction.detectIdempotentSelfCommit`` (through
    ``resolveConflicts`` → ``resolveAgainstWinningCommit``) finds its own ``txnId`` in the winning
    commit's ``commitInfo`` and takes version 1 as this commit: **committed once**, told success;
  * ``txn-app-id``: the winning commit carries this write's ``SetTransaction``, so
    ``ConflictChecker.checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn`` fails the
    write with ``io.delta.exceptions.ConcurrentTransactionException`` (told failed, committed
    once); the job's rerun finds ``txnVersion`` 1 in the table (``DeltaCommand.hasBeenExecuted``,
    from ``WriteIntoDelta.run``) and writes nothing: **committed once**, told success. Without the
    rerun the job would end told failed although committed.
* ``spark-s3-dynamodb-copy``: the same log store's write of ``N.json`` from its staged file after
  the claim won (``BaseExternalLogStore.write`` step 3, ``writeCopyTempFile`` → ``copyFile``:
  ``fs.create(dst, false)``, a plain PUT). S3A sends the same PUT again, S3 answers 200:
  **committed once**, told success, with and without the idempotency check.

Delta's own ``io.delta.storage.S3DynamoDBLogStore`` cannot reach an emulator (it has no endpoint
setting), so the DynamoDB paths run the workbook's class
(:func:`helpers.spark.sessions.dynamodb_log_store_conf`) with :data:`AS_DELTA_DOES`: a refused claim
is then a lost race, as in Delta's ``putExternalEntry``. The two differ in who writes ``N.json``
after the refusal (the workbook's class finishes the holder's commit before it says the version is
taken; Delta's listing does it next): the same file, and the same outcome. With its default
(``recognizeOwnClaim``), the workbook's class reads the item and keeps its own claim instead
(``tests/test_findings.py`` shows both).
"""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

from helpers.ground import eras
from helpers.lost_answer import trials
from helpers.stores import storage, tables

ENGINE = "Delta Spark"
WORKER = "helpers.lost_answer.spark_worker"
WORKER_TIMEOUT_S = 3600.0
"""A log store's trials in one driver: far more than they take; a hung store ends the run."""
AS_DELTA_DOES = {"spark.workbook.storage.ddb.recognizeOwnClaim": "false"}
"""The workbook's DynamoDB log store, told to take a refused claim for a lost race, as Delta's own
``S3DynamoDBLogStore.putExternalEntry`` does (see the module's text)."""


@dataclass(frozen=True)
class SparkPath:
    name: str
    store: str
    fault: str
    """The request whose answer the gate drops (:data:`helpers.lost_answer.gate.KINDS`)."""
    log_store: str
    """``default`` (``S3SingleDriverLogStore``) or ``dynamodb``: one driver runs each."""
    remedies: tuple[str, ...]


REMEDIES = (trials.NO_REMEDY, "idempotency-check", "txn-app-id")
PATHS = (
    SparkPath("spark-s3-default", "S3", "put", "default", REMEDIES),
    SparkPath("spark-s3-dynamodb-claim", "S3 + DynamoDB", "dynamodb-claim", "dynamodb", REMEDIES),
    SparkPath("spark-s3-dynamodb-copy", "S3 + DynamoDB", "put", "dynamodb", REMEDIES[:2]),
)
LOG_STORE_CONF = {"default": {}, "dynamodb": AS_DELTA_DOES}


def _run_worker(log_store: str, spec: dict, work: Path, progress) -> dict:
    """One driver's trials (:mod:`helpers.lost_answer.spark_worker`), its lines passed to
    ``progress``; returns its result."""
    work.mkdir(parents=True, exist_ok=True)
    spec_file, result_file = work / "spec.json", work / "result.json"
    spec_file.write_text(json.dumps(spec, indent=1))
    with open(work / "stderr.txt", "w", encoding="utf-8") as stderr:
        process = eras.start_in_era(
            eras.CURRENT,
            ["-u", "-m", WORKER, str(spec_file), str(result_file)],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        guard = threading.Timer(WORKER_TIMEOUT_S, process.kill)
        guard.start()
        try:
            for line in process.stdout:
                if line.startswith("trial "):
                    progress(f"Delta Spark, {log_store} log store: {line.strip()}")
            code = process.wait()
        finally:
            guard.cancel()
    if code != 0 or not result_file.exists():
        raise RuntimeError(
            f"The Delta Spark trials of the {log_store} log store failed (exit {code}): "
            f"{(work / 'stderr.txt').read_text()[-600:]}"
        )
    return json.loads(result_file.read_text())


def run(folder: Path, count: int = trials.TRIALS, progress=print) -> list[trials.Trial]:
    """``count`` trials of each path and remedy, each a fresh table: one driver per log store;
    then every table is read from storage."""
    storage.ensure_bucket()
    storage.ensure_lock_table()
    prefix = f"lost-answer/{folder.name}-{uuid.uuid4().hex[:8]}"
    records = []
    for log_store, conf in LOG_STORE_CONF.items():
        planned = [
            (
                path,
                remedy,
                number,
                tables.s3_uri(f"{prefix}/{path.name}/{remedy}/t{number:02d}", "s3a"),
            )
            for path in PATHS
            if path.log_store == log_store
            for remedy in path.remedies
            for number in range(1, count + 1)
        ]
        spec = {
            "log_store": log_store,
            "conf": conf,
            "trials": [
                {"table_uri": uri, "fault": path.fault, "remedy": remedy, "app_id": f"job-{number}"}
                for path, remedy, number, uri in planned
            ],
        }
        done = _run_worker(log_store, spec, folder / "work" / f"spark-{log_store}", progress)
        for (path, remedy, number, uri), said in zip(planned, done["trials"], strict=True):
            records.append(
                trials.judged(
                    uri,
                    path=path.name,
                    engine=ENGINE,
                    release=done["release"],
                    store=path.store,
                    fault=path.fault,
                    remedy=remedy,
                    trial=number,
                    dropped=said["dropped"],
                    told=said["told"],
                    steps=said["steps"],
                )
            )
    return records
