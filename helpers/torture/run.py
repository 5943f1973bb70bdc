"""Running the torture: for each protocol, its writers on one table, operations contended from
the barrier on, writers killed at chosen steps of a commit and started again, services stopped
and started under them (:mod:`helpers.torture.protocol_run`); then every figure from storage
(:mod:`helpers.torture.check`), and the run's results saved and loaded.

::

    python -m helpers.torture --name try --protocols azure --per-writer 13 --kills 4 --restarts 1

Everything runs against emulators of its own: moto (with its journal, so it keeps its state
across a restart) and Azurite on free loopback ports, their state under the run's folder, so
stopping them never disturbs anything else using the workbook's emulators.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.delta import integrity, landing
from helpers.ground import config
from helpers.runs import audit
from helpers.stores import storage
from helpers.torture import check as checker
from helpers.torture import plan
from helpers.torture.protocol_run import (
    WORKER_MODULE,
    ProtocolRun,
    ReportingProcess,
    TortureError,
    private_emulators,
)
from helpers.writers import processes

if TYPE_CHECKING:
    import pandas as pd

RESULTS_DIR = config.BUILD_DIR / "torture"
READER_TIMEOUT_S = 1800.0
"""A checker's reader that has not finished in 30 minutes is hung (reading takes seconds to a minute)."""


# ---------------------------------------------------------------------------------------------
# Operations as the writers told them, and the check from storage
# ---------------------------------------------------------------------------------------------


def journaled_operations(events: list[dict]) -> list[dict]:
    """One row per operation a writer began: ``outcome`` acknowledged, failed, or killed (begun in
    a process that was killed, and never answered)."""
    ops: dict[tuple[str, int], dict] = {}
    for e in events:
        key = (e.get("writer"), e.get("op"))
        if e["event"] == "start":
            ops[key] = {
                "writer": e["writer"],
                "op": e["op"],
                "kind": e["kind"],
                "target": e.get("target"),
                "t_start": e["t"],
                "outcome": None,
                "error_class": None,
                "error": None,
                "service_down": None,
                "service_down_found": None,
            }
        elif e["event"] == "ack":
            ops[key].update(outcome=checker.ACKNOWLEDGED, t_done=e["t"])
        elif e["event"] == "fail":
            ops[key].update(
                outcome="failed",
                t_done=e["t"],
                error_class=e["error_class"],
                error=e["error"],
                service_down=e.get("service_down"),
                service_down_found=e.get("service_down_found"),
            )
    for op in ops.values():
        if op["outcome"] is None:
            op["outcome"] = "killed"
    return sorted(ops.values(), key=lambda o: (o["writer"], o["op"]))


