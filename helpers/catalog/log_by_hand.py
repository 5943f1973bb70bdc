"""A catalog-managed table's log in local storage, read and written by hand as the failure
scenarios (:mod:`helpers.catalog.failures`) need: the versions published, the data files more than
one version adds, commits the catalog ratified that nobody published (what a writer that stops
after the catalog's yes leaves behind), and their publication as Delta's own would do it.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from helpers.catalog import rest, tables
from helpers.delta import delta_log


def added_again(catalog: rest.UnityCatalog, name: str) -> dict[str, list[int]]:
    """Data files that more than one published version adds -> those versions (a commit made twice
    adds the same files twice: a snapshot holds them once, the table's history twice)."""
    view = catalog.table(tables.CATALOG, tables.SCHEMA, name)
    log = tables.local_path(view.location) / delta_log.LOG_DIR
    adders: dict[str, list[int]] = {}
    for version in published_versions(log):
        body = (log / f"{version:0{delta_log.VERSION_DIGITS}d}.json").read_bytes()
        for add in delta_log.read_commit(body)[1]:
            adders.setdefault(add["path"], []).append(version)
    return {path: versions for path, versions in adders.items() if len(versions) > 1}


def ratify_unpublished(catalog: rest.UnityCatalog, name: str, count: int) -> list[int]:
    """Have the catalog ratify ``count`` commits of ``name`` after its latest version, none
    published: what writers that stop after the catalog's yes leave behind. Each is a staged commit
    of no rows (its ``commitInfo`` only), written under ``_delta_log/_staged_commits/`` and ratified
    with Delta's own request (``add-commit``). Returns their versions."""
    view = catalog.table(tables.CATALOG, tables.SCHEMA, name)
    staged_dir = tables.local_path(view.location) / delta_log.LOG_DIR / "_staged_commits"
    staged_dir.mkdir(parents=True, exist_ok=True)
    versions = []
    for version in range(view.latest_version + 1, view.latest_version + 1 + count):
        now = int(time.time() * 1000)
        info = {
            "inCommitTimestamp": now,
            "timestamp": now,
            "operation": "WRITE",
            "operationParameters": {},
            "isBlindAppend": True,
            "engineInfo": "a writer that stopped before publishing",
        }
        body = (json.dumps({"commitInfo": info}) + "\n").encode()
        file_name = f"{version:0{delta_log.VERSION_DIGITS}d}.{uuid.uuid4()}.json"
        (staged_dir / file_name).write_bytes(body)
        catalog.ratify(
            tables.CATALOG, tables.SCHEMA, name, view.table_id, version, file_name, len(body), now
        )
        versions.append(version)
    return versions


def published_versions(log: Path) -> list[int]:
    """The versions published in the log folder ``log`` (``<v>.json``)."""
    found = (delta_log.commit_version(delta_log.LOG_DIR + p.name) for p in log.glob("*.json"))
    return sorted(v for v in found if v is not None)


def publish(catalog: rest.UnityCatalog, name: str) -> list[int]:
    """Publish every commit the catalog lists as ratified and storage lacks, as Delta's own
    publication does: ``_delta_log/<v>.json`` written once, byte for byte the staged commit.
    Returns the versions written."""
    view = catalog.table(tables.CATALOG, tables.SCHEMA, name)
    log = tables.local_path(view.location) / delta_log.LOG_DIR
    written = []
    for commit in view.unpublished:
        target = log / f"{int(commit['version']):0{delta_log.VERSION_DIGITS}d}.json"
        if target.exists():
            continue
        body = (log / "_staged_commits" / commit["file-name"]).read_bytes()
        with open(target, "xb") as copy:
            copy.write(body)
        written.append(int(commit["version"]))
    return written
