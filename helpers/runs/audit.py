"""The auditor: what the storage holds, set against what the writers said.

(Over 400 lines: the Audit record with its summary and its tables is most of it, and the claim
checks that hold a writer's report against the commit at its reported version sit beside it.)

Writers report; the auditor never believes them. It reads

* the rows, with the kernel's deltalake, at the version before the run and at the latest version;
* every commit file in ``_delta_log/`` straight from the store (:func:`helpers.stores.storage.table_store`:
  boto3, azure-storage-blob or the file system): its commitInfo (operation, engine, and the ``workbook.writer`` tag each writer
  puts there), its ``add`` actions and their row counts;
* every data file in the table's folder, to find those no commit references (orphans);
* on a versioned S3 bucket, every object version of every commit file, and whose commit each
  version carried, so an overwrite shows who overwrote whom.

Usage::

    run = run_writers(uri, options, n=8, era="deltalake-0.22.3")
    result = audit(run)
    result.rows_lost, result.silent_losses, result.max_versions_per_commit, result.orphans
    result                      # in a notebook: the summary and the tables

The figures a notebook asserts on are plain attributes: ``rows_lost``, ``rows_expected``,
``rows_actual``, ``silent_losses``, ``phantoms``, ``orphans``, ``max_versions_per_commit``,
``versions_consecutive``, ``commits_in_run``.
"""

from __future__ import annotations

import hashlib
import html
import os
from dataclasses import dataclass, field
from urllib.parse import unquote

from helpers import writers
from helpers.delta import delta_log, integrity, landing
from helpers.ground import config
from helpers.stores import storage, tables

# verdicts, one per writer
OK_COMMITTED = "committed, rows present"
OK_FAILED = "failed, rows absent"
SILENT_LOSS = "reported success but absent"
PHANTOM = "reported failure but present"
PARTIAL = "rows partly present"


class AuditError(RuntimeError):
    """The table cannot be audited (unknown URI scheme, unreadable store); the message says why."""


# ---------------------------------------------------------------------------------------------
# The log, read without delta-rs
# ---------------------------------------------------------------------------------------------


@dataclass
class Commit:
    version: int
    operation: str | None
    engine: str | None
    writer_id: str | None
    batch: int | None
    timestamp_ms: int | None
    num_retries: int | None
    added: list[str]
    rows_added: int | None


def parse_commit(version: int, body: bytes) -> Commit:
    """Read one commit file (newline-delimited JSON actions)."""
    info, adds, _ = delta_log.read_commit(body)
    added = [unquote(add["path"]) for add in adds]
    counts = [delta_log.add_stats(add).get("numRecords") for add in adds]
    rows_known = None not in counts
    rows = sum(int(count) for count in counts if count is not None)
    metrics = info.get("operationMetrics") or {}
    tags = delta_log.commit_tags(info)
    batch = tags.get(delta_log.BATCH_TAG)
    return Commit(
        version=version,
        operation=info.get("operation"),
        engine=info.get("engineInfo") or info.get("clientVersion"),
        writer_id=tags.get(delta_log.WRITER_TAG),
        batch=int(batch) if batch not in (None, "None") else None,
        timestamp_ms=info.get("timestamp"),
        num_retries=metrics.get("num_retries"),
        added=added,
        rows_added=rows if rows_known else None,
    )


def rows_by_batch(
    table_uri: str, storage_options: dict[str, str], version: int | None
) -> tuple[int, dict[int, int]]:
    """Total rows and rows per batch at a version (latest if None), read with the kernel's deltalake."""
    from deltalake import DeltaTable

    table = DeltaTable(
        table_uri, storage_options=tables.kernel_storage_options(storage_options), version=version
    )
    ids = table.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
    return len(ids), landing.rows_per_batch(ids)


# ---------------------------------------------------------------------------------------------
# The audit
# ---------------------------------------------------------------------------------------------


