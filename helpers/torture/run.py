"""Running the torture: for each protocol, its writers on one table, operations contended from
the barrier on, writers killed at chosen steps of a commit and started again, services stopped
and started under them; then every figure from storage (:mod:`helpers.torture.check`).

::

    python -m helpers.torture --name try --protocols azure --per-writer 13 --kills 4 --restarts 1

Everything runs against emulators of its own: moto (with its journal, so it keeps its state
across a restart) and Azurite on free loopback ports, their state under the run's folder, so
stopping them never disturbs anything else using the workbook's emulators.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from helpers import audit, config, integrity, landing, processes, runner, services, storage
from helpers.progress import RunProgress
from helpers.torture import check as checker
from helpers.torture import faults, plan
from helpers.torture.plan import Group, Protocol
from helpers.writers.protocol import open_barrier

if TYPE_CHECKING:
    import pandas as pd

RESULTS_DIR = config.BUILD_DIR / "torture"
WORKER_MODULE = "helpers.torture.worker"
RUN_TIMEOUT_S = 5400.0
"""A protocol's run that has not ended after 90 minutes is hung (a writer stuck): it is stopped and reported."""
OUTAGE_MAX_S = 120.0
"""A stopped service comes back once a writer has failed for want of it, or after this long."""
POLL_S = 0.05
READER_TIMEOUT_S = 1800.0
"""A checker's reader that has not finished in 30 minutes is hung (reading takes seconds to a minute)."""


class TortureError(RuntimeError):
    """The run could not be made or a safe protocol broke a promise; the message names which."""


# ---------------------------------------------------------------------------------------------
# Private emulators
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def private_emulators(folder: Path, names: tuple[str, ...] = ("moto", "azurite")):
    """moto (durable: its journal replays its state when it starts again) and Azurite on free
    ports, state under ``folder``, for this process and the processes it starts; stopped afterwards.
    moto plays S3 here whatever ``WORKBOOK_S3_SERVER`` says: the harness restarts the server that
    plays S3 and DynamoDB as one."""
    saved_env = {k: os.environ.get(k) for k in ("WORKBOOK_MOTO_PORT", "WORKBOOK_AZURITE_PORT", "WORKBOOK_MOTO_DURABLE", "WORKBOOK_S3_SERVER")}
    saved_state = config.STATE_DIR
    os.environ.update(WORKBOOK_MOTO_PORT=str(services.free_port()), WORKBOOK_AZURITE_PORT=str(services.free_port()), WORKBOOK_MOTO_DURABLE="1",
                      WORKBOOK_S3_SERVER="moto")
    config.STATE_DIR = folder
    try:
        services.up(list(names), quiet=True)
        yield
    finally:
        services.down(list(names), quiet=True)
        config.STATE_DIR = saved_state
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


# ---------------------------------------------------------------------------------------------
# One protocol
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class _Reporting(processes.EraProcess):
    """A process that leaves its result in a file (a writer, or one of the checker's readers)."""

    result_path: Path


@dataclass(kw_only=True)
class _Incarnation(_Reporting):
    """One life of a writer process: its journal, and the gate that may kill it."""

    journal_path: Path
    gate: faults.KillGate | None = None
    journal_read: int = 0
    """Bytes of the journal taken so far (whole lines only): the supervisor reads each line once."""
    journaled: list[dict] = field(default_factory=list)


@dataclass
class _Slot:
    """One writer process's place in the run: its writers, and its incarnations (a new one after each kill)."""

    index: int
    group: Group
    writers: list[str]
    incarnations: list[_Incarnation]

    @property
    def current(self) -> _Incarnation:
        return self.incarnations[-1]


