"""Pictures of benchmark results: each figure against the writer count, one line per protocol.

* :func:`curves`: throughput (measured, and projected to the cloud when given), latency p50/p95/p99,
  and mean attempts per commit, in one row of panels;
* :func:`breakdown`: where a commit's time goes, per protocol at chosen writer counts.

Each returns the matplotlib Figure; nothing is shown or saved here.
"""

from __future__ import annotations

from helpers.bench.meter import BREAKDOWN_COLUMNS


def _label(meta: dict | None) -> str:
    if not meta:
        return ""
    machine = meta.get("machine", {})
    return (
        f"{meta.get('date', '')[:10]} · {machine.get('cpus')} cores, {machine.get('memory_gib')} GiB · "
        + ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items())
    )


def curves(
    runs,
    *,
    meta: dict | None = None,
    projected=None,
    title: str = "Commit throughput as writers grow",
):
    """Throughput, latency percentiles and attempts against N. ``projected``: a frame with
    ``protocol``, ``writers``, ``projected_commits_per_s`` (drawn dashed on the throughput panel)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    throughput, latency, attempts = axes
    colours = {}
    for name, group in runs.sort_values("writers").groupby("protocol", sort=False):
        (line,) = throughput.plot(group["writers"], group["commits_per_s"], marker="o", label=name)
        colours[name] = line.get_color()
        for column, style in (
            ("latency_p50_s", "-"),
            ("latency_p95_s", "--"),
            ("latency_p99_s", ":"),
        ):
            latency.plot(
                group["writers"],
                group[column] * 1000,
                linestyle=style,
                marker=".",
                color=line.get_color(),
                label=f"{name} {column.split('_')[1]}" if style == "-" else None,
            )
        attempts.plot(
            group["writers"], group["attempts_mean"], marker="o", color=line.get_color(), label=name
        )
    if projected is not None:
        for name, group in projected.sort_values("writers").groupby("protocol", sort=False):
            throughput.plot(
                group["writers"],
                group["projected_commits_per_s"],
                linestyle="--",
                color=colours.get(name),
                alpha=0.6,
                label=f"{name} (cloud model)",
            )
    for ax, ylabel in zip(
        axes,
        (
            "commits per second",
            "latency, ms (solid p50, dashed p95, dotted p99)",
            "attempts per commit (mean)",
        ),
    ):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(runs["writers"].unique()))
        ax.set_xticklabels([str(n) for n in sorted(runs["writers"].unique())])
        ax.set_xlabel("concurrent writers N")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    latency.set_yscale("log")
    throughput.legend(fontsize=7)
    attempts.legend(fontsize=7)
    fig.suptitle(f"{title}\n{_label(meta)}", fontsize=9)
    fig.tight_layout()
    return fig


def breakdown(
    runs, *, writers=(1, 8), title: str = "Where a commit's time goes (seconds per commit)"
):
    """Stacked bars: per protocol and writer count, the mean seconds per commit in each request
    kind, and outside requests (client CPU, backoff, waiting for a core; drawn at 0 where the
    requests overlapped and their seconds add up to more than the commits took)."""
    import matplotlib.pyplot as plt

    chosen = runs[runs["writers"].isin(writers)].sort_values(["protocol", "writers"])
    labels = [f"{p}\nN={n}" for p, n in zip(chosen["protocol"], chosen["writers"])]
    fig, ax = plt.subplots(figsize=(max(8, 1.1 * len(labels)), 4.5))
    bottom = [0.0] * len(chosen)
    for part, column in BREAKDOWN_COLUMNS.items():
        values = [max(v, 0.0) for v in chosen[column].fillna(0.0)]
        ax.bar(labels, values, bottom=bottom, label=part)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_ylabel("seconds per commit")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, ncol=2)
    ax.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    return fig