@dataclass
class Audit:
    """Storage's account of a table, and of a run's writers when a run was given."""

    table_uri: str
    store: str
    version_before: int | None
    version_after: int
    rows_before: int
    rows_expected: int | None
    """rows_before + the rows of every writer that reported success (None without writer results)."""
    rows_actual: int
    rows_lost: int | None
    """Rows of writers that reported success and are absent from the table, summed per writer
    (gross: a phantom elsewhere does not make up for them; 0 when nothing was lost)."""
    rows_unexpected: int | None
    """Rows the table holds beyond what writers reported committed (net, over the whole table)."""
    writers: object  # DataFrame, one row per writer
    commits: object  # DataFrame, one row per commit file
    orphan_files: list[str]
    data_files: list[str]
    object_versions: object | None  # DataFrame, one row per S3 object version of a commit file
    versions_per_commit: dict[int, int] | None
    """Object versions of each commit file (versioned S3 only)."""
    commits_per_file: dict[int, int] | None
    """Distinct commits (different bodies) among those versions: more than one means a commit was
    overwritten by another writer's; a second identical version is a harmless re-copy."""
    silent_losses: list[str] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)
    rows_phantom: int | None = None
    """Rows of writers that reported failure and are in the table (the phantoms' rows), counted
    apart from :attr:`rows_lost`."""

    @property
    def orphans(self) -> int:
        """Data files in the table's folder that no commit references."""
        return len(self.orphan_files)

    @property
    def commit_versions(self) -> list[int]:
        return [int(v) for v in self.commits["version"]]

    @property
    def commits_in_run(self) -> int:
        """Commit files written after ``version_before``."""
        start = -1 if self.version_before is None else self.version_before
        return sum(v > start for v in self.commit_versions)

    @property
    def versions_consecutive(self) -> bool:
        """True if the commit files are 0, 1, 2, ... with no gap."""
        return self.commit_versions == list(range(len(self.commit_versions)))

    @property
    def max_versions_per_commit(self) -> int | None:
        """The most object versions any commit file has (1 = never overwritten); None when the
        store keeps no object versions (not a versioned S3 bucket)."""
        if self.versions_per_commit is None:
            return None
        return max(self.versions_per_commit.values(), default=0)

    @property
    def max_commits_per_file(self) -> int | None:
        """The most distinct commits written under one commit file name (1 = none overwritten by
        another writer); None when the store keeps no object versions."""
        if self.commits_per_file is None:
            return None
        return max(self.commits_per_file.values(), default=0)

    @property
    def overwritten_commits(self) -> dict[int, int]:
        """Commit versions whose file holds more than one distinct commit, with how many."""
        return {v: k for v, k in (self.commits_per_file or {}).items() if k > 1}

    @property
    def overwrites(self) -> list[str]:
        """Per commit file with several object versions, the writers in the order they wrote it,
        e.g. ``commit 00001.json: w3 -> w1 -> w7 (last one kept)``."""
        if self.object_versions is None:
            return []
        lines = []
        for version, group in self.object_versions.groupby("commit_version", sort=True):
            if len(group) > 1:
                chain = " -> ".join(str(w) for w in group["writer_id"])
                kind = (
                    "last one kept"
                    if group["content"].nunique() > 1
                    else "same commit written again, nothing lost"
                )
                lines.append(f"commit {version:05d}.json: {chain} ({kind})")
        return lines

    def summary(self) -> str:
        """A few lines of plain text: rows, verdicts, commits, orphans, object versions."""
        lines = [
            f"Audit of {config.without_machine_paths(self.table_uri)} ({self.store}): v{self.version_before} -> v{self.version_after}."
        ]
        if self.rows_expected is not None:
            lines.append(
                f"Rows: {self.rows_before} before + writers' reported rows = {self.rows_expected} expected; "
                f"{self.rows_actual} in the table; lost {self.rows_lost}, unexpected {self.rows_unexpected}."
            )
            lines.append(
                f"Writers: {len(self.silent_losses)} reported success but their rows are absent"
                + (f" ({', '.join(self.silent_losses)})" if self.silent_losses else "")
                + f"; {len(self.phantoms)} reported failure but their rows are present"
                + (f" ({', '.join(self.phantoms)})" if self.phantoms else "")
                + "."
            )
        else:
            lines.append(
                f"Rows: {self.rows_actual} in the table ({self.rows_before} at v{self.version_before})."
            )
        lines.append(
            f"Commits: {len(self.commit_versions)} files (versions {_ranges(self.commit_versions)}), "
            f"{self.commits_in_run} in this run, {'consecutive' if self.versions_consecutive else 'WITH GAPS'}."
        )
        lines.append(
            f"Data files: {len(self.data_files)}, of which {self.orphans} referenced by no commit (orphans)."
        )
        if self.versions_per_commit is None:
            lines.append("Object versions: not kept by this store.")
        else:
            lines.append(
                f"Object versions: at most {self.max_versions_per_commit} per commit file, holding at most "
                f"{self.max_commits_per_file} distinct commit(s)"
                + (
                    f"; overwritten by another writer: {', '.join(f'{v} ({k} commits)' for v, k in self.overwritten_commits.items())}"
                    if self.overwritten_commits
                    else ""
                )
                + "."
            )
            lines += ["  " + line for line in self.overwrites]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [f"<pre>{html.escape(self.summary())}</pre>"]
        if self.writers is not None and len(self.writers):
            parts.append("<b>Writers: reported vs stored</b>" + self.writers.to_html(index=False))
        parts.append("<b>Commits in _delta_log</b>" + self.commits.to_html(index=False))
        if self.object_versions is not None:
            parts.append(
                "<b>Object versions of the commit files</b>"
                + self.object_versions.to_html(index=False)
            )
        return "".join(parts)


