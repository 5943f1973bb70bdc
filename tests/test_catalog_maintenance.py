"""helpers.catalog.upkeep and the measures of helpers.catalog.maintenance it runs: what Delta Spark
4.4.0 does to a catalog-managed table's small files and log, in a driver without the testing flag.

The readers (the log's kinds of file, auto compaction's commits, the record's sentences) are
checked on logs written by hand, each shown failing on a crafted break. One small run of the real
thing (a Unity Catalog server, a driver that creates the tables, one driver without the flag) is
checked from storage and the catalog: auto compaction committed through the catalog both ways,
metadata cleanup deleted the aged log and nothing of today's, VACUUM refused on a table named
MANAGED.
"""

from __future__ import annotations

import json
import time

import pytest

from helpers.catalog import maintenance, rest, server, server_build, tables, upkeep
from helpers.delta import delta_log, table_files

LISTING = [
    "00000000000000000000.crc",
    "00000000000000000000.json",
    "00000000000000000001.json",
    "00000000000000000002.checkpoint.dadba67d-1c3a-4cb6-a160-a83b398fcb4c.json",
    "00000000000000000002.json",
    "00000000000000000004.checkpoint.parquet",
    "_last_checkpoint",
    "_sidecars/00000000000000000002.checkpoint.0000000001.0000000001.585e9338.parquet",
    "_staged_commits/00000000000000000001.4aafbe00-c0fd-4f35-87e8-ab09e9517ca5.json",
    "_staged_commits/00000000000000000002.f54b4ab7-bfb0-45c1-8f88-ec1e761c4ad1.json",
]


def test_each_file_of_the_log_is_named_by_its_kind_and_version():
    assert upkeep.by_kind(LISTING) == {
        upkeep.COMMITS: [0, 1, 2],
        upkeep.STAGED: [1, 2],
        upkeep.CHECKPOINTS: [2, 4],
        "checksums": [0],
        "sidecars": [-1],
        "other": [-1],
    }
    # a staged commit is no published commit, though its name ends like one
    assert upkeep.log_kind(LISTING[-1]) == upkeep.STAGED
    assert upkeep.log_kind("00000000000000000001.json") == upkeep.COMMITS


def test_versions_are_shown_as_a_span_only_when_consecutive():
    assert upkeep.span([0, 1, 2, 3]) == "0-3"
    assert upkeep.span([2, 4]) == "2, 4"
    assert upkeep.span([1, 2, 4]) == "1, 2, 4"
    assert upkeep.span([]) == "none"


def _write_log(folder, commits: list[dict]) -> str:
    """A table at ``folder`` whose published commits are ``commits`` (each a commitInfo, one file
    added and, from version 1, one removed); its location."""
    log = folder / delta_log.LOG_DIR
    log.mkdir(parents=True)
    for version, info in enumerate(commits):
        actions = [{"commitInfo": info}, {"add": {"path": f"part-{version}.parquet", "size": 1}}]
        if version:
            actions.append({"remove": {"path": f"part-{version - 1}.parquet"}})
        (folder / delta_log.commit_file(version)).write_text(
            "\n".join(json.dumps(a) for a in actions) + "\n"
        )
    return folder.as_uri()


def test_only_auto_compaction_s_commits_are_counted(tmp_path):
    location = _write_log(
        tmp_path / "t",
        [
            {"operation": "WRITE"},
            {"operation": "OPTIMIZE", "operationParameters": {"auto": True}},
            {"operation": "OPTIMIZE", "operationParameters": {"auto": False}},  # a user's OPTIMIZE
            {"operation": "WRITE", "operationParameters": {"auto": True}},
        ],
    )
    assert upkeep.compactions(location) == [{"version": 1, "removed": 1, "added": 1}]


def test_a_log_aged_has_every_file_days_back(tmp_path):
    location = _write_log(tmp_path / "t", [{"operation": "WRITE"}] * 2)
    (tmp_path / "t" / "_delta_log" / "_staged_commits").mkdir()
    (tmp_path / "t" / "_delta_log" / "_staged_commits" / "00000000000000000001.x.json").write_text(
        ""
    )
    assert maintenance.age_log(location, 2) == 3
    ages = [
        time.time() - (tmp_path / "t" / "_delta_log" / name).stat().st_mtime
        for name in tables.log_listing(location)
    ]
    assert all(2 * 86400 - 60 < age < 2 * 86400 + 60 for age in ages), ages


def _outcome(error_class: str = "") -> dict:
    return {
        "outcome": maintenance.REFUSED if error_class else maintenance.RAN,
        "error_class": error_class,
        "error": "",
        "cause": "",
    }


def _record(vacuum_error: str, compacted: list[int]) -> upkeep.Upkeep:
    """A record as a run would make it, with VACUUM refused by ``vacuum_error`` ("" if it ran) and
    auto compaction at ``compacted``."""
    refused = "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION"
    files = {table_files.LIVE: 1, table_files.REPLACED: 2 * len(compacted), table_files.ORPHAN: 0}
    compactions = [{"version": v, "removed": 2, "added": 1} for v in compacted]
    auto = upkeep.AutoCompaction(
        maintenance.BY_SETTING, _outcome(), [_outcome()] * 4, compactions, compacted, files, []
    )
    today = upkeep.by_kind(LISTING)
    cleanup = upkeep.Cleanup(
        _outcome(),
        [_outcome()] * 6,
        today,
        False,
        len(LISTING),
        upkeep.by_kind(LISTING[1:5]),
        upkeep.by_kind(["00000000000000000006.json"]),
        60,
        60,
        _outcome("DELTA_VERSION_NOT_FOUND"),
        7,
    )
    vacuum = {**_outcome(vacuum_error), "log_added": [], "log_removed": []}
    managed = upkeep.ManagedVacuum("MANAGED", _outcome(), vacuum, _outcome(refused), _outcome())
    return upkeep.Upkeep(None, {maintenance.BY_SETTING: auto}, cleanup, managed, 12.0)


