"""Pictures of a run: the writers' timeline.

``timeline(run, title=..., audit=...)`` draws one lane per writer in two panels sharing the lanes:

* left, in seconds before the barrier opened: starting Python, importing deltalake and pyarrow,
  reading the landing file, loading the table's snapshot, then waiting at the barrier;
* right, in milliseconds after ``go``: writing the data file and committing, ending in a marker:
  committed (with its version), failed (with the error class), and, when an audit is passed,
  "reported success, rows lost" or "reported failure, rows present", with the number of commit
  attempts the log records.

Returns the matplotlib Figure; nothing is shown or saved here.
"""

from __future__ import annotations

import math

SETUP_COLOURS = {
    "start Python": "#d9d9d9",
    "import deltalake, pyarrow": "#bdbdbd",
    "read landing file": "#9ecae1",
    "load snapshot": "#4292c6",
    "wait at barrier": "#fdd0a2",
}
WRITE_COLOURS = {
    "committed": "#41ab5d",
    "failed": "#cb181d",
    "lost": "#fd8d3c",
    "phantom": "#6a51a3",
}
MARKERS = {"committed": "o", "failed": "X", "lost": "^", "phantom": "s"}
LANE_HEIGHT = 0.6
SETUP_SPANS = (
    ("t_launched", "t_start", "start Python"),
    ("t_start", "t_imported", "import deltalake, pyarrow"),
    ("t_imported", "t_landing_loaded", "read landing file"),
    ("t_landing_loaded", "t_snapshot_loaded", "load snapshot"),
    ("t_snapshot_loaded", "t_barrier_released", "wait at barrier"),
)
"""A writer's setup steps: the timestamps that start and end each, and its name in SETUP_COLOURS."""
FATE_LEGEND = {
    "committed": "committed",
    "failed": "failed",
    "lost": "reported success, rows lost",
    "phantom": "reported failure, rows present",
}
"""How the legend names each fate."""


def _fate(row, verdict: str | None) -> str:
    from helpers.runs import audit_record

    if verdict == audit_record.SILENT_LOSS:
        return "lost"
    if verdict == audit_record.PHANTOM:
        return "phantom"
    return "committed" if row["outcome"] == "committed" else "failed"


def _label(row, fate: str, audited) -> str:
    if fate == "failed":
        return f"failed: {row['error_class']}"
    if fate == "phantom":
        return f"reported {row['error_class']}, rows present"
    version = row["reported_version"]
    if fate == "lost":
        return f"reported v{version}, rows lost"
    if (
        audited is not None
        and audited.get("commit_in_log") is not None
        and not _missing(audited["commit_in_log"])
    ):
        attempts = audited.get("attempts")
        tries = (
            "" if _missing(attempts) else f", {int(attempts)} attempt{'s' if attempts != 1 else ''}"
        )
        stored = int(audited["commit_in_log"])
        said = "" if _missing(version) or int(version) == stored else f" (reported v{int(version)})"
        return f"committed v{stored}{tries}{said}"
    return f"reported v{version}"


def _missing(value) -> bool:
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or str(value) in ("<NA>", "nan", "None")
    )


def _seconds(row, start: str, end: str, origin: float) -> tuple[float, float] | None:
    a, b = row.get(start), row.get(end)
    if _missing(a) or _missing(b):
        return None
    return a - origin, b - a


def timeline(run, *, title: str | None = None, audit=None, ax=None):
    """Draw the run's writers on a time line; return the Figure.

    ``run`` is a :class:`helpers.runs.run_result.RunResult`; ``audit`` an optional
    :class:`helpers.runs.audit_record.Audit` of the same run, which adds the storage's verdict and the commit
    attempts. ``ax``: an existing pair of Axes (setup, write) to draw into, else a new figure.
    """
    frame = run.results
    origin = run.t_released if run.t_released else frame["t_barrier_released"].dropna().min()
    verdicts, audited_rows = _audited(audit)
    n = len(frame)
    fig, left, right = _timeline_axes(ax, n)
    write_end = 0.0
    for lane, row in enumerate(frame.to_dict("records")):
        y = n - 1 - lane
        _draw_setup(left, row, y, origin)
        fate = _fate(row, verdicts.get(row["writer_id"]))
        label = _label(row, fate, audited_rows.get(row["writer_id"]))
        end_ms = _draw_write(left, right, row, y, origin, fate, label)
        if end_ms is not None:
            write_end = max(write_end, end_ms)
    _finish_timeline_axes(left, right, list(frame["writer_id"]), write_end)
    fates_seen = {_fate(r, verdicts.get(r["writer_id"])) for r in frame.to_dict("records")}
    handles = _timeline_legend(fates_seen)
    fig.legend(
        handles=handles,
        loc="lower center",
        ncol=min(len(handles), 4),
        fontsize=8,
        frameon=False,
        bbox_to_anchor=(0.5, -0.02),
    )
    retries = "library default" if run.max_commit_retries is None else run.max_commit_retries
    fig.suptitle(title or f"{run.n} writers, {run.era}, max_commit_retries={retries}", fontsize=12)
    fig.subplots_adjust(bottom=0.1 + 0.9 / (n + 3), top=1 - 0.5 / (n + 2))
    return fig


