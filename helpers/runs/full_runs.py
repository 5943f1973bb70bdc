"""The full runs' results, committed: what notebooks 11, 12 and 14 show of `make bench` (9 to 18
minutes), `make torture` (145 in its committed run) and `make producers`, which write under
``build/``, a folder git ignores.

A run stays there. ``make publish RUN=build/<kind>/full`` (:mod:`helpers.publish`), once the run's
checks pass, copies the tables the notebooks read into ``data/full_runs/<kind>/`` with
:func:`publish`: ``meta.json`` (date, machine, versions) and each table's CSV, gzipped byte for
byte (so it reads back exactly as the run's own), a few hundred KB in all. A notebook asks
:func:`location` where the full run is: the machine's own ``build/<kind>/<name>/`` once it has
made one, else the committed copy, so a fresh clone and the student edition show the figures
README and docs/ quote.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

from helpers.ground import config

PUBLISHED_DIR = config.DATA_DIR / "full_runs"
TABLES = {
    "bench": ("runs", "commits", "probe"),
    "torture": ("protocols", "operations", "kills", "restarts"),
    "producers": ("runs", "racing"),
}
"""The tables of each kind of run, as its ``load`` reads them (``<table>.csv`` or ``<table>.csv.gz``)."""
MAKE = {"bench": "make bench", "torture": "make torture", "producers": "make producers"}


class FullRunError(RuntimeError):
    """No full run here and none committed, or a folder holds no finished run; the message says what to run."""


def _check_kind(kind: str) -> None:
    if kind not in TABLES:
        raise FullRunError(f"Unknown kind of run {kind!r}; choose from {', '.join(TABLES)}.")


def finished(folder: Path) -> bool:
    """A run's folder holds its results once ``meta.json`` is written (both runs write it last)."""
    return (folder / "meta.json").is_file()


OWN_RUNS = "WORKBOOK_SHOW_OWN_RUNS"
"""Set to ``1`` (``make lab WORKBOOK_SHOW_OWN_RUNS=1``), the notebooks show this machine's full runs in
``build/`` rather than the committed copies, whose figures their committed outputs and checks hold."""


def location(kind: str, name: str = "full") -> Path:
    """Where the full run is: the committed ``data/full_runs/<kind>/``, or with :data:`OWN_RUNS` set (or
    none committed) ``build/<kind>/<name>/`` if this machine finished one. A run of this machine never
    changes what a notebook shows unless asked, so ``make test`` holds the committed figures. Raises
    FullRunError, naming the command, if neither is there."""
    _check_kind(kind)
    made_here = config.BUILD_DIR / kind / name
    own = os.environ.get(OWN_RUNS) == "1"
    if own and finished(made_here):
        return made_here
    if finished(PUBLISHED_DIR / kind):
        return PUBLISHED_DIR / kind
    if finished(made_here):
        return made_here
    raise FullRunError(
        f"No finished {kind} run in {config.shown(made_here)} and none committed in "
        f"{config.shown(PUBLISHED_DIR / kind)}: `{MAKE[kind]}` makes one."
    )


def describe(folder: Path) -> str:
    """Which copy a notebook is showing, in words."""
    return (
        "this machine's run, in "
        if folder.is_relative_to(config.BUILD_DIR)
        else "the committed copy, in "
    ) + config.shown(folder)


def read_table(folder: Path, table: str):
    """One table of a run's folder: ``<table>.csv``, or ``<table>.csv.gz`` in a published copy
    (an empty file, as a run without the emulators' probe writes it: an empty frame)."""
    import pandas as pd

    csv = folder / f"{table}.csv"
    if not csv.is_file():
        csv = folder / f"{table}.csv.gz"
    return pd.read_csv(csv) if _content(csv).strip() else pd.DataFrame()


def _content(csv: Path) -> bytes:
    return gzip.decompress(csv.read_bytes()) if csv.suffix == ".gz" else csv.read_bytes()


def publish(kind: str, folder: Path) -> Path:
    """Copy a finished run's tables and ``meta.json`` into ``data/full_runs/<kind>/`` (replacing
    what was there); return that folder."""
    _check_kind(kind)
    folder = Path(folder)
    if not finished(folder):
        raise FullRunError(
            f"{config.shown(folder)} holds no finished {kind} run (no meta.json): `{MAKE[kind]}` makes one."
        )
    target = PUBLISHED_DIR / kind
    staging = target.with_name(f".{kind}.publishing")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for table in TABLES[kind]:  # mtime 0: publishing the same run twice writes the same bytes
        (staging / f"{table}.csv.gz").write_bytes(
            gzip.compress((folder / f"{table}.csv").read_bytes(), mtime=0)
        )
    meta = json.loads((folder / "meta.json").read_text())
    (staging / "meta.json").write_text(
        json.dumps({**meta, "published_from": config.shown(folder)}, indent=1) + "\n"
    )
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)  # readers never see half a copy
    return target
