"""The files a conflict-matrix run leaves in its folder: ``matrix.csv`` (rows in engine, then pair
order), ``meta.json`` (engines and versions, operations, wall time, the documentation's pages),
and one grid picture per engine (:func:`helpers.matrix.plots.grid`, titled by :func:`grid_title`).
Written by :func:`helpers.matrix.run.run` once every worker has exited.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

from helpers.matrix import documented, engines, tidy
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
        "layouts": {layout.name: layout.what for layout in ops.LAYOUTS.values()},
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
