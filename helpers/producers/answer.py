"""The answer page's section "What to build instead of racing writers", rendered from the committed
many-producers run (:mod:`helpers.producers.results`): :func:`what_to_build` returns its markdown.
"""

from __future__ import annotations

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
        "same load.",
        "",
        _targets(top, alone) + _per_commit(found) + _refresh_cause(found),
        "",
    ]
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


def _per_commit(found) -> str:
    """One commit of the committer against one plain append's, from the run's profile (medians, one request at a time)."""
    if found.profile is None or not len(found.profile):
        return ""
    whole = found.profile[found.profile.step == "whole commit"].set_index(["backend", "variant"])
    parts = []
    for backend in dict.fromkeys(found.profile.backend):
        if (
            (backend, "committer") in whole.index
            and (backend, "plain append") in whole.index
            and backend != "local"
        ):
            mine, plain = whole.loc[(backend, "committer")], whole.loc[(backend, "plain append")]
            parts.append(
                f"{STORES.get(backend, backend)} {mine.seconds_median * 1000:.0f} ms and {mine.requests_median:g} requests "
                f"against {plain.seconds_median * 1000:.0f} ms and {plain.requests_median:g}"
            )
    return (
        (
            " Measured apart, one request at a time in one process, one committer commit of 10 files took "
            + "; ".join(parts)
            + " for one plain append (its refresh reads its own commit back; one listing of a page of "
            "markers serves several commits; notebook 14 §4 has every step)."
        )
        if parts
        else ""
    )


def _refresh_cause(found) -> str:
    """Where a committer's commit pays more than a plain append's: its refresh, from the run's profile."""
    if found.profile is None or not len(found.profile):
        return ""
    refresh = found.profile[found.profile.step == "refresh"].set_index(["backend", "variant"])
    parts = [
        f"{STORES.get(backend, backend)} {mine.seconds_median * 1000:.1f} ms"
        + (f" and {mine.requests_median:g} requests" if backend != "local" else "")
        + f" against {plain.seconds_median * 1000:.1f} ms"
        + (f" and {plain.requests_median:g}" if backend != "local" else "")
        for backend in dict.fromkeys(found.profile.backend)
        if (backend, "committer") in refresh.index and (backend, "plain append") in refresh.index
        for mine, plain in [
            (refresh.loc[(backend, "committer")], refresh.loc[(backend, "plain append")])
        ]
    ]
    return (
        " The cause measured: after each commit the committer reads its table again, because "
        "deltalake 1.6.6's `create_write_transaction` leaves the `DeltaTable` at the version it "
        "read ([a finding](../findings/deltalake-create-write-transaction-leaves-the-table-behind/"
        "REPORT.md): without that refresh its next commit is refused as concurrent with its own "
        "last one), where `write_deltalake` keeps its table current; its refresh took "
        + "; ".join(parts)
        + " for a plain append's."
        if parts
        else ""
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
