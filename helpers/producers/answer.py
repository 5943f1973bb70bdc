"""The answer page's section "What to build instead of racing writers", rendered from the committed
many-producers run (:mod:`helpers.producers.results`): :func:`what_to_build` returns its markdown.
"""

from __future__ import annotations

from helpers.producers import figures
from helpers.producers import results as results_module

HEADING = "## What to build instead of racing writers"
GOAL_SERIAL, GOAL_RACING = 0.9, 4.0
"""The design's targets at 8 producers: commits/s at least 0.9 of the serial limit; rows/s at least 4x 8 racing writers'."""
STORES = {
    "local": "local disk",
    "azure": "Azure Blob (Azurite)",
    "s3": "S3 (moto)",
    "s3@moto": "S3 (moto)",
    "s3@versitygw": "S3 (versitygw)",
}


def _ratio(value) -> str:
    return (
        "n/a" if value != value else f"{value:.2f}"
    )  # NaN: the store has no racing-writer protocol


def what_to_build(found: results_module.Results | None = None, *, heading: bool = True) -> str:
    """The section's markdown, from ``found`` (default: the full run, this machine's or the committed copy)."""
    found = found if found is not None else results_module.load()
    meta, runs = found.meta, found.runs
    most = int(runs.producers.max())
    top = runs[runs.producers == most].set_index("backend")
    machine = meta["machine"]
    versions = ", ".join(f"{name} {version}" for name, version in meta["versions"].items())
    lines = [HEADING, ""] if heading else []
    lines += [
        "Racing writers share one table's commits and pay for every lost claim. Build instead: **producers** that "
        "write Parquet data files into the table's folder and hand each over (a ready marker), and **one committer** "
        "that commits the handed-over files in batches, each batch one transaction "
        "(`DeltaTable.create_write_transaction` in deltalake 1.x) carrying `Transaction(app_id, batch)`, after asking "
        "`transaction_version(app_id)` of the latest table on its first commit and after any error. It lists a page "
        "of markers at a time, after the last one it read, never one it took, and sends the next listing while it "
        "commits; the markers it took go once a pass through the queue ends, so no deletion competes with a "
        "commit while markers wait. A committer killed mid-commit and restarted, a producer "
        "killed mid-file and a lost commit answer each leave every row in the table once (notebook 14); without the "
        "check, a lost answer commits a batch twice. With Spark, `foreachBatch` writing with `txnAppId` / "
        "`txnVersion` does the same.",
        "",
        f"Measured ({meta['date'][:10]}, {machine['cpus']} cores, {machine['memory_gib']} GiB, {machine['system']}; "
        f"{versions}; {meta['files_per_producer']} files of {meta['rows_per_file']} rows per producer), "
        f"{most} producers through one committer:",
        "",
        "| store | commits/s | rows/s | files per commit | marker to commit, p50 / p99 | producers' share of the cores "
        "| rows/s against 8 racing writers | the committer alone on staged files, commits/s against the serial limit |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    limit = (
        found.limit.set_index("backend") if found.limit is not None and len(found.limit) else None
    )
    alone = {
        b: (limit.ratio_to_serial.get(b, float("nan")) if limit is not None else float("nan"))
        for b in top.index
    }
    for backend, row in top.iterrows():
        latency = (
            f"{row.marker_to_commit_p50_s * 1000:.0f} / {row.marker_to_commit_p99_s * 1000:.0f} ms"
            if "marker_to_commit_p50_s" in row
            else "n/a"
        )
        share = f"{row.producers_cpu_share:.0%}" if "producers_cpu_share" in row else "n/a"
        lines.append(
            f"| {STORES.get(backend, backend)} | {row.commits_per_s:.1f} | {row.rows_per_s:.0f} | "
            f"{row.files_per_commit_mean:.1f} | {latency} | {share} | {_ratio(row.rows_ratio_to_racing)} | "
            f"{_ratio(alone[backend])} |"
        )
    lines += [
        "",
        "The serial limit is one writer appending alone, measured in the same run; in the last column the committer "
        f"alone commits {meta.get('limit_files_per_commit', 10)} staged files per commit, back to back, with no "
        "producer running, in turns with one writer appending alone to a table of its own, so that both meet the "
        "same load"
        + (
            f" ({meta['limit_rounds']} turns of {meta['limit_block']} commits of each kind)."
            if "limit_block" in meta
            else "."
        ),
        "",
        _targets(top, alone),
        "",
    ]
    cause = _cause(found)
    queue = _queue_cost(found)
    if cause or queue:
        lines += cause + ([queue] if queue else []) + [""]
    lines += _variants(found)
    lines += _more_cores(found)
    return "\n".join(lines) + "\n"


