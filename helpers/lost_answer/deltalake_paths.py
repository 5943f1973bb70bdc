"""deltalake's commit paths with a lost answer: each path in each era that stands for a row of the
answer page, every remedy the era has, :data:`helpers.lost_answer.trials.TRIALS` tables each.

A path (:class:`Path_`) is a store, the storage options that choose the commit, and the request
whose answer the gate drops (:data:`helpers.lost_answer.gate.KINDS`):

* ``deltalake-s3-unsafe-rename``: ``AWS_S3_ALLOW_UNSAFE_RENAME=true`` (0.14.0, 0.22.3): the commit is
  a copy of a temporary file to ``N.json``, unconditional; the copy's answer is dropped;
* ``deltalake-s3-dynamodb-lease``: the dynamodb_lock crate's lease (0.14.0): the same copy, under
  the lease;
* ``deltalake-s3-dynamodb``: the DynamoDB log store (0.22.3 to 1.5.1): its conditional ``PutItem``
  claiming ``N.json``;
* ``deltalake-s3-conditional-put``: ``PUT N.json`` with ``If-None-Match`` (0.22.3 when asked, by
  ``conditional_put=etag``; the default from 0.23.0);
* ``deltalake-azure``: Azure Blob's put-if-absent (every era).

Each (path, era) runs in one process of the era's Python (:mod:`helpers.lost_answer.deltalake_worker`)
behind a gate of its own; then every table is read from storage.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from helpers.bench.meter import upstream
from helpers.ground import eras
from helpers.lost_answer import trials
from helpers.lost_answer.gate import LostAnswerGate
from helpers.stores import old_lock, storage, tables
from helpers.writers.deltalake_engine import has_commit_properties

WITH_REMEDIES = (trials.NO_REMEDY, "app-transaction", "app-transaction-no-retries")
WORKER = "helpers.lost_answer.deltalake_worker"
WORKER_TIMEOUT_S = 3600.0
"""A whole era's trials in one process: far more than they take; a hung store ends the run."""


@dataclass(frozen=True)
class Path_:
    name: str
    store: str
    backend: str
    """``s3`` or ``azure``: which emulator the gate stands in front of."""
    fault: str
    eras: tuple[str, ...]
    options: Callable[[str], dict[str, str]]
    """The storage options for an era."""
    dynamodb: bool = False
    """Route DynamoDB through the gate too (its claims are the fault)."""
    per_table: Callable[[str], dict[str, str]] | None = None
    """Options of a table's own (the lease's lock name)."""


def _conditional_put(era: str) -> dict[str, str]:
    if eras.era(era).deltalake_version == "0.22.3":
        return tables.s3_storage_options(conditional_put="etag")
    return tables.s3_storage_options()


PATHS = (
    Path_(
        "deltalake-s3-unsafe-rename",
        "S3",
        "s3",
        "put",
        (eras.OLD_LOCK, eras.SEEDS),
        lambda era: tables.s3_storage_options(unsafe_rename=True),
    ),
    Path_(
        "deltalake-s3-dynamodb-lease",
        "S3 + DynamoDB",
        "s3",
        "put",
        (eras.OLD_LOCK,),
        lambda era: {
            k: v
            for k, v in tables.s3_storage_options(
                locking_provider="dynamodb", lock_client="dynamodb_lock", lock_partition_key="-"
            ).items()
            if k != "DYNAMO_LOCK_PARTITION_KEY_VALUE"
        },
        per_table=lambda name: {"DYNAMO_LOCK_PARTITION_KEY_VALUE": name},
    ),
    Path_(
        "deltalake-s3-dynamodb",
        "S3 + DynamoDB",
        "s3",
        "dynamodb-claim",
        (
            eras.SEEDS,
            "deltalake-0.25.5",
            eras.LAST_COMMITTING_BLIND_APPEND,
            eras.LAST_VACUUM_FULL_WITHIN_RETENTION,
            eras.DYNAMODB_INTEROP,
        ),
        lambda era: tables.s3_storage_options(locking_provider="dynamodb"),
        dynamodb=True,
    ),
    Path_(
        "deltalake-s3-conditional-put",
        "S3",
        "s3",
        "conditional-put",
        (
            eras.SEEDS,
            "deltalake-0.25.5",
            eras.LAST_COMMITTING_BLIND_APPEND,
            eras.LAST_VACUUM_FULL_WITHIN_RETENTION,
            eras.DYNAMODB_INTEROP,
            eras.LAST_REFUSING_DOUBLE_OPTIMIZE,
            eras.CURRENT,
        ),
        _conditional_put,
    ),
    Path_(
        "deltalake-azure",
        "Azure Blob",
        "azure",
        "conditional-put",
        (
            eras.OLD_LOCK,
            eras.SEEDS,
            "deltalake-0.25.5",
            eras.DYNAMODB_INTEROP,
            eras.LAST_REFUSING_DOUBLE_OPTIMIZE,
            eras.CURRENT,
        ),
        lambda era: tables.azure_storage_options(),
    ),
)
LEFT_OUT = {
    ("deltalake-azure", eras.LAST_COMMITTING_BLIND_APPEND): (
        "deltalake 1.1.4 creates a table on Azurite (the Azure emulator the workbook pins) and reads it "
        "back, but its first append fails before any commit request (DeltaError: Invalid table version: "
        "0), with or without the gate"
    ),
    ("deltalake-azure", eras.LAST_VACUUM_FULL_WITHIN_RETENTION): (
        "deltalake 1.5.0 cannot read back a table it has just created on Azurite (the Azure emulator "
        "the workbook pins): TableNotFoundError: No files in log segment, with or without the gate"
    ),
}
"""(path, era) pairs that stand for a row of the page but cannot run here, each with why: the page
says "not measured" for them."""


