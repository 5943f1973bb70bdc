"""How a Delta table names its commits: ``_delta_log/<version, 20 digits>.json``.

The one home of that pattern, and of the tags a writer puts on its commit; the auditor, the commit gate, the writers and the notebooks ask
here. Standard library only (it runs in every writer era)::

    delta_log.commit_file(3)                                  # '_delta_log/00000000000000000003.json'
    delta_log.commit_version("_delta_log/00000000000000000003.json")   # 3
    delta_log.commit_version("bucket/t/_delta_log/00000000000000000003.json")  # 3 (any prefix)
    delta_log.commit_version("_delta_log/00000000000000000003.checkpoint.parquet")  # None
"""

from __future__ import annotations

import json
import re

LOG_DIR = "_delta_log/"
VERSION_DIGITS = 20
COMMIT_FILE = re.compile(rf"(?:^|/){LOG_DIR}(\d{{{VERSION_DIGITS}}})\.json$")
"""A commit file's path, relative to the table or with any prefix before ``_delta_log/``."""


def commit_file_name(version: int) -> str:
    """The commit file's own name: ``00000000000000000003.json``."""
    return f"{version:0{VERSION_DIGITS}d}.json"


def commit_file(version: int) -> str:
    """The commit file's path relative to the table: ``_delta_log/00000000000000000003.json``."""
    return LOG_DIR + commit_file_name(version)


def commit_version(path: str) -> int | None:
    """The version of a commit file's path (relative, or with any prefix); None for any other file."""
    match = COMMIT_FILE.search(path)
    return int(match.group(1)) if match else None


def read_commit(body: bytes) -> tuple[dict, list[dict], list[dict]]:
    """A commit file's actions (newline-delimited JSON): its ``commitInfo`` ({} if none), its
    ``add`` actions and its ``remove`` actions, each as the JSON object the log holds."""
    import json

    info: dict = {}
    added: list[dict] = []
    removed: list[dict] = []
    for line in body.decode("utf-8").splitlines():
        if not line.strip():
            continue
        action = json.loads(line)
        if "commitInfo" in action:
            info = action["commitInfo"]
        elif "add" in action:
            added.append(action["add"])
        elif "remove" in action:
            removed.append(action["remove"])
    return info, added, removed


def add_stats(add: dict) -> dict:
    """The statistics an ``add`` action carries (``numRecords``, ``minValues``, ...); {} if none."""
    import json

    return json.loads(add.get("stats") or "{}")


def commit_files(store, names=None) -> list[tuple[int, bytes]]:
    """Every commit file of a table as (version, bytes), oldest first. ``store`` is anything with
    ``list()`` and ``read(relative_path)`` (a :class:`helpers.stores.storage.TableStore`); ``names``: the
    table's files if already listed."""
    versions = {name: commit_version(name) for name in (store.list() if names is None else names)}
    return sorted(
        (version, store.read(name)) for name, version in versions.items() if version is not None
    )


def is_data_file(path: str) -> bool:
    """A Parquet data file of the table (relative path), not a checkpoint under ``_delta_log/``."""
    return not path.startswith(LOG_DIR) and path.endswith(".parquet")


TAG_PREFIX = "workbook."
WRITER_TAG = TAG_PREFIX + "writer"
BATCH_TAG = TAG_PREFIX + "batch"
"""Keys a writer adds to its commit's commitInfo, so an auditor can tell whose commit it is."""


def commit_tags(info: dict) -> dict[str, str]:
    """The workbook tags of a commit (every ``workbook.*`` key), from its commitInfo: delta-rs and
    Daft put them in commitInfo itself, Delta Spark (which cannot add keys there) in
    ``userMetadata`` as JSON. {} if none."""
    if WRITER_TAG in info:
        found = info
    else:
        try:
            found = json.loads(info.get("userMetadata") or "{}")
        except ValueError:
            return {}
    return (
        {k: str(v) for k, v in found.items() if k.startswith(TAG_PREFIX)}
        if isinstance(found, dict)
        else {}
    )
