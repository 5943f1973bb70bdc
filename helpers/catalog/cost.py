"""What a commit through the catalog costs: the requests it sends to the catalog, counted by kind,
and its latency beside the same table without the catalog, in one job without Spark's testing flag.

A driver that creates catalog-managed tables (it needs the flag, :mod:`helpers.catalog.tables`)
makes new, empty tables that stay at equal versions (:func:`create_tables`): **catalog-managed**;
**same features, no catalog**, an ordinary Delta table on the same disk with the features and
properties of the first's version 0 but ``catalogManaged`` (:func:`same_features`), committed by
put-if-absent: the gap between the two is the catalog's part; **Delta's defaults**, with no
properties: the gap to the second is what those features cost; with ``each_feature``, one per
feature of :data:`ONE_FEATURE` too.

:func:`measure` runs one job (:class:`helpers.catalog.driver.Job`, a driver in its own process that
refuses Spark's testing flag) appending one batch per commit by name, as a team's job does:

1. **counted**: its catalog requests go through :class:`RequestLog`, the commit gate in front of
   the server, which logs each request's kind (:func:`request_kind`). After each commit to the
   catalog-managed table the job waits until it is published (asking the server itself), so each
   commit's requests are its own (:func:`commit_window`); reads by name (a count) are counted too;
2. **timed**: the job's catalog setting then names the server itself (the gate's hop would add to
   each request); one untimed commit per table, then ``commits`` per table, the tables in turn and
   each round starting at another table, so that all share the machine's load alike; each commit
   timed from the command sent to the job to its answer read (the same pipe for every table).

:class:`~helpers.catalog.cost_record.CommitCost` is the record. Nothing here asserts a duration;
the counts are what a check holds.

**What Delta 4.4.0's sources say a commit sends** (line numbers of tag ``v4.4.0``; what
:func:`measure` counts agrees with each point). On the wire Delta's
``getCommits`` *is* ``loadTable``: ``UCDeltaTokenBasedRestClient.getCommits`` calls
``deltaTablesApi.loadTable`` (``storage/.../uccommitcoordinator/UCDeltaTokenBasedRestClient.java``
line 318: "The UC loadTable endpoint does not support server-side filtering by version range",
lines 313-316). So every request but the commit is a ``GET`` of the table:

* every snapshot refresh of a catalog-managed table asks the coordinator for the commits not yet
  published (``SnapshotManagement.scala`` lines 189-195). An append by name refreshes twice before
  it commits: as its name is resolved (``DeltaTableV2.initialSnapshot``, ``DeltaTableV2.scala``
  lines 203-207) and as its transaction starts (``OptimisticTransaction.scala`` line 200, from
  ``WriteIntoDelta.scala`` line 106);
* the commit: a ``POST`` of the table with ``add-commit`` and ``set-latest-backfilled-version``
  (``UCCommitCoordinatorClient.java`` lines 459 and 731, ``UCDeltaTokenBasedRestClient.java`` 292);
* publication, on a thread of its own after the catalog's yes (``UCCommitCoordinatorClient.java``
  lines 605-618): ``backfillToVersion`` asks ``getCommits`` again (line 902), then copies;
* a commit that writes a checkpoint (every 10th version by default) first makes sure its version
  is published (``Checkpoints.scala`` line 832, ``Snapshot.scala`` lines 785-800): one more ``GET``.

So four requests per commit, five at a checkpoint; a read by name refreshes twice, as the name is
resolved and as the scan is planned (``TahoeFileIndex.scala`` line 304). On local disk no credential
is vended or asked for.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from helpers.catalog import tables
from helpers.catalog.cost_record import (
    CATALOG_MANAGED,
    COMMIT,
    CREDENTIALS,
    DEFAULTS,
    KINDS,
    OTHER,
    PUBLISH,
    REFRESH,
    SAME_FEATURES,
    TABLE_GET,
    TABLE_POST,
    CommitCost,
)
from helpers.catalog.rest import DELTA, UnityCatalog
from helpers.catalog.tables import COLUMNS
from helpers.runs import commitgate

ONE_FEATURE = {
    "deletion vectors only": {"delta.enableDeletionVectors": "true"},
    "row tracking only": {"delta.enableRowTracking": "true"},
    "in-commit timestamps only": {"delta.enableInCommitTimestamps": "true"},
    "V2 checkpoints only": {"delta.checkpointPolicy": "v2"},
}
"""The features Delta turns on for a catalog-managed table here, each alone on Delta's defaults."""
SET_BY_DELTA = ("io.unitycatalog.tableId", "delta.rowTracking.materialized")
"""Properties of version 0 that Delta or the catalog sets for one table (copying them would name
another table's id or columns): left out of :func:`same_features`."""

