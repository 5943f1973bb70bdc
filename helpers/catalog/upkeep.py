"""What keeps a catalog-managed table's small files and log in check at Delta Spark 4.4.0, measured:
auto compaction and metadata cleanup, which 4.4.0 runs on such a table, and VACUUM, which it
refuses. One driver without Spark's testing flag does the work
(:func:`helpers.catalog.maintenance.upkeep`, Delta's sources cited there); every outcome is read
afterwards from storage and the catalog, not from what the driver was told::

    measured = upkeep.run(catalog, folder / "upkeep", spark=spark)   # spark: creates the tables
    print(measured.summary())
    measured.to_dict()                                                # the record, as plain data

The sizes are parameters: a test runs a few appends, a committed run as many as it likes. The
server runs no maintenance of its own: whatever is compacted or deleted here, the writer's own
driver did it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from helpers.catalog import maintenance, race, tables
from helpers.catalog.rest import UnityCatalog
from helpers.catalog.writer import ROWS_PER_BATCH
from helpers.delta import delta_log, table_files

CHECKPOINTS, COMMITS, STAGED = "checkpoints", "commits", "staged commits"
LOG_KINDS = (COMMITS, STAGED, CHECKPOINTS, "checksums", "sidecars", "other")
"""The kinds of file under ``_delta_log/``, as :func:`log_kind` names them."""


def log_kind(name: str) -> str:
    """What a file under ``_delta_log/`` (its name relative to it) is: one of :data:`LOG_KINDS`."""
    if name.startswith("_staged_commits/"):
        return STAGED
    if name.startswith("_sidecars/"):
        return "sidecars"
    if delta_log.commit_version(delta_log.LOG_DIR + name) is not None:
        return COMMITS
    if ".checkpoint." in name:
        return CHECKPOINTS
    return "checksums" if name.endswith(".crc") else "other"


def by_kind(names) -> dict[str, list[int]]:
    """Kind -> the versions of those files (:func:`log_kind`; a sidecar or ``_last_checkpoint``
    counts as -1, having none), for every kind of :data:`LOG_KINDS`."""
    kinds: dict[str, list[int]] = {kind: [] for kind in LOG_KINDS}
    for name in names:
        base = name.rsplit("/", 1)[-1]
        digits = base[: delta_log.VERSION_DIGITS]
        kind = log_kind(name)
        kinds[kind].append(int(digits) if digits.isdigit() and kind != "sidecars" else -1)
    return {kind: sorted(versions) for kind, versions in kinds.items()}


def span(versions: list[int]) -> str:
    """``0-5`` for consecutive versions, else the list; ``none`` when empty."""
    if not versions:
        return "none"
    if versions == list(range(versions[0], versions[-1] + 1)) and len(versions) > 2:
        return f"{versions[0]}-{versions[-1]}"
    return ", ".join(map(str, versions))


def refused(outcomes: list[dict]) -> list[dict]:
    """The outcomes of :func:`~helpers.catalog.maintenance.tried` that Delta refused."""
    return [o for o in outcomes if o["outcome"] != maintenance.RAN]


@dataclass
class AutoCompaction:
    """Appends to a catalog-managed table with auto compaction turned on one way."""

    way: str
    """How it was turned on: :data:`~helpers.catalog.maintenance.BY_PROPERTY` or
    :data:`~helpers.catalog.maintenance.BY_SETTING`."""
    setting: dict
    """Turning it on: an outcome (:func:`~helpers.catalog.maintenance.tried`)."""
    appends: list[dict]
    """Each append's outcome, as its writer was told."""
    compactions: list[dict]
    """Each published commit of operation OPTIMIZE with ``auto`` true: its version, files removed
    and added (:func:`compactions`)."""
    ratified: list[int]
    """The versions of ``compactions`` whose commit the catalog ratified (a staged commit,
    published as staged)."""
    files: dict[str, int]
    """The table's data files on storage: live, replaced (kept, as nothing deletes them), orphan."""
    problems: list[str]
    """What :func:`helpers.catalog.race.check_table` found (a batch missing or doubled, a gap)."""

    def summary(self) -> str:
        versions = [c["version"] for c in self.compactions]
        return (
            f"auto compaction by {self.way}: {len(self.appends) - len(refused(self.appends))} of "
            f"{len(self.appends)} appends told success; {len(versions)} compactions committed "
            f"(OPTIMIZE, auto) at versions {span(versions)}, {len(self.ratified)} ratified by the "
            f"catalog; data files on storage: {self.files[table_files.LIVE]} live, "
            f"{self.files[table_files.REPLACED]} replaced; "
            + ("no problems" if not self.problems else f"problems: {'; '.join(self.problems)}")
        )


