"""The files a conflict-matrix run leaves in its folder: ``matrix.csv`` (rows in engine, then pair
order), ``meta.json`` (engines and versions, operations, wall time, the documentation's pages),
and one grid picture per engine (:func:`helpers.matrix.plots.grid`, titled by :func:`grid_title`).
Written by :func:`helpers.matrix.run.run` once every worker has exited; ``summary.txt`` last, by
``python -m helpers.matrix``, only when every worker gave its results.

A run stays in its folder under ``build/``. :func:`publish` copies one into ``data/`` (the committed
run the answer page and notebook 13 read), called by ``make publish`` once :func:`problems` finds none.
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
import time
from pathlib import Path

from helpers.ground import config
from helpers.matrix import documented, engines, tidy
from helpers.matrix import layouts
from helpers.matrix import operations as ops


def write_outputs(
    folder: Path,
    rows: list[dict],
    engine_names: list[str],
    versions: dict,
    op_names: list[str],
    seconds: float,
) -> None:
    """``matrix.csv`` (rows in engine, then pair order), ``meta.json`` and one grid per engine."""
    order = {pair: i for i, pair in enumerate(ops.pairs(op_names))}
    rows.sort(key=lambda r: (engine_names.index(r["engine"]), order[(r["first"], r["second"])]))
    with (folder / "matrix.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=tidy.CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    meta = {
        "engines": {name: versions.get(name) for name in engine_names},
        "operations": list(op_names),
        "pairs_per_engine": len(order),
        "pairs": {name: sum(1 for r in rows if r["engine"] == name) for name in engine_names},
        "layouts": {layout.name: layout.what for layout in layouts.LAYOUTS.values()},
        "interleavings": dict(ops.INTERLEAVINGS),
        "wall_seconds": round(seconds, 1),
        "run_on": time.strftime("%Y-%m-%d"),
        "documentation": [
            {"page": page, "read_on": read_on} for page, read_on in documented.sources()
        ],
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    import matplotlib

    if "inline" not in matplotlib.get_backend():  # a notebook keeps its inline plots
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from helpers.matrix import plots

    for name in engine_names:
        if any(r["engine"] == name for r in rows):
            figure = plots.grid(rows, name, title=grid_title(name, versions.get(name) or ""))
            figure.savefig(folder / f"grid-{name}.png", dpi=110)
            plt.close(figure)


def grid_title(name: str, version: str) -> str | None:
    """A grid's title for an engine the plain title would misname (a mixed pair, Spark, a run on S3);
    None for a delta-rs era on local disk (the grid's own title)."""
    spec = engines.ENGINES.get(name)
    if spec is None or (spec.module == "helpers.matrix.deltars" and spec.store == "local"):
        return None
    where = " on the S3 emulator" if spec.store == "s3" else ""
    if spec.parts:
        return f"A by {spec.parts[0]}, then B by {spec.parts[1]} from the older snapshot{where}\n({version})"
    return f"{name.split('@')[0]}{where} ({version}): A commits, then B from the older snapshot"


SUMMARY = "summary.txt"
DATA_CSV = config.DATA_DIR / "conflict_matrix.csv"
DATA_META = config.DATA_DIR / "conflict_matrix_meta.json"
"""Where ``make matrix``'s run goes once published: its ``matrix.csv`` and ``meta.json``, unchanged;
or, for a run of new pairs only, the committed ones with its rows added (:func:`helpers.matrix.tidy.merge`)."""


def cells(csv_path: Path) -> set[tuple[str, str, str]]:
    """The (engine, first, second) of every row of a matrix CSV (none if there is no file)."""
    if not csv_path.is_file():
        return set()
    with csv_path.open(newline="", encoding="utf-8") as handle:
        return {(r["engine"], r["first"], r["second"]) for r in csv.DictReader(handle)}


def _new_pairs_only(folder: Path) -> bool:
    """Whether the run leaves out committed cells: then it must race none of them again, and its
    rows are added to the committed ones (a new operation's pairs, ``--involving``; a new engine; an
    engine raced anew whole, whose rows replace its committed ones)."""
    return bool(cells(DATA_CSV) - cells(folder / "matrix.csv"))


def replaced_engines(folder: Path) -> set[str]:
    """The committed engines a run races again whole, every committed cell of each: their rows in
    the run replace theirs (an engine raced anew, e.g. on S3 without sampling)."""
    committed, run = cells(DATA_CSV), cells(folder / "matrix.csv")
    again = {engine for engine, _, _ in committed & run}
    return {e for e in again if {c for c in committed if c[0] == e} <= run}


def _without(engines_gone: set[str], csv_path: Path, meta_path: Path) -> None:
    """Remove these engines' rows from a matrix CSV and their names from its meta, in place."""
    meta = json.loads(meta_path.read_text())
    with csv_path.open(newline="", encoding="utf-8") as handle:
        kept = [r for r in csv.DictReader(handle) if r["engine"] not in engines_gone]
    csv_path.write_text(tidy.csv_text(kept), encoding="utf-8")
    for key in ("engines", "pairs"):
        meta[key] = {k: v for k, v in meta[key].items() if k not in engines_gone}
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")


def problems(folder: Path) -> list[str]:
    """What keeps ``folder`` from being published as the conflict matrix ([] when nothing does): a file
    missing (a run stopped by an engine's error writes no ``summary.txt``); a run that leaves out
    committed cells but races others again (some engines or operations only), unless it races each
    such engine whole (:func:`replaced_engines`); or new pairs that :func:`helpers.matrix.tidy.merge`
    refuses (tried on a copy of the committed files)."""
    missing = [f for f in ("matrix.csv", "meta.json", SUMMARY) if not (folder / f).is_file()]
    if missing:
        return [f"no {', '.join(missing)} in {config.shown(folder)}: the run did not finish"]
    committed, run = cells(DATA_CSV), cells(folder / "matrix.csv")
    if not committed - run:
        return []  # every committed cell raced again: the run replaces them
    whole = replaced_engines(folder)
    partly = {cell for cell in committed & run if cell[0] not in whole}
    if partly:
        engine, first, second = min(committed - run)
        return [
            f"the run leaves out {len(committed - run)} cell(s) of the committed matrix (e.g. "
            f"{engine}: {first} then {second}) and races {len(partly)} of them again: "
            "publish a run of every engine and operation, of whole engines, or of new pairs only "
            "(--involving)"
        ]
    with tempfile.TemporaryDirectory() as scratch:
        trial = [Path(scratch) / DATA_CSV.name, Path(scratch) / DATA_META.name]
        for source, target in zip((DATA_CSV, DATA_META), trial):
            shutil.copyfile(source, target)
        try:
            _without(whole, *trial)
            tidy.merge([folder], *trial)
        except tidy.MergeError as error:
            return [f"its new pairs cannot join the committed matrix: {error}"]
    return []


def replace_files(sources, targets) -> list[Path]:
    """Copy each source file over its target, each whole or not at all; return the targets."""
    for source, target in zip(sources, targets):
        staging = target.with_name(f".{target.name}.publishing")
        shutil.copyfile(source, staging)
        staging.replace(target)
    return list(targets)


def replace(folder: Path, csv_target: Path, meta_target: Path) -> list[Path]:
    """Copy a run's ``matrix.csv`` and ``meta.json`` to ``csv_target`` and ``meta_target``, each file
    whole or not at all; return the two."""
    return replace_files((folder / "matrix.csv", folder / "meta.json"), (csv_target, meta_target))


def publish(folder: Path) -> list[Path]:
    """Make the run in ``folder`` the committed conflict matrix: its files replace :data:`DATA_CSV`
    and :data:`DATA_META`, or, a run of new pairs only, its rows are added to them. Call it once
    :func:`problems` finds none (``make publish``); returns the files written."""
    if _new_pairs_only(folder):
        with tempfile.TemporaryDirectory() as scratch:  # both files whole, or neither
            staged = [Path(scratch) / DATA_CSV.name, Path(scratch) / DATA_META.name]
            for source, target in zip((DATA_CSV, DATA_META), staged):
                shutil.copyfile(source, target)
            _without(replaced_engines(folder), *staged)
            tidy.merge([folder], *staged)
            return replace_files(staged, (DATA_CSV, DATA_META))
    return replace(folder, DATA_CSV, DATA_META)