_TABLE_PATH = re.compile(rf"^{re.escape(DELTA)}/catalogs/[^/]+/schemas/[^/]+/tables/[^/]+/?$")


class CostError(RuntimeError):
    """The measurement could not be made as asked; the message says why."""


def same_features(version_zero: list[dict]) -> dict[str, str]:
    """The table properties of an ordinary table with the protocol and settings of a catalog-managed
    table's version 0 (its actions), but ``catalogManaged``."""
    actions = {next(iter(a)): next(iter(a.values())) for a in version_zero}
    protocol, configuration = actions["protocol"], actions["metaData"].get("configuration", {})
    features = dict.fromkeys(
        [*protocol.get("readerFeatures", []), *protocol.get("writerFeatures", [])]
    )
    return {
        **{f"delta.feature.{f}": "supported" for f in features if f != "catalogManaged"},
        **{k: v for k, v in configuration.items() if not k.startswith(SET_BY_DELTA)},
    }


def create_tables(
    spark, catalog: UnityCatalog, name: str, folder_uri: str, *, each_feature: bool = False
) -> dict[str, dict]:
    """In the driver that creates catalog-managed tables: a new catalog-managed table ``name`` and
    the reference tables under ``folder_uri`` (with ``each_feature``, those of :data:`ONE_FEATURE`
    too), all empty. Returns kind -> ``{"name": ..., "location": ..., "properties": ...}``
    (:data:`CATALOG_MANAGED` first)."""
    staged = tables.create(spark, catalog, name, COLUMNS)
    made = {CATALOG_MANAGED: {"name": name, "location": staged.location, "properties": {}}}
    kinds = {
        SAME_FEATURES: same_features(tables.version_zero(staged.location)),
        **(ONE_FEATURE if each_feature else {}),
        DEFAULTS: {},
    }
    for number, (kind, properties) in enumerate(kinds.items(), start=1):
        other = f"{name}_reference_{number}"
        location = f"{folder_uri}/{other}"
        listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
        spark.sql(
            f"CREATE TABLE {tables.SCHEMA}.{other} ({COLUMNS}) USING delta "
            f"LOCATION '{location}' {f'TBLPROPERTIES ({listed})' if listed else ''}"
        )
        made[kind] = {"name": other, "location": location, "properties": properties}
    return made


def reference_names(name: str) -> list[str]:
    """The names :func:`create_tables` may give (a notebook run again forgets them first)."""
    return [name, *(f"{name}_reference_{n}" for n in range(1, len(ONE_FEATURE) + 3))]


def request_kind(method: str, path: str, body: bytes | None) -> str:
    """What one request to the catalog is: :data:`TABLE_GET`, :data:`COMMIT`, :data:`TABLE_POST`,
    :data:`CREDENTIALS` or :data:`OTHER` (a commit window tells :data:`TABLE_GET` apart as
    :data:`REFRESH` or :data:`PUBLISH`, :func:`commit_window`)."""
    bare = path.split("?", 1)[0]
    if "credentials" in bare:
        return CREDENTIALS
    if _TABLE_PATH.match(bare):
        if method == "GET":
            return TABLE_GET
        if method == "POST":
            return COMMIT if body and b'"add-commit"' in body else TABLE_POST
    return OTHER


