"""The conflict matrix's tidy rows: the columns of ``matrix.csv`` (:data:`CSV_COLUMNS`), one row
from a worker's pair record (:func:`tidy_row`: its verdict, set against the documentation), and
the line printed for it as the run goes (:func:`progress_line`). Used by the matrix's run
(:mod:`helpers.matrix.run`) and by the mixed-engine pairs (:mod:`helpers.matrix.mixed`).
"""

from __future__ import annotations

from helpers.matrix import classify, documented, engines
from helpers.matrix import layouts
from helpers.matrix import operations as ops

CSV_COLUMNS = (
    "engine",
    "engine_version",
    "layout",
    "interleaving",
    "first",
    "second",
    "outcome",
    "error_class",
    "conflict",
    "anomaly_kind",
    "matched",
    "rows_race",
    "rows_serial_ab",
    "rows_serial_ba",
    "rows_a_alone",
    "docs_category_first",
    "docs_category_second",
    "docs_delta_io",
    "docs_write_serializable",
    "docs_serializable",
    "agrees_with_docs",
    "disagreement",
    "retry_after_reload",
    "retry_after_reload_kind",
    "b_read_version",
    "b_operations",
    "b_note",
    "error_serial_ab",
    "error_serial_ba",
    "detail",
    "seconds",
)


def _rows(state: dict | None) -> int | str:
    if not state:
        return ""
    return "unreadable" if "unreadable" in state else len(state["rows"])


def _error(step: dict | None) -> str:
    """``"SchemaMismatchError: <message>"`` for a serial step that raised, else ``""``."""
    error = (step or {}).get("error")
    return f"{error['class']}: {error['message']}" if error else ""


def tidy_row(record: dict, base: dict, version: str) -> dict:
    """One ``matrix.csv`` row from a worker's pair record."""
    verdict = classify.classify(record, base)
    spec = engines.ENGINES.get(record["engine"])
    expected = documented.expectation(
        record["first"], record["second"], spec.layout if spec else layouts.SHARED_FILES.name
    )
    agrees, disagreement = documented.compare(verdict, expected)
    reload = classify.retry_after_reload(record, base)
    race = record.get("race", {})
    first, second = ops.OPERATIONS[record["first"]], ops.OPERATIONS[record["second"]]
    return {
        "engine": record["engine"],
        "engine_version": version,
        "layout": spec.layout if spec else "",
        "interleaving": spec.interleaving if spec else "",
        "first": record["first"],
        "second": record["second"],
        "outcome": verdict.outcome,
        "error_class": verdict.error_class,
        "conflict": verdict.conflict,
        "anomaly_kind": verdict.kind,
        "matched": verdict.matched,
        "rows_race": _rows(race.get("state")),
        "rows_serial_ab": _rows(record.get("serial_ab", {}).get("state")),
        "rows_serial_ba": _rows(record.get("serial_ba", {}).get("state")),
        "rows_a_alone": _rows(record.get("alone_a")),
        "docs_category_first": first.category or "",
        "docs_category_second": second.category or "",
        "docs_delta_io": expected.delta_io,
        "docs_write_serializable": expected.write_serializable,
        "docs_serializable": expected.serializable,
        "agrees_with_docs": agrees,
        "disagreement": disagreement,
        "retry_after_reload": reload.outcome if reload else "",
        "retry_after_reload_kind": reload.kind if reload else "",
        "b_read_version": "" if race.get("b_read_version") is None else race["b_read_version"],
        "b_operations": " ".join(o or "?" for o in race.get("b_operations", [])),
        "b_note": race.get("note") or "",
        "error_serial_ab": _error(record.get("serial_ab")),
        "error_serial_ba": _error(record.get("serial_ba")),
        "detail": verdict.detail
        + (
            f" | after reloading: {reload.outcome}{': ' + reload.detail if reload.detail else ''}"
            if reload
            else ""
        ),
        "seconds": record.get("seconds", ""),
    }


