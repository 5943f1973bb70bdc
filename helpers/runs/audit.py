"""The auditor: what the storage holds, set against what the writers said.

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

The record itself, :class:`helpers.runs.audit_record.Audit`, with its summary and its tables, is
in :mod:`helpers.runs.audit_record`; the tables are built in :mod:`helpers.runs.audit_frames`. The
claim checks that hold a writer's report against the commit at its reported version sit here,
beside the command line.
"""

from __future__ import annotations

import hashlib
import os
from urllib.parse import unquote

from helpers.delta import delta_log, integrity, landing
from helpers.runs import audit_frames
from helpers.runs.audit_record import PHANTOM, SILENT_LOSS, Audit, Commit
from helpers.stores import storage, tables


class AuditError(RuntimeError):
    """The table cannot be audited (unknown URI scheme, unreadable store); the message says why."""


# ---------------------------------------------------------------------------------------------
# The log, read without delta-rs
# ---------------------------------------------------------------------------------------------


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


def audit_table(
    table_uri: str | os.PathLike,
    storage_options: dict[str, str] | None = None,
    *,
    results=None,
    version_before: int | None = None,
) -> Audit:
    """Audit a table, optionally against writers' reported ``results`` (a DataFrame with
    ``writer_id``, ``batch``, ``outcome``, ``rows``, as :class:`helpers.runs.run_result.RunResult` has).

    ``version_before`` is the version the run started from (rows and commits after it are the
    run's). Returns an :class:`Audit`. Raises AuditError for an unknown URI scheme, a table with
    no commit files, or a damaged table (each problem named, see :mod:`helpers.delta.integrity`), and
    the store client's own error if the store does not answer.
    """
    table_uri = str(table_uri)
    storage_options = dict(storage_options or {})
    store = _store(table_uri)
    files = store.list()
    check = _readable_check(table_uri, store, files)
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
        per_writer, rows_expected, rows_lost, rows_unexpected, rows_phantom = (
            audit_frames.writer_figures(
                results, before, after, commits, version_before, rows_before, rows_actual
            )
        )

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
        commits=audit_frames.commits_frame(commits),
        orphan_files=sorted(f for f in data_files if f not in referenced),
        data_files=data_files,
        object_versions=object_versions,
        versions_per_commit=per_commit,
        commits_per_file=distinct,
        silent_losses=audit_frames.writers_with(per_writer, SILENT_LOSS),
        phantoms=audit_frames.writers_with(per_writer, PHANTOM),
        rows_phantom=rows_phantom,
    )


def _store(table_uri: str | os.PathLike) -> storage.TableStore:
    """The table's store; AuditError for an unknown URI scheme."""
    try:
        return storage.table_store(str(table_uri))
    except storage.StorageError as error:
        raise AuditError(f"Cannot audit {table_uri}: {error}") from None


def _readable_check(table_uri: str, store: storage.TableStore, files: list[str]) -> integrity.Check:
    """The table's integrity check (:func:`helpers.delta.integrity.check_files`); AuditError when
    it has no commit file, or a problem that stops a reader."""
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
    return check


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
    """Audit the table of a :class:`helpers.runs.run_result.RunResult` against what its writers reported."""
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
    store = _store(table_uri)
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
