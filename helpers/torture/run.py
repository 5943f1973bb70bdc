"""Running the torture: for each protocol, its writers on one table, operations contended from
the barrier on, writers killed at chosen steps of a commit and started again, services stopped
and started under them (:mod:`helpers.torture.protocol_run`); then every figure from storage
(:mod:`helpers.torture.protocol_verdict`, :mod:`helpers.torture.check`), and the run's results
saved and loaded.

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
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.ground import config
from helpers.stores import storage
from helpers.torture import plan
from helpers.torture.protocol_run import ProtocolRun, TortureError, private_emulators
from helpers.torture.protocol_verdict import Verdict, run_reader

if TYPE_CHECKING:
    import pandas as pd

RESULTS_DIR = config.BUILD_DIR / "torture"


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
    chosen = [plan.protocol(p) for p in (protocols or plan.PROTOCOLS)]
    counts = _operations_per_writer(chosen, per_writer, spark_read)
    run_id = name or datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = RESULTS_DIR / run_id
    shutil.rmtree(
        folder, ignore_errors=True
    )  # a run of the same name is replaced, journals and emulators' state too
    started = time.time()
    verdicts = _run_protocols(
        chosen,
        counts,
        run_id=run_id,
        folder=folder,
        kills=kills,
        restarts=restarts,
        max_commit_retries=max_commit_retries,
        spark_read=spark_read,
    )
    _save_tables(folder, verdicts)
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


def _operations_per_writer(
    chosen: list[plan.Protocol], per_writer: int | dict[str, int] | None, spark_read: bool
) -> dict[str, int]:
    """Each chosen protocol's operations per writer (see :func:`torture`); raises PlanError for a
    run that cannot be made: a Spark protocol without the Spark read, or counts for other
    protocols."""
    if not spark_read and any(p.spark for p in chosen):
        raise plan.PlanError(
            "A Spark protocol's VACUUM runs in the Spark read: run it with the Spark read, "
            f"or leave out {', '.join(p.name for p in chosen if p.spark)}."
        )
    if isinstance(per_writer, dict) and set(per_writer) != {p.name for p in chosen}:
        raise plan.PlanError(
            f"per_writer gives counts for {sorted(per_writer)}; the run's protocols are {sorted(p.name for p in chosen)}."
        )
    return {
        p.name: plan.full_run_per_writer(p.name)
        if per_writer is None
        else per_writer[p.name]
        if isinstance(per_writer, dict)
        else per_writer
        for p in chosen
    }


def _run_protocols(
    chosen: list[plan.Protocol],
    counts: dict[str, int],
    *,
    run_id: str,
    folder: Path,
    kills: int,
    restarts: int,
    max_commit_retries: int | None,
    spark_read: bool,
) -> list[Verdict]:
    """Each protocol run in turn on the run's own emulators and checked, then every table read by
    Spark (unless ``spark_read`` is False): their verdicts, finished."""
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
        spark_results, spark_failed = [None] * len(verdicts), None
        if spark_read:
            try:
                spark_results = run_reader(
                    folder,
                    "spark-reader",
                    plan.CURRENT,
                    "spark",
                    [v.spark_table() for v in verdicts],
                    ("s3", "dynamodb", "azure"),
                )
            except TortureError as failed:  # every table's Spark read is missing: say so for each
                spark_failed = str(failed)
        for verdict, spark_result in zip(verdicts, spark_results):
            if spark_failed:
                verdict.problems.append(spark_failed)
            verdict.finish(spark_result)
    return verdicts


def _save_tables(folder: Path, verdicts: list[Verdict]) -> None:
    """Save the verdicts' ``protocols.csv``, ``operations.csv``, ``kills.csv`` and
    ``restarts.csv`` under ``folder``."""
    import pandas as pd

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
