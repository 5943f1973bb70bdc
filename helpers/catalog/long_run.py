"""The catalog's long run: what takes minutes, so that notebook 15 shows the committed run and a
fresh clone can read it without running it.

* ``outage``: the catalog down for minutes (:data:`FULL`), a load balancer answering 503, while
  two writers and a reader run (:mod:`helpers.catalog.outage`); ``outage-refused``: the same with
  connections refused;
* ``kernel``: Java Delta Kernel raced beside two Delta Spark jobs, ten times, its retries counted
  (:mod:`helpers.catalog.kernel_runs`);
* ``cost``: requests per commit and per read counted at a gate, and commit latency through the
  catalog beside the same table without it (:mod:`helpers.catalog.cost`);
* ``upkeep``: auto compaction, metadata cleanup and VACUUM on such tables
  (:mod:`helpers.catalog.upkeep`).

Every driver that measures runs without Spark's testing flag; one driver with it creates the
tables. Each part has a server of its own and writes ``<part>.json`` (``record``: the part's
record as data, ``summary``: its text); ``meta.json`` comes last::

    python -m helpers.catalog.long_run --name full        # make catalog-run (about 20 min)
    python -m helpers.catalog.long_run --name try --small  # every part, small (a test)
    make publish RUN=build/catalog/full                    # data/catalog_run.json

:func:`committed` reads the committed run (``data/catalog_run.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from helpers.catalog import cost, kernel_runs, outage, rest, server, server_build, tables, upkeep
from helpers.ground import checks, config

PARTS = ("outage", "outage-refused", "kernel", "cost", "upkeep")
FULL = {
    "outage_s": 180.0,
    "batches_per_writer": 4,
    "kernel_runs": 10,
    "cost_commits": 100,
    "cost_counted_commits": 20,
    "cost_reads": 10,
    "upkeep_appends": 4,
}
"""The committed run's sizes: an outage of three minutes, ten Kernel races, 100 timed commits per
table (issue-sized minimums a publish checks: :func:`folder_problems`)."""
SMALL = {
    "outage_s": 20.0,
    "batches_per_writer": 2,
    "kernel_runs": 2,
    "cost_commits": 3,
    "cost_counted_commits": 2,
    "cost_reads": 2,
    "upkeep_appends": 4,
}
"""Every part, small: what a test runs."""
DEFAULT_OUT = config.BUILD_DIR / "catalog"
COMMITTED = config.DATA_DIR / "catalog_run.json"


def _outage(how: str) -> Callable:
    def part(folder: Path, spark, sizes: dict):
        return outage.measure(
            folder,
            how=how,
            outage_s=sizes["outage_s"],
            batches_per_writer=sizes["batches_per_writer"],
            spark=spark,
        )

    return part


def _kernel(folder: Path, spark, sizes: dict):
    with server.start(folder / "uc") as uc:
        return kernel_runs.repeat_race(uc.uri, folder, runs=sizes["kernel_runs"])


def _cost(folder: Path, spark, sizes: dict):
    with server.start(folder / "uc") as uc:
        catalog = rest.UnityCatalog(uc.uri)
        spark.conf.set(tables.URI_KEY, uc.uri)
        tables.forget(spark, "orders_cost", *cost.reference_names("orders_cost"))
        made = cost.create_tables(spark, catalog, "orders_cost", (folder / "references").as_uri())
        return cost.measure(
            uc.uri,
            made,
            folder / "job",
            commits=sizes["cost_commits"],
            counted_commits=sizes["cost_counted_commits"],
            reads=sizes["cost_reads"],
        )


def _upkeep(folder: Path, spark, sizes: dict):
    with server.start(folder / "uc") as uc:
        spark.conf.set(tables.URI_KEY, uc.uri)
        return upkeep.run(
            rest.UnityCatalog(uc.uri), folder / "run", spark=spark, appends=sizes["upkeep_appends"]
        )


RUNNERS: dict[str, Callable] = {
    "outage": _outage("503"),
    "outage-refused": _outage("refused"),
    "kernel": _kernel,
    "cost": _cost,
    "upkeep": _upkeep,
}


def problems_of(part: str, record) -> list[str]:
    """What a part's record says went wrong: its problems, or a failed verdict."""
    if part == "kernel":
        return [] if record.passed else [f"kernel: runs with problems ({record.summary()[-200:]})"]
    if part == "upkeep":
        found = [p for way in record.auto_compaction.values() for p in way.problems]
    else:
        found = record.problems() if callable(record.problems) else record.problems
    return [f"{part}: {p}" for p in found]


