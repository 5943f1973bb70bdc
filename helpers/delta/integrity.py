"""A table's integrity, read from storage alone: every problem named by file and version.

The auditor (:mod:`helpers.runs.audit`) reads a table's rows with deltalake. On a damaged table
deltalake, pyarrow or json stop at the first problem with an error that often names no file
(a ``JSONDecodeError`` from one line of some commit, the kernel's "Expected contiguous commit
files"). This module reads the log itself, without delta-rs, and lists everything wrong:

* ``version gap``: commit versions missing between the first and the last;
* ``no starting point``: the log does not start at version 0 and no checkpoint holds the state
  before its first commit;
* ``malformed commit``: a commit file that is empty, or a line that is not one JSON action;
* ``missing table definition``: version 0 without its ``protocol`` or ``metaData`` action;
* ``stray file``: a file in ``_delta_log/`` that is none of the kinds the protocol defines;
* ``unreadable checkpoint``: a checkpoint Parquet file that cannot be read, or a
  ``_last_checkpoint`` that cannot be read or points at no checkpoint;
* ``missing data file``: a data file the table's current state references that storage lacks;
* ``removed twice``: a commit removes a data file that an earlier commit already removed. The
  later commit was built on a snapshot from before the first one, and a conflict check should
  have refused it: whatever it rewrote from that file is now in the table twice (two concurrent
  OPTIMIZEs with deltalake 1.6.4 to 1.6.6 do this). Readers read such a table without an error,
  so, like a stray file, it does not stop the auditor.

Files a writer stages before a rename and leaves behind when it dies or loses a race (a staged
commit under ``_delta_log/.tmp/``, a ``_commit_<uuid>.json.tmp``, Delta Spark's
``.<version>.crc.<uuid>.tmp``) are counted as ``staged_leftovers``, not problems: the log never
references them. A stray file is reported, yet readers skip it, so it does not stop the auditor
(:attr:`Check.blocking`). Usage::

    check = integrity.check_table("s3://bucket/table")
    check.problems            # [] for a sound table
    print(check.summary())

``python -m helpers.runs.audit URI`` prints this check, then the audit.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from helpers.delta import delta_log
from helpers.stores import storage

V = rf"\d{{{delta_log.VERSION_DIGITS}}}"
KNOWN_LOG_FILES = {
    "checkpoint": re.compile(rf"^({V})\.checkpoint(?:\.\d{{10}}\.\d{{10}})?\.parquet$"),
    "v2 checkpoint": re.compile(rf"^({V})\.checkpoint\.[0-9a-f-]{{36}}\.(?:json|parquet)$"),
    "checksum": re.compile(rf"^({V})\.crc$"),
    "log compaction": re.compile(rf"^({V})\.({V})\.compacted\.json$"),
    "last checkpoint": re.compile(r"^_last_checkpoint$"),
    "last vacuum": re.compile(r"^_last_vacuum_info$"),  # Delta Spark records its last VACUUM here
    "file-system checksum": re.compile(
        r"^\..+\.crc$"
    ),  # Hadoop's local file system writes .<name>.crc
    "listing hint": re.compile(r"^\.s3-optimization-\d+$"),  # Delta Spark on S3
    "staged file": re.compile(
        r"^(?:\.tmp/.+|_commit_[0-9a-f-]{36}\.json\.tmp|\..+\.tmp)$"
    ),  # written, then renamed
    "protocol folder": re.compile(r"^(?:_commits|_sidecars|_staged_commits)/.+$"),
}
READABLE_PROBLEMS = ("stray file", "removed twice")
"""Problem kinds a reader reads past: reported, yet they do not stop the auditor's read."""
ACTIONS = {
    "add",
    "remove",
    "metaData",
    "protocol",
    "commitInfo",
    "txn",
    "cdc",
    "domainMetadata",
    "checkpointMetadata",
    "sidecar",
}


