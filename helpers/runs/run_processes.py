"""The writer processes of one run (:func:`helpers.runs.runner.run_writers`): the spec each is
given, its files in the run's folder (spec, result, logs), and the row it leaves for the run's
results (its own result, or a failed row saying why there is none).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from helpers import writers
from helpers.delta import landing
from helpers.writers import processes


@dataclass(kw_only=True)
class WriterProcess(processes.EraProcess):
    """A writer process (its barrier name is its writer id)."""

    batch: int
    engine: str
    result_path: Path

    @property
    def writer_id(self) -> str:
        return self.name


def writer_spec(
    run_dir: Path,
    number: int,
    table_uri: str,
    storage_options: dict[str, str],
    engine: str,
    era: str,
    batch: int,
    max_commit_retries: int | None,
    hold_snapshot: bool | None,
) -> writers.WriterSpec:
    """The spec of writer ``w<number>`` of a run in ``run_dir`` (its landing file, result path and
    barrier there); ``hold_snapshot`` None: as its engine can."""
    writer_id = f"w{number}"
    holds = (
        hold_snapshot if hold_snapshot is not None else writers.engine_class(engine).holds_snapshot
    )
    return writers.WriterSpec(
        writer_id=writer_id,
        era=era,
        engine=engine,
        table_uri=table_uri,
        storage_options=dict(storage_options),
        landing_file=str(landing.landing_file(batch, generated_dir=run_dir / "landing")),
        batch=batch,
        result_path=str(run_dir / "results" / f"{writer_id}.json"),
        max_commit_retries=max_commit_retries,
        barrier_dir=str(run_dir / "barrier"),
        hold_snapshot=holds,
        runner_pid=os.getpid(),
    )


def prepare_writers(
    run_dir: Path,
    table_uri: str,
    storage_options: dict[str, str],
    kinds: Sequence[tuple[str, str]],
    batches: Sequence[int],
    max_commit_retries: int | None,
    hold_snapshot: bool | None,
) -> list[WriterProcess]:
    """One writer process per batch, its spec written to the run's ``specs/`` (not started yet)."""
    procs = []
    for number, (batch, (engine, era)) in enumerate(zip(batches, kinds), start=1):
        spec = writer_spec(
            run_dir,
            number,
            table_uri,
            storage_options,
            engine,
            era,
            batch,
            max_commit_retries,
            hold_snapshot,
        )
        writer_id = spec.writer_id
        spec_path = run_dir / "specs" / f"{writer_id}.json"
        spec_path.write_text(spec.to_json())
        procs.append(
            WriterProcess(
                name=writer_id,
                era=era,
                module=writers.MODULE,
                spec_path=spec_path,
                batch=batch,
                engine=engine,
                result_path=Path(spec.result_path),
                stdout_path=run_dir / "logs" / f"{writer_id}.out",
                stderr_path=run_dir / "logs" / f"{writer_id}.err",
            )
        )
    return procs


def result_row(w: WriterProcess, table_uri: str, timeout_s: float) -> dict:
    """The writer's own result, or a failed row saying why there is none."""
    try:
        row = json.loads(w.result_path.read_text())
    except (OSError, ValueError):
        code = w.process.returncode
        if w.killed:
            error_class, message = (
                "Timeout",
                f"still running after {timeout_s:.0f} s; killed by the runner",
            )
        else:
            error_class, message = (
                "NoResult",
                f"exited with code {code} without writing a result (crashed?)",
            )
        row = {
            "writer_id": w.writer_id,
            "era": w.era,
            "engine": w.engine,
            "table_uri": table_uri,
            "batch": w.batch,
            "outcome": writers.FAILED,
            "stage": "unknown",
            "error_class": error_class,
            "error_message": message,
        }
    row.update(
        exit_code=w.process.returncode,
        t_launched=w.t_launched,
        t_exited=w.t_exited,
        stderr_tail=processes.stderr_tail(w.stderr_path),
    )
    return row
