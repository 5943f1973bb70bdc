"""One protocol of a torture run: its writer processes on one table, each behind a kill gate,
killed at chosen steps of a commit and started again, and the services stopped and started under
them (:class:`ProtocolRun`); the emulators of a run's own (:func:`private_emulators`).
:mod:`helpers.torture.run` runs the protocols in turn and checks what they left from storage.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers.ground import config, local_processes
from helpers.ground.progress import RunProgress
from helpers.runs import runner
from helpers.stores import services, storage
from helpers.torture import faults, plan, repair_hold
from helpers.torture.plan import Group, Protocol
from helpers.writers import processes
from helpers.writers.protocol import open_barrier

WORKER_MODULE = "helpers.torture.worker"
RUN_TIMEOUT_S = 5400.0
"""A protocol's run that has not ended after 90 minutes is hung (a writer stuck): it is stopped and reported."""
OUTAGE_MAX_S = 120.0
"""A stopped service comes back once a writer has failed for want of it, or after this long."""
POLL_S = 0.05


class TortureError(RuntimeError):
    """The run could not be made or a safe protocol broke a promise; the message names which."""


# ---------------------------------------------------------------------------------------------
# Private emulators
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def private_emulators(folder: Path, names: tuple[str, ...] = ("moto", "azurite")):
    """moto (durable: its journal replays its state when it starts again) and Azurite on free
    ports, state under ``folder``, for this process and the processes it starts; stopped afterwards.
    With ``WORKBOOK_S3_SERVER=versitygw``, a versitygw of its own plays S3 (its objects and
    versions are files, so they survive a restart) and moto DynamoDB alone."""
    variables = (
        "WORKBOOK_MOTO_PORT",
        "WORKBOOK_AZURITE_PORT",
        "WORKBOOK_VERSITYGW_PORT",
        "WORKBOOK_MOTO_DURABLE",
        "WORKBOOK_S3_SERVER",
    )
    saved_env = {k: os.environ.get(k) for k in variables}
    saved_state = config.STATE_DIR
    s3_server = config.s3_server()
    os.environ.update(
        WORKBOOK_MOTO_PORT=str(local_processes.free_port()),
        WORKBOOK_AZURITE_PORT=str(local_processes.free_port()),
        WORKBOOK_VERSITYGW_PORT=str(local_processes.free_port()),
        WORKBOOK_MOTO_DURABLE="1",
        WORKBOOK_S3_SERVER=s3_server,
    )
    if s3_server == "versitygw" and "moto" in names:
        names = (*names, "versitygw")
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


def restarted_together(name: str) -> list[str]:
    """The services a planned restart of ``name`` stops and starts: a protocol's "moto" is the
    AWS store, so every service that now plays S3 or DynamoDB (:func:`helpers.stores.services.plays`)
    goes down and comes back together."""
    if name != "moto":
        return [name]
    return [s.name for s in services.active() if {"s3", "dynamodb"} & set(services.plays(s))]


# ---------------------------------------------------------------------------------------------
# One protocol
# ---------------------------------------------------------------------------------------------


@dataclass(kw_only=True)
class ReportingProcess(processes.EraProcess):
    """A process that leaves its result in a file (a writer, or one of the checker's readers)."""

    result_path: Path