@dataclass(frozen=True)
class Problem:
    kind: str
    file: str
    """The file it is about, relative to the table (``_delta_log/...`` or a data file)."""
    version: int | None
    detail: str

    def __str__(self) -> str:
        at = f" (version {self.version})" if self.version is not None else ""
        return f"{self.kind}: {self.file}{at}: {self.detail}"


@dataclass
class Check:
    table_uri: str
    commit_versions: list[int]
    checkpoint_versions: list[int]
    start: int | None
    """The version the current state is built from: -1 (the first commit) or a checkpoint's version."""
    live_files: dict[str, int | None]
    """Data files the current state references, with their row counts (None when the log has no stats)."""
    staged_leftovers: list[str]
    problems: list[Problem] = field(default_factory=list)
    commit_bodies: dict[int, bytes] = field(default_factory=dict, repr=False)
    """Every commit file as read for the check, by version: callers parse these instead of reading again."""

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def blocking(self) -> list[Problem]:
        """The problems that stop a reader (every kind but a stray file, which readers skip, and a
        file removed twice, which readers never see)."""
        return [p for p in self.problems if p.kind not in READABLE_PROBLEMS]

    @property
    def rows(self) -> int | None:
        """Rows of the current state from the log's statistics; None when a file has none."""
        counts = list(self.live_files.values())
        return None if None in counts else sum(counts)

    def summary(self) -> str:
        versions = (
            f"versions {self.commit_versions[0]}-{self.commit_versions[-1]}"
            if self.commit_versions
            else "no commits"
        )
        lines = [
            f"{self.table_uri}: {len(self.commit_versions)} commit files ({versions}), "
            f"{len(self.checkpoint_versions)} checkpoint(s), {len(self.live_files)} live data files, "
            f"{'unknown' if self.rows is None else self.rows} rows by the log's statistics, "
            f"{len(self.staged_leftovers)} staged file(s) left behind."
        ]
        lines.append("No problems." if self.ok else f"{len(self.problems)} problem(s):")
        lines += [f"- {problem}" for problem in self.problems]
        return "\n".join(lines)


def _log_name(path: str) -> str | None:
    return path[len(delta_log.LOG_DIR) :] if path.startswith(delta_log.LOG_DIR) else None


