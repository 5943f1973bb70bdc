"""What a commit through the catalog costs. One driver appends one row at a time, in turn, to a
catalog-managed table and to two ordinary Delta tables on the same local disk, whose commit is
Delta's put-if-absent there (a rename that refuses to replace):

* **same features**: the table features Delta turns on for a catalog-managed table (deletion
  vectors, row tracking, in-commit timestamps, V2 checkpoints), without ``catalogManaged``: the
  difference to it is the catalog's own cost;
* **Delta's defaults**: a table created with no properties: the difference to *same features* is
  what those features cost.

All in one run, so that the figures share the machine's load, and reported as the benchmark
reports (``helpers.bench``): commits per second from the median commit, and ratios, with the
machine beside them. Nothing asserts a duration.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from helpers.bench import run
from helpers.catalog.rest import UnityCatalog
from helpers.catalog.tables import SCHEMA, wait_published

SAME_FEATURES = {
    "delta.enableDeletionVectors": "true",
    "delta.enableRowTracking": "true",
    "delta.enableInCommitTimestamps": "true",
    "delta.checkpointPolicy": "v2",
}
CATALOG_MANAGED = "catalog-managed"
REFERENCES = {"same features, no catalog": SAME_FEATURES, "Delta's defaults": {}}


@dataclass
class CommitCost:
    seconds: dict[str, list[float]]
    """Table kind (:data:`CATALOG_MANAGED` or a key of :data:`REFERENCES`) -> each timed commit's seconds
    (after one untimed warm-up commit each)."""
    machine: dict
    """As the benchmark records it (``helpers.bench.run.machine``): cores, memory, system, Python."""

    def commits_per_s(self, kind: str) -> float:
        return 1 / statistics.median(self.seconds[kind])

    def ratio(self, kind: str, to: str) -> float:
        """Commits per second of ``kind`` against those of ``to``."""
        return self.commits_per_s(kind) / self.commits_per_s(to)

    def table(self) -> list[dict]:
        return [
            {
                "table": kind,
                "commits timed": len(times),
                "commits/s (median)": round(self.commits_per_s(kind), 2),
                "ratio to the catalog-managed table": round(self.ratio(kind, CATALOG_MANAGED), 2),
            }
            for kind, times in self.seconds.items()
        ]


def measure(
    spark, catalog: UnityCatalog, catalog_table: str, folder_uri: str, commits: int
) -> CommitCost:
    """Append ``commits`` single-row commits to the catalog-managed table ``catalog_table`` and to
    one new table of each of :data:`REFERENCES` (created under ``folder_uri``, same columns),
    alternating, after one warm-up commit each; return once the last is published."""
    names = {CATALOG_MANAGED: catalog_table}
    for number, (kind, properties) in enumerate(REFERENCES.items(), start=1):
        names[kind] = f"{catalog_table}_reference_{number}"
        listed = ", ".join(f"'{key}' = '{value}'" for key, value in properties.items())
        spark.sql(
            f"CREATE TABLE {SCHEMA}.{names[kind]} USING delta LOCATION '{folder_uri}/{names[kind]}' "
            f"{f'TBLPROPERTIES ({listed})' if listed else ''} AS SELECT * FROM {SCHEMA}.{catalog_table} LIMIT 0"
        )
    seconds: dict[str, list[float]] = {kind: [] for kind in names}
    for round_ in range(commits + 1):
        for kind, name in names.items():
            started = time.perf_counter()
            spark.sql(f"INSERT INTO {SCHEMA}.{name} VALUES ({900000 + round_}, 'cost', 0)")
            if round_:  # the first is a warm-up
                seconds[kind].append(time.perf_counter() - started)
    wait_published(catalog, catalog_table)
    return CommitCost(seconds, run.machine())


def reference_names(catalog_table: str) -> list[str]:
    """The names :func:`measure` gives its reference tables (a notebook run again forgets them first)."""
    return [f"{catalog_table}_reference_{number}" for number in range(1, len(REFERENCES) + 1)]
