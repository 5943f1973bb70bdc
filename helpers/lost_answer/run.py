"""A whole lost-answer run: every path of deltalake (:mod:`.deltalake_paths`), Delta Spark
(:mod:`.spark_paths`) and the catalog (:mod:`.catalog_path`), into ``build/lost_answer/<name>/``:
``trials.csv`` (:data:`helpers.lost_answer.trials.COLUMNS`), ``summary.txt`` (each path, release and
remedy: its trials by outcome, and the worst) and ``meta.json``, written last (date, machine,
versions, trials per cell, what was left out and why). :func:`problems` is what keeps a run from
being published: a trial whose answer the gate never dropped is no trial.
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from helpers.bench.run import machine
from helpers.ground import config, eras
from helpers.lost_answer import deltalake_paths, trials

DEFAULT_OUT = config.BUILD_DIR / "lost_answer"
PARTS = ("deltalake", "spark", "catalog")


def _spark(folder: Path, count: int, progress) -> list[trials.Trial]:
    from helpers.lost_answer import spark_paths

    return spark_paths.run(folder, count, progress)


def _catalog(folder: Path, count: int, progress) -> list[trials.Trial]:
    from helpers.lost_answer import catalog_path

    return catalog_path.run(folder, count, progress)


def _deltalake(folder: Path, count: int, progress) -> list[trials.Trial]:
    records = []
    for path in deltalake_paths.PATHS:
        for era in path.eras:
            started = time.monotonic()
            found = deltalake_paths.run_one(path, era, folder, folder.name, count)
            records += found
            progress(
                f"{path.name} {eras.era(era).deltalake_version}: {len(found)} trials, "
                f"{time.monotonic() - started:.1f} s"
            )
    return records


RUNNERS: dict[str, Callable] = {"deltalake": _deltalake, "spark": _spark, "catalog": _catalog}


def summary(records: list[trials.Trial]) -> list[str]:
    """One line per path, release and remedy: its trials by outcome, worst first."""
    cells = collections.defaultdict(collections.Counter)
    for r in records:
        cells[(r.path, r.release, r.remedy)][r.outcome] += 1
    lines = []
    for (path, release, remedy), counted in cells.items():
        shown = ", ".join(f"{counted[o]} {o}" for o in reversed(trials.OUTCOMES) if counted[o])
        lines.append(f"{path} {release} [{remedy}]: {shown}")
    return lines


def problems(records: list[trials.Trial]) -> list[str]:
    missed = [f"{r.path} {r.release} {r.remedy} #{r.trial}" for r in records if not r.dropped]
    return (
        [f"the gate dropped no answer in {len(missed)} trials: {', '.join(missed[:5])}"]
        if missed
        else []
    )


def run(
    name: str, parts=PARTS, count: int = trials.TRIALS, out: Path = DEFAULT_OUT, progress=print
) -> Path:
    """Run ``parts``, ``count`` trials per cell, into ``out/name``; returns the folder."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "meta.json").unlink(missing_ok=True)
    started = time.monotonic()
    records: list[trials.Trial] = []
    for part in parts:
        records += RUNNERS[part](folder, count, progress)
    trials.write_csv(records, folder / trials.CSV_NAME)
    lines = summary(records)
    (folder / "summary.txt").write_text("\n".join(lines) + "\n")
    meta = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "parts": list(parts),
        "trials_per_cell": count,
        "trials": len(records),
        "seconds": round(time.monotonic() - started, 1),
        "left_out": {
            f"{p} {eras.era(e).deltalake_version}": why
            for (p, e), why in deltalake_paths.LEFT_OUT.items()
        },
        "problems": problems(records),
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return folder


def folder_problems(folder: Path) -> list[str]:
    """What keeps a finished run's folder from being published: its own problems, and every
    (path, release) of the answer page's rows missing (a run of some parts only is not the answer)."""
    meta = json.loads((folder / "meta.json").read_text())
    found = meta["problems"][:]
    missing = sorted(set(PARTS) - set(meta["parts"]))
    if missing:
        found.append(f"the run left out {', '.join(missing)}: the committed run has every part")
    if meta["trials_per_cell"] < trials.TRIALS:
        found.append(f"{meta['trials_per_cell']} trials per cell, fewer than {trials.TRIALS}")
    return found


def publish(folder: Path) -> list[Path]:
    """Copy a run's trials and meta into ``data/`` (:data:`helpers.lost_answer.trials.COMMITTED_CSV`)."""
    import shutil

    target = trials.COMMITTED_CSV
    shutil.copyfile(folder / trials.CSV_NAME, target)
    shutil.copyfile(folder / "meta.json", target.with_name(trials.META_NAME))
    return [target, target.with_name(trials.META_NAME)]
