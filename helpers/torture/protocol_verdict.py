"""One protocol's verdict after its run (:class:`Verdict`): the operations as its writers journaled
them, the next reader's recovery of the table, every figure the checker reads from storage
(:mod:`helpers.torture.check`), and every reader's rows compared with the log's, in the checker's
reader processes (:func:`run_reader`). :mod:`helpers.torture.run` makes one per protocol it runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from helpers.delta import integrity, landing
from helpers.runs import audit
from helpers.torture import check as checker
from helpers.torture.protocol_run import WORKER_MODULE, ProtocolRun, ReportingProcess, TortureError
from helpers.writers import processes

READER_TIMEOUT_S = 1800.0
"""A checker's reader that has not finished in 30 minutes is hung (reading takes seconds to a minute)."""


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


def run_reader(
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
            "repairs_held": prun.repair_hold.held,
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
        stores = (
            ("s3", "dynamodb") if first.commit == "s3-dynamodb" else ("s3",)
        )  # for a Spark reader
        self._read("recovery", first.era, first.engine, [table], stores)
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
            items = checker.lock_items([*self.prun.table_uris, spark_uri(self.uri)])
            incomplete = checker.incomplete_lock_items(items)
            self.row["incomplete_lock_items"] = len(incomplete)
            if incomplete:
                self.problems.append(
                    f"{len(incomplete)} DynamoDB item(s) still incomplete after the next reader: {incomplete[:5]}"
                )
            phantom = checker.complete_items_without_commit(items, check.commit_versions)
            self.row["complete_items_without_commit"] = len(phantom)
            if phantom:
                self.problems.append(
                    f"{len(phantom)} DynamoDB item(s) complete without their commit file "
                    f"({phantom[:5]}): every later commit through the lock table fails "
                    "(findings/deltalake-dynamodb-reclaim-after-a-refused-copy)"
                )
        if first.engine == "deltalake" and self.proto.safe:
            self._read("vacuum", first.era, "deltalake", [{**table, "vacuum": True}])
        _, kernel = audit.rows_by_batch(self.uri, first.storage_options(), None)
        self.readers["kernel deltalake"] = {"rows_by_batch": kernel}

    def _read(self, name: str, era: str, engine: str, tables: list[dict], stores=()) -> None:
        """One of the checker's readers (:func:`run_reader`) on the table: its result in
        ``readers``, or its failure among the problems (a table its own library cannot read or
        vacuum has broken a promise; the run goes on, so that its figures are saved)."""
        try:
            self.readers[name] = run_reader(self.prun.folder, name, era, engine, tables, stores)[0]
        except TortureError as failed:
            self.problems.append(str(failed))

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