def _ranges(values: list[int]) -> str:
    if not values:
        return "none"
    return (
        f"{values[0]}-{values[-1]}"
        if values == list(range(values[0], values[-1] + 1))
        else ", ".join(map(str, values))
    )


def _commits_frame(commits: list[Commit]):
    import pandas as pd

    rows = [
        {
            "version": c.version,
            "operation": c.operation,
            "engine": c.engine,
            "writer_id": c.writer_id,
            "batch": c.batch,
            "rows_added": c.rows_added,
            "files_added": len(c.added),
            "num_retries": c.num_retries,
            "committed_at": pd.to_datetime(c.timestamp_ms, unit="ms", utc=True)
            if c.timestamp_ms
            else None,
        }
        for c in commits
    ]
    frame = pd.DataFrame(
        rows,
        columns=[
            "version",
            "operation",
            "engine",
            "writer_id",
            "batch",
            "rows_added",
            "files_added",
            "num_retries",
            "committed_at",
        ],
    )
    for column in ("batch", "rows_added", "num_retries"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _object_versions_frame(versions: list[storage.ObjectVersion] | None):
    import pandas as pd

    if versions is None:
        return None, None, None
    rows = []
    for item in versions:
        version = delta_log.commit_version(item.key)
        if version is None:
            continue
        commit = parse_commit(version, item.body)
        rows.append(
            {
                "commit_version": commit.version,
                "version_id": item.version_id,
                "last_modified": item.last_modified,
                "is_latest": item.is_latest,
                "writer_id": commit.writer_id,
                "batch": commit.batch,
                "operation": commit.operation,
                "engine": commit.engine,
                "content": hashlib.sha256(item.body).hexdigest()[:12],
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "commit_version",
            "version_id",
            "last_modified",
            "is_latest",
            "writer_id",
            "batch",
            "operation",
            "engine",
            "content",
        ],
    )
    frame["batch"] = frame["batch"].astype("Int64")
    # stable sort keeps the order written within each commit file; the current version goes last
    frame = frame.sort_values(["commit_version", "is_latest"], kind="stable").reset_index(drop=True)
    grouped = frame.groupby("commit_version")
    per_commit = {int(v): int(k) for v, k in grouped.size().items()}
    distinct = {int(v): int(k) for v, k in grouped["content"].nunique().items()}
    return frame, per_commit, distinct


def _attempts(commit: Commit | None, snapshot_version: int | None) -> tuple[int | None, str | None]:
    """How many commit attempts a writer's surviving commit took, and how that is known.

    deltalake 1.x records ``num_retries`` in the commit's operationMetrics. deltalake 0.x does
    not, but it tries ``snapshot + 1``, ``snapshot + 2``, ... one version per attempt, so the
    distance from the snapshot to the commit is the attempt count."""
    if commit is None:
        return None, None
    if commit.num_retries is not None:
        return int(commit.num_retries) + 1, "commitInfo operationMetrics.num_retries + 1"
    if snapshot_version is not None and (commit.engine or "").startswith("delta-rs.0."):
        return (
            commit.version - snapshot_version,
            "commit version - snapshot version (0.x: one version per attempt)",
        )
    return None, None


def _verdict(reported: str, rows_reported, rows_present: int) -> str:
    if rows_present and rows_reported and rows_present < rows_reported:
        return PARTIAL
    if reported == writers.COMMITTED:
        return OK_COMMITTED if rows_present else SILENT_LOSS
    return PHANTOM if rows_present else OK_FAILED


def _writers_frame(
    results,
    before: dict[int, int],
    after: dict[int, int],
    commits: list[Commit],
    version_before: int | None,
):
    """One row per writer: what it reported, what the table holds of its batch, and the verdict."""
    import pandas as pd

    start = -1 if version_before is None else version_before
    by_writer = {(c.writer_id, c.batch): c for c in commits if c.version > start and c.writer_id}
    rows = []
    for r in results.to_dict("records"):
        batch = None if pd.isna(r.get("batch")) else int(r["batch"])
        present = (after.get(batch, 0) - before.get(batch, 0)) if batch is not None else 0
        rows_reported = None if pd.isna(r.get("rows")) else int(r["rows"])
        commit = by_writer.get((r["writer_id"], batch))
        reported_version = r.get("reported_version")
        snapshot = None if pd.isna(r.get("snapshot_version")) else int(r["snapshot_version"])
        attempts, attempts_source = _attempts(commit, snapshot)
        rows.append(
            {
                "writer_id": r["writer_id"],
                "batch": batch,
                "reported": r["outcome"],
                "reported_version": None if pd.isna(reported_version) else int(reported_version),
                "rows_reported": rows_reported,
                "rows_present": present,
                "snapshot_version": snapshot,
                "commit_in_log": commit.version if commit else None,
                "attempts": attempts,
                "attempts_source": attempts_source,
                "verdict": _verdict(r["outcome"], rows_reported, present),
                "error_class": r.get("error_class"),
            }
        )
    frame = pd.DataFrame(
        rows,
        columns=[
            "writer_id",
            "batch",
            "reported",
            "reported_version",
            "rows_reported",
            "rows_present",
            "snapshot_version",
            "commit_in_log",
            "attempts",
            "verdict",
            "error_class",
            "attempts_source",
        ],
    )
    for column in (
        "batch",
        "reported_version",
        "rows_reported",
        "snapshot_version",
        "commit_in_log",
        "attempts",
    ):
        frame[column] = frame[column].astype("Int64")
    return frame


def audit_table(
    table_uri: str | os.PathLike,
    storage_options: dict[str, str] | None = None,
    *,
    results=None,
    version_before: int | None = None,
) -> Audit:
    """Audit a table, optionally against writers' reported ``results`` (a DataFrame with
    ``writer_id``, ``batch``, ``outcome``, ``rows``, as :class:`helpers.runs.runner.RunResult` has).

    ``version_before`` is the version the run started from (rows and commits after it are the
    run's). Returns an :class:`Audit`. Raises AuditError for an unknown URI scheme, a table with
    no commit files, or a damaged table (each problem named, see :mod:`helpers.delta.integrity`), and
    the store client's own error if the store does not answer.
    """
    table_uri = str(table_uri)
    storage_options = dict(storage_options or {})
    try:
        store = storage.table_store(table_uri)
    except storage.StorageError as error:
        raise AuditError(f"Cannot audit {table_uri}: {error}") from None
    files = store.list()
    check = integrity.check_files(table_uri, store, files)
    if not check.commit_versions:
        raise AuditError(
            f"No commit files under {table_uri}/_delta_log/: is there a Delta table at that URI?"
        )
    if check.blocking:
        raise AuditError(
            f"The table at {table_uri} is damaged, so its rows cannot be read:\n"
            + "\n".join(f"- {problem}" for problem in check.blocking)
        )
    commits = [parse_commit(version, body) for version, body in sorted(check.commit_bodies.items())]
    rows_actual, after = rows_by_batch(table_uri, storage_options, None)
    rows_before, before = (
        rows_by_batch(table_uri, storage_options, version_before)
        if version_before is not None
        else (0, {})
    )
    referenced = {path for c in commits for path in c.added}
    data_files = [f for f in files if delta_log.is_data_file(f)]
    object_versions, per_commit, distinct = _object_versions_frame(
        store.versions(delta_log.LOG_DIR)
    )

    per_writer = None
    rows_expected = rows_lost = rows_unexpected = rows_phantom = None
    if results is not None:
        per_writer = _writers_frame(results, before, after, commits, version_before)
        reported_rows = int(
            per_writer.loc[per_writer["reported"] == writers.COMMITTED, "rows_reported"]
            .fillna(0)
            .sum()
        )
        rows_expected = rows_before + reported_rows
        rows_lost, rows_phantom = _gross_rows(per_writer)
        rows_unexpected = max(rows_actual - rows_expected, 0)

    return Audit(
        table_uri=table_uri,
        store=store.kind,
        version_before=version_before,
        version_after=commits[-1].version,
        rows_before=rows_before,
        rows_expected=rows_expected,
        rows_actual=rows_actual,
        rows_lost=rows_lost,
        rows_unexpected=rows_unexpected,
        writers=per_writer,
        commits=_commits_frame(commits),
        orphan_files=sorted(f for f in data_files if f not in referenced),
        data_files=data_files,
        object_versions=object_versions,
        versions_per_commit=per_commit,
        commits_per_file=distinct,
        silent_losses=[]
        if per_writer is None
        else list(per_writer.loc[per_writer["verdict"] == SILENT_LOSS, "writer_id"]),
        phantoms=[]
        if per_writer is None
        else list(per_writer.loc[per_writer["verdict"] == PHANTOM, "writer_id"]),
        rows_phantom=rows_phantom,
    )


def _gross_rows(per_writer) -> tuple[int, int]:
    """(rows lost, phantom rows), each summed writer by writer: the rows missing of every writer
    that reported success, and the rows present of every writer that reported failure."""
    committed = per_writer["reported"] == writers.COMMITTED
    missing = (per_writer["rows_reported"].fillna(0) - per_writer["rows_present"]).clip(lower=0)
    return int(missing[committed].sum()), int(
        per_writer.loc[~committed, "rows_present"].clip(lower=0).sum()
    )


def lock_items(table_uri: str):
    """The table's DynamoDB log-store items as a pandas DataFrame to show: ``tablePath``,
    ``fileName``, ``tempPath`` (its uuid shown as ``<uuid>``), ``complete`` and ``expires in``
    (hours until the TTL may delete a complete item)."""
    import pandas as pd

    columns = ["tablePath", "fileName", "tempPath", "complete", "expires in"]
    items = pd.DataFrame(storage.lock_entries(table_uri), columns=[*columns[:4], "expireTime"])
    items["tempPath"] = items["tempPath"].str.replace(r"[0-9a-f-]{36}", "<uuid>", regex=True)
    expires = pd.to_datetime(pd.to_numeric(items["expireTime"]), unit="s", utc=True)
    items["expires in"] = (expires - pd.Timestamp.now(tz="UTC")).dt.round("h")
    return items[columns]


def audit(run) -> Audit:
    """Audit the table of a :class:`helpers.runs.runner.RunResult` against what its writers reported."""
    return audit_table(
        run.table_uri, run.storage_options, results=run.results, version_before=run.version_before
    )


# ---------------------------------------------------------------------------------------------
# A writer's claim about its own commit, checked against the log
# ---------------------------------------------------------------------------------------------


def claim_problems(
    commit: Commit | None, writer_id: str, version: int, files: list[str]
) -> list[str]:
    """What is wrong with a writer's claim "my commit is ``version`` and it adds ``files``", given
    the commit the log holds at that version (None: no such commit file). [] when the claim holds:
    the commit carries the writer's ``workbook.writer`` tag and adds exactly those data files
    (compared by file name, as Daft returns them)."""
    if commit is None:
        return [f"{writer_id}: no commit file at version {version}"]
    problems = []
    if commit.writer_id != writer_id:
        problems.append(
            f"{writer_id}: the commit at version {version} carries the tag of {commit.writer_id!r}"
        )
    added = sorted(os.path.basename(path) for path in commit.added)
    claimed = sorted(os.path.basename(name) for name in files)
    if not claimed:
        problems.append(f"{writer_id}: claims no data file for version {version}")
    if added != claimed:
        problems.append(
            f"{writer_id}: the commit at version {version} adds {added}, the writer was returned {claimed}"
        )
    return problems


def own_commit_problems(
    table_uri: str | os.PathLike, claims: dict[str, tuple[int, list[str]]]
) -> list[str]:
    """Check each writer's claim ``{writer_id: (reported_version, files it was returned)}`` against
    the commit files read straight from the store (:func:`claim_problems`); [] when every claim
    holds. Raises AuditError for an unknown URI scheme."""
    try:
        store = storage.table_store(str(table_uri))
    except storage.StorageError as error:
        raise AuditError(f"Cannot audit {table_uri}: {error}") from None
    present = set(store.list())
    problems = []
    for writer_id, (version, files) in sorted(claims.items()):
        name = delta_log.commit_file(int(version))
        commit = parse_commit(int(version), store.read(name)) if name in present else None
        problems += claim_problems(commit, writer_id, int(version), list(files))
    return problems


# ---------------------------------------------------------------------------------------------
# Command line: python -m helpers.runs.audit TABLE_URI
# ---------------------------------------------------------------------------------------------


def storage_options_for(table_uri: str) -> dict[str, str]:
    """The kernel's ``storage_options`` for a table URI of this workbook's stores (emulators, or the
    cloud with ``WORKBOOK_PROFILE=cloud``)."""
    scheme = table_uri.split("://", 1)[0] if "://" in table_uri else ""
    if scheme in ("s3", "s3a"):
        return tables.s3_storage_options()
    if scheme in ("az", "azure", "abfs", "abfss"):
        return tables.azure_storage_options()
    return {}


def main(argv: list[str] | None = None) -> int:
    """Check a table from storage, then audit it; exit 0 if sound, 1 if damaged, 2 if it cannot be read."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m helpers.runs.audit",
        description="Check a Delta table from storage (every problem named by file and version), then read it with "
        "deltalake. Exit status: 0 sound, 1 damaged, 2 not readable at all.",
    )
    parser.add_argument(
        "table_uri", help="a local path, file://, s3://, s3a://, az:// or abfs[s]:// URI"
    )
    table_uri = parser.parse_args(argv).table_uri.rstrip("/")
    try:
        check = integrity.check_table(table_uri)
    except Exception as error:  # noqa: BLE001  (unknown scheme, missing bucket, store down: say which)
        print(
            f"audit: cannot list {table_uri} ({type(error).__name__}: {error}). Check the URI; for the emulators, "
            "start them with `make services`.",
            file=sys.stderr,
        )
        return 2
    if not check.commit_versions:
        print(
            f"audit: no commit files under {table_uri}/_delta_log/: is there a Delta table at that URI?",
            file=sys.stderr,
        )
        return 2
    print(check.summary())
    if not check.ok:
        return 1
    try:
        result = audit_table(table_uri, storage_options_for(table_uri))
    except Exception as error:  # noqa: BLE001  (the log is sound and deltalake still refuses: report, do not crash)
        print(f"- unreadable table: deltalake could not read it ({type(error).__name__}: {error})")
        return 1
    print(result.summary())
    if check.rows is not None and check.rows != result.rows_actual:
        print(
            f"- row count: the log's statistics say {check.rows} rows, deltalake read {result.rows_actual}"
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