@dataclass
class Cleanup:
    """Metadata cleanup on a catalog-managed table, its log listed from storage."""

    setting: dict
    appends: list[dict]
    today: dict[str, list[int]]
    """The log (kind -> versions, :func:`by_kind`) once its first appends and checkpoints were made
    today: whatever the retention, none of it is older than the last midnight (UTC)..."""
    midnight_between: bool
    """... unless a midnight (UTC) fell while it was made: then the older part may be gone."""
    aged: int
    """Files of the log then given a modification time days back."""
    deleted: dict[str, list[int]]
    """What the next checkpoint's cleanup deleted from the aged log."""
    after: dict[str, list[int]]
    rows: int
    """Rows a reader by name counts after the cleanup."""
    rows_appended: int
    time_travel: dict
    """Reading version 1 after the cleanup: an outcome."""
    latest_version: int
    """The catalog's latest version after the cleanup."""

    def summary(self) -> str:
        deleted = ", ".join(
            f"{kind} {span(versions) if kind != 'sidecars' else len(versions)}"
            for kind, versions in self.deleted.items()
            if versions
        )
        today = (
            f"metadata cleanup, the log made today: checkpoints at versions "
            f"{span(self.today[CHECKPOINTS])}, commits {span(self.today[COMMITS])} kept"
            + (" (a midnight UTC fell while it was made)" if self.midnight_between else "")
        )
        aged = (
            f"the same {self.aged} log files aged, then one more checkpoint: deleted "
            f"{deleted or 'nothing'}; kept commits {span(self.after[COMMITS])}, staged commits "
            f"{span(self.after[STAGED])}; checkpoints now at {span(self.after[CHECKPOINTS])}"
        )
        read = (
            f"a reader by name counts {self.rows} rows of {self.rows_appended} appended; "
            f"version 1: {self.time_travel['error_class'] or 'read'}; the catalog's latest "
            f"version {self.latest_version}"
        )
        return f"{today}\n{aged}\n{read}"


@dataclass
class ManagedVacuum:
    """VACUUM on a catalog-managed table named MANAGED in Spark's session catalog."""

    table_type: str
    append: dict
    vacuum: dict
    """:func:`~helpers.catalog.maintenance.attempt`'s record: outcome, error, the log's change."""
    optimize: dict
    created: dict
    """Creating a catalog-managed table in this driver: an outcome."""

    def summary(self) -> str:
        written = len(self.vacuum["log_added"]) + len(self.vacuum["log_removed"])
        return (
            f"VACUUM on a table named {self.table_type}: {self.vacuum['outcome']}, "
            f"{self.vacuum['error_class'] or 'no error'}, "
            f"{written} files changed under _delta_log/ "
            f"(OPTIMIZE: {self.optimize['error_class'] or self.optimize['outcome']}; an append: "
            f"{self.append['outcome']}); creating a catalog-managed table in this driver: "
            f"{self.created['error_class'] or self.created['outcome']}"
        )


@dataclass
class Upkeep:
    """What one driver without the testing flag measured (:func:`run`)."""

    testing_flag: str | None
    auto_compaction: dict[str, AutoCompaction]
    cleanup: Cleanup
    managed: ManagedVacuum
    seconds: float
    """From the barrier's opening to the driver's exit."""

    def keeps_in_check(self) -> list[str]:
        """What keeps small files and storage in check on such a table, from these figures."""
        compacted = sum(len(a.compactions) for a in self.auto_compaction.values())
        replaced = sum(a.files[table_files.REPLACED] for a in self.auto_compaction.values())
        deleted = self.cleanup.deleted
        files = (
            f"small files: auto compaction in the writer's own driver ({compacted} compactions "
            "committed through the catalog)"
        )
        log = (
            f"the log: metadata cleanup at each checkpoint ({len(deleted[COMMITS])} commits, "
            f"{len(deleted[STAGED])} staged commits, {len(deleted[CHECKPOINTS])} checkpoints "
            "deleted once older than the retention, cut at a midnight UTC)"
        )
        vacuum = self.managed.vacuum
        kept = (
            f"replaced data files: nothing ({replaced} stay on storage; VACUUM "
            f"{vacuum['outcome']}, {vacuum['error_class']})"
        )
        return [files, log, kept]

    def summary(self) -> str:
        lines = [f"one driver, testing flag: {self.testing_flag}, {self.seconds:.0f} s"]
        lines += [a.summary() for a in self.auto_compaction.values()]
        lines += [self.cleanup.summary(), self.managed.summary(), "What keeps it in check:"]
        return "\n".join(lines + [f"- {line}" for line in self.keeps_in_check()])

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def compactions(location: str) -> list[dict]:
    """Every published commit at ``location`` that auto compaction made (operation OPTIMIZE,
    ``operationParameters.auto`` true): its version and how many files it removed and added."""
    found = []
    for version in tables.published_versions(location):
        body = (tables.local_path(location) / delta_log.commit_file(version)).read_bytes()
        info, added, removed = delta_log.read_commit(body)
        auto = (info.get("operationParameters") or {}).get("auto")
        if info.get("operation") == "OPTIMIZE" and str(auto).lower() == "true":
            found.append({"version": version, "removed": len(removed), "added": len(added)})
    return found


