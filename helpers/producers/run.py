"""Running producers and a committer against one table: the processes, the faults, the figures.

::

    from helpers.producers import run, scenarios
    table = run.Table.fresh("s3", "notebook-14/demo")
    shown = scenarios.survive_faults(table, producers=3, files=4)  # kills, a lost answer, the verdict
    row = scenarios.throughput(table, producers=4, files=20)       # rows/s and commits/s, one committer

Each producer and the committer is a process of its own in the current era's Python
(:mod:`helpers.writers.processes`, forked by :mod:`helpers.ground.forkserver`), in a process group of its own so
a SIGKILL takes it whole. Processes meet at a barrier; once every producer has exited the runner
writes ``stop`` and the committer exits when the queue is empty.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.bench.meter import upstream
from helpers.ground import config, eras
from helpers.ground.progress import RunProgress
from helpers.producers import check, cleanup, faults, layout
from helpers.stores import storage, tables
from helpers.writers import processes
from helpers.writers.protocol import open_barrier

RESULTS_DIR = config.BUILD_DIR / "producers"
BACKENDS = ("local", "azure", "s3")
RUN_TIMEOUT_S = 900.0
"""A run not over after 15 minutes is hung (a process stuck on a dead service), not slow."""


class ProducersError(RuntimeError):
    """A run could not be made or a process failed; the message says which and why."""


@dataclass
class Table:
    """One table of a run: where it is, its storage options, and its run folder (specs, results, logs)."""

    backend: str
    uri: str
    options: dict[str, str]
    run_dir: Path
    rows: int = 10
    committer: str = "c1"

    @classmethod
    def fresh(cls, backend: str, name: str, *, rows: int = 10) -> "Table":
        """An empty table named ``name`` on ``backend`` (``local``, ``azure`` or ``s3``), created anew."""
        from deltalake import DeltaTable

        if backend == "local":
            uri, options = str(tables.local_table_path(name)), {}
        elif backend == "azure":
            storage.ensure_container()
            uri, options = tables.azure_uri(name), tables.azure_storage_options()
        elif backend == "s3":
            storage.ensure_bucket()
            uri, options = tables.s3_uri(name), tables.s3_storage_options()
        else:
            raise ProducersError(f"Unknown backend {backend!r}; choose from {', '.join(BACKENDS)}.")
        storage.remove_table(uri)
        if backend == "local":
            Path(uri).mkdir(parents=True, exist_ok=True)
        DeltaTable.create(uri, layout.schema(), storage_options=options)
        run_dir = RESULTS_DIR / "runs" / name
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in run_dir.rglob("*"):
            if stale.is_file():
                stale.unlink()
        return cls(backend, uri, options, run_dir, rows)

    def route(self, gate) -> dict[str, str]:
        """The table's options through a gate or meter (in front of this backend's emulator)."""
        return (
            gate.route_azure(self.options) if self.backend == "azure" else gate.route(self.options)
        )

    def gate(self, kind):
        """A gate of ``kind`` (:class:`faults.LostAnswerGate`, :class:`faults.KillGate`) in front of this backend's emulator."""
        if self.backend == "local":
            raise ProducersError(
                "A gate stands in front of an emulator; a local table has none (use azure or s3)."
            )
        return (
            kind(upstream(self.backend), claim_style="object")
            if kind is faults.KillGate
            else kind(upstream(self.backend))
        )

    def verdict(self, files_per_producer: dict[int, int]) -> check.Verdict:
        return check.exactly_once(
            self.uri, self.options, layout.expected_ids(files_per_producer, self.rows)
        )

    def clean_up(self, *, orphans_older_than_s: float | None = 0.0) -> dict[str, int]:
        return cleanup.clean_up(self.uri, self.options, orphans_older_than_s=orphans_older_than_s)

    def remove(self) -> None:
        storage.remove_table(self.uri)


@dataclass(kw_only=True)
class _Process(processes.EraProcess):
    result_path: Path

    def result(self) -> dict | None:
        """The process's record, or None if it left none (it was killed)."""
        return json.loads(self.result_path.read_text()) if self.result_path.exists() else None

    @property
    def exit_code(self) -> int | None:
        return self.process.poll() if self.process is not None else None