class ProtocolRun:
    """One protocol's table, writers and faults (see the module's text)."""

    def __init__(self, proto: Protocol, *, run_id: str, per_writer: int, kills: int, restarts: int, folder: Path,
                 max_commit_retries: int | None = None) -> None:
        self.proto, self.folder = proto, folder
        self.kills_planned = plan.kill_schedule(proto, kills)
        self.kills_left = list(self.kills_planned)
        if restarts and not proto.restarts:
            raise plan.PlanError(f"{proto.name} has no service to restart in the harness.")
        self.restarts_planned = restarts
        self.max_commit_retries = max_commit_retries
        self.name = f"torture/{run_id}/{proto.name}"
        self.operations = plan.operations(proto.writers, per_writer, proto.compactors)
        self.kills_made: list[dict] = []
        self.armed: _Incarnation | None = None
        """The process whose gate is armed, until it is killed or ends."""
        self.restarts_made: list[dict] = []
        self.stop_windows = faults.StopWindows()
        self.slots: list[_Slot] = []
        ids = iter(self.operations)
        for group in proto.groups:
            for _ in range(group.processes):
                self.slots.append(_Slot(len(self.slots) + 1, group, [next(ids) for _ in range(group.threads)], []))

    def uri(self, group: Group) -> str:
        return group.table_uri(self.name)

    @property
    def table_uris(self) -> list[str]:
        return sorted({self.uri(g) for g in self.proto.groups})

    # -- processes --------------------------------------------------------------------------------

    def _journal_events(self) -> list[dict]:
        """Every event the writers have journaled so far. A writer's line is one ``write``, but a
        read may still catch it half written: only lines that end in a newline are taken (the
        rest is read next time). Each journal is read on from where the last call stopped (the
        supervisor asks 20 times a second; reading every journal whole each time cost a full run
        a growing share of a core)."""
        events = []
        for slot in self.slots:
            for inc in slot.incarnations:
                if inc.journal_path.exists():
                    with inc.journal_path.open("rb") as journal:
                        journal.seek(inc.journal_read)
                        text = journal.read()
                    whole = text[:text.rfind(b"\n") + 1]
                    inc.journal_read += len(whole)
                    inc.journaled += [json.loads(line) for line in whole.splitlines() if line.strip()]
                events += inc.journaled
        return events

    def _remaining(self, slot: _Slot) -> tuple[dict, dict]:
        """The operations of a slot's writers not yet started, and each writer's deletable batches."""
        events = self._journal_events()
        started = {(e["writer"], e["op"]) for e in events if e["event"] == "start"}
        acked = {(e["writer"], e["op"]) for e in events if e["event"] == "ack"}
        kinds = {(e["writer"], e["op"]): (e["kind"], e.get("target")) for e in events if e["event"] == "start"}
        remaining, deletable = {}, {}
        for w in slot.writers:
            remaining[w] = [o for o in self.operations[w] if (w, o["op"]) not in started]
            appended = [op for (writer, op) in sorted(acked) if writer == w and kinds[(w, op)][0] == "append"]
            targeted = {kinds[k][1] for k in started if k[0] == w and kinds[k][0] == "delete"}
            deletable[w] = [b for b in appended if b not in targeted]
        return remaining, deletable

    def _launch(self, slot: _Slot, *, barrier: bool) -> _Incarnation:
        n = len(slot.incarnations) + 1
        name = f"p{slot.index}.{n}"
        run_dir = self.folder
        gate = None
        options = slot.group.storage_options()
        if self.kills_planned or self.restarts_planned:  # every process gets a gate; the run arms one at a time (_arm_kill)
            backend = "azure" if slot.group.commit == "azure" else "s3"
            gate = faults.KillGate(config.azurite_endpoint() if backend == "azure" else config.moto_endpoint(),
                                   claim_style="dynamodb" if slot.group.commit == "s3-dynamodb" else "object",
                                   windows=self.stop_windows)
            options = gate.route_azure(options) if backend == "azure" else gate.route(options, dynamodb=slot.group.commit == "s3-dynamodb")
        remaining, deletable = self._remaining(slot)
        inc = _Incarnation(name=name, era=slot.group.era, module=WORKER_MODULE, spec_path=run_dir / f"{name}.json",
                           stdout_path=run_dir / f"{name}.out", stderr_path=run_dir / f"{name}.err", journal_path=run_dir / f"{name}.journal",
                           result_path=run_dir / f"{name}.result.json", gate=gate)
        spec = {"process": name, "writers": slot.writers, "engine": slot.group.engine, "era": slot.group.era,
                "table_uri": self.uri(slot.group), "storage_options": options, "operations": remaining,
                "deletable": deletable, "journal_path": str(inc.journal_path), "result_path": str(inc.result_path),
                "barrier_dir": str(run_dir) if barrier else None, "runner_pid": os.getpid(),
                "max_commit_retries": self.max_commit_retries}
        inc.spec_path.write_text(json.dumps(spec, indent=1))
        processes.launch([inc], new_session=True)
        if gate is not None:
            gate.pgid = inc.process.pid
        slot.incarnations.append(inc)
        return inc

    def _failure(self, inc: _Incarnation) -> TortureError:
        try:
            detail = json.loads(inc.result_path.read_text()).get("error")
        except (OSError, ValueError):
            detail = f"no result (exit {inc.process.poll()}): {processes.stderr_tail(inc.stderr_path)}"
        return TortureError(f"{self.proto.name}: writer process {inc.name} failed: {detail}")

    # -- the run ----------------------------------------------------------------------------------

    KILLS_SPREAD = 0.75
    """Kills are spread evenly over the first three quarters of a run (by operations done: the
    first once the table has some history), so the last ones still find a writer with work left."""

    def _arm_kill(self, done: int, total: int) -> None:
        """When the next kill is due and no gate is armed, arm a running process's gate with the
        next kill point: the processes take turns (after the last victim's slot), passing over
        those with fewer than 2 operations left while any other has more."""
        if self.armed is not None or not self.kills_left:
            return
        k = len(self.kills_planned) - len(self.kills_left)
        if done < total * self.KILLS_SPREAD * (k + 0.5) / len(self.kills_planned):
            return
        left = {s.index: sum(map(len, self._remaining(s)[0].values())) for s in self.slots if s.current.process.poll() is None}
        if not left:
            return
        after = self.kills_made[-1]["slot"] if self.kills_made else 0
        turns = sorted(left, key=lambda index: (index <= after, index))
        victim = next((index for index in turns if left[index] >= 2), max(left, key=left.get))
        self.armed = self.slots[victim - 1].current
        self.armed.gate.arm(self.kills_left.pop(0))

    def _restart_due(self, done: int, total: int) -> bool:
        """Restarts are spread evenly over the run, by operations done (acknowledged or failed)."""
        made = len(self.restarts_made)
        return made < self.restarts_planned and done >= total * (made + 1) / (self.restarts_planned + 1)

    def _restart(self, name: str) -> None:
        """Stop ``name``; start it again once a writer failed for want of it (or after OUTAGE_MAX_S)."""
        gates = {id(s.current.gate): s.current for s in self.slots if s.current.gate is not None}
        with self.stop_windows.closed(lambda gate: gate in gates and gates[gate].process.poll() is None):
            t_stop = time.time()
            services.down([name], quiet=True)  # its state stays on disk: Azurite's folder, moto's journal
        deadline = time.monotonic() + OUTAGE_MAX_S
        while time.monotonic() < deadline:
            noticed = any(e["event"] == "fail" and e.get("service_down") and e["t"] >= t_stop for e in self._journal_events())
            if noticed or all(s.current.process.poll() is not None for s in self.slots):
                break
            time.sleep(POLL_S)
        t_start = time.time()
        services.up([name], quiet=True)
        service = services.SERVICES[name]
        self.restarts_made.append({"service": name, "endpoint": f"{service.host()}:{service.port()}", "t_stop": t_stop,
                                   "t_start": t_start, "t_answering": time.time(), "outage_s": time.time() - t_stop})

    def run(self) -> dict:
        for uri in self.table_uris:
            storage.remove_table(uri)
        first = self.proto.groups[0]
        runner.create_table(self.uri(first).replace("s3a://", "s3://", 1), first.storage_options())
        total = sum(len(ops) for ops in self.operations.values())
        shown = RunProgress(f"{self.proto.name}", total)
        deadline = time.monotonic() + RUN_TIMEOUT_S
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            for slot in self.slots:
                self._launch(slot, barrier=True)
            firsts = [s.current for s in self.slots]
            if not processes.wait_for_barrier(firsts, self.folder, deadline, shown):
                raise TortureError(f"{self.proto.name}: the writers were not set up within {RUN_TIMEOUT_S:.0f} s.")
            missing = processes.absent(firsts, self.folder)
            if missing:
                raise self._failure(missing[0])
            t_go = open_barrier(self.folder)
            self._supervise(total, deadline, shown)
        finally:
            for slot in self.slots:
                processes.kill_stragglers(slot.incarnations)
                for inc in slot.incarnations:
                    if inc.gate is not None:
                        inc.gate.close()
        t_end = time.time()
        events = self._journal_events()
        return {"t_go": t_go, "t_end": t_end, "events": events}

    def _supervise(self, total: int, deadline: float, shown: RunProgress) -> None:
        """Until every writer is done: start a killed process again, make the planned restarts."""
        while time.monotonic() < deadline:
            events = self._journal_events()
            acknowledged = sum(1 for e in events if e["event"] == "ack")
            shown.status(f"{acknowledged}/{total} acknowledged, {len(self.kills_made)} killed, {len(self.restarts_made)} restarts")
            done = sum(1 for e in events if e["event"] in ("ack", "fail"))
            self._arm_kill(done, total)
            alive = [s.current.name for s in self.slots if s.current.process.poll() is None]
            if self._restart_due(done, total) and not still_setting_up(events, alive):
                self._restart(self.proto.restarts[len(self.restarts_made) % len(self.proto.restarts)])
            running = 0
            for slot in self.slots:
                inc = slot.current
                code = inc.process.poll()
                if code is None:
                    running += 1
                    continue
                if inc.t_exited is None:
                    inc.t_exited = time.time()
                    if inc is self.armed:
                        self.armed = None
                        if inc.gate.killed is None:  # it finished before reaching its point: arm another
                            self.kills_left.insert(0, inc.gate.point)
                    if inc.gate is not None and inc.gate.killed is not None:
                        inc.killed = True
                        self.kills_made.append({**inc.gate.killed, "process": inc.name, "slot": slot.index})
                        remaining, _ = self._remaining(slot)
                        if any(remaining.values()):
                            self._launch(slot, barrier=False)
                            running += 1
                    elif not inc.result_path.exists() or json.loads(inc.result_path.read_text()).get("error"):
                        raise self._failure(inc)
            if running == 0:
                shown.finish(f"{acknowledged}/{total} acknowledged, {len(self.kills_made)} killed, {len(self.restarts_made)} restarts")
                return
            time.sleep(POLL_S)
        raise TortureError(f"{self.proto.name}: the run did not end within {RUN_TIMEOUT_S:.0f} s.")