@dataclass(kw_only=True)
class _Incarnation(ReportingProcess):
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

    def __init__(
        self,
        proto: Protocol,
        *,
        run_id: str,
        per_writer: int,
        kills: int,
        restarts: int,
        folder: Path,
        max_commit_retries: int | None = None,
    ) -> None:
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
        self.kill_offered: faults.KillTicket | None = None
        """The kill offered to the running processes' gates, until its victim's death is seen."""
        self.offered_to: list[_Incarnation] = []
        self.restarts_made: list[dict] = []
        self.stop_windows = faults.StopWindows()
        self.repair_hold = repair_hold.RepairHold(alive=self._gate_alive)
        """Shared by the gates of deltalake's DynamoDB log store (:mod:`helpers.torture.repair_hold`)."""
        self.slots: list[_Slot] = []
        ids = iter(self.operations)
        for group in proto.groups:
            for _ in range(group.processes):
                self.slots.append(
                    _Slot(len(self.slots) + 1, group, [next(ids) for _ in range(group.threads)], [])
                )

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
                    whole = text[: text.rfind(b"\n") + 1]
                    inc.journal_read += len(whole)
                    inc.journaled += [
                        json.loads(line) for line in whole.splitlines() if line.strip()
                    ]
                events += inc.journaled
        return events

    def _remaining(self, slot: _Slot) -> tuple[dict, dict]:
        """The operations of a slot's writers not yet started, and each writer's deletable batches."""
        events = self._journal_events()
        started = {(e["writer"], e["op"]) for e in events if e["event"] == "start"}
        acked = {(e["writer"], e["op"]) for e in events if e["event"] == "ack"}
        kinds = {
            (e["writer"], e["op"]): (e["kind"], e.get("target"))
            for e in events
            if e["event"] == "start"
        }
        remaining, deletable = {}, {}
        for w in slot.writers:
            remaining[w] = [o for o in self.operations[w] if (w, o["op"]) not in started]
            appended = [
                op
                for (writer, op) in sorted(acked)
                if writer == w and kinds[(w, op)][0] == "append"
            ]
            targeted = {kinds[k][1] for k in started if k[0] == w and kinds[k][0] == "delete"}
            deletable[w] = [b for b in appended if b not in targeted]
        return remaining, deletable

    def _launch(self, slot: _Slot, *, barrier: bool) -> _Incarnation:
        n = len(slot.incarnations) + 1
        name = f"p{slot.index}.{n}"
        run_dir = self.folder
        gate = None
        options = slot.group.storage_options()
        if (
            self.kills_planned or self.restarts_planned
        ):  # every process gets a gate; the run offers them one kill at a time (_offer_kill)
            backend = "azure" if slot.group.commit == "azure" else "s3"
            gate = faults.KillGate(
                config.azurite_endpoint() if backend == "azure" else config.s3_emulator_endpoint(),
                claim_style="dynamodb" if slot.group.commit == "s3-dynamodb" else "object",
                windows=self.stop_windows,
                repairs=self.repair_hold
                if slot.group.engine == "deltalake" and slot.group.commit == "s3-dynamodb"
                else None,
            )
            options = (
                gate.route_azure(options)
                if backend == "azure"
                else gate.route(options, dynamodb=slot.group.commit == "s3-dynamodb")
            )
        remaining, deletable = self._remaining(slot)
        inc = _Incarnation(
            name=name,
            era=slot.group.era,
            module=WORKER_MODULE,
            spec_path=run_dir / f"{name}.json",
            stdout_path=run_dir / f"{name}.out",
            stderr_path=run_dir / f"{name}.err",
            journal_path=run_dir / f"{name}.journal",
            result_path=run_dir / f"{name}.result.json",
            gate=gate,
        )
        spec = {
            "process": name,
            "writers": slot.writers,
            "engine": slot.group.engine,
            "era": slot.group.era,
            "table_uri": self.uri(slot.group),
            "storage_options": options,
            "operations": remaining,
            "deletable": deletable,
            "journal_path": str(inc.journal_path),
            "result_path": str(inc.result_path),
            "barrier_dir": str(run_dir) if barrier else None,
            "runner_pid": os.getpid(),
            "max_commit_retries": self.max_commit_retries,
        }
        inc.spec_path.write_text(json.dumps(spec, indent=1))
        processes.launch([inc], new_session=True)
        if gate is not None:
            gate.pgid = inc.process.pid
        slot.incarnations.append(inc)
        return inc

    def _gate_alive(self, gate: faults.KillGate) -> bool:
        """Whether the process behind ``gate`` runs (or is being started: its gate comes first)."""
        if gate.killed is not None:
            return False
        for slot in self.slots:
            for inc in slot.incarnations:
                if inc.gate is gate:
                    return inc.process.poll() is None
        return True

    def _failure(self, inc: _Incarnation) -> TortureError:
        try:
            detail = json.loads(inc.result_path.read_text()).get("error")
        except (OSError, ValueError):
            detail = (
                f"no result (exit {inc.process.poll()}): {processes.stderr_tail(inc.stderr_path)}"
            )
        return TortureError(f"{self.proto.name}: writer process {inc.name} failed: {detail}")

    # -- the run ----------------------------------------------------------------------------------

    KILLS_SPREAD = 0.75
    """Kills are spread evenly over the first three quarters of a run (by operations done: the
    first once the table has some history), so each comes under contention."""

    def _offer_kill(self, done: int, total: int) -> None:
        """When the next kill is due and the last one's victim has been seen dead, offer the next
        kill point to the running processes' gates at once (one :class:`faults.KillTicket`): the
        first writer to reach that point is killed. The last victim's slot is left out while
        another runs, so kills go round the processes; once every process offered a kill has
        ended without reaching its point, it is offered to all that still run. Offered to one
        process, a kill at ``claimed`` was lost whenever that process's remaining operations all
        lost their races (a lost race claims nothing); offered to all, it is lost only if no
        writer commits again."""
        running = [s.current for s in self.slots if s.current.process.poll() is None]
        if self.kill_offered is not None:
            if self.kill_offered.taken_by is None and not any(
                inc.process.poll() is None for inc in self.offered_to
            ):
                self._offer_to(running)
            return
        if not self.kills_left or not running:
            return
        k = len(self.kills_planned) - len(self.kills_left)
        if done < total * self.KILLS_SPREAD * (k + 0.5) / len(self.kills_planned):
            return
        self.kill_offered = faults.KillTicket(self.kills_left.pop(0))
        last = self.kills_made[-1]["slot"] if self.kills_made else None
        others = [inc for inc in running if self.slots[last - 1].current is not inc] if last else []
        self._offer_to(others or running)

    def _offer_to(self, incarnations: list[_Incarnation]) -> None:
        self.offered_to = incarnations
        for inc in incarnations:
            inc.gate.arm(self.kill_offered)

    def _restart_due(self, done: int, total: int) -> bool:
        """Restarts are spread evenly over the run, by operations done (acknowledged or failed)."""
        made = len(self.restarts_made)
        return made < self.restarts_planned and done >= total * (made + 1) / (
            self.restarts_planned + 1
        )

    def _restart(self, name: str) -> None:
        """Stop ``name`` (with the servers it stands for: :func:`restarted_together`); start it
        again once a writer failed for want of it (or after OUTAGE_MAX_S)."""
        gates = {id(s.current.gate): s.current for s in self.slots if s.current.gate is not None}
        together = restarted_together(name)
        with self.stop_windows.closed(
            lambda gate: gate in gates and gates[gate].process.poll() is None
        ):
            t_stop = time.time()
            services.down(
                together, quiet=True
            )  # its state stays on disk: Azurite's folder, moto's journal, versitygw's files
        deadline = time.monotonic() + OUTAGE_MAX_S
        while time.monotonic() < deadline:
            noticed = any(
                e["event"] == "fail" and e.get("service_down") and e["t"] >= t_stop
                for e in self._journal_events()
            )
            if noticed or all(s.current.process.poll() is not None for s in self.slots):
                break
            time.sleep(POLL_S)
        t_start = time.time()
        services.up(together, quiet=True)
        endpoints = [
            f"{services.SERVICES[n].host()}:{services.SERVICES[n].port()}" for n in together
        ]
        self.restarts_made.append(
            {
                "service": "+".join(together),
                "endpoint": " ".join(endpoints),
                "t_stop": t_stop,
                "t_start": t_start,
                "t_answering": time.time(),
                "outage_s": time.time() - t_stop,
            }
        )

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
                raise TortureError(
                    f"{self.proto.name}: the writers were not set up within {RUN_TIMEOUT_S:.0f} s."
                )
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
            shown.status(
                f"{acknowledged}/{total} acknowledged, {len(self.kills_made)} killed, {len(self.restarts_made)} restarts"
            )
            done = sum(1 for e in events if e["event"] in ("ack", "fail"))
            self._offer_kill(done, total)
            alive = [s.current.name for s in self.slots if s.current.process.poll() is None]
            if self._restart_due(done, total) and not still_setting_up(events, alive):
                self._restart(
                    self.proto.restarts[len(self.restarts_made) % len(self.proto.restarts)]
                )
            running = 0
            for slot in self.slots:
                inc = slot.current
                code = inc.process.poll()
                if code is None:
                    running += 1
                    continue
                if inc.t_exited is None:
                    inc.t_exited = time.time()
                    if inc.gate is not None and inc.gate.killed is not None:
                        inc.killed = True
                        self.kill_offered = None  # its victim is dead: the next may be offered
                        self.kills_made.append(
                            {**inc.gate.killed, "process": inc.name, "slot": slot.index}
                        )
                        remaining, _ = self._remaining(slot)
                        if any(remaining.values()):
                            self._launch(slot, barrier=False)
                            running += 1
                    elif not inc.result_path.exists() or json.loads(
                        inc.result_path.read_text()
                    ).get("error"):
                        raise self._failure(inc)
            if running == 0:
                shown.finish(
                    f"{acknowledged}/{total} acknowledged, {len(self.kills_made)} killed, {len(self.restarts_made)} restarts"
                )
                return
            time.sleep(POLL_S)
        raise TortureError(f"{self.proto.name}: the run did not end within {RUN_TIMEOUT_S:.0f} s.")


def still_setting_up(events: list[dict], running: list[str]) -> list[str]:
    """The running processes that have not journaled ``go`` yet: still opening their table. A
    service is never stopped under them (deltalake 1.5.1, opening a table while DynamoDB is down,
    fails with "error in DynamoDb", which names no service)."""
    went = {e["process"] for e in events if e["event"] == "go"}
    return [name for name in running if name not in went]