def counted(kinds: Sequence[str]) -> dict[str, int]:
    """How many requests of each kind, in :data:`KINDS` order."""
    found = Counter(kinds)
    return {kind: found[kind] for kind in KINDS if found[kind]}


def commit_window(kinds: Sequence[str]) -> dict[str, int]:
    """The requests of one commit, in arrival order, counted by kind: a GET of the table before its
    first commit POST is a snapshot refresh (:data:`REFRESH`), one after it publication
    (:data:`PUBLISH`)."""
    first = kinds.index(COMMIT) if COMMIT in kinds else len(kinds)
    return counted(
        [
            (REFRESH if number < first else PUBLISH) if kind == TABLE_GET else kind
            for number, kind in enumerate(kinds)
        ]
    )


class RequestLog(commitgate.CommitGate):
    """The commit gate (:class:`helpers.runs.commitgate.CommitGate`) in front of a Unity Catalog
    server at ``uri``: every request passes unchanged, and its kind (:func:`request_kind`) is
    logged as it arrives."""

    def __init__(self, uri: str) -> None:
        self._seen: list[str] = []
        super().__init__(uri)

    def forward(self, method, path, headers, body):
        with self._lock:
            self._seen.append(request_kind(method, path, body))
        return super().forward(method, path, headers, body)

    def take(self) -> list[str]:
        """The kinds of the requests logged since the last call, in arrival order."""
        with self._lock:
            seen, self._seen = self._seen, []
        return seen


def _rotated(kinds: list[str], number: int) -> list[str]:
    """The tables in turn, the ``number``-th round starting at another one."""
    start = number % len(kinds)
    return kinds[start:] + kinds[:start]


def _append(job, made: dict[str, dict], kind: str) -> float:
    """One batch appended by name to the ``kind`` table of ``made``; the seconds from the command
    sent to the job to its answer read."""
    started = time.perf_counter()
    told = job.append(made[kind]["name"], "cost", 1)
    seconds = time.perf_counter() - started
    if told != "success":
        raise CostError(f"an append to the {kind} table was told: {told}")
    return seconds


def _count(
    job, made: dict[str, dict], gate: RequestLog, uri: str, commits: int, reads: int
) -> dict:
    """The counted phase (the job's catalog requests through ``gate``): one commit per table, then
    ``commits`` per table and ``reads`` reads of each, each catalog commit waited for until it
    is published (asking the server at ``uri`` itself). The fields of :class:`CommitCost` it fills."""
    catalog, kinds, managed = UnityCatalog(uri), list(made), made[CATALOG_MANAGED]["name"]
    for kind in kinds:
        _append(job, made, kind)
    tables.wait_published(catalog, managed)
    found = {"start_requests": counted(gate.take()), "reference_requests": 0}
    windows, versions, read_windows, rows = [], [], [], {}
    for number in range(commits):
        for kind in _rotated(kinds, number):
            _append(job, made, kind)
            if kind == CATALOG_MANAGED:
                versions.append(tables.wait_published(catalog, managed))
                windows.append(commit_window(gate.take()))
            else:
                found["reference_requests"] += len(gate.take())
    for number in range(reads):
        for kind in _rotated(kinds, number):
            rows[kind] = job.count(made[kind]["name"])
            if kind == CATALOG_MANAGED:
                read_windows.append(counted(gate.take()))
            else:
                found["reference_requests"] += len(gate.take())
    return {
        **found,
        "commit_requests": windows,
        "commit_versions": versions,
        "read_requests": read_windows,
        "rows_read": rows,
    }