def _actions(name: str, version: int, body: bytes, problems: list[Problem]) -> list[dict]:
    """A commit's actions; each line that is not one JSON action becomes a problem."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.append(Problem("malformed commit", name, version, f"not UTF-8 text ({error})"))
        return []
    lines = [
        (number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()
    ]
    if not lines:
        problems.append(Problem("malformed commit", name, version, "the file is empty"))
    actions = []
    for number, line in lines:
        try:
            action = json.loads(line)
        except ValueError as error:
            problems.append(
                Problem("malformed commit", name, version, f"line {number} is not JSON ({error})")
            )
            continue
        if not isinstance(action, dict) or len(action) != 1 or next(iter(action)) not in ACTIONS:
            shown = line if len(line) <= 80 else line[:77] + "..."
            problems.append(
                Problem(
                    "malformed commit",
                    name,
                    version,
                    f"line {number} is not one Delta action: {shown}",
                )
            )
            continue
        kind, value = next(iter(action.items()))
        if kind in ("add", "remove") and not (
            isinstance(value, dict) and isinstance(value.get("path"), str)
        ):
            problems.append(
                Problem(
                    "malformed commit",
                    name,
                    version,
                    f"line {number}: a {kind} action without a path",
                )
            )
            continue
        actions.append(action)
    return actions


def _checkpoint_state(
    store: storage.TableStore, parts: list[str], version: int, problems: list[Problem]
) -> dict[str, int | None] | None:
    """The live files a checkpoint holds, or None (and a problem) if a part cannot be read."""
    import pyarrow.parquet as pq

    live: dict[str, int | None] = {}
    for part in parts:
        try:
            rows = (
                pq.read_table(io.BytesIO(store.read(part)), columns=["add"])
                .column("add")
                .to_pylist()
            )
        except Exception as error:  # noqa: BLE001  (any reader error is the problem to report)
            problems.append(
                Problem("unreadable checkpoint", part, version, f"{type(error).__name__}: {error}")
            )
            return None
        for add in filter(None, rows):
            live[unquote(add["path"])] = delta_log.add_stats(add).get("numRecords")
    return live


def check_table(table_uri: str) -> Check:
    """Read the table's folder and log from storage and name every problem (see the module's text).
    Raises :class:`helpers.stores.storage.StorageError` for an unknown scheme, and the store client's own
    error if the store does not answer."""
    store = storage.table_store(table_uri)
    return check_files(str(table_uri), store, store.list())


def check_files(table_uri: str, store: storage.TableStore, files: list[str]) -> Check:
    """:func:`check_table` on a folder already listed (``files``, relative to the table)."""
    present = set(files)
    problems: list[Problem] = []
    commits, checkpoints, leftovers = _log_files(files, problems)
    versions = sorted(commits)
    _check_gaps(versions, problems)
    _check_last_checkpoint(store, present, checkpoints, problems)
    # the state: from version 0, or from the latest checkpoint the commits after it continue
    start, live = _start(commits, versions, checkpoints, problems), {}
    for version, parts in sorted(checkpoints.items()):
        state = _checkpoint_state(store, sorted(parts), version, problems)
        if version == start:
            live = state or {}
    bodies = {version: store.read(commits[version]) for version in versions}
    adders = _replay(commits, bodies, start, live, problems)
    # older commits: still read, so a broken one is named
    for version in (v for v in versions if v <= start):
        _actions(commits[version], version, bodies[version], problems)
    _check_live_files(live, adders, present, start, problems)
    return Check(
        table_uri=str(table_uri),
        commit_versions=versions,
        checkpoint_versions=sorted(checkpoints),
        start=start if versions else None,
        live_files=live,
        staged_leftovers=leftovers,
        commit_bodies=bodies,
        problems=sorted(
            problems, key=lambda p: (p.version is None, p.version or 0, p.kind, p.file)
        ),
    )


def _log_files(
    files: list[str], problems: list[Problem]
) -> tuple[dict[int, str], dict[int, list[str]], list[str]]:
    """The files of ``_delta_log/`` by kind: (commit files by version, checkpoint parts by version,
    staged leftovers); each file of no known kind becomes a stray-file problem."""
    commits: dict[int, str] = {}
    checkpoints: dict[int, list[str]] = {}
    leftovers: list[str] = []
    for path in files:
        name = _log_name(path)
        if name is None:
            continue
        version = delta_log.commit_version(path)
        if version is not None:
            commits[version] = path
            continue
        kind = next((k for k, pattern in KNOWN_LOG_FILES.items() if pattern.match(name)), None)
        if kind == "checkpoint":
            checkpoints.setdefault(int(KNOWN_LOG_FILES[kind].match(name).group(1)), []).append(path)
        elif kind == "staged file":
            leftovers.append(path)
        elif kind is None:
            hint = (
                " (named like a commit, but a commit's version has exactly 20 digits)"
                if re.match(r"^\d+\.json$", name)
                else ""
            )
            problems.append(
                Problem(
                    "stray file",
                    path,
                    None,
                    f"not a commit, checkpoint, checksum or any other file of the Delta log{hint}",
                )
            )
    return commits, checkpoints, leftovers


def _check_gaps(versions: list[int], problems: list[Problem]) -> None:
    """A version-gap problem for each run of commit versions missing between the first and the last."""
    if versions:
        missing = sorted(set(range(versions[0], versions[-1] + 1)) - set(versions))
        for low, high in _runs(missing):
            span = f"versions {low}-{high} are" if high > low else f"version {low} is"
            problems.append(
                Problem(
                    "version gap",
                    delta_log.commit_file(low),
                    low,
                    f"{span} missing: the log goes from {delta_log.commit_file_name(low - 1)} to "
                    f"{delta_log.commit_file_name(high + 1)}",
                )
            )


def _start(
    commits: dict[int, str],
    versions: list[int],
    checkpoints: dict[int, list[str]],
    problems: list[Problem],
) -> int:
    """The version the current state is built from: -1 when the log starts at version 0, else the
    latest checkpoint the commits continue (-1 and a no-starting-point problem when there is none)."""
    start = -1
    if versions and versions[0] > 0:
        usable = [v for v in checkpoints if versions[0] - 1 <= v <= versions[-1]]
        if not usable:
            problems.append(
                Problem(
                    "no starting point",
                    commits[versions[0]],
                    versions[0],
                    f"the log starts at version {versions[0]} and no checkpoint at version "
                    f"{versions[0] - 1} or later holds the state before it",
                )
            )
        else:
            start = max(usable)
    return start


def _replay(
    commits: dict[int, str],
    bodies: dict[int, bytes],
    start: int,
    live: dict[str, int | None],
    problems: list[Problem],
) -> dict[str, int]:
    """Apply the commits after ``start`` to ``live`` in version order, naming a version 0 without
    its table definition and a file removed twice; return the version that added each live file."""
    adders: dict[str, int] = {}
    removers: dict[str, int] = {}
    for version in (v for v in sorted(commits) if v > start):
        actions = _actions(commits[version], version, bodies[version], problems)
        kinds = {next(iter(a)) for a in actions}
        if version == 0 and actions and not {"protocol", "metaData"} <= kinds:
            problems.append(
                Problem(
                    "missing table definition",
                    commits[version],
                    version,
                    f"version 0 has no {' or '.join(sorted({'protocol', 'metaData'} - kinds))} action",
                )
            )
        for action in actions:
            ((kind, value),) = action.items()
            if kind == "add":
                live[unquote(value["path"])] = delta_log.add_stats(value).get("numRecords")
                adders[unquote(value["path"])] = version
                removers.pop(unquote(value["path"]), None)
            elif kind == "remove":
                path = unquote(value["path"])
                if path not in live and path in removers and removers[path] != version:
                    problems.append(
                        Problem(
                            "removed twice",
                            path,
                            version,
                            f"version {removers[path]} already removed it: this commit was built on an older "
                            f"snapshot, so what it rewrote from the file is in the table twice",
                        )
                    )
                live.pop(path, None)
                removers.setdefault(path, version)
    return adders


def _check_live_files(
    live: dict[str, int | None],
    adders: dict[str, int],
    present: set[str],
    start: int,
    problems: list[Problem],
) -> None:
    """A missing-data-file problem for each file the current state references that storage lacks."""
    for path in sorted(live):
        if "://" in path:
            continue  # an absolute path (a shallow clone's file) lives in another table's folder
        if path not in present:
            origin = (
                f"added at version {adders[path]}"
                if path in adders
                else f"held by the checkpoint at version {start}"
            )
            problems.append(
                Problem(
                    "missing data file",
                    path,
                    adders.get(path),
                    f"the current state references it ({origin}) and storage does not have it",
                )
            )


def _check_last_checkpoint(
    store: storage.TableStore,
    present: set[str],
    checkpoints: dict[int, list[str]],
    problems: list[Problem],
) -> None:
    name = delta_log.LOG_DIR + "_last_checkpoint"
    if name not in present:
        return
    try:
        version = int(json.loads(store.read(name))["version"])
    except (ValueError, KeyError, TypeError) as error:
        problems.append(
            Problem(
                "unreadable checkpoint", name, None, f"not a JSON object with a version ({error})"
            )
        )
        return
    if version not in checkpoints:
        problems.append(
            Problem(
                "unreadable checkpoint",
                name,
                version,
                f"it points at version {version}, which has no checkpoint file",
            )
        )


def _runs(values: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for value in values:
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs
