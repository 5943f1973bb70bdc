"""Several Delta Spark drivers, each a process with its own JVM, appending to one catalog-managed
table at once; then the race's checks, read from storage and from the catalog, never from what a
writer reports.

    race = run_race(catalog, "orders", location, writers=3, batches_per_writer=2, run_dir=folder)
    race.check.problems      # [] when every batch landed once, one commit per version
    race.check.summary()

The writers are released together at a barrier (:mod:`helpers.writers.protocol`) after each has
started Spark and read the table, so their first appends start from the same snapshot and must
meet at the catalog: which of two commits for one version wins is the catalog's decision, and
the loser's staged commit stays in ``_delta_log/_staged_commits/`` without ever being part of the
table. Before the barrier the first driver also tries an append by path (``try_path_write``), to
record what Delta answers a writer that goes around the catalog; the checks would find its rows.

Every driver here is started without Spark's testing flag (:func:`run_drivers`), as a team's job
would be. :func:`run_flagless` starts one more, alone, for what must not be measured in the driver
that creates tables: maintenance (:mod:`helpers.catalog.maintenance`). What a commit costs is
measured by a job of its own (:mod:`helpers.catalog.cost`).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from helpers.catalog.rest import CatalogView, UnityCatalog
from helpers.catalog.tables import CATALOG, SCHEMA, local_path
from helpers.catalog.writer import ROWS_PER_BATCH, batches_of
from helpers.delta import delta_log
from helpers.ground import config, eras
from helpers.ground.progress import RunProgress
from helpers.writers import processes
from helpers.writers.protocol import open_barrier

RUN_TIMEOUT_S = 900.0
"""How long a race may last before its processes are stopped: JVM starts on a loaded 2-core machine."""
STAGED_DIR = delta_log.LOG_DIR + "_staged_commits/"
STAGED_NAME = re.compile(rf"^(\d{{{delta_log.VERSION_DIGITS}}})\.([0-9a-f-]{{36}})\.json$")


class RaceError(RuntimeError):
    """A writer could not start, or the race outlasted :data:`RUN_TIMEOUT_S`."""


@dataclass
class CatalogCheck:
    """A catalog-managed table read from storage and from the catalog."""

    published: list[int]
    """Versions with a published commit, ``_delta_log/<v>.json``."""
    staged: dict[int, list[str]]
    """Version -> names of the staged commits for it in ``_delta_log/_staged_commits/`` (winners and losers)."""
    catalog: CatalogView
    ratified: dict[int, str]
    """Version -> the staged commit that is the table's commit at that version: the one whose bytes
    the published file holds, or for a version not published yet, the one the catalog names."""
    rows: Counter
    """(writer, batch) -> rows of the table's current state with that tag, read from its data files."""
    read_versions: dict[int, int]
    """Version -> the version its writer had read (``commitInfo.readVersion``)."""
    problems: list[str] = field(default_factory=list)

    @property
    def versions(self) -> list[int]:
        return sorted(set(self.published) | set(self.ratified))

    @property
    def unpublished(self) -> list[int]:
        """Versions the catalog ratified that are not published yet (only in ``_staged_commits/``)."""
        return sorted(set(self.ratified) - set(self.published))

    @property
    def losers(self) -> list[str]:
        """Staged commits that are no version of the table: each lost its version at the catalog."""
        won = set(self.ratified.values())
        return sorted(name for names in self.staged.values() for name in names if name not in won)

    @property
    def retried(self) -> list[int]:
        """Versions whose commit was made from an older snapshot than the version before it: the
        writer lost a version at the catalog, checked for conflicts, and committed at the next."""
        return [v for v, read in sorted(self.read_versions.items()) if v > 0 and read != v - 1]

    def summary(self) -> str:
        lines = [
            f"versions 0-{self.versions[-1] if self.versions else -1}: {len(self.published)} published, "
            f"{len(self.unpublished)} ratified by the catalog but not yet published; "
            f"the catalog's latest version {self.catalog.latest_version}",
            f"{sum(len(n) for n in self.staged.values())} staged commits, {len(self.losers)} of them lost their "
            f"version at the catalog and are no part of the table",
            f"{len(self.retried)} commits made after losing a version (readVersion < version - 1)",
            f"{sum(self.rows.values())} rows in {len(self.rows)} batches",
        ]
        lines.append("No problems." if not self.problems else f"{len(self.problems)} problem(s):")
        return "\n".join(lines + [f"- {p}" for p in self.problems])


def check_table(
    catalog: UnityCatalog, name: str, expected: dict[tuple[str, int], int] | None = None
) -> CatalogCheck:
    """Read the table named ``name`` from its folder and from the catalog and name every problem:
    a gap in the versions, a published commit that is no staged commit of its version, a version
    the catalog and storage disagree on, and (with ``expected``, (writer, batch) -> rows) any batch
    of the writers it names missing, doubled or unexpected."""
    import pyarrow.parquet as pq

    view = catalog.table(CATALOG, SCHEMA, name)
    folder = local_path(view.location)
    log = folder / delta_log.LOG_DIR
    published = {
        version: path
        for path in log.glob("*.json")
        if (version := delta_log.commit_version(delta_log.LOG_DIR + path.name)) is not None
    }
    staged: dict[int, list[str]] = {}
    for path in sorted((folder / STAGED_DIR).glob("*.json")):
        match = STAGED_NAME.match(path.name)
        if match:
            staged.setdefault(int(match.group(1)), []).append(path.name)
    problems: list[str] = []
    ratified: dict[int, str] = {}
    bodies: dict[int, bytes] = {}
    for version, path in sorted(published.items()):
        bodies[version] = path.read_bytes()
        same = [
            n
            for n in staged.get(version, [])
            if (folder / STAGED_DIR / n).read_bytes() == bodies[version]
        ]
        if version > 0 and len(same) != 1:
            problems.append(
                f"version {version}: the published commit matches {len(same)} of its {len(staged.get(version, []))} "
                f"staged commits (a commit ratified by the catalog is published as it was staged)"
            )
        if same:
            ratified[version] = same[0]
    for commit in view.unpublished:
        version, file_name = int(commit["version"]), commit["file-name"]
        if version in published:
            continue  # published since the catalog answered
        ratified[version] = file_name
        staged_file = folder / STAGED_DIR / file_name
        if not staged_file.exists():
            problems.append(
                f"version {version}: the catalog ratified {file_name}, which storage does not have"
            )
            continue
        bodies[version] = staged_file.read_bytes()
    versions = sorted(bodies)
    if versions != list(range(len(versions))):
        problems.append(f"versions are not 0..{len(versions) - 1} without a gap: {versions}")
    if versions and view.latest_version != versions[-1]:
        problems.append(
            f"the catalog's latest version is {view.latest_version}, storage's {versions[-1]}"
        )
    live: set[str] = set()
    read_versions: dict[int, int] = {}
    for version in versions:
        info, added, removed = delta_log.read_commit(bodies[version])
        if "readVersion" in info:
            read_versions[version] = int(info["readVersion"])
        live -= {unquote(a["path"]) for a in removed}
        live |= {unquote(a["path"]) for a in added}
    rows: Counter = Counter()
    for path in sorted(live):
        table = pq.read_table(folder / path, columns=["writer", "batch"])
        rows.update(zip(table.column("writer").to_pylist(), table.column("batch").to_pylist()))
    named = {writer for writer, _ in expected or {}}
    for key in sorted(k for k in set(rows) | set(expected or {}) if k[0] in named):
        if rows.get(key, 0) != expected.get(key, 0):
            problems.append(
                f"batch {key[1]} of {key[0]}: {rows.get(key, 0)} rows in the table, {expected.get(key, 0)} appended"
            )
    return CatalogCheck(sorted(published), staged, view, ratified, rows, read_versions, problems)


@dataclass
class Race:
    batches: dict[str, list[int]]
    """Writer -> the batches it appended."""
    results: dict[str, dict]
    check: CatalogCheck
    seconds: float
    """From the barrier's opening to the last writer's exit."""

    @property
    def failed(self) -> dict[str, str]:
        """Writers that ended with an error, and the error (what they reported)."""
        return {
            w: r.get("error") or "no result"
            for w, r in self.results.items()
            if not r or r.get("error")
        }