def _targets(top, alone: dict) -> str:
    """The targets line: met, or each store's measured ratio that fell short."""
    short = []
    for backend, row in top.iterrows():
        if (
            alone[backend] == alone[backend] and alone[backend] < GOAL_SERIAL
        ):  # NaN: no serial limit measured (local disk)
            short.append(
                f"{STORES.get(backend, backend)}: the committer alone at {alone[backend]:.3f} of the serial limit"
            )
        if (
            row.rows_ratio_to_racing == row.rows_ratio_to_racing
            and row.rows_ratio_to_racing < GOAL_RACING
        ):
            short.append(
                f"{STORES.get(backend, backend)}: {_ratio(row.rows_ratio_to_racing)} times 8 racing writers' rows/s"
            )
    head = (
        f"Targets (the committer alone at least {GOAL_SERIAL} of the serial limit in commits/s; with "
        f"{int(top.producers.max())} producers, at least {GOAL_RACING:g} times 8 racing writers' rows/s): "
    )
    return head + (
        "met on every store in this run."
        if not short
        else "not met in this run: " + "; ".join(short) + "."
    )


def _cause(found) -> list[str]:
    """Where a committer's commit pays more than a plain append's, from the run's profile (medians,
    one request at a time in one process): a table per store and what it shows, as list items."""
    profile = found.profile
    if profile is None or not len(profile):
        return []
    steps = profile.set_index(["backend", "variant", "step"])
    stores = [
        backend
        for backend in dict.fromkeys(profile.backend)
        if (backend, "committer", "refresh") in steps.index
        and (backend, "plain append", "refresh") in steps.index
    ]
    if not stores:
        return []

    def ms(backend, variant, step) -> float:
        return steps.loc[(backend, variant, step)].seconds_median * 1000

    def requests(backend, variant, step) -> str:
        return f"{steps.loc[(backend, variant, step)].requests_median:g}"

    def growth(backend) -> str:
        span = _refresh_span(steps, backend)
        return f"{span[0]:.1f} → {span[1]:.1f}" if span else "n/a"

    commits = figures.commits_per_median(profile)
    lines = [
        f"Where a commit's time goes, one request at a time in one process (medians of {commits} "
        "commits of 10 files; notebook 14 §4 has every step):",
        "",
        "| store | one commit, ms: committer / plain append | requests | its refresh, ms | "
        "refresh requests | the committer's refresh, ms: first 20 commits → commits 80 to 99 |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for b in stores:
        lines.append(
            f"| {STORES.get(b, b)} | {ms(b, 'committer', 'whole commit'):.1f} / "
            f"{ms(b, 'plain append', 'whole commit'):.1f} | {requests(b, 'committer', 'whole commit')} / "
            f"{requests(b, 'plain append', 'whole commit')} | {ms(b, 'committer', 'refresh'):.1f} / "
            f"{ms(b, 'plain append', 'refresh'):.1f} | {requests(b, 'committer', 'refresh')} / "
            f"{requests(b, 'plain append', 'refresh')} | {growth(b)} |"
        )
    extra = ", ".join(
        f"{ms(b, 'committer', 'refresh') - ms(b, 'plain append', 'refresh'):.1f} ms on {STORES.get(b, b)}"
        for b in stores
    )
    lines += [
        "",
        "- **The cause: one more read of the log per commit.** After each commit the committer reads "
        "its table again, because deltalake 1.6.6's `create_write_transaction` leaves the `DeltaTable` "
        "at the version it read ([a finding](../findings/deltalake-create-write-transaction-leaves-the-"
        "table-behind/REPORT.md): without that refresh its next commit is refused as concurrent with "
        "its own last one), where `write_deltalake` keeps its table current. Its refresh reads its own "
        f"commit back: {extra} more than a plain append's"
        + (
            ", and one request more on the object stores"
            if any(b != "local" for b in stores)
            else ""
        )
        + "."
        + _local_check(found, ms),
    ]
    if all(_refresh_span(steps, b) for b in stores):
        lines.append(
            "- **It grows until the next checkpoint.** A refresh that reads a new commit replays every "
            "commit since the last checkpoint (one each 100 commits): from the first 20 commits to "
            "commits 80 to 99 the committer's grew "
            + ", ".join(
                f"{_refresh_span(steps, b)[1] / _refresh_span(steps, b)[0]:.1f}-fold on {STORES.get(b, b)}"
                for b in stores
            )
            + "."
        )
    return lines


def _variants(found) -> list[str]:
    """The committer alone at the limit in each way of keeping its refresh short (a run that
    measured them, :mod:`helpers.producers.serial_limit`): its ratio by way and store, the ways
    that reach :data:`GOAL_SERIAL` on every store, and the commits tried again without a refresh."""
    variants = found.limit_variants
    if variants is None or not len(variants):
        return []
    stores = list(dict.fromkeys(variants.backend))
    order = list(dict.fromkeys(variants.variant))
    row = variants.set_index(["variant", "backend"])
    lines = [
        "The committer alone at the serial limit, in each way of keeping its refresh short (each "
        f"way on fresh tables, {int(variants.commits.min())} or more commits of each kind per "
        "store, in this run; `make deltalake-fix` builds the fix, `make producers` measures it "
        "when built); commits/s against one writer appending alone, and the commits tried again:",
        "",
        "| deltalake | the committer | "
        + " | ".join(STORES.get(s, s) for s in stores)
        + " | its refresh, ms: p50 / p99, worst store | tried again |",
        "| --- | --- | " + "--- | " * len(stores) + "--- | --- |",
    ]
    for name in order:
        mine = row.loc[name]
        refresh = (
            f"{mine.refresh_p50_ms.max():.1f} / {mine.refresh_p99_ms.max():.1f}"
            if mine.refreshes.min() > 0
            else "none"
        )
        lines.append(
            f"| {mine.build.iloc[0]} | {name} | "
            + " | ".join(f"{row.loc[(name, s)].ratio_to_serial:.2f}" for s in stores)
            + f" | {refresh} | {int(mine.errors.sum())} of {int(mine.commits.sum())} |"
        )
    reach = [n for n in order if (row.loc[n].ratio_to_serial >= GOAL_SERIAL).all()]
    lines += [
        "",
        (
            f"At least {GOAL_SERIAL} of the serial limit on every store in this run: "
            + "; ".join(f"{n} ({row.loc[n].build.iloc[0]})" for n in reach)
            + "."
            if reach
            else f"No way reaches {GOAL_SERIAL} of the serial limit on every store in this run."
        ),
        "",
    ]
    return lines


def _refresh_span(steps, backend) -> tuple[float, float] | None:
    """The committer's refresh over the first 20 commits and over commits 80 to 99, in ms, from
    the profile's rows indexed by (backend, variant, step); None for a run without them."""
    row = steps.loc[(backend, "committer", "refresh")]
    late = row.get("seconds_median_late", float("nan"))
    if late != late:
        return None
    return row.seconds_median_early * 1000, late * 1000


def _local_check(found, ms) -> str:
    """On local disk a commit sends no request, so the profile's whole commits predict the ratio at
    the limit; the sentence setting the two side by side (empty without both)."""
    if found.limit is None or "local" not in set(found.limit.backend):
        return ""
    try:
        mine, plain = (
            ms("local", "committer", "whole commit"),
            ms("local", "plain append", "whole commit"),
        )
    except KeyError:
        return ""
    measured = found.limit.set_index("backend").ratio_to_serial["local"]
    return (
        f" On local disk, where a commit sends no request, the profile's {mine:.1f} ms against "
        f"{plain:.1f} predicts {plain / mine:.2f} of the serial limit; the committer alone measured "
        f"{measured:.3f}."
    )


def _queue_cost(found) -> str:
    """A commit's cost as the queue grows, against plain appends to the same table beside the same
    markers (runs that measured them)."""
    queue = found.queue
    if queue is None or not len(queue) or "plain append" not in set(queue.variant):
        return ""
    whole = queue[queue.step == "whole commit"].set_index(["backend", "variant", "waiting"])
    lengths = sorted(set(queue.waiting))
    parts, listed = [], set()
    for backend in dict.fromkeys(queue.backend):
        mine = [whole.loc[(backend, "committer", n)] for n in lengths]
        plain = [whole.loc[(backend, "plain append", n)] for n in lengths]
        listed.update(int(m.markers_listed_median) for m in mine)
        parts.append(
            f"{STORES.get(backend, backend)} "
            + " / ".join(f"{m.seconds_median * 1000:.0f}" for m in mine)
            + " ms against "
            + " / ".join(f"{p.seconds_median * 1000:.0f}" for p in plain)
            + " ("
            + " / ".join(f"{m.seconds_median / p.seconds_median:.2f}" for m, p in zip(mine, plain))
            + ")"
        )
    return (
        "- **Not with the queue.** As it grows ("
        + ", ".join(f"{n:,}" for n in lengths)
        + " markers waiting; each listing read "
        + " or ".join(str(n) for n in sorted(listed))
        + " markers, whatever the length), one committer commit took "
        + "; ".join(parts)
        + " for a plain append to the same table beside the same markers (medians; in brackets the "
        "committer's over the plain append's: what the queue adds, apart from what the store's "
        "own requests cost as it holds more objects)."
    )


def _more_cores(found) -> list[str]:
    from helpers.producers import figures

    cpus = int(found.meta["machine"]["cpus"])
    checked, projected = figures.cores_model(found.runs, cpus=cpus)
    spread = checked.model_over_measured
    cores = [c for c in projected.columns if c.endswith("cores")]
    per_store = "; ".join(
        f"{STORES.get(b, b)} " + ", ".join(f"{row[c]:.0f}" for c in cores)
        for b, row in projected.iterrows()
    )
    return [
        f"More cores: the committer is not the bound (it takes whatever waits, so its files per commit grow), the "
        f"producers and the emulators' CPU are. Rows/s as the lesser of one producer's rows/s times the producers and "
        f"rows/s per core (from the {int(found.runs.producers.max())}-producer run) times the cores comes within "
        f"{spread.min():.2f} to {spread.max():.2f} of every run's measured rows/s here; with "
        f"{int(found.runs.producers.max())} producers it gives, at {', '.join(c.split()[0] for c in cores)} cores: "
        f"{per_store} rows/s (notebook 14 §4)."
    ]