def run(
    name: str,
    parts=PARTS,
    sizes: dict | None = None,
    out: Path = DEFAULT_OUT,
    progress=print,
) -> Path:
    """Run ``parts`` at ``sizes`` (:data:`FULL` by default) into ``out/name``; returns the folder."""
    from helpers.bench.run import machine
    from helpers.spark import sessions

    sizes = sizes or FULL
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    earlier = _earlier(folder, parts, sizes)
    began, found, seconds, dates = time.monotonic(), [], {}, {}
    spark = tables.spark_session(
        "http://127.0.0.1:1/", creates_tables=True, app_name="catalog-long-run"
    )
    for part in parts:
        started = time.monotonic()
        progress(f"{part}: running")
        record = RUNNERS[part](folder / part, spark, sizes)
        seconds[part] = round(time.monotonic() - started, 1)
        text = record.summary()
        (folder / f"{part}.json").write_text(
            json.dumps({"record": record.to_dict(), "summary": text}, indent=1, default=str)
        )
        found += problems_of(part, record)
        dates[part] = datetime.now(UTC).isoformat(timespec="seconds")
        progress(f"{part}: done in {seconds[part]:.0f} s\n{text}")
    kept = [p for p in PARTS if p in earlier.get("parts", []) and p not in parts]
    meta = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": {
            "Delta Spark": config.DELTA_JARS_VERSION,
            "Spark": sessions.spark_version(),
            "server": server_build.BUILD_NAME,
        },
        "parts": [p for p in PARTS if p in parts or p in kept],
        "sizes": sizes,
        "seconds": {**{p: earlier["seconds"][p] for p in kept}, **seconds},
        "dates": {**{p: earlier["dates"][p] for p in kept}, **dates},
        "total_seconds": round(time.monotonic() - began, 1),
        "problems": [x for x in earlier.get("problems", []) if x.split(":")[0] in kept] + found,
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=1))
    return folder


def _earlier(folder: Path, parts, sizes: dict) -> dict:
    """The meta of an earlier run in ``folder`` at the same sizes, whose other parts this run keeps
    (a part run again replaces its own); an empty one when there is none (removed first)."""
    path = folder / "meta.json"
    earlier = json.loads(path.read_text()) if path.exists() else {}
    path.unlink(missing_ok=True)
    if earlier.get("sizes") != sizes:
        return {}
    return earlier


def folder_problems(folder: Path) -> list[str]:
    """What keeps a finished run from being published: its problems, a part left out, or a size
    below the committed run's (:data:`FULL`)."""
    meta = json.loads((folder / "meta.json").read_text())
    found = list(meta["problems"])
    missing = [p for p in PARTS if p not in meta["parts"]]
    if missing:
        found.append(f"the run left out {', '.join(missing)}: the committed run has every part")
    small = [k for k, v in FULL.items() if meta["sizes"].get(k, 0) < v]
    if small:
        found.append(
            f"sizes below the committed run's: {', '.join(small)} (run it without --small)"
        )
    return found


def publish(folder: Path) -> list[Path]:
    """Every part and the meta, as one file: :data:`COMMITTED`."""
    meta = json.loads((folder / "meta.json").read_text())
    whole = {"meta": meta}
    for part in meta["parts"]:
        whole[part] = json.loads((folder / f"{part}.json").read_text())
    COMMITTED.write_text(json.dumps(whole, indent=1) + "\n")
    return [COMMITTED]


def committed(path: Path = COMMITTED) -> dict:
    """The committed run: ``meta`` and each part's ``record`` and ``summary``."""
    return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.catalog.long_run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--name", default="full", help="results folder under build/catalog/")
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated, from {', '.join(PARTS)}"
    )
    parser.add_argument("--small", action="store_true", help="every size small (a test's run)")
    args = parser.parse_args(argv)
    parts = checks.chosen_parts(parser, args.parts, PARTS)
    folder = run(args.name, parts, SMALL if args.small else FULL)
    meta = json.loads((folder / "meta.json").read_text())
    done = f"{len(parts)} parts in {meta['total_seconds']} s; results in {config.shown(folder)}"
    return checks.reported(done, meta["problems"])


if __name__ == "__main__":
    sys.exit(main())