def _reader(
    folder: Path, name: str, era: str, engine: str, tables: list[dict], spark_stores=()
) -> list[dict]:
    """Run the checker's reader (:func:`helpers.torture.worker.read_tables`) in an era; its per-table results."""
    proc = ReportingProcess(
        name=name,
        era=era,
        module=WORKER_MODULE,
        spec_path=folder / f"{name}.json",
        stdout_path=folder / f"{name}.out",
        stderr_path=folder / f"{name}.err",
        result_path=folder / f"{name}.result.json",
    )
    proc.spec_path.write_text(
        json.dumps(
            {
                "process": name,
                "engine": engine,
                "tables": tables,
                "spark_stores": list(spark_stores),
                "result_path": str(proc.result_path),
            },
            indent=1,
        )
    )
    processes.launch([proc])
    try:
        proc.process.wait(timeout=READER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        processes.kill_stragglers([proc])
        raise TortureError(
            f"The reader {name} ({era}, {engine}) did not finish within {READER_TIMEOUT_S:.0f} s."
        ) from None
    try:
        result = json.loads(proc.result_path.read_text())
    except (OSError, ValueError):
        raise TortureError(
            f"The reader {name} ({era}, {engine}) left no result: {processes.stderr_tail(proc.stderr_path)}"
        ) from None
    if result["error"]:
        raise TortureError(f"The reader {name} ({era}, {engine}) failed: {result['error']}")
    return result["tables"]


def spark_uri(uri: str) -> str:
    """The URI Delta Spark reads a table by (s3a:// for S3, abfs:// for Azure)."""
    from helpers.stores import tables

    if uri.startswith("az://"):
        return tables.abfs_uri(uri.split("/", 3)[3])
    return uri.replace("s3://", "s3a://", 1)


def integrity_findings(when: str, check: integrity.Check, examples: int = 2) -> list[str]:
    """The integrity check's problems, one line per kind: how many, and the first ``examples``
    (a table an unsafe protocol damaged can have hundreds of one kind)."""
    by_kind: dict[str, list[integrity.Problem]] = {}
    for problem in check.problems:
        by_kind.setdefault(problem.kind, []).append(problem)
    return [
        f"{when}: {len(found)} x {kind} (e.g. {'; '.join(str(p) for p in found[:examples])})"
        for kind, found in by_kind.items()
    ]


class Verdict:
    """One protocol's figures and, for a safe protocol, every promise it broke (``problems``)."""

    def __init__(self, prun: ProtocolRun, outcome: dict) -> None:
        self.prun, self.proto = prun, prun.proto
        self.operations = journaled_operations(outcome["events"])
        self.row = {
            "protocol": self.proto.name,
            "label": self.proto.label,
            "safe": self.proto.safe,
            "writers": self.proto.writers,
            "processes": len(prun.slots),
            "planned": sum(map(len, prun.operations.values())),
            "wall_s": outcome["t_end"] - outcome["t_go"],
            "kills_planned": len(prun.kills_planned),
            "kills": len(prun.kills_made),
            "restarts_planned": prun.restarts_planned,
            "restarts": len(prun.restarts_made),
            "open_retries": sum(1 for e in outcome["events"] if e["event"] == "open_retry"),
        }
        self.problems: list[str] = []
        self.readers: dict[str, dict] = {}

    @property
    def uri(self) -> str:
        return self.prun.uri(self.proto.groups[0])

    def recover_and_check(self) -> None:
        """The next reader opens the table (finishing incomplete DynamoDB items); then the log,
        the operations, the orphans; then VACUUM (delta-rs protocols; Spark's come with the Spark read)."""
        first = self.proto.groups[0]
        table = {"table_uri": self.prun.uri(first), "storage_options": first.storage_options()}
        folder = self.prun.folder
        stores = (
            ("s3", "dynamodb") if first.commit == "s3-dynamodb" else ("s3",)
        )  # for a Spark reader
        self.readers["recovery"] = _reader(
            folder, "recovery", first.era, first.engine, [table], stores
        )[0]
        self.row["recovered_by"] = f"{first.engine} ({first.era})"
        check = integrity.check_table(self.uri)
        self.problems += integrity_findings("table", check)
        logged = checker.logged_operations(check)
        self.operations = checker.account(self.operations, logged)
        self.expected = checker.expected_batches(logged)
        verdicts = [o["verdict"] for o in self.operations]
        acknowledged = sum(o["outcome"] == checker.ACKNOWLEDGED for o in self.operations)
        self.row.update(
            operations=len(self.operations),
            acknowledged=acknowledged,
            failed=sum(o["outcome"] == "failed" for o in self.operations),
            killed_in_flight=sum(o["outcome"] == "killed" for o in self.operations),
            lost=verdicts.count(checker.LOST),
            duplicated=verdicts.count(checker.DUPLICATED),
            landed_unacknowledged=verdicts.count(checker.LANDED),
            versions=len(check.commit_versions) - 1,
            commits_tagged=len(logged),
            unjournaled_commits=len({e.op for e in logged} - {o["op"] for o in self.operations}),
            appends=sum(o["kind"] == "append" for o in self.operations),
            deletes=sum(o["kind"] == "delete" for o in self.operations),
            compactions=sum(o["kind"] == "compact" for o in self.operations),
            staged_leftovers=len(check.staged_leftovers),
            orphans=len(checker.orphans(self.uri, check)),
            expected_rows=len(self.expected) * landing.ROWS_PER_BATCH,
        )
        self.row["loss_rate"] = self.row["lost"] / acknowledged if acknowledged else 0.0
        down = [o for o in self.operations if o["service_down"]]
        self.row["failed_service_down"] = len(down)
        endpoints = {e for r in self.prun.restarts_made for e in r["endpoint"].split()}
        self.row["failed_naming_service"] = sum(
            any(e in (o["error"] or "") for e in endpoints) for o in down
        )
        if self.proto.dynamodb:
            incomplete = checker.incomplete_lock_items([*self.prun.table_uris, spark_uri(self.uri)])
            self.row["incomplete_lock_items"] = len(incomplete)
            if incomplete:
                self.problems.append(
                    f"{len(incomplete)} DynamoDB item(s) still incomplete after the next reader: {incomplete[:5]}"
                )
        if first.engine == "deltalake" and self.proto.safe:
            self.readers["vacuum"] = _reader(
                folder, "vacuum", first.era, "deltalake", [{**table, "vacuum": True}]
            )[0]
        _, kernel = audit.rows_by_batch(self.uri, first.storage_options(), None)
        self.readers["kernel deltalake"] = {"rows_by_batch": kernel}

    def spark_table(self) -> dict:
        return {
            "table_uri": spark_uri(self.uri),
            "vacuum": self.proto.safe and self.proto.groups[0].engine == "spark",
        }

    def finish(self, spark_result: dict | None) -> None:
        """With the Spark read in (None: the run left it out): compare every reader's rows with the
        log's, count orphans after VACUUM."""
        if spark_result is not None:
            self.readers["spark"] = spark_result
            if "rows_after_vacuum" in spark_result:
                self.readers["vacuum"] = {"rows_after_vacuum": spark_result["rows_after_vacuum"]}
        for reader, seen in self.readers.items():
            for key in ("rows_by_batch", "rows_after_vacuum"):
                if key in seen:
                    for problem in checker.rows_match(seen[key], self.expected):
                        self.problems.append(
                            f"{reader} read{' after VACUUM' if key != 'rows_by_batch' else ''}: {problem}"
                        )
        self.row["readers"] = ", ".join(sorted(self.readers))
        if "vacuum" in self.readers:
            after = integrity.check_table(self.uri)
            self.problems += integrity_findings("after VACUUM", after)
            self.row["orphans_after_vacuum"] = len(checker.orphans(self.uri, after))
            if self.row["orphans_after_vacuum"]:
                self.problems.append(
                    f"{self.row['orphans_after_vacuum']} orphaned data file(s) left after VACUUM"
                )
        if self.row["lost"] or self.row["duplicated"]:
            self.problems.append(
                f"{self.row['lost']} acknowledged operation(s) lost, {self.row['duplicated']} in the log more than once"
            )
        if self.row["kills"] < self.row["kills_planned"]:
            self.problems.append(
                f"{self.row['kills']} of {self.row['kills_planned']} planned kills made"
            )
        if self.row["restarts"] < self.row["restarts_planned"]:
            self.problems.append(
                f"{self.row['restarts']} of {self.row['restarts_planned']} planned restarts made"
            )
        self.row["problems"] = "; ".join(self.problems) if self.proto.safe else ""
        self.row["findings"] = "" if self.proto.safe else "; ".join(self.problems)


# ---------------------------------------------------------------------------------------------
# A whole torture run
# ---------------------------------------------------------------------------------------------


KILL_COLUMNS = ("protocol", "point", "step", "t", "path", "process", "slot")
RESTART_COLUMNS = (
    "protocol",
    "service",
    "endpoint",
    "t_stop",
    "t_start",
    "t_answering",
    "outage_s",
)
"""The columns of ``kills.csv`` and ``restarts.csv``, written even when a run had none."""


def torture(
    protocols=None,
    *,
    per_writer: int | dict[str, int] | None = None,
    kills: int = 0,
    restarts: int = 0,
    name: str | None = None,
    max_commit_retries: int | None = None,
    spark_read: bool = True,
) -> Path:
    """Run each protocol (all by default), save ``protocols.csv``, ``operations.csv``, ``kills.csv``,
    ``restarts.csv`` and ``meta.json`` under ``build/torture/<name>/``, and return that folder.
    Each writer makes ``per_writer`` operations: one number for every protocol, a number per
    protocol (``{"azure": 30, ...}``), or None for the full run's (:func:`plan.full_run_per_writer`).
    Kills go to the safe protocols with kill points, restarts to those with a service to restart.
    ``spark_read=False`` leaves out the Spark read of every table (a JVM: a quicker look; the rows are
    still read by deltalake and the protocol's own reader); a Spark protocol needs it, for its VACUUM.
    Raises TortureError, after saving, if a safe protocol broke a promise."""
    import pandas as pd

    chosen = [plan.protocol(p) for p in (protocols or plan.PROTOCOLS)]
    if not spark_read and any(p.spark for p in chosen):
        raise plan.PlanError(
            "A Spark protocol's VACUUM runs in the Spark read: run it with the Spark read, "
            f"or leave out {', '.join(p.name for p in chosen if p.spark)}."
        )
    if isinstance(per_writer, dict) and set(per_writer) != {p.name for p in chosen}:
        raise plan.PlanError(
            f"per_writer gives counts for {sorted(per_writer)}; the run's protocols are {sorted(p.name for p in chosen)}."
        )
    counts = {
        p.name: plan.full_run_per_writer(p.name)
        if per_writer is None
        else per_writer[p.name]
        if isinstance(per_writer, dict)
        else per_writer
        for p in chosen
    }
    run_id = name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = RESULTS_DIR / run_id
    shutil.rmtree(
        folder, ignore_errors=True
    )  # a run of the same name is replaced, journals and emulators' state too
    started = time.time()
    verdicts = []
    with private_emulators(folder / "emulators"):
        storage.ensure_bucket()
        storage.ensure_lock_table()
        storage.ensure_container()
        for proto in chosen:
            prun = ProtocolRun(
                proto,
                run_id=run_id,
                per_writer=counts[proto.name],
                kills=kills if proto.kill_points else 0,
                restarts=restarts if proto.restarts else 0,
                folder=folder / proto.name,
                max_commit_retries=max_commit_retries,
            )
            verdict = Verdict(prun, prun.run())
            verdict.recover_and_check()
            verdicts.append(verdict)
        spark_results = (
            _reader(
                folder,
                "spark-reader",
                plan.CURRENT,
                "spark",
                [v.spark_table() for v in verdicts],
                ("s3", "dynamodb", "azure"),
            )
            if spark_read
            else [None] * len(verdicts)
        )
        for verdict, spark_result in zip(verdicts, spark_results):
            verdict.finish(spark_result)
    frames = {
        "protocols": pd.DataFrame([v.row for v in verdicts]),
        "operations": pd.DataFrame(
            [
                {
                    "protocol": v.proto.name,
                    **{
                        k: o.get(k)
                        for k in (
                            "writer",
                            "op",
                            "kind",
                            "target",
                            "outcome",
                            "in_log",
                            "verdict",
                            "error_class",
                            "error",
                            "service_down",
                            "service_down_found",
                            "t_start",
                            "t_done",
                        )
                    },
                }
                for v in verdicts
                for o in v.operations
            ]
        ),
        "kills": pd.DataFrame(
            [{"protocol": v.proto.name, **k} for v in verdicts for k in v.prun.kills_made],
            columns=list(KILL_COLUMNS),
        ),
        "restarts": pd.DataFrame(
            [{"protocol": v.proto.name, **r} for v in verdicts for r in v.prun.restarts_made],
            columns=list(RESTART_COLUMNS),
        ),
    }
    for stem, frame in frames.items():
        frame.to_csv(folder / f"{stem}.csv", index=False)
    meta = {
        "run_id": run_id,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "wall_s": time.time() - started,
        "per_writer": counts,
        "kills": kills,
        "restarts": restarts,
        "protocols": [p.name for p in chosen],
        "spark_read": spark_read,
        "s3_server": config.s3_server(),
        "machine": {"cpus": os.cpu_count(), "system": f"{platform.system()} {platform.machine()}"},
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    broken = [f"{v.proto.name}: {v.row['problems']}" for v in verdicts if v.row["problems"]]
    if broken:
        raise TortureError(
            "A safe protocol broke a promise (results saved in "
            + config.shown(folder)
            + "):\n"
            + "\n".join(broken)
        )
    return folder


@dataclass
class Results:
    """A finished run's tables (see :func:`torture`) and its ``meta.json``."""

    folder: Path
    meta: dict
    protocols: pd.DataFrame
    operations: pd.DataFrame
    kills: pd.DataFrame
    restarts: pd.DataFrame


def load(run: str | Path) -> Results:
    """The results of the run named ``run`` (a folder under ``build/torture/``, or a path: a
    published copy too, :mod:`helpers.runs.full_runs`). Raises TortureError, saying how to make one, if
    there is no finished run there."""
    from helpers.runs import full_runs

    folder = Path(run) if isinstance(run, Path) else RESULTS_DIR / run
    if not full_runs.finished(folder):
        raise TortureError(
            f"No finished torture run in {config.shown(folder)}: `make torture` makes the full one "
            "(docs/torture.md), `python -m helpers.torture --name NAME ...` any other."
        )
    return Results(
        folder,
        json.loads((folder / "meta.json").read_text()),
        *(full_runs.read_table(folder, table) for table in full_runs.TABLES["torture"]),
    )