def progress_line(row: dict, done: int, total: int) -> str:
    what = row["outcome"]
    if row["outcome"] == "refused":
        what += f" ({row['conflict'] or row['error_class']})"
    elif row["outcome"] == "anomaly":
        what += f": {row['anomaly_kind']}"
    elif row["matched"] == "B→A":
        what += " (equals B→A)"
    if row["retry_after_reload"]:
        what += f"; after reloading: {row['retry_after_reload']}"
    flag = "  ≠ docs" if row["agrees_with_docs"] == "no" else ""
    return f"[{row['engine']}] {done:>3}/{total} {row['first']} → {row['second']}: {what}{flag}"


class MergeError(ValueError):
    """A run that cannot be merged into the committed results; the message says why."""


def csv_text(rows: list[dict]) -> str:
    import csv
    import io

    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return text.getvalue()


def _read(path) -> list[dict]:
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def merge(folders: list, csv_target, meta_target) -> list[dict]:
    """Add the rows of runs of new pairs only (each folder's ``matrix.csv`` and ``meta.json``, e.g.
    ``python -m helpers.matrix --involving vacuum_retained``) to the committed results ``csv_target``
    and ``meta_target``: every row already there stays as it is, byte for byte and in its order; each
    new row goes where the CSV's order puts it (engine in the committed run's order, a new engine
    last; then pair order, :func:`helpers.matrix.operations.pairs`). The meta gains the new
    operations and engines, the pairs per engine, and under ``merged`` each run's date, wall time and
    pairs. Raises MergeError, writing nothing, if a cell is there already, an engine's version differs
    or the committed CSV is not in that order. Returns the new rows."""
    import json
    from pathlib import Path

    text = Path(csv_target).read_text(encoding="utf-8")
    rows, meta = _read(csv_target), json.loads(Path(meta_target).read_text())
    if csv_text(rows) != text:
        raise MergeError(
            f"{csv_target} is not as this module writes it: merge would change its rows"
        )
    engine_order, new, merged = dict(meta["engines"]), [], []
    for folder in map(Path, folders):
        run_meta = json.loads((folder / "meta.json").read_text())
        for name, version in run_meta["engines"].items():
            if engine_order.setdefault(name, version) != version:
                raise MergeError(f"{name}: {version} in {folder}, {engine_order[name]} committed")
        mine = _read(folder / "matrix.csv")
        new += mine
        merged.append(
            {
                "run_on": run_meta["run_on"],
                "wall_seconds": run_meta["wall_seconds"],
                "pairs": len(mine),
            }
        )
    seen = {(r["engine"], r["first"], r["second"]) for r in rows}
    again = [key for key in ((r["engine"], r["first"], r["second"]) for r in new) if key in seen]
    if again or len({(r["engine"], r["first"], r["second"]) for r in new}) != len(new):
        raise MergeError(f"cells measured twice, e.g. {(again or ['within the runs'])[0]}")
    names = [
        op
        for op in ops.CHOICES
        if op in meta["operations"] or any(op in (r["first"], r["second"]) for r in new)
    ]
    pair_index = {pair: i for i, pair in enumerate(ops.pairs(names))}
    engine_index = {name: i for i, name in enumerate(engine_order)}

    def key(row: dict) -> tuple[int, int]:
        return engine_index[row["engine"]], pair_index[(row["first"], row["second"])]

    if [key(r) for r in rows] != sorted(key(r) for r in rows):
        raise MergeError(f"{csv_target} is not in engine, then pair order")
    everything = sorted(rows + new, key=key)
    meta.update(
        engines=engine_order,
        operations=names,
        pairs_per_engine=len(pair_index),
        pairs={name: sum(1 for r in everything if r["engine"] == name) for name in engine_order},
        merged=[*meta.get("merged", []), *merged],
    )
    Path(csv_target).write_text(csv_text(everything), encoding="utf-8")
    Path(meta_target).write_text(json.dumps(meta, indent=2) + "\n")
    return new