def _time(job, made: dict[str, dict], commits: int) -> dict[str, list[float]]:
    """The timed phase: ``commits`` commits per table, in turn."""
    seconds: dict[str, list[float]] = {kind: [] for kind in made}
    for number in range(commits):
        for kind in _rotated(list(made), number):
            seconds[kind].append(_append(job, made, kind))
    return seconds


def measure(
    uri: str, made: dict[str, dict], folder: Path, *, commits: int, counted_commits: int, reads: int
) -> CommitCost:
    """One job without the testing flag on the tables ``made`` (:func:`create_tables`) of the server
    at ``uri``: ``counted_commits`` commits per table and ``reads`` reads of each through
    :class:`RequestLog`, then ``commits`` timed commits per table straight to the server (see the
    module's text). Its files go under ``folder``."""
    from helpers.bench.run import machine
    from helpers.catalog import driver, server_build
    from helpers.ground import config
    from helpers.spark import sessions

    if min(commits, counted_commits, reads) < 1:
        raise CostError(
            f"commits, counted_commits and reads take 1 or more: {commits, counted_commits, reads}"
        )
    load, date = [os.getloadavg()[0]], datetime.now(UTC).isoformat(timespec="seconds")
    with RequestLog(uri) as gate, driver.Job(folder, gate.endpoint) as job:
        for table in made.values():
            job.open(table["name"], table["location"])
        found = _count(job, made, gate, uri, counted_commits, reads)
        job.configure(tables.URI_KEY, uri)  # the timed commits ask the server itself
        for kind in made:  # untimed, each table's first commit after the change
            _append(job, made, kind)
        gate.take()
        seconds = _time(job, made, commits)
        tables.wait_published(UnityCatalog(uri), made[CATALOG_MANAGED]["name"])
        found["timed_phase_requests"] = len(gate.take())
        flag = job.testing_flag
    load.append(os.getloadavg()[0])
    return CommitCost(
        seconds=seconds,
        **found,
        last_versions={k: tables.published_versions(t["location"])[-1] for k, t in made.items()},
        testing_flag=flag,
        machine=machine(),
        load=load,
        versions={
            "Delta Spark": config.DELTA_JARS_VERSION,
            "Spark": sessions.spark_version(),
            "catalog server": server_build.BUILD_NAME,
        },
        date=date,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """A run of its own: a server under ``--root`` (emptied first), the tables created by a driver
    with the testing flag in this process, :func:`measure`, and the record in ``--root/cost.json``."""
    import shutil

    from helpers.catalog import server
    from helpers.ground import config

    parser = argparse.ArgumentParser(
        prog="python -m helpers.catalog.cost", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--commits", type=int, default=100, help="timed commits per table")
    parser.add_argument("--counted", type=int, default=20, help="counted commits per table")
    parser.add_argument("--reads", type=int, default=10, help="counted reads by name per table")
    parser.add_argument("--each-feature", action="store_true", help="a table per ONE_FEATURE too")
    parser.add_argument("--root", type=Path, default=config.BUILD_DIR / "catalog" / "cost")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    with server.start(root / "uc") as uc:
        spark = tables.spark_session(
            uc.uri,
            creates_tables=True,
            app_name="catalog-cost-tables",
            extra_conf={"spark.master": "local[1]", "spark.driver.memory": "1g"},
        )
        folder = (root / "tables").as_uri()
        made = create_tables(
            spark, UnityCatalog(uc.uri), "cost", folder, each_feature=args.each_feature
        )
        spark.stop()  # its JVM stays, idle, until this process ends
        record = measure(
            uc.uri,
            made,
            root / "job",
            commits=args.commits,
            counted_commits=args.counted,
            reads=args.reads,
        )
    (root / "cost.json").write_text(json.dumps(record.to_dict(), indent=1) + "\n")
    print(record.summary(), f"written to {config.shown(root / 'cost.json')}", sep="\n")
    return 0 if not record.problems() else 1


if __name__ == "__main__":
    sys.exit(main())