def remedies_of(era: str) -> tuple[str, ...]:
    """The remedies an era can run: none where deltalake has no app transactions (0.14.0)."""
    version = eras.era(era).deltalake_version
    return WITH_REMEDIES if has_commit_properties(version) else (trials.NO_REMEDY,)


def _prepare(path: Path_) -> None:
    if path.backend == "azure":
        storage.ensure_container()
    else:
        storage.ensure_bucket()
    if path.fault == "dynamodb-claim":
        storage.ensure_lock_table()
    if path.per_table:
        old_lock.ensure_table()


def _uri(path: Path_, name: str) -> str:
    return tables.azure_uri(name) if path.backend == "azure" else tables.s3_uri(name)


def run_one(path: Path_, era: str, folder: Path, run_name: str, count: int) -> list[trials.Trial]:
    """``count`` trials of each remedy of ``era`` on ``path``, each a fresh table."""
    _prepare(path)
    release = eras.era(era).deltalake_version
    planned = [
        (remedy, number, f"lost-answer/{run_name}/{path.name}/{release}/{remedy}/t{number:02d}")
        for remedy in remedies_of(era)
        for number in range(1, count + 1)
    ]
    work = folder / "work" / f"{path.name}-{release}"
    work.mkdir(parents=True, exist_ok=True)
    with LostAnswerGate(path.fault, upstream(path.backend)) as gate:
        options = path.options(era)
        options = (
            gate.route_azure(options)
            if path.backend == "azure"
            else gate.route(options, dynamodb=path.dynamodb)
        )
        spec = {
            "storage_options": options,
            "trials": [
                {
                    "table_uri": _uri(path, name),
                    "remedy": remedy,
                    "app_id": f"job-{number}",
                    "storage_options": path.per_table(name) if path.per_table else {},
                }
                for remedy, number, name in planned
            ],
        }
        (work / "spec.json").write_text(json.dumps(spec, indent=1))
        done = eras.run_in_era(
            era,
            ["-m", WORKER, str(work / "spec.json"), str(work / "result.json")],
            timeout=WORKER_TIMEOUT_S,
        )
        (work / "stderr.txt").write_text(done.stderr)
        if done.returncode != 0:
            raise RuntimeError(
                f"The {era} trials of {path.name} failed (exit {done.returncode}): "
                f"{done.stderr.strip()[-600:]}"
            )
        told = json.loads((work / "result.json").read_text())["trials"]
        dropped = [table for table, _ in gate.dropped]
    records = []
    for (remedy, number, name), said in zip(planned, told, strict=True):
        records.append(
            trials.judged(
                _uri(path, name),
                path=path.name,
                engine="deltalake",
                release=release,
                store=path.store,
                fault=path.fault,
                remedy=remedy,
                trial=number,
                dropped=any(t.endswith(name) for t in dropped),
                told=said["told"],
                steps=said["steps"],
            )
        )
    return records
