"""What a commit through the catalog costs, timed in a driver without Spark's testing flag.

The tables are made in the driver that creates catalog-managed tables (it needs the flag, see
:mod:`helpers.catalog.tables`), all new and empty, so that every table is at the same version
whenever it is timed and crosses its checkpoints at the same commits:

* **catalog-managed**: a catalog-managed table (:func:`helpers.catalog.tables.create`);
* **same features, no catalog**: an ordinary Delta table with the features and properties of the
  catalog-managed table's version 0 but ``catalogManaged`` (read from it, :func:`same_features`);
  its commit is Delta's put-if-absent on the same disk: the gap to the first is the catalog's part;
* one table per feature of :data:`ONE_FEATURE` (optional, ``each_feature=True``): Delta's defaults
  and that feature alone;
* **Delta's defaults**: a table created with no properties: the gap to *same features* is what
  those features cost.

Another driver, started without the flag (:mod:`helpers.catalog.writer`, job ``flagless``), names
them, makes one untimed warm-up commit each, then ``rounds`` rounds of ``commits`` single-row
``INSERT`` s per table, the tables in turn (each round starts at another table), so that all share
the machine's load alike: :func:`time_commits`. :class:`CommitCost` reports the median commit and
the spread of the rounds' medians. Nothing asserts a duration.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from helpers.catalog import tables
from helpers.catalog.rest import UnityCatalog
from helpers.catalog.tables import COLUMNS

CATALOG_MANAGED = "catalog-managed"
SAME_FEATURES = "same features, no catalog"
DEFAULTS = "Delta's defaults"
ONE_FEATURE = {
    "deletion vectors only": {"delta.enableDeletionVectors": "true"},
    "row tracking only": {"delta.enableRowTracking": "true"},
    "in-commit timestamps only": {"delta.enableInCommitTimestamps": "true"},
    "V2 checkpoints only": {"delta.checkpointPolicy": "v2"},
}
"""The features Delta turns on for a catalog-managed table here, one table each (Delta's defaults
plus that one), when the notebook asks for them."""
SET_BY_DELTA = ("io.unitycatalog.tableId", "delta.rowTracking.materialized")
"""Properties of version 0 that Delta or the catalog sets for one table (copying them would name
another table's id or columns): left out of :func:`same_features`."""


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


def table_kinds(version_zero: list[dict], each_feature: bool) -> dict[str, dict[str, str]]:
    """Each reference table's kind and its properties, in the order they are shown."""
    return {
        SAME_FEATURES: same_features(version_zero),
        **(ONE_FEATURE if each_feature else {}),
        DEFAULTS: {},
    }


def create_tables(
    spark, catalog: UnityCatalog, name: str, folder_uri: str, *, each_feature: bool = False
) -> dict[str, dict]:
    """In the driver that creates catalog-managed tables: a new catalog-managed table ``name`` and
    one new table of each reference kind under ``folder_uri``, all empty. Returns kind ->
    ``{"name": ..., "location": ..., "properties": ...}`` (:data:`CATALOG_MANAGED` first)."""
    staged = tables.create(spark, catalog, name, COLUMNS)
    made = {CATALOG_MANAGED: {"name": name, "location": staged.location, "properties": {}}}
    kinds = table_kinds(tables.version_zero(staged.location), each_feature)
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


def reference_names(name: str, each_feature: bool = True) -> list[str]:
    """The names :func:`create_tables` may give (a notebook run again forgets them first)."""
    count = len(ONE_FEATURE) + 2 if each_feature else 2
    return [name, *(f"{name}_reference_{number}" for number in range(1, count + 1))]


def time_commits(spark, names: dict[str, str], rounds: int, commits: int) -> dict[str, list]:
    """In the timing driver, each table already named (kind -> ``default.<name>``): one warm-up
    commit each, then ``rounds`` rounds of ``commits`` single-row appends per table, in turn.
    Returns kind -> one list of seconds per round."""
    kinds = list(names)
    seconds: dict[str, list[list[float]]] = {kind: [] for kind in kinds}

    def insert(kind: str, row: int) -> float:
        started = time.perf_counter()
        spark.sql(f"INSERT INTO {names[kind]} VALUES ({row}, 'cost', 0)")
        return time.perf_counter() - started

    for kind in kinds:
        insert(kind, 900000)
    for round_ in range(rounds):
        order = kinds[round_ % len(kinds) :] + kinds[: round_ % len(kinds)]
        for kind in kinds:
            seconds[kind].append([])
        for commit in range(commits):
            for kind in order:
                seconds[kind][-1].append(insert(kind, 900001 + round_ * commits + commit))
    return seconds


@dataclass
class CommitCost:
    seconds: dict[str, list[list[float]]]
    """Table kind -> each round's timed commits, in seconds (after one untimed warm-up commit each)."""
    machine: dict
    """As the benchmark records it (``helpers.bench.run.machine``): cores, memory, system, Python."""
    testing_flag: str | None
    """The timing JVM's ``spark.testing`` system property (None: not set)."""

    def median(self, kind: str) -> float:
        return statistics.median(s for one in self.seconds[kind] for s in one)

    def round_medians(self, kind: str) -> list[float]:
        return [statistics.median(one) for one in self.seconds[kind]]

    def table(self) -> list[dict]:
        """One row per table kind: commits timed, the median commit, the rounds' medians."""
        return [
            {
                "table": kind,
                "commits timed": sum(len(one) for one in rounds),
                "median commit (s)": round(self.median(kind), 3),
                "each round's median (s)": ", ".join(f"{m:.3f}" for m in self.round_medians(kind)),
            }
            for kind, rounds in self.seconds.items()
        ]

    def gap(self, kind: str, to: str) -> tuple[float, float, float]:
        """The median commit of ``kind`` less that of ``to``: over all rounds, then the smallest and
        the largest over single rounds (seconds)."""
        per_round = [a - b for a, b in zip(self.round_medians(kind), self.round_medians(to))]
        return self.median(kind) - self.median(to), min(per_round), max(per_round)