def _audited(audit) -> tuple[dict, dict]:
    """The audit's verdict and its whole row, each by writer id ({} and {} without an audit)."""
    verdicts, audited_rows = {}, {}
    if audit is not None and audit.writers is not None:
        for record in audit.writers.to_dict("records"):
            verdicts[record["writer_id"]] = record["verdict"]
            audited_rows[record["writer_id"]] = record
    return verdicts, audited_rows


def _timeline_axes(ax, n: int):
    """(figure, setup Axes, write Axes): a new figure with one lane per writer, or the pair ``ax``."""
    import matplotlib.pyplot as plt

    if ax is None:
        fig, (left, right) = plt.subplots(
            1,
            2,
            sharey=True,
            figsize=(11, 1.2 + 0.42 * n),
            gridspec_kw={"width_ratios": [1, 2.6], "wspace": 0.04},
        )
    else:
        left, right = ax
        fig = left.figure
    return fig, left, right


def _draw_setup(left, row, y: float, origin: float) -> None:
    """The writer's setup steps in its lane of the left panel, in seconds before go."""
    for start, end, name in SETUP_SPANS:
        span = _seconds(row, start, end, origin)
        if span:
            left.broken_barh([span], (y - LANE_HEIGHT / 2, LANE_HEIGHT), color=SETUP_COLOURS[name])


def _draw_write(left, right, row, y: float, origin: float, fate: str, label: str) -> float | None:
    """The writer's write and commit in the right panel, in milliseconds after go, ending in its
    marker; return where it ended. A writer that never reached the barrier is marked in the left
    panel where its setup ended instead (None)."""
    begin = row.get("t_barrier_released")
    finish = row.get("t_write_finished")
    if _missing(finish):
        finish = row.get("t_exited")
    if _missing(begin) or _missing(finish):
        # never reached the barrier: mark the failure where the setup ended
        last = next(
            (
                row[k]
                for k in ("t_snapshot_loaded", "t_landing_loaded", "t_start", "t_exited")
                if not _missing(row.get(k))
            ),
            origin,
        )
        left.plot(
            [last - origin],
            [y],
            marker=MARKERS[fate],
            color=WRITE_COLOURS[fate],
            markersize=9,
            linestyle="none",
        )
        left.annotate(
            label, (last - origin, y), xytext=(6, -3), textcoords="offset points", fontsize=8
        )
        return None
    start_ms, end_ms = (begin - origin) * 1000, (finish - origin) * 1000
    right.broken_barh(
        [(start_ms, max(end_ms - start_ms, 0.5))],
        (y - LANE_HEIGHT / 2, LANE_HEIGHT),
        color=WRITE_COLOURS[fate],
        alpha=0.35,
    )
    right.plot(
        [end_ms],
        [y],
        marker=MARKERS[fate],
        color=WRITE_COLOURS[fate],
        markersize=9,
        linestyle="none",
    )
    right.annotate(label, (end_ms, y), xytext=(7, -3), textcoords="offset points", fontsize=8.5)
    return end_ms


def _finish_timeline_axes(left, right, writer_ids: list[str], write_end: float) -> None:
    """Lane names, limits, axis labels, the line at go and the grid of both panels."""
    n = len(writer_ids)
    left.set_yticks(range(n), writer_ids[::-1])
    left.set_ylim(-0.8, n - 0.2)
    left.set_xlabel("seconds before go (barrier open)")
    left.axvline(0, color="black", linewidth=1)
    right.axvline(0, color="black", linewidth=1)
    right.set_xlim(-0.03 * max(write_end, 1), max(write_end, 1) * 1.45)
    right.set_xlabel("milliseconds after go: write data file + commit")
    for axis in (left, right):
        axis.grid(axis="x", alpha=0.3)
        axis.spines[["top", "right"]].set_visible(False)


