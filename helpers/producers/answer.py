"""The answer page's section "What to build instead of racing writers", rendered from the committed
many-producers run (:mod:`helpers.producers.results`): :func:`what_to_build` returns its markdown.
"""

from __future__ import annotations

from helpers.producers import results as results_module

HEADING = "## What to build instead of racing writers"
GOAL_SERIAL, GOAL_RACING = 0.9, 4.0
"""The design's targets at 8 producers: commits/s at least 0.9 of the serial limit; rows/s at least 4x 8 racing writers'."""
STORES = {"local": "local disk", "azure": "Azure Blob (Azurite)", "s3": "S3 (moto)", "s3@moto": "S3 (moto)",
          "s3@versitygw": "S3 (versitygw)"}


def _ratio(value) -> str:
    return "n/a" if value != value else f"{value:.2f}"  # NaN: the store has no racing-writer protocol


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
        "`transaction_version(app_id)` of the latest table. A committer killed mid-commit and restarted, a producer "
        "killed mid-file and a lost commit answer each leave every row in the table once (notebook 14); without the "
        "check, a lost answer commits a batch twice. With Spark, `foreachBatch` writing with `txnAppId` / "
        "`txnVersion` does the same.",
        "",
        f"Measured ({meta['date'][:10]}, {machine['cpus']} cores, {machine['memory_gib']} GiB, {machine['system']}; "
        f"{versions}; {meta['files_per_producer']} files of {meta['rows_per_file']} rows per producer), "
        f"{most} producers through one committer:",
        "",
        "| store | commits/s | rows/s | files per commit | commits/s against the serial limit: whole run, back to back "
        "| rows/s against 8 racing writers |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for backend, row in top.iterrows():
        busy = _ratio(row.get("busy_ratio_to_serial", float("nan")))
        lines.append(f"| {STORES.get(backend, backend)} | {row.commits_per_s:.1f} | {row.rows_per_s:.0f} | "
                     f"{row.files_per_commit_mean:.1f} | {_ratio(row.ratio_to_serial)}, {busy} | "
                     f"{_ratio(row.rows_ratio_to_racing)} |")
    met = [b for b, r in top.iterrows() if r.get("busy_ratio_to_serial", float("nan")) >= GOAL_SERIAL
           and r.rows_ratio_to_racing >= GOAL_RACING]
    lines += ["", "The whole run's window starts when the producers do, before the first file is ready; back to back "
                  "counts from the committer's first commit to its last, while files were always waiting. The serial "
                  "limit is one writer appending alone, measured in the same run.",
              "", f"Targets (back to back, at least {GOAL_SERIAL} of the serial limit in commits/s; and {GOAL_RACING:g} "
                  f"times 8 racing writers' rows/s): met on {', '.join(STORES[b] for b in met) if met else 'no store'} "
                  "in this run."]
    return "\n".join(lines) + "\n"
