"""A table's data files, as its log describes them version by version and as the store holds them.

Small appends leave many small files; OPTIMIZE replaces them (``remove`` + ``add`` in one
commit) and VACUUM deletes what no version needs any more. Everything here is read from the
store itself (the commit files in ``_delta_log/`` and the folder's listing, through
:func:`helpers.stores.storage.table_store`), never from an engine's report::

    table_files.history(uri)            # one row per version: operation, files added/removed, live files, bytes, rows
    table_files.live_files(uri)         # the live files of the latest (or a given) version, with each file's stats
    table_files.overlapping_pairs(table_files.live_files(uri), "name")   # files whose name ranges overlap
    table_files.stored_files(uri)       # every Parquet file in the folder: live, replaced or orphan

The log is replayed from its JSON commit files (version 0 onwards); a table whose early commits
were cleaned up after a checkpoint cannot be replayed this way (:class:`TableFilesError`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import combinations
from urllib.parse import unquote

from helpers.delta import delta_log
from helpers.stores import storage

LIVE = "live"
"""A Parquet file the latest version reads."""
REPLACED = "replaced"
"""A Parquet file some commit added and a later one removed (OPTIMIZE, MERGE): kept for time travel until VACUUM."""
ORPHAN = "orphan"
"""A Parquet file no commit ever added (a writer that lost its commit left it behind)."""
FILE_STATES = (LIVE, REPLACED, ORPHAN)

HISTORY_COLUMNS = [
    "version",
    "operation",
    "engine",
    "files_added",
    "files_removed",
    "live_files",
    "live_bytes",
    "live_rows",
]


class TableFilesError(RuntimeError):
    """The log cannot be read or replayed; the message says why."""


@dataclass(frozen=True)
class DataFile:
    """One ``add`` action: a Parquet file, its size and the statistics the writer recorded."""

    path: str
    size: int
    rows: int | None
    min_values: dict = field(default_factory=dict)
    max_values: dict = field(default_factory=dict)
    version_added: int = 0


@dataclass(frozen=True)
class LogVersion:
    """One commit file: its operation, engine, and the files it added and removed."""

    version: int
    operation: str | None
    engine: str | None
    added: tuple[DataFile, ...]
    removed: tuple[str, ...]


def parse_version(version: int, body: bytes) -> LogVersion:
    """Read one commit file (newline-delimited JSON actions) into a :class:`LogVersion`."""
    info, adds, removes = delta_log.read_commit(body)
    added = []
    for add in adds:
        stats = delta_log.add_stats(add)
        rows = stats.get("numRecords")
        added.append(
            DataFile(
                path=unquote(add["path"]),
                size=int(add.get("size") or 0),
                rows=None if rows is None else int(rows),
                min_values=stats.get("minValues") or {},
                max_values=stats.get("maxValues") or {},
                version_added=version,
            )
        )
    removed = [unquote(remove["path"]) for remove in removes]
    return LogVersion(
        version=version,
        operation=info.get("operation"),
        engine=info.get("engineInfo") or info.get("clientVersion"),
        added=tuple(added),
        removed=tuple(removed),
    )


def read_log(table_uri: str | os.PathLike) -> list[LogVersion]:
    """Every commit file of the table, oldest first. Raises TableFilesError if there is none, or if
    the commits do not start at version 0 or have gaps (they cannot be replayed then)."""
    store = storage.table_store(table_uri)
    log = [parse_version(version, body) for version, body in delta_log.commit_files(store)]
    if not log:
        raise TableFilesError(
            f"No commit files under {table_uri}/{delta_log.LOG_DIR}: is there a Delta table at that URI?"
        )
    versions = [c.version for c in log]
    if versions != list(range(len(versions))):
        raise TableFilesError(
            f"The commit files of {table_uri} are versions {versions[0]}..{versions[-1]} with "
            f"{len(versions)} files: this replay needs every JSON commit from version 0 (none cleaned up after a checkpoint)."
        )
    return log


def _replay(log: list[LogVersion], upto: int | None = None):
    """Yield ``(commit, live)`` after each version, ``live`` mapping path -> DataFile."""
    live: dict[str, DataFile] = {}
    for commit in log:
        if upto is not None and commit.version > upto:
            break
        for path in commit.removed:
            live.pop(path, None)
        for data_file in commit.added:
            live[data_file.path] = data_file
        yield commit, live


def history(table_uri: str | os.PathLike, log: list[LogVersion] | None = None):
    """One row per version, replayed from the log: ``version``, ``operation``, ``engine``,
    ``files_added``, ``files_removed``, and after the commit ``live_files``, ``live_bytes``,
    ``live_rows`` (the sum of the files' ``numRecords``; <NA> if a file has no statistics).
    Returns a pandas DataFrame; ``log`` reuses an already read :func:`read_log`."""
    import pandas as pd

    rows = []
    for commit, live in _replay(log if log is not None else read_log(table_uri)):
        counts = [f.rows for f in live.values()]
        rows.append(
            {
                "version": commit.version,
                "operation": commit.operation,
                "engine": commit.engine,
                "files_added": len(commit.added),
                "files_removed": len(commit.removed),
                "live_files": len(live),
                "live_bytes": sum(f.size for f in live.values()),
                "live_rows": None if None in counts else sum(counts),
            }
        )
    frame = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    frame["live_rows"] = frame["live_rows"].astype("Int64")
    return frame


def live_files(
    table_uri: str | os.PathLike,
    version: int | None = None,
    *,
    columns: list[str] | None = None,
    log: list[LogVersion] | None = None,
):
    """The files a version reads (the latest if ``version`` is None), one row each: ``path``,
    ``bytes``, ``rows``, ``version_added``, and ``min_<column>`` / ``max_<column>`` from the file's
    statistics for each of ``columns`` (default: every column with statistics). Sorted by the
    first column's minimum when ``columns`` is given, else by path. Raises TableFilesError for a
    version the log does not have."""
    import pandas as pd

    log = log if log is not None else read_log(table_uri)
    if version is not None and not 0 <= version <= log[-1].version:
        raise TableFilesError(f"{table_uri} has versions 0..{log[-1].version}, not {version}.")
    live: dict[str, DataFile] = {}
    for _, live in _replay(log, version):
        pass
    files = list(live.values())
    if columns is None:
        columns = sorted({c for f in files for c in (*f.min_values, *f.max_values)})
    rows = []
    for f in files:
        row = {"path": f.path, "bytes": f.size, "rows": f.rows, "version_added": f.version_added}
        for column in columns:
            row[f"min_{column}"] = f.min_values.get(column)
            row[f"max_{column}"] = f.max_values.get(column)
        rows.append(row)
    frame = pd.DataFrame(
        rows,
        columns=[
            "path",
            "bytes",
            "rows",
            "version_added",
            *[f"{edge}_{c}" for c in columns for edge in ("min", "max")],
        ],
    )
    frame["rows"] = frame["rows"].astype("Int64")
    order = [f"min_{columns[0]}", "path"] if columns and len(frame) else ["path"]
    return frame.sort_values(order, kind="stable").reset_index(drop=True)


def overlapping_pairs(files, column: str) -> list[tuple[str, str]]:
    """Pairs of files (paths) whose ``[min, max]`` ranges of ``column`` intersect: a reader looking
    for one value of ``column`` must open both. ``files`` is a :func:`live_files` frame with
    ``min_<column>`` and ``max_<column>``. Raises TableFilesError if a file lacks those statistics."""
    low, high = f"min_{column}", f"max_{column}"
    if low not in files or high not in files:
        raise TableFilesError(
            f"No statistics for column {column!r}: ask live_files(..., columns=[{column!r}])."
        )
    ranges = list(zip(files["path"], files[low], files[high]))
    missing = [path for path, lo, hi in ranges if lo is None or hi is None or lo != lo or hi != hi]
    if missing:
        raise TableFilesError(
            f"{len(missing)} file(s) have no min/max of {column!r}, e.g. {missing[0]}."
        )
    return [
        (a, b)
        for (a, a_lo, a_hi), (b, b_lo, b_hi) in combinations(ranges, 2)
        if a_lo <= b_hi and b_lo <= a_hi
    ]


def files_reading(files, column: str, value) -> list[str]:
    """The files whose ``[min, max]`` of ``column`` contains ``value``: the files a reader that
    skips by statistics opens for ``column = value``."""
    return [
        path
        for path, lo, hi in zip(files["path"], files[f"min_{column}"], files[f"max_{column}"])
        if lo <= value <= hi
    ]


def stored_files(table_uri: str | os.PathLike, log: list[LogVersion] | None = None):
    """Every Parquet file in the table's folder, listed from the store, with its ``state``:
    ``live`` (the latest version reads it), ``replaced`` (added by a commit, removed by a later
    one: only time travel reads it) or ``orphan`` (no commit ever added it). A pandas DataFrame
    with ``path`` and ``state``, sorted by state then path."""
    import pandas as pd

    log = log if log is not None else read_log(table_uri)
    live: dict[str, DataFile] = {}
    for _, live in _replay(log):
        pass
    ever_added = {f.path for commit in log for f in commit.added}
    rows = [
        {
            "path": name,
            "state": LIVE if name in live else REPLACED if name in ever_added else ORPHAN,
        }
        for name in storage.list_table(table_uri)
        if delta_log.is_data_file(name)
    ]
    frame = pd.DataFrame(rows, columns=["path", "state"])
    frame["state"] = pd.Categorical(frame["state"], categories=list(FILE_STATES), ordered=True)
    return frame.sort_values(["state", "path"]).reset_index(drop=True)


def count_states(stored) -> dict[str, int]:
    """``{"live": k, "replaced": m, "orphan": o}`` from a :func:`stored_files` frame (zeros included)."""
    counts = stored["state"].value_counts()
    return {state: int(counts.get(state, 0)) for state in FILE_STATES}


def copy_table(source_uri: str, target_uri: str) -> int:
    """Copy every file of a table's folder (the log, live, replaced and orphaned Parquet files) to an
    empty folder: a twin with the same log and the same files, for running two engines on the same
    starting point. S3 (server-side copies of each object's current version) and local folders.
    Returns how many files were copied. Raises TableFilesError if the target holds files or the
    two URIs are not both on S3 or both local."""
    import shutil
    from urllib.parse import urlparse

    source, target = urlparse(str(source_uri)), urlparse(str(target_uri))
    on_s3 = source.scheme in ("s3", "s3a") and target.scheme in ("s3", "s3a")
    local = source.scheme in ("", "file") and target.scheme in ("", "file")
    if not (on_s3 or local):
        raise TableFilesError(
            f"copy_table copies S3 to S3 or local to local, not {source.scheme or 'local'} to {target.scheme or 'local'}."
        )
    if storage.list_table(target_uri):
        raise TableFilesError(f"{target_uri} is not empty; remove it first (storage.remove_table).")
    names = storage.list_table(source_uri)
    if on_s3:
        client = storage.s3_client()
        src_prefix, dst_prefix = source.path.strip("/") + "/", target.path.strip("/") + "/"
        for name in names:
            client.copy_object(
                Bucket=target.netloc,
                Key=dst_prefix + name,
                CopySource={"Bucket": source.netloc, "Key": src_prefix + name},
            )
        return len(names)
    src_root = unquote(source.path) if source.scheme else str(source_uri)
    dst_root = unquote(target.path) if target.scheme else str(target_uri)
    for name in names:
        os.makedirs(os.path.dirname(os.path.join(dst_root, name)), exist_ok=True)
        shutil.copy2(os.path.join(src_root, name), os.path.join(dst_root, name))
    return len(names)