class Phase:
    """Processes started together and released at one barrier (a restart is a new phase)."""

    def __init__(self, table: Table, name: str) -> None:
        self.table, self.dir, self.procs = table, table.run_dir / name, []
        self.dir.mkdir(parents=True, exist_ok=True)
        self.stop_file = self.dir / "stop"

    def _add(self, name: str, module: str, spec: dict) -> _Process:
        proc = _Process(
            name=name,
            era=eras.CURRENT,
            module=module,
            spec_path=self.dir / f"{name}.json",
            result_path=self.dir / f"{name}.result.json",
            stdout_path=self.dir / f"{name}.out",
            stderr_path=self.dir / f"{name}.err",
        )
        spec = {
            "process": name,
            "table_uri": self.table.uri,
            "barrier_dir": str(self.dir),
            "runner_pid": os.getpid(),
            "result_path": str(proc.result_path),
            **spec,
        }
        proc.spec_path.write_text(json.dumps(spec, indent=1))
        self.procs.append(proc)
        return proc

    def producer(
        self, number: int, files: int, *, die_after_data: int | None = None, resume: bool = False
    ) -> _Process:
        return self._add(
            f"p{number}",
            "helpers.producers.producer",
            {
                "producer": number,
                "files": files,
                "rows": self.table.rows,
                "storage_options": self.table.options,
                "die_after_data": die_after_data,
                "resume": resume,
            },
        )

    def committer(
        self,
        options: dict[str, str] | None = None,
        *,
        idempotent: bool = True,
        max_files: int = 1000,
    ) -> _Process:
        return self._add(
            "committer",
            "helpers.producers.committer",
            {
                "committer": self.table.committer,
                "storage_options": options or self.table.options,
                "idempotent": idempotent,
                "max_files": max_files,
                "stop_file": str(self.stop_file),
            },
        )

    def start(self, kill_gate: faults.KillGate | None = None) -> float:
        """Start every process, wait until each is at the barrier (or gone), release them; return the time."""
        processes.launch(self.procs, new_session=True)
        if kill_gate is not None:
            kill_gate.pgid = next(p for p in self.procs if p.name == "committer").process.pid
        deadline = time.monotonic() + RUN_TIMEOUT_S
        shown = RunProgress(f"{self.table.backend} {self.dir.name}", len(self.procs))
        if not processes.wait_for_barrier(self.procs, self.dir, deadline, shown):
            raise ProducersError(
                f"The processes were not set up within {RUN_TIMEOUT_S:.0f} s; see {config.shown(self.dir)}."
            )
        missing = processes.absent(self.procs, self.dir)
        if missing:
            raise ProducersError(
                f"{missing[0].name} failed before the barrier: {processes.stderr_tail(missing[0].stderr_path)}"
            )
        self.shown, self.deadline = shown, deadline
        return open_barrier(self.dir)

    def finish(self) -> None:
        """Wait for the producers, write ``stop``, wait for the committer; kill anything past the deadline."""
        producers = [p for p in self.procs if p.name != "committer"]
        try:
            processes.wait_for_exits(producers, self.deadline, self.shown)
            self.stop_file.touch()
            processes.wait_for_exits(self.procs, self.deadline, self.shown)
        finally:
            if processes.kill_stragglers(self.procs):
                raise ProducersError(
                    f"The run did not end within {RUN_TIMEOUT_S:.0f} s; its processes were stopped."
                )
        self.shown.finish(", ".join(f"{p.name} exit {p.exit_code}" for p in self.procs))

    def failed(self, *, expected_kills: tuple[str, ...] = ()) -> list[str]:
        """Processes that ended with an error, other than those meant to be killed."""
        found = []
        for p in self.procs:
            result = p.result()
            if p.name in expected_kills:
                continue
            if result is None or result["error"]:
                found.append(
                    f"{p.name}: {result['error'] if result else processes.stderr_tail(p.stderr_path)}"
                )
        return found