# ---------------------------------------------------------------------------------------------
# Operations as the writers told them, and the check from storage
# ---------------------------------------------------------------------------------------------


def still_setting_up(events: list[dict], running: list[str]) -> list[str]:
    """The running processes that have not journaled ``go`` yet: still opening their table. A
    service is never stopped under them (deltalake 1.5.1, opening a table while DynamoDB is down,
    fails with "error in DynamoDb", which names no service)."""
    went = {e["process"] for e in events if e["event"] == "go"}
    return [name for name in running if name not in went]


def journaled_operations(events: list[dict]) -> list[dict]:
    """One row per operation a writer began: ``outcome`` acknowledged, failed, or killed (begun in
    a process that was killed, and never answered)."""
    ops: dict[tuple[str, int], dict] = {}
    for e in events:
        key = (e.get("writer"), e.get("op"))
        if e["event"] == "start":
            ops[key] = {"writer": e["writer"], "op": e["op"], "kind": e["kind"], "target": e.get("target"),
                        "t_start": e["t"], "outcome": None, "error_class": None, "error": None, "service_down": None,
                        "service_down_found": None}
        elif e["event"] == "ack":
            ops[key].update(outcome=checker.ACKNOWLEDGED, t_done=e["t"])
        elif e["event"] == "fail":
            ops[key].update(outcome="failed", t_done=e["t"], error_class=e["error_class"], error=e["error"],
                            service_down=e.get("service_down"), service_down_found=e.get("service_down_found"))
    for op in ops.values():
        if op["outcome"] is None:
            op["outcome"] = "killed"
    return sorted(ops.values(), key=lambda o: (o["writer"], o["op"]))


