"""The full run's committer figures as tables and a plot, and the model for more cores: what notebook
14 shows and docs/benchmark.md quotes (:mod:`helpers.producers.results` reads the run).

* :func:`steps_table`: each step of one commit, the committer's (as it is, as it was) beside a
  plain append's: milliseconds and requests per commit (medians);
* :func:`queue_table` and :func:`queue_plot`: a commit's cost with 100, 1,000 and 10,000 markers waiting;
* :func:`limit_table`: the committer alone on staged files against one writer appending alone;
* :func:`limit_variants_table`: the same in each way of keeping its refresh short;
* :func:`cores_model`: rows/s with 8 producers as cores grow, checked against the 1, 2, 4 and 8 producer runs;
* :func:`markdown`: any of these frames as a markdown table.
"""

from __future__ import annotations

from helpers.producers.commit_steps import APPEND_STEPS, STEPS
from helpers.producers.profile import VARIANTS

SHORT = {
    "committer": "committer",
    "committer, before": "committer as it was",
    "plain append": "plain append",
}


def markdown(frame) -> str:
    """A frame as a markdown table (its index as the first columns)."""
    flat = frame.reset_index()
    lines = [
        "| " + " | ".join(str(c) for c in flat.columns) + " |",
        "| " + " | ".join("---" for _ in flat.columns) + " |",
    ]
    for row in flat.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _cell(value) -> str:
    if isinstance(value, float):
        return "n/a" if value != value else f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def steps_table(profile):
    """Store and step by variant: ``ms`` (median seconds per commit x 1000) and ``requests`` (median)."""
    frame = profile.assign(ms=profile.seconds_median * 1000, requests=profile.requests_median)
    wide = frame.pivot_table(
        index=["backend", "step"], columns="variant", values=["ms", "requests"], aggfunc="first"
    )
    wide.columns = [f"{SHORT[v]}, {what}" for what, v in wide.columns]
    wide = wide[
        [
            f"{SHORT[v]}, {what}"
            for v in VARIANTS
            for what in ("ms", "requests")
            if f"{SHORT[v]}, {what}" in wide.columns
        ]
    ]
    order = [*STEPS, *APPEND_STEPS, "whole commit"]
    rows = [
        (b, s)
        for b in dict.fromkeys(profile.backend)
        for s in dict.fromkeys(order)
        if (b, s) in wide.index
    ]
    return wide.loc[rows].round(1)


def queue_table(queue):
    """Store and markers waiting by variant: a whole commit's ms, its requests and the markers its
    listing read (medians); with plain appends to the same table beside the same markers (runs
    from 2026-12 on), the committer's ms against theirs, which tells the queue's cost from the
    store's."""
    import pandas as pd

    whole = queue[queue.step == "whole commit"]
    wide = whole.pivot_table(
        index=["backend", "waiting"],
        columns="variant",
        values=["seconds_median", "requests_median", "markers_listed_median"],
        aggfunc="first",
    )
    columns = {}
    for variant in ("committer", "committer, before"):
        columns[f"{SHORT[variant]}, ms"] = wide[("seconds_median", variant)] * 1000
        columns[f"{SHORT[variant]}, requests"] = wide[("requests_median", variant)]
        columns[f"{SHORT[variant]}, markers listed"] = wide[("markers_listed_median", variant)]
    if ("seconds_median", "plain append") in wide.columns:
        plain = wide[("seconds_median", "plain append")]
        columns["plain append, ms"] = plain * 1000
        columns["plain append, requests"] = wide[("requests_median", "plain append")]
        columns["committer / plain append"] = wide[("seconds_median", "committer")] / plain
    return pd.DataFrame(columns).round(2)