def _timeline_legend(fates_seen: set[str]) -> list:
    """The legend's entries: every setup step, then the fates that happened in this run."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=c, label=k) for k, c in SETUP_COLOURS.items()]
    handles += [
        Line2D(
            [],
            [],
            marker=MARKERS[f],
            color=WRITE_COLOURS[f],
            linestyle="none",
            markersize=8,
            label=FATE_LEGEND[f],
        )
        for f in ("committed", "failed", "lost", "phantom")
        if f in fates_seen
    ]
    return handles


OPERATION_MARKERS = {
    "WRITE": ".",
    "OPTIMIZE": "D",
    "MERGE": "s",
    "VACUUM START": "v",
    "VACUUM END": "v",
}


def files_per_version(histories: dict, *, listed: dict | None = None, title: str | None = None):
    """Live data files and bytes at each version of one or more tables; return the Figure.

    ``histories`` maps a label (e.g. ``"delta-rs"``) to a :func:`helpers.delta.table_files.history`
    frame (``version``, ``operation``, ``live_files``, ``live_bytes``). Top panel: live files per
    version, a step line per table, every commit that is not a plain append marked and named
    (OPTIMIZE, MERGE, VACUUM, ...). Bottom panel: live bytes in KiB. ``listed`` optionally maps the
    same labels to ``[(version, parquet_files_in_the_folder), ...]`` measured by listing the store
    while the story ran, in that order: drawn dashed in the top panel, it shows the files a version no longer
    reads staying in the bucket until VACUUM. Nothing is shown or saved here.
    """
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(
        2, 1, sharex=True, figsize=(11, 6.5), gridspec_kw={"height_ratios": [3, 2], "hspace": 0.08}
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for number, (label, frame) in enumerate(histories.items()):
        colour = colours[number % len(colours)]
        _draw_history(top, bottom, number, label, frame, colour)
        if listed and label in listed and listed[label]:
            points = list(
                listed[label]
            )  # in the order listed: two listings of one version (VACUUM adds no commit in Spark) stay in order
            top.plot(
                [v for v, _ in points],
                [n for _, n in points],
                linestyle="--",
                marker="o",
                markersize=5,
                color=colour,
                alpha=0.6,
                label=f"{label}: Parquet files in the bucket (listed)",
            )
    top.set_ylabel("data files")
    bottom.set_ylabel("KiB read by the version")
    bottom.set_xlabel("table version")
    top.set_ylim(bottom=0)
    bottom.set_ylim(bottom=0)
    for axis in (top, bottom):
        axis.grid(alpha=0.3)
        axis.spines[["top", "right"]].set_visible(False)
        axis.legend(fontsize=8, frameon=False, loc="upper left")
    fig.suptitle(title or "Data files per table version", fontsize=12)
    return fig


def _draw_history(top, bottom, number: int, label: str, frame, colour: str) -> None:
    """One table's history (the ``number``-th drawn): live files (top) and KiB (bottom) as step
    lines, and every commit that is not a plain append marked and named in the top panel."""
    versions, files, kib = (
        list(frame["version"]),
        list(frame["live_files"]),
        [b / 1024 for b in frame["live_bytes"]],
    )
    width = max(
        3.5 - 1.5 * number, 1.2
    )  # the first table drawn widest, so twins with one history stay visible
    top.step(
        versions,
        files,
        where="post",
        color=colour,
        linewidth=width,
        label=f"{label}: live files (log)",
    )
    bottom.step(
        versions,
        kib,
        where="post",
        color=colour,
        linewidth=width,
        label=f"{label}: live KiB (log)",
    )
    for version, operation, count in zip(versions, frame["operation"], files):
        if operation in ("WRITE", "CREATE TABLE", None):
            continue
        top.plot(
            [version],
            [count],
            marker=OPERATION_MARKERS.get(operation, "o"),
            color=colour,
            markersize=8,
            linestyle="none",
        )
        top.annotate(
            operation,
            (version, count),
            xytext=(-4 + 8 * number, 8),
            textcoords="offset points",
            fontsize=8,
            color=colour,
            rotation=90,
            ha="center",
            va="bottom",
        )
