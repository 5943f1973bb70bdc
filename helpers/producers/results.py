"""The full run's results: N producers through one committer beside 8 racing writers, in one run.

``runs``: one row per (backend, producers): rows/s and commits/s through one committer, with the
ratio of its commits/s to the store's serial limit and of its rows/s to 8 racing writers' rows/s
(both measured in the same run by :mod:`helpers.bench`, whose figures are in ``racing``).
``meta``: date, machine, versions, the settings. Saved under ``build/producers/<name>/``;
``make publish RUN=build/producers/full`` copies a run to ``data/full_runs/producers/`` (:func:`publish`)
once :func:`problems` finds none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from helpers.delta import landing
from helpers.ground import config
from helpers.runs import full_runs

KIND = "producers"
TABLES = full_runs.TABLES[KIND]
BACKEND_OF_PROTOCOL = {"azure": "azure", "s3-conditional-put": "s3"}
"""The benchmark's racing-writer protocol on each store this run measures (local disk has none)."""
RACING_WRITERS = 8


EXTRA_TABLES = ("limit", "limit_variants", "profile", "queue")
"""Tables this run writes beside :data:`TABLES`, published with them by :func:`publish`: ``limit``
(the committer alone on staged files, back to back, as it runs by default), ``limit_variants``
(the same for each way of keeping its refresh short, :mod:`helpers.producers.serial_limit`),
``profile`` (each step of a commit, the committer's and a plain append's), ``queue`` (a commit's
cost with 100, 1,000, 10,000 markers waiting)."""


@dataclass
class Results:
    runs: object
    racing: object
    meta: dict
    folder: Path | None = None
    limit: object = None
    limit_variants: object = None
    profile: object = None
    queue: object = None


def store(backend: str, server: str | None) -> str:
    """A store's key in the results: ``local``, ``azure``, ``s3``, or ``s3@versitygw`` when one run
    measures S3 on several servers."""
    return f"{backend}@{server}" if server else backend


def racing_rows(bench_runs) -> list[dict]:
    """The benchmark's rows for the racing writers and the serial limit, by store, with rows/s
    (each of its commits appends one landing batch)."""
    rows = []
    for _, r in bench_runs.iterrows():
        protocol, _, server = r["protocol"].partition(
            "@"
        )  # s3-conditional-put@versitygw: one of several servers
        rows.append(
            {
                "backend": store(BACKEND_OF_PROTOCOL[protocol], server or None),
                "protocol": r["protocol"],
                "writers": int(r["writers"]),
                "commits_per_s": float(r["commits_per_s"]),
                "rows_per_s": float(r["commits_per_s"]) * landing.ROWS_PER_BATCH,
                "ratio_to_serial": float(r["ratio_to_serial"]),
                "lost": int(r["lost"]),
                "failed": int(r["failed"]),
            }
        )
    return rows


def with_ratios(runs, racing):
    """``runs`` with ``ratio_to_serial`` (commits/s against one writer's, same store; and
    ``busy_ratio_to_serial``, the same from the committer's first commit on) and
    ``rows_ratio_to_racing`` (rows/s against 8 racing writers', same store); NaN where the store has none."""
    serial = racing[racing.writers == 1].set_index("backend")
    raced = racing[racing.writers == RACING_WRITERS].set_index("backend")
    runs = runs.copy()
    runs["serial_commits_per_s"] = runs.backend.map(serial.commits_per_s)
    runs["racing_rows_per_s"] = runs.backend.map(raced.rows_per_s)
    runs["ratio_to_serial"] = runs.commits_per_s / runs.serial_commits_per_s
    if "busy_commits_per_s" in runs:
        runs["busy_ratio_to_serial"] = runs.busy_commits_per_s / runs.serial_commits_per_s
    runs["rows_ratio_to_racing"] = runs.rows_per_s / runs.racing_rows_per_s
    return runs


def limit_ratios(limit, racing):
    """``limit`` (the committer's back-to-back commits/s on staged files and one writer appending
    alone, in turns in the same minutes, and their ratio) with ``bench_serial_commits_per_s``: the
    benchmark's one writer on the same store, measured earlier in the run (for comparison)."""
    serial = racing[racing.writers == 1].set_index("backend")
    limit = limit.copy()
    if len(limit):
        limit["bench_serial_commits_per_s"] = limit.backend.map(serial.commits_per_s)
    return limit


def save(results: Results, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in (*TABLES, *EXTRA_TABLES):
        if getattr(results, name) is not None:
            getattr(results, name).to_csv(folder / f"{name}.csv", index=False)
    (folder / "meta.json").write_text(
        json.dumps(results.meta, indent=1)
    )  # last: the run is finished
    results.folder = folder
    return folder


def problems(found: Results) -> list[str]:
    """What keeps a run from standing as the full run: a run of producers, or the committer alone at
    the limit, that lost or duplicated rows, or a racing writer that lost a commit ([] when none did)."""
    said = [
        f"{name}: a run lost or duplicated rows"
        for name, table in {
            "runs": found.runs,
            "limit": found.limit,
            "limit_variants": found.limit_variants,
        }.items()
        if table is not None and len(table) and not table.exactly_once.astype(bool).all()
    ]
    if len(found.racing) and found.racing.lost.sum():
        said.append("racing: a racing writer lost a commit")
    return said


def publish(folder: Path) -> Path:
    """:func:`helpers.runs.full_runs.publish`, then this run's :data:`EXTRA_TABLES` beside its tables."""
    import gzip

    target = full_runs.publish(KIND, folder)
    for name in EXTRA_TABLES:
        if (
            Path(folder) / f"{name}.csv"
        ).is_file():  # mtime 0: publishing the same run twice writes the same bytes
            (target / f"{name}.csv.gz").write_bytes(
                gzip.compress((Path(folder) / f"{name}.csv").read_bytes(), mtime=0)
            )
    return target


def load(folder: str | Path | None = None) -> Results:
    """A saved run (default: the full run, this machine's or the committed copy)."""
    folder = Path(folder) if folder is not None else full_runs.location(KIND)
    if not full_runs.finished(folder):
        raise full_runs.FullRunError(
            f"No producers run in {config.shown(folder)}; `make producers` makes one."
        )
    extra = {  # a table the run left out (``--no-profile``: an empty file) stays None
        name: table
        for name in EXTRA_TABLES
        if (folder / f"{name}.csv").is_file() or (folder / f"{name}.csv.gz").is_file()
        if not (table := full_runs.read_table(folder, name)).empty
    }
    return Results(
        *(full_runs.read_table(folder, t) for t in TABLES),
        json.loads((folder / "meta.json").read_text()),
        folder,
        **extra,
    )