def run_drivers(
    catalog: UnityCatalog, specs: dict[str, dict], run_dir: Path, label: str
) -> tuple[dict[str, dict], float]:
    """Start one driver process per spec (name -> its job's fields, :mod:`helpers.catalog.writer`),
    each without Spark's testing flag; release them together at a barrier once all are ready;
    return each one's result and the seconds from the barrier to the last exit. A spec's
    ``module`` names another writer's module (e.g. :mod:`helpers.catalog.kernel_writer`)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    procs = []
    for name, spec in specs.items():
        fields = {k: v for k, v in spec.items() if k != "module"}
        proc = processes.EraProcess(
            name=name,
            era=eras.CURRENT,
            module=spec.get("module", "helpers.catalog.writer"),
            spec_path=run_dir / f"{name}.json",
            stdout_path=run_dir / f"{name}.out",
            stderr_path=run_dir / f"{name}.err",
        )
        proc.spec_path.write_text(
            json.dumps(
                {
                    "process": name,
                    "barrier_dir": str(run_dir),
                    "runner_pid": os.getpid(),
                    "result_path": str(run_dir / f"{name}.result.json"),
                    "uri": catalog.uri,
                    **fields,
                },
                indent=1,
            )
        )
        procs.append(proc)
    processes.launch(procs, new_session=True)
    shown = RunProgress(label, len(procs))
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        if not processes.wait_for_barrier(procs, run_dir, deadline, shown):
            raise RaceError(
                f"The drivers did not start within {RUN_TIMEOUT_S:.0f} s; see {config.shown(run_dir)}."
            )
        missing = processes.absent(procs, run_dir)
        if missing:
            gone = run_dir / f"{missing[0].name}.result.json"
            why = (
                json.loads(gone.read_text()).get("error")
                if gone.exists()
                else processes.stderr_tail(missing[0].stderr_path)
            )
            raise RaceError(f"{missing[0].name} failed before the barrier: {why}")
        opened = open_barrier(run_dir)
        processes.wait_for_exits(procs, deadline, shown)
    finally:
        if processes.kill_stragglers(procs):
            raise RaceError(
                f"The drivers did not end within {RUN_TIMEOUT_S:.0f} s; they were stopped."
            )
    seconds = max(p.t_exited for p in procs) - opened
    shown.finish(f"{label} done in {seconds:.0f} s")
    results = {
        p.name: (
            json.loads((run_dir / f"{p.name}.result.json").read_text())
            if (run_dir / f"{p.name}.result.json").exists()
            else {}
        )
        for p in procs
    }
    return results, seconds


def run_race(
    catalog: UnityCatalog,
    name: str,
    location: str,
    *,
    writers: int,
    batches_per_writer: int,
    run_dir: Path,
) -> Race:
    """Race ``writers`` drivers, each appending ``batches_per_writer`` batches to the catalog's table
    ``name`` (at ``location``); return the race with its checks."""
    batches = {f"w{n}": batches_of(n, batches_per_writer) for n in range(1, writers + 1)}
    specs = {
        writer: {
            "job": "append",
            "table": name,
            "location": location,
            "batches": batches[writer],
            "try_path_write": writer == "w1",
        }
        for writer in batches
    }
    results, seconds = run_drivers(catalog, specs, run_dir, f"{writers} drivers")
    expected = {(w, b): ROWS_PER_BATCH for w, bs in batches.items() for b in bs}
    return Race(batches, results, check_table(catalog, name, expected), seconds)


@dataclass
class Flagless:
    """What one driver without Spark's testing flag measured (:func:`run_flagless`)."""

    result: dict
    """Its result as it recorded it (``error`` None when it finished)."""
    maintenance: list[dict]
    """Each operation's outcome (:func:`helpers.catalog.maintenance.attempt`)."""
    seconds: float

    @property
    def testing_flag(self) -> str | None:
        return self.result.get("testing_flag")


def run_flagless(
    catalog: UnityCatalog,
    run_dir: Path,
    *,
    maintain: dict | None = None,
) -> Flagless:
    """One driver without Spark's testing flag: maintenance on ``maintain`` (``{"name",
    "location"}``, a catalog-managed table)."""
    spec: dict = {"job": "flagless"}
    if maintain:
        spec["maintain"] = maintain
    results, seconds = run_drivers(catalog, {"flagless": spec}, run_dir, "1 driver")
    result = results["flagless"]
    if not result or result.get("error"):
        raise RaceError(
            f"the driver without the testing flag failed: {result.get('error') or 'no result'}"
        )
    return Flagless(result, result.get("maintenance", []), seconds)