def queue_plot(queue, meta: dict | None = None):
    """Milliseconds per commit against markers waiting (log scales), one line per store and variant."""
    import matplotlib.pyplot as plt

    whole = queue[queue.step == "whole commit"].sort_values("waiting")
    fig, ax = plt.subplots(figsize=(8, 4.5))
    colours = {
        b: f"C{i}" for i, b in enumerate(dict.fromkeys(whole.backend))
    }  # one colour a store; dashed: as it was; dotted: plain appends beside the same markers
    for (backend, variant), group in whole.groupby(["backend", "variant"], sort=False):
        ax.plot(
            group.waiting,
            group.seconds_median * 1000,
            marker="o",
            linestyle={"committer": "-", "plain append": ":"}.get(variant, "--"),
            color=colours[backend],
            label=f"{backend}, {SHORT[variant]}",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("markers waiting in the queue")
    ax.set_ylabel("ms per commit (median)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    date = f" ({meta['date'][:10]}, {meta['machine']['cpus']} cores)" if meta else ""
    ax.set_title(f"A commit's cost against the queue's length{date}", fontsize=9)
    fig.tight_layout()
    return fig


def commits_per_median(rows) -> int:
    """The commits behind each median of a profile's or a queue's rows."""
    return int(rows[rows.step == "whole commit"].commits.max())


def limit_table(limit):
    """The committer alone on staged files, back to back, in turns with one writer appending alone
    (same store, same minutes), and the machine's load average then."""
    columns = [
        "commits",
        "max_files",
        "busy_commits_per_s",
        "serial_commits_per_s",
        "ratio_to_serial",
        "load_1min",
        "exactly_once",
    ]
    return limit.set_index("backend")[[c for c in columns if c in limit.columns]].round(3)


def limit_variants_table(variants):
    """The committer alone at the limit in each way of keeping its refresh short
    (:mod:`helpers.producers.serial_limit`): its commits/s against one writer appending alone, by
    variant and store, then its refresh (median and p99), its checkpoints and the commits it had to
    try again."""
    ratio = variants.pivot(index="variant", columns="backend", values="ratio_to_serial")
    order = [v for v in dict.fromkeys(variants.variant)]
    ratio = ratio.loc[order, list(dict.fromkeys(variants.backend))]
    steps = variants.set_index(["variant", "backend"])[
        ["refresh_p50_ms", "refresh_p99_ms", "checkpoints", "checkpoint_p50_ms", "errors"]
    ]
    return ratio.round(3), steps.loc[order].round(2)


def cores_model(runs, *, cores=(2, 4, 8, 16), cpus: int):
    """Rows/s as the lesser of what the producers make alone and what the cores can carry.

    One producer writes its files one after another, so P producers make at most ``P x r1`` rows/s
    (``r1``: rows/s of the 1-producer run); the machine carries at most ``K x c`` rows/s on K cores
    (``c``: rows/s per core in the run with the most producers, whose producers, emulator and
    committer kept every core busy). The committer is not the bound: it takes whatever waits,
    so its files per commit grow instead. Returns (check, projection): the model against each
    run's rows/s on this machine, and rows/s with the most producers as cores grow."""
    import pandas as pd

    checked, projected = [], []
    for backend, group in runs.groupby("backend", sort=False):
        group = group.set_index("producers").sort_index()
        r1, most = group.rows_per_s.iloc[0] / group.index[0], group.index[-1]
        per_core = group.rows_per_s.loc[most] / cpus
        for producers, row in group.iterrows():
            model = min(producers * r1, cpus * per_core)
            checked.append(
                {
                    "backend": backend,
                    "producers": producers,
                    "rows_per_s": row.rows_per_s,
                    "model_rows_per_s": model,
                    "model_over_measured": model / row.rows_per_s,
                }
            )
        projected.append(
            {
                "backend": backend,
                **{f"{k} cores": min(most * r1, k * per_core) for k in cores},
                "bound": f"{most} producers alone: {most * r1:.0f}",
            }
        )
    return pd.DataFrame(checked).round(2), pd.DataFrame(projected).set_index("backend").round(0)


def benchmark_tables(found) -> str:
    """The committer's tables as docs/benchmark.md quotes them: the run's line, then each step of a
    commit, the queue's length, and the committer alone on staged files (markdown)."""
    meta, machine = found.meta, found.meta["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in meta["versions"].items())
    return (
        "\n\n".join(
            [
                f"Run of {meta['date'][:10]} ({machine['cpus']} cores, {machine['memory_gib']} GiB, {machine['system']}; {versions}; "
                f"`data/full_runs/producers/`).",
                f"Each step of one commit, milliseconds and requests (medians of {commits_per_median(found.profile)} commits of 10 files):",
                markdown(steps_table(found.profile)),
                f"A whole commit with markers waiting (medians of {commits_per_median(found.queue)} commits of 10 files; plain appends to the same table, beside the same markers):",
                markdown(queue_table(found.queue)),
                "The committer alone on the 8 producers' staged files, back to back, in turns with one writer appending alone:",
                markdown(limit_table(found.limit)),
                *(
                    [
                        "The same in each way of keeping the committer's refresh short "
                        "(commits/s against one writer appending alone; then each one's refresh, "
                        "checkpoints and commits tried again):",
                        markdown(limit_variants_table(found.limit_variants)[0]),
                        markdown(limit_variants_table(found.limit_variants)[1]),
                    ]
                    if found.limit_variants is not None and len(found.limit_variants)
                    else []
                ),
            ]
        )
        + "\n"
    )