def test_the_record_says_what_ran_what_was_deleted_and_what_nothing_deletes():
    record = _record("DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION", [3, 5, 7])
    text = record.summary()
    assert "3 compactions committed (OPTIMIZE, auto) at versions 3, 5, 7, 3 ratified" in text
    assert "deleted commits 0-2, checkpoints 2" in text
    assert "version 1: DELTA_VERSION_NOT_FOUND" in text
    assert record.keeps_in_check()[2] == (
        "replaced data files: nothing (6 stay on storage; VACUUM refused, "
        "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION)"
    )
    assert json.loads(json.dumps(record.to_dict()))["cleanup"]["rows"] == 60
    # crafted: no compaction, and VACUUM that ran; the sentences follow the figures
    crafted = _record("", [])
    assert "0 compactions committed" in crafted.summary()
    assert "VACUUM ran" in crafted.keeps_in_check()[2]


# ---------------------------------------------------------------------------------------------
# One small run: a real server, a driver that creates the tables, one driver without the flag
# ---------------------------------------------------------------------------------------------

APPENDS, MIN_NUM_FILES, INTERVAL, BEFORE = 4, 2, 2, 4


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )
    folder = tmp_path_factory.mktemp("upkeep")
    with server.start(folder / "uc") as running:
        catalog = rest.UnityCatalog(running.uri)
        yield (
            catalog,
            upkeep.run(
                catalog,
                folder / "run",
                appends=APPENDS,
                min_num_files=MIN_NUM_FILES,
                checkpoint_interval=INTERVAL,
                appends_before=BEFORE,
            ),
        )


@pytest.mark.spark
def test_the_driver_ran_without_the_testing_flag(measured):
    _, record = measured
    assert record.testing_flag is None


@pytest.mark.spark
@pytest.mark.parametrize("way", [maintenance.BY_PROPERTY, maintenance.BY_SETTING])
def test_auto_compaction_commits_through_the_catalog_either_way(measured, way):
    _, record = measured
    auto = record.auto_compaction[way]
    assert auto.setting["outcome"] == maintenance.RAN, auto.setting
    assert upkeep.refused(auto.appends) == []
    # from the second append on, each leaves two small files this driver added: one compaction each
    assert len(auto.compactions) == APPENDS - MIN_NUM_FILES + 1, auto.compactions
    assert auto.ratified == [c["version"] for c in auto.compactions]
    assert (
        auto.problems == []
    )  # every batch once, one commit per version, catalog and storage agree
    assert auto.files[table_files.LIVE] == 1
    assert auto.files[table_files.REPLACED] == 2 * len(auto.compactions)


@pytest.mark.spark
def test_metadata_cleanup_deletes_the_aged_log_and_its_staged_commits_not_today_s(measured):
    _, record = measured
    cleanup = record.cleanup
    assert cleanup.setting["outcome"] == maintenance.RAN, cleanup.setting
    last_today = BEFORE + 1  # version 1 set the properties
    checkpoints = list(range(INTERVAL, last_today + 1, INTERVAL))
    commits = list(range(last_today + 1))
    if cleanup.midnight_between:  # what came before it may be gone: the rest is all there
        assert cleanup.today[upkeep.COMMITS] == commits[-len(cleanup.today[upkeep.COMMITS]) :]
        assert cleanup.today[upkeep.CHECKPOINTS][-1:] == checkpoints[-1:]
    else:  # none older than the last midnight (UTC), so none deleted, whatever the retention
        assert cleanup.today[upkeep.COMMITS] == commits
        assert cleanup.today[upkeep.CHECKPOINTS] == checkpoints
    # the aged log before the next checkpoint, all of it: commits, staged commits, checkpoints
    for kind in (upkeep.COMMITS, upkeep.STAGED, upkeep.CHECKPOINTS):
        assert cleanup.deleted[kind] == cleanup.today[kind] != [], kind
    next_checkpoint = last_today + INTERVAL - last_today % INTERVAL
    assert cleanup.after[upkeep.COMMITS] == list(range(next_checkpoint, last_today + INTERVAL + 1))
    assert cleanup.rows == cleanup.rows_appended == (BEFORE + INTERVAL) * 10
    assert cleanup.time_travel["error_class"] == "DELTA_VERSION_NOT_FOUND"
    assert cleanup.latest_version == last_today + INTERVAL


@pytest.mark.spark
def test_vacuum_on_a_table_named_managed_is_refused_by_delta_s_own_check(measured):
    _, record = measured
    managed = record.managed
    blocked = "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION"
    assert managed.table_type == "MANAGED"
    assert managed.append["outcome"] == maintenance.RAN
    assert (managed.vacuum["outcome"], managed.vacuum["error_class"]) == (
        maintenance.REFUSED,
        blocked,
    )
    assert "VACUUM" in managed.vacuum["error"]
    assert (managed.vacuum["log_added"], managed.vacuum["log_removed"]) == ([], [])
    assert managed.optimize["error_class"] == blocked
    assert managed.created["error_class"] == "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_CREATION"