def read_auto_compaction(
    catalog: UnityCatalog, way: str, table: dict, told: dict, batches: int
) -> AutoCompaction:
    """An :class:`AutoCompaction` read from the table's storage and the catalog (``told``: what its
    driver recorded)."""
    expected = {(maintenance.WRITER, b): ROWS_PER_BATCH for b in range(1, batches + 1)}
    check = race.check_table(catalog, table["name"], expected)
    found = compactions(table["location"])
    stored = table_files.count_states(table_files.stored_files(table["location"]))
    ratified = [c["version"] for c in found if c["version"] in check.ratified]
    return AutoCompaction(
        way, told["setting"], told["appends"], found, ratified, stored, check.problems
    )


def read_cleanup(catalog: UnityCatalog, table: dict, told: dict) -> Cleanup:
    """A :class:`Cleanup` from the listings its driver made and the catalog."""
    today, after = by_kind(told["today"]), by_kind(told["after"])
    deleted = by_kind(sorted(set(told["today"]) - set(told["after"])))
    view = catalog.table(tables.CATALOG, tables.SCHEMA, table["name"])
    appended = ROWS_PER_BATCH * (len(told["appends"]) - len(refused(told["appends"])))
    return Cleanup(
        told["setting"],
        told["appends"],
        today,
        int(told["started"] // 86400) != int(told["listed"] // 86400),  # days since 1970, UTC
        told["aged"],
        deleted,
        after,
        told["rows"],
        appended,
        told["time_travel"],
        view.latest_version,
    )


def run(
    catalog: UnityCatalog,
    run_dir: Path,
    *,
    spark=None,
    prefix: str = "upkeep",
    appends: int = 4,
    min_num_files: int = 2,
    checkpoint_interval: int = 2,
    appends_before: int = 4,
    aged_days: float = 2.0,
) -> Upkeep:
    """Create four catalog-managed tables (in ``spark``, a driver with the testing flag, or else in
    a driver of their own), then in one driver without the flag: ``appends`` appends to each of two
    tables with auto compaction on (``min_num_files``:
    :data:`~helpers.catalog.maintenance.MIN_NUM_FILES_SETTING`),
    ``appends_before`` appends and a checkpoint every ``checkpoint_interval`` versions on a third
    with the log kept briefly, its log then aged ``aged_days`` and appended to again, and VACUUM on
    the fourth named MANAGED. Each table is ``<prefix>_...``."""
    names = {
        maintenance.BY_PROPERTY: f"{prefix}_by_property",
        maintenance.BY_SETTING: f"{prefix}_by_setting",
        "cleanup": f"{prefix}_cleanup",
        "managed": f"{prefix}_managed",
    }
    located = created(catalog, spark, list(names.values()))
    table = {key: {"name": name, "location": located[name]} for key, name in names.items()}
    ways = (maintenance.BY_PROPERTY, maintenance.BY_SETTING)
    rows = {"rows": ROWS_PER_BATCH}
    spec = {
        "auto_compaction": {
            "tables": {way: table[way] for way in ways},
            "appends": appends,
            "min_num_files": min_num_files,
            **rows,
        },
        "metadata_cleanup": {
            **table["cleanup"],
            "checkpoint_interval": checkpoint_interval,
            "appends_before": appends_before,
            "aged_days": aged_days,
            **rows,
        },
        "managed_vacuum": {**table["managed"], "created": f"{prefix}_created_flagless", **rows},
    }
    results, seconds = race.run_drivers(
        catalog, {"upkeep": {"job": "flagless", "upkeep": spec}}, run_dir, "1 driver"
    )
    result = results["upkeep"]
    if not result or result.get("error"):
        raise race.RaceError(
            f"the driver without the testing flag failed: {result.get('error') or 'no result'}"
        )
    told = result["upkeep"]
    return Upkeep(
        result.get("testing_flag"),
        {
            way: read_auto_compaction(
                catalog, way, table[way], told["auto_compaction"][way], appends
            )
            for way in ways
        },
        read_cleanup(catalog, table["cleanup"], told["metadata_cleanup"]),
        ManagedVacuum(**told["managed_vacuum"]),
        seconds,
    )


def created(catalog: UnityCatalog, spark, names: list[str]) -> dict[str, str]:
    """Name -> location of new catalog-managed tables (:data:`~helpers.catalog.tables.COLUMNS`),
    created in ``spark`` (a driver with the testing flag), or else in a driver of their own."""
    if spark is not None:
        return {
            name: tables.create(spark, catalog, name, tables.COLUMNS).location for name in names
        }
    from helpers.catalog.kernel_writer import create_in_a_driver

    return {
        name: location for name, (_, location) in create_in_a_driver(catalog.uri, *names).items()
    }