def _reader(folder: Path, name: str, era: str, engine: str, tables: list[dict], spark_stores=()) -> list[dict]:
    """Run the checker's reader (:func:`helpers.torture.worker.read_tables`) in an era; its per-table results."""
    proc = _Reporting(name=name, era=era, module=WORKER_MODULE, spec_path=folder / f"{name}.json", stdout_path=folder / f"{name}.out",
                      stderr_path=folder / f"{name}.err", result_path=folder / f"{name}.result.json")
    proc.spec_path.write_text(json.dumps({"process": name, "engine": engine, "tables": tables, "spark_stores": list(spark_stores),
                                          "result_path": str(proc.result_path)}, indent=1))
    processes.launch([proc])
    try:
        proc.process.wait(timeout=READER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        processes.kill_stragglers([proc])
        raise TortureError(f"The reader {name} ({era}, {engine}) did not finish within {READER_TIMEOUT_S:.0f} s.") from None
    try:
        result = json.loads(proc.result_path.read_text())
    except (OSError, ValueError):
        raise TortureError(f"The reader {name} ({era}, {engine}) left no result: {processes.stderr_tail(proc.stderr_path)}") from None
    if result["error"]:
        raise TortureError(f"The reader {name} ({era}, {engine}) failed: {result['error']}")
    return result["tables"]


def spark_uri(uri: str) -> str:
    """The URI Delta Spark reads a table by (s3a:// for S3, abfs:// for Azure)."""
    from helpers import tables

    if uri.startswith("az://"):
        return tables.abfs_uri(uri.split("/", 3)[3])
    return uri.replace("s3://", "s3a://", 1)


def integrity_findings(when: str, check: integrity.Check, examples: int = 2) -> list[str]:
    """The integrity check's problems, one line per kind: how many, and the first ``examples``
    (a table an unsafe protocol damaged can have hundreds of one kind)."""
    by_kind: dict[str, list[integrity.Problem]] = {}
    for problem in check.problems:
        by_kind.setdefault(problem.kind, []).append(problem)
    return [f"{when}: {len(found)} x {kind} (e.g. {'; '.join(str(p) for p in found[:examples])})"
            for kind, found in by_kind.items()]


class Verdict:
    """One protocol's figures and, for a safe protocol, every promise it broke (``problems``)."""

    def __init__(self, prun: ProtocolRun, outcome: dict) -> None:
        self.prun, self.proto = prun, prun.proto
        self.operations = journaled_operations(outcome["events"])
        self.row = {"protocol": self.proto.name, "label": self.proto.label, "safe": self.proto.safe,
                    "writers": self.proto.writers, "processes": len(prun.slots), "planned": sum(map(len, prun.operations.values())),
                    "wall_s": outcome["t_end"] - outcome["t_go"], "kills_planned": len(prun.kills_planned),
                    "kills": len(prun.kills_made), "restarts_planned": prun.restarts_planned, "restarts": len(prun.restarts_made)}
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
        stores = ("s3", "dynamodb") if first.commit == "s3-dynamodb" else ("s3",)  # for a Spark reader
        self.readers["recovery"] = _reader(folder, "recovery", first.era, first.engine, [table], stores)[0]
        self.row["recovered_by"] = f"{first.engine} ({first.era})"
        check = integrity.check_table(self.uri)
        self.problems += integrity_findings("table", check)
        logged = checker.logged_operations(check)
        self.operations = checker.account(self.operations, logged)
        self.expected = checker.expected_batches(logged)
        verdicts = [o["verdict"] for o in self.operations]
        acknowledged = sum(o["outcome"] == checker.ACKNOWLEDGED for o in self.operations)
        self.row.update(
            operations=len(self.operations), acknowledged=acknowledged,
            failed=sum(o["outcome"] == "failed" for o in self.operations), killed_in_flight=sum(o["outcome"] == "killed" for o in self.operations),
            lost=verdicts.count(checker.LOST), duplicated=verdicts.count(checker.DUPLICATED), landed_unacknowledged=verdicts.count(checker.LANDED),
            versions=len(check.commit_versions) - 1, commits_tagged=len(logged),
            unjournaled_commits=len({e.op for e in logged} - {o["op"] for o in self.operations}),
            appends=sum(o["kind"] == "append" for o in self.operations), deletes=sum(o["kind"] == "delete" for o in self.operations),
            compactions=sum(o["kind"] == "compact" for o in self.operations),
            staged_leftovers=len(check.staged_leftovers), orphans=len(checker.orphans(self.uri, check)),
            expected_rows=len(self.expected) * landing.ROWS_PER_BATCH)
        self.row["loss_rate"] = self.row["lost"] / acknowledged if acknowledged else 0.0
        down = [o for o in self.operations if o["service_down"]]
        self.row["failed_service_down"] = len(down)
        self.row["failed_naming_service"] = sum(any(r["endpoint"] in (o["error"] or "") for r in self.prun.restarts_made) for o in down)
        if self.proto.dynamodb:
            incomplete = checker.incomplete_lock_items([*self.prun.table_uris, spark_uri(self.uri)])
            self.row["incomplete_lock_items"] = len(incomplete)
            if incomplete:
                self.problems.append(f"{len(incomplete)} DynamoDB item(s) still incomplete after the next reader: {incomplete[:5]}")
        if first.engine == "deltalake" and self.proto.safe:
            self.readers["vacuum"] = _reader(folder, "vacuum", first.era, "deltalake", [{**table, "vacuum": True}])[0]
        _, kernel = audit.rows_by_batch(self.uri, first.storage_options(), None)
        self.readers["kernel deltalake"] = {"rows_by_batch": kernel}

    def spark_table(self) -> dict:
        return {"table_uri": spark_uri(self.uri), "vacuum": self.proto.safe and self.proto.groups[0].engine == "spark"}

    def finish(self, spark_result: dict) -> None:
        """With the Spark read in: compare every reader's rows with the log's, count orphans after VACUUM."""
        self.readers["spark"] = spark_result
        if "rows_after_vacuum" in spark_result:
            self.readers["vacuum"] = {"rows_after_vacuum": spark_result["rows_after_vacuum"]}
        for reader, seen in self.readers.items():
            for key in ("rows_by_batch", "rows_after_vacuum"):
                if key in seen:
                    for problem in checker.rows_match(seen[key], self.expected):
                        self.problems.append(f"{reader} read{' after VACUUM' if key != 'rows_by_batch' else ''}: {problem}")
        self.row["readers"] = ", ".join(sorted(self.readers))
        if "vacuum" in self.readers:
            after = integrity.check_table(self.uri)
            self.problems += integrity_findings("after VACUUM", after)
            self.row["orphans_after_vacuum"] = len(checker.orphans(self.uri, after))
            if self.row["orphans_after_vacuum"]:
                self.problems.append(f"{self.row['orphans_after_vacuum']} orphaned data file(s) left after VACUUM")
        if self.row["lost"] or self.row["duplicated"]:
            self.problems.append(f"{self.row['lost']} acknowledged operation(s) lost, {self.row['duplicated']} in the log more than once")
        if self.row["kills"] < self.row["kills_planned"]:
            self.problems.append(f"{self.row['kills']} of {self.row['kills_planned']} planned kills made")
        if self.row["restarts"] < self.row["restarts_planned"]:
            self.problems.append(f"{self.row['restarts']} of {self.row['restarts_planned']} planned restarts made")
        self.row["problems"] = "; ".join(self.problems) if self.proto.safe else ""
        self.row["findings"] = "" if self.proto.safe else "; ".join(self.problems)


# ---------------------------------------------------------------------------------------------
# A whole torture run
# ---------------------------------------------------------------------------------------------


KILL_COLUMNS = ("protocol", "point", "step", "t", "path", "process", "slot")
RESTART_COLUMNS = ("protocol", "service", "endpoint", "t_stop", "t_start", "t_answering", "outage_s")
"""The columns of ``kills.csv`` and ``restarts.csv``, written even when a run had none."""


def torture(protocols=None, *, per_writer: int | dict[str, int] | None = None, kills: int = 0, restarts: int = 0,
            name: str | None = None, max_commit_retries: int | None = None) -> Path:
    """Run each protocol (all by default), save ``protocols.csv``, ``operations.csv``, ``kills.csv``,
    ``restarts.csv`` and ``meta.json`` under ``build/torture/<name>/``, and return that folder.
    Each writer makes ``per_writer`` operations: one number for every protocol, a number per
    protocol (``{"azure": 30, ...}``), or None for the full run's (:func:`plan.full_run_per_writer`).
    Kills go to the safe protocols with kill points, restarts to those with a service to restart. Raises TortureError, after saving, if a safe protocol
    broke a promise."""
    import pandas as pd

    chosen = [plan.protocol(p) for p in (protocols or plan.PROTOCOLS)]
    if isinstance(per_writer, dict) and set(per_writer) != {p.name for p in chosen}:
        raise plan.PlanError(f"per_writer gives counts for {sorted(per_writer)}; the run's protocols are {sorted(p.name for p in chosen)}.")
    counts = {p.name: plan.full_run_per_writer(p.name) if per_writer is None
              else per_writer[p.name] if isinstance(per_writer, dict) else per_writer for p in chosen}
    run_id = name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = RESULTS_DIR / run_id
    shutil.rmtree(folder, ignore_errors=True)  # a run of the same name is replaced, journals and emulators' state too
    started = time.time()
    verdicts = []
    with private_emulators(folder / "emulators"):
        storage.ensure_bucket()
        storage.ensure_lock_table()
        storage.ensure_container()
        for proto in chosen:
            prun = ProtocolRun(proto, run_id=run_id, per_writer=counts[proto.name], kills=kills if proto.kill_points else 0,
                               restarts=restarts if proto.restarts else 0, folder=folder / proto.name,
                               max_commit_retries=max_commit_retries)
            verdict = Verdict(prun, prun.run())
            verdict.recover_and_check()
            verdicts.append(verdict)
        spark_results = _reader(folder, "spark-reader", plan.CURRENT, "spark", [v.spark_table() for v in verdicts],
                                ("s3", "dynamodb", "azure"))
        for verdict, spark_result in zip(verdicts, spark_results):
            verdict.finish(spark_result)
    frames = {
        "protocols": pd.DataFrame([v.row for v in verdicts]),
        "operations": pd.DataFrame([{"protocol": v.proto.name, **{k: o.get(k) for k in (
            "writer", "op", "kind", "target", "outcome", "in_log", "verdict", "error_class", "error", "service_down",
            "service_down_found", "t_start", "t_done")}} for v in verdicts for o in v.operations]),
        "kills": pd.DataFrame([{"protocol": v.proto.name, **k} for v in verdicts for k in v.prun.kills_made], columns=list(KILL_COLUMNS)),
        "restarts": pd.DataFrame([{"protocol": v.proto.name, **r} for v in verdicts for r in v.prun.restarts_made],
                                 columns=list(RESTART_COLUMNS)),
    }
    for stem, frame in frames.items():
        frame.to_csv(folder / f"{stem}.csv", index=False)
    meta = {"run_id": run_id, "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "wall_s": time.time() - started,
            "per_writer": counts, "kills": kills, "restarts": restarts, "protocols": [p.name for p in chosen],
            "machine": {"cpus": os.cpu_count(), "system": f"{platform.system()} {platform.machine()}"}}
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    broken = [f"{v.proto.name}: {v.row['problems']}" for v in verdicts if v.row["problems"]]
    if broken:
        raise TortureError("A safe protocol broke a promise (results saved in " + config.shown(folder) + "):\n" + "\n".join(broken))
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
    published copy too, :mod:`helpers.full_runs`). Raises TortureError, saying how to make one, if
    there is no finished run there."""
    from helpers import full_runs

    folder = Path(run) if isinstance(run, Path) else RESULTS_DIR / run
    if not full_runs.finished(folder):
        raise TortureError(f"No finished torture run in {config.shown(folder)}: `make torture` makes the full one "
                           "(README: \"Torture\"), `python -m helpers.torture --name NAME ...` any other.")
    return Results(folder, json.loads((folder / "meta.json").read_text()),
                   *(full_runs.read_table(folder, table) for table in full_runs.TABLES["torture"]))

