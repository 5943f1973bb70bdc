"""One grid per engine, drawn as a write-conflict table is drawn.

Rows: the operation that commits first (A); columns: the one that commits after it from the
older snapshot (B). Colour: refused / serializable / anomaly (grey: not available, black: the
harness could not run the pair). Each cell names what happened: the conflict Delta's name for
a refusal, the kind of an anomaly, ``B→A`` when only that serial order matches; a red corner
marks a disagreement with the documented table. Below the grid, the retried append: each retry
from the snapshot its writer already had, and after reloading the table.
"""

from __future__ import annotations

from helpers.matrix import operations as ops

COLOURS = {
    "refused": "#4c78a8",
    "serializable": "#59a14f",
    "anomaly": "#e15759",
    "not available": "#d9d9d9",
    "error": "#222222",
}
SHORT_KINDS = {
    "duplicated rows": "dup",
    "lost update": "lost",
    "resurrected rows": "resurr",
    "removed twice": "2×rm",
    "broken log": "log",
    "other": "diff",
}


def _text(row: dict, outcome_key: str = "outcome", kind_key: str = "anomaly_kind") -> str:
    outcome = row[outcome_key]
    if outcome == "refused":
        return (row["conflict"] or row["error_class"]).removeprefix("Concurrent") or "refused"
    if outcome == "anomaly":
        return "+".join(SHORT_KINDS.get(k, k) for k in row[kind_key].split(" + "))
    if outcome == "serializable":
        return "B→A" if row["matched"] == "B→A" else "ok"
    return {"not available": "n/a", "error": "error"}.get(outcome, outcome)


def _stripped(row: dict) -> bool:
    """A retry after its original, or a second job on a part of its own: drawn in the strip below."""
    return ops.OPERATIONS[row["second"]].is_retry or bool(ops.OPERATIONS[row["second"]].apart_of)


def _cell(
    ax, x: float, y: float, colour: str, text: str, disagrees: bool, width: float = 1.0
) -> None:
    """One cell of the grid: its colour, a red corner if it disagrees with the docs, its text."""
    from matplotlib.patches import Polygon, Rectangle

    ax.add_patch(Rectangle((x, y), width, 1, facecolor=colour, edgecolor="white", linewidth=1.5))
    if disagrees:
        ax.add_patch(
            Polygon(
                [(x + width - 0.28, y), (x + width, y), (x + width, y + 0.28)],
                closed=True,
                facecolor="#b00020",
                edgecolor="none",
            )
        )
    ax.text(
        x + width / 2,
        y + 0.5,
        text,
        ha="center",
        va="center",
        fontsize=7,
        color="white"
        if colour in (COLOURS["error"], COLOURS["refused"], COLOURS["anomaly"])
        else "black",
    )


def _retry_strip(
    ax, retries: list[dict], size: int, across: int, ticks: list[float], labels: list[str]
) -> tuple[list[float], list[str], float]:
    """Below the grid's ``size`` rows, the strip of ``retries`` (its heading, each one's label and
    cells); returns the y ticks and their labels with the strip's, and the strip's bottom."""
    top = size + 1.6  # a gap, then the strip's own column labels
    width = across / len(retries)
    heading = (
        "The append that landed, unacknowledged, then retried:"
        if all(ops.OPERATIONS[r["second"]].is_retry for r in retries)
        else "The same operation from a second job, on a part of its own:"
        if not any(ops.OPERATIONS[r["second"]].is_retry for r in retries)
        else "The retried append; the same operation from a second job, on a part of its own:"
    )
    ax.text(0, size + 0.45, heading, fontsize=8, va="center")
    for k, row in enumerate(retries):
        x = k * width
        ax.text(
            x + width / 2,
            top - 0.3,
            ops.OPERATIONS[row["second"]].label,
            ha="center",
            va="bottom",
            fontsize=7.5,
        )
        _cell(
            ax, x, top, COLOURS[row["outcome"]], _text(row), row["agrees_with_docs"] == "no", width
        )
        if row.get("retry_after_reload"):
            _cell(
                ax,
                x,
                top + 1,
                COLOURS[row["retry_after_reload"]],
                _text(row, "retry_after_reload", "retry_after_reload_kind"),
                False,
                width,
            )
    if any(ops.OPERATIONS[r["second"]].is_retry for r in retries):
        ticks = ticks + [top + 0.5, top + 1.5]
        tick_labels = labels + ["race: from its\nold snapshot", "retry after\nreloading"]
    else:
        ticks, tick_labels = ticks + [top + 0.5], labels + ["race: from its\nold snapshot"]
    return ticks, tick_labels, top + 2


def _legend_and_title(ax, mine: list[dict], engine: str, title: str | None) -> None:
    """The legend of the outcomes drawn (and the docs' red corner) beside the grid, its title above."""
    from matplotlib.patches import Patch

    handles = [
        Patch(facecolor=c, label=o)
        for o, c in COLOURS.items()
        if any(r["outcome"] == o for r in mine)
    ]
    handles.append(Patch(facecolor="#b00020", label="disagrees with the docs"))
    ax.legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False
    )
    version = mine[0]["engine_version"] if mine else ""
    shown = f"deltalake {version}" if engine.startswith("deltalake-") else f"{engine} ({version})"
    ax.set_title(
        title or f"{shown}: A commits, then B from the older snapshot", fontsize=10, pad=60
    )


def grid(rows: list[dict], engine: str, *, title: str | None = None):
    """The Figure of one engine's rows (dicts as in ``matrix.csv``)."""
    import matplotlib.pyplot as plt

    mine = [r for r in rows if r["engine"] == engine]
    matrix = {(r["first"], r["second"]): r for r in mine if not _stripped(r)}
    retries = [r for r in mine if _stripped(r)]
    names = [n for n in ops.MATRIX_OPS if any(n in pair for pair in matrix)]
    size = len(names)
    # a run of retries alone (anomalies raced again) still has their strip
    across = size or len(retries)
    extra = 2.2 if retries else 0.0
    fig, ax = plt.subplots(figsize=(1.05 * across + 3.2, 0.62 * size + 2.6 + extra))
    for i, first in enumerate(names):
        for j, second in enumerate(names):
            row = matrix.get((first, second))
            if row:
                _cell(
                    ax, j, i, COLOURS[row["outcome"]], _text(row), row["agrees_with_docs"] == "no"
                )
    labels = [ops.OPERATIONS[n].label for n in names]
    ax.set_xticks([j + 0.5 for j in range(size)], labels, rotation=40, ha="left", fontsize=8)
    ax.xaxis.tick_top()
    ax.set_xlabel("B: commits second, from the snapshot both read", fontsize=9)
    ax.xaxis.set_label_position("top")
    ax.set_ylabel("A: commits first", fontsize=9)
    ticks, tick_labels, bottom = [i + 0.5 for i in range(size)], labels, size
    if retries:
        ticks, tick_labels, bottom = _retry_strip(ax, retries, size, across, ticks, labels)
    ax.set_yticks(ticks, tick_labels, fontsize=8)
    ax.set_xlim(0, across)
    ax.set_ylim(bottom, 0)
    ax.set_aspect("auto")
    for side in ("top", "right", "bottom", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(length=0)
    _legend_and_title(ax, mine, engine, title)
    fig.tight_layout()
    return fig
