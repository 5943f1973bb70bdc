"""helpers.catalog: the Unity Catalog server's build and start, its REST calls, and the checks of a
catalog-managed table read from storage and the catalog (notebook 15 runs Delta Spark through it).

The server is the real one (``make uc-server``; ``make test`` builds it first). The tables here are
written by hand, as a Delta writer writes them (version 0, staged commits, published copies), so
that each check can be shown failing on a crafted break without starting Spark.
"""

from __future__ import annotations

import json
import shutil
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers.catalog import maintenance, race, rest, server, server_build, tables
from helpers.delta import delta_log
from helpers.ground import config

COLUMNS = {
    "type": "struct",
    "fields": [
        {"name": name, "type": kind, "nullable": True, "metadata": {}}
        for name, kind in (("id", "long"), ("writer", "string"), ("batch", "integer"))
    ],
}
FEATURES = ["catalogManaged", "v2Checkpoint", "vacuumProtocolCheck"]


# ---------------------------------------------------------------------------------------------
# The server: built and started by the project's files, on loopback, failing with its cause
# ---------------------------------------------------------------------------------------------


def test_the_configuration_binds_loopback_and_allows_only_the_runs_tables(tmp_path):
    settings = json.loads(server.config_text(tmp_path))
    assert settings["host"] == "127.0.0.1"
    assert settings["local_storage"]["allowed-roots"] == [str((tmp_path / "tables").resolve())]
    assert settings["managed_storage_root"] == (tmp_path / "tables").resolve().as_uri()
    assert settings["backend"] == {"engine": "sqlite", "path": ":memory:"}


def test_without_rust_or_with_an_old_one_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setattr(server_build, "cargo_version", lambda: None)
    assert (
        "rustup.rs" in server_build.check_cargo() and "make uc-server" in server_build.check_cargo()
    )
    monkeypatch.setattr(server_build, "cargo_version", lambda: (1, 80))
    assert "Rust 1.80" in server_build.check_cargo() and "1.95" in server_build.check_cargo()
    monkeypatch.setattr(server_build, "cargo_version", lambda: (1, 95))
    assert server_build.check_cargo() is None


def test_the_build_runs_on_the_standard_library_alone():
    """`make uc-server` runs the build with the machine's Python (no site-packages), so that a cold
    machine starts compiling before the workbook's environment exists: its modules import only the
    standard library. Shown failing: the same check finds pyarrow missing."""
    import subprocess
    import sys

    def imports(module: str) -> subprocess.CompletedProcess:
        code = f"import sys; sys.path.insert(0, {str(config.ROOT)!r}); import {module}"
        return subprocess.run(
            [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=False
        )

    for module in ("helpers.catalog.server", "helpers.catalog.server_build"):
        assert imports(module).returncode == 0, imports(module).stderr
    assert "No module named 'pyarrow'" in imports("pyarrow").stderr


def test_a_server_not_built_is_refused_with_the_command_that_builds_it(monkeypatch, tmp_path):
    monkeypatch.setattr(server_build, "BINARY", tmp_path / "no-such-uc-server")
    monkeypatch.setattr(server_build, "BUILD_LOG", tmp_path / "no-build.log")
    with pytest.raises(server.UCServerError, match="make uc-server"):
        server.start(tmp_path)


def test_make_test_starts_the_build_in_the_background_only_when_it_is_needed(monkeypatch):
    """No Rust: refused at once with what to install; built already: nothing started."""
    monkeypatch.setattr(server_build, "check_cargo", lambda: "cargo is not on PATH: install Rust")
    with pytest.raises(server.UCServerError, match="install Rust"):
        server_build.build_in_background()
    monkeypatch.setattr(server_build, "check_cargo", lambda: None)
    monkeypatch.setattr(server_build, "built", lambda: True)
    assert server_build.build_in_background().endswith(
        f"built already ({config.shown(server_build.BINARY)})"
    )


def test_a_failed_background_build_is_named_with_the_end_of_its_log(monkeypatch, tmp_path):
    """make test builds the server in the background: a notebook that needs it says why it is missing."""
    monkeypatch.setattr(server_build, "BINARY", tmp_path / "no-such-uc-server")
    monkeypatch.setattr(server_build, "BUILD_LOG", tmp_path / "build.log")
    (tmp_path / "build.log").write_text("Building ...\nerror: linker `cc` not found\n")
    with pytest.raises(server.UCServerError, match=r"make uc-server(.|\n)*linker `cc` not found"):
        server.start(tmp_path)


def test_a_server_that_dies_at_start_is_reported_with_its_log(monkeypatch, tmp_path):
    fake = tmp_path / "bin" / "uc-server"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'cannot start: reason' >&2\nexit 3\n")
    fake.chmod(0o755)
    stamp = tmp_path / "bin" / "uc-server.version"
    stamp.write_text(server_build.stamp_text())
    monkeypatch.setattr(server_build, "BINARY", fake)
    monkeypatch.setattr(server_build, "STAMP", stamp)
    with pytest.raises(server.UCServerError, match=r"exit code 3.*uc-server\.log"):
        server.start(tmp_path / "run")
    assert "cannot start: reason" in (tmp_path / "run" / "uc-server.log").read_text()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    """A real server of this module's own, and its REST client."""
    if not server_build.ready():
        pytest.fail(
            f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
        )
    with server.start(tmp_path_factory.mktemp("uc")) as running:
        yield rest.UnityCatalog(running.uri)


# ---------------------------------------------------------------------------------------------
# A catalog-managed table written by hand, as a Delta writer writes one
# ---------------------------------------------------------------------------------------------


class HandWritten:
    """Version 0 at the catalog's staged location, then commits staged, ratified and published."""

    def __init__(self, catalog: rest.UnityCatalog, name: str) -> None:
        self.catalog, self.name = catalog, name
        catalog.create_schema(tables.CATALOG, tables.SCHEMA)
        self.staged = catalog.stage(tables.CATALOG, tables.SCHEMA, name)
        self.folder = tables.local_path(self.staged.location)
        (self.folder / "_delta_log" / "_staged_commits").mkdir(parents=True)
        properties = {
            key: value
            for key, value in self.staged.required_properties.items()
            if value is not None
        }
        zero = [
            {
                "commitInfo": {
                    "inCommitTimestamp": 1_700_000_000_000,
                    "timestamp": 1_700_000_000_000,
                }
            },
            {
                "metaData": {
                    "id": str(uuid.uuid4()),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(COLUMNS),
                    "partitionColumns": [],
                    "configuration": properties,
                }
            },
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": FEATURES,
                    "writerFeatures": FEATURES + ["inCommitTimestamp"],
                }
            },
        ]
        (self.folder / delta_log.commit_file(0)).write_text("\n".join(map(json.dumps, zero)) + "\n")
        catalog.register(tables.CATALOG, tables.SCHEMA, self.staged, zero)

    def stage(self, version: int, writer: str, batch: int, rows: int = 10) -> str:
        """A data file of ``rows`` rows and a staged commit adding it; returns the staged file's name."""
        data = f"part-{version}-{writer}-{batch}.parquet"
        pq.write_table(
            pa.table({"id": list(range(rows)), "writer": [writer] * rows, "batch": [batch] * rows}),
            self.folder / data,
        )
        name = f"{version:020d}.{uuid.uuid4()}.json"
        actions = [
            {
                "commitInfo": {
                    "readVersion": version - 1,
                    "inCommitTimestamp": 1_700_000_000_000 + version,
                }
            },
            {
                "add": {
                    "path": data,
                    "size": 1,
                    "modificationTime": 1,
                    "dataChange": True,
                    "partitionValues": {},
                }
            },
        ]
        (self.folder / race.STAGED_DIR / name).write_text(
            "\n".join(map(json.dumps, actions)) + "\n"
        )
        return name

    def ratify(self, version: int, name: str) -> dict:
        """Ratify ``name`` as ``version``, reporting the versions before it published, as Delta does."""
        return self.catalog.ratify(
            tables.CATALOG,
            tables.SCHEMA,
            self.name,
            self.staged.table_id,
            version,
            name,
            1,
            1,
            published=version - 1,
        )

    def publish(self, version: int, name: str) -> None:
        shutil.copyfile(
            self.folder / race.STAGED_DIR / name, self.folder / delta_log.commit_file(version)
        )

    def commit(self, version: int, writer: str, batch: int) -> str:
        name = self.stage(version, writer, batch)
        self.ratify(version, name)
        self.publish(version, name)
        return name


def test_the_catalog_gives_each_version_once_and_no_gap(catalog):
    table = HandWritten(catalog, "once")
    first, second = table.stage(1, "w1", 11), table.stage(1, "w2", 21)
    assert table.ratify(1, first)["latest-table-version"] == 1
    with pytest.raises(rest.CatalogError) as taken:
        table.ratify(1, second)
    assert taken.value.status == 409 and "already accepted" in str(taken.value)
    with pytest.raises(rest.CatalogError) as gap:
        catalog.ratify(
            tables.CATALOG,
            tables.SCHEMA,
            "once",
            table.staged.table_id,
            3,
            table.stage(3, "w2", 22),
            1,
            1,
        )
    assert gap.value.status == 400 and "must be the next version after 1" in str(gap.value)
    assert catalog.table(tables.CATALOG, tables.SCHEMA, "once").latest_version == 1


def test_the_catalog_holds_at_most_ten_commits_not_reported_published(catalog):
    table = HandWritten(catalog, "unreported")
    for version in range(1, 11):  # ratified, never reported published
        catalog.ratify(
            tables.CATALOG,
            tables.SCHEMA,
            "unreported",
            table.staged.table_id,
            version,
            table.stage(version, "w1", version),
            1,
            1,
        )
    with pytest.raises(rest.CatalogError) as full:
        catalog.ratify(
            tables.CATALOG,
            tables.SCHEMA,
            "unreported",
            table.staged.table_id,
            11,
            table.stage(11, "w1", 11),
            1,
            1,
        )
    assert full.value.status == 429
    table.ratify(
        11, table.stage(11, "w1", 12)
    )  # with the report Delta sends with each commit, it is accepted
    assert catalog.table(tables.CATALOG, tables.SCHEMA, "unreported").latest_version == 11


def test_a_sound_table_with_a_loser_and_an_unpublished_commit_has_no_problem(catalog):
    table = HandWritten(catalog, "sound")
    table.commit(1, "w1", 11)
    loser = table.stage(2, "w2", 21)
    won = table.commit(2, "w1", 12)
    table.commit(3, "w2", 21)
    last = table.stage(4, "w2", 22)
    table.ratify(4, last)  # ratified, not published yet
    check = race.check_table(
        catalog, "sound", {("w1", 11): 10, ("w1", 12): 10, ("w2", 21): 10, ("w2", 22): 10}
    )
    assert check.problems == []
    assert (check.versions, check.published, check.unpublished) == (
        [0, 1, 2, 3, 4],
        [0, 1, 2, 3],
        [4],
    )
    assert [c["version"] for c in check.catalog.unpublished] == [
        4
    ]  # the catalog forgets what Delta reported published
    assert check.losers == [loser] and check.ratified[2] == won and check.ratified[4] == last
    assert check.retried == []  # every readVersion is the version before


def test_a_published_commit_that_is_no_staged_one_is_found(catalog):
    table = HandWritten(catalog, "forged")
    table.commit(1, "w1", 11)
    (table.folder / delta_log.commit_file(1)).write_text('{"commitInfo":{"readVersion":0}}\n')
    problems = race.check_table(catalog, "forged").problems
    assert any(
        "version 1: the published commit matches 0 of its 1 staged commits" in p for p in problems
    ), problems


def test_a_ratified_commit_storage_lacks_is_found(catalog):
    table = HandWritten(catalog, "missing")
    table.commit(1, "w1", 11)
    table.ratify(2, "00000000000000000002.00000000-0000-0000-0000-000000000000.json")
    problems = race.check_table(catalog, "missing").problems
    assert any("which storage does not have" in p for p in problems), problems
    assert any("the catalog's latest version is 2, storage's 1" in p for p in problems), problems


def test_a_gap_in_the_published_versions_is_found(catalog):
    table = HandWritten(catalog, "gap")
    for version, batch in ((1, 11), (2, 12), (3, 13)):
        table.commit(version, "w1", batch)
    (table.folder / delta_log.commit_file(2)).unlink()
    problems = race.check_table(catalog, "gap").problems
    assert any("without a gap" in p for p in problems), problems


def test_a_batch_missing_or_doubled_is_found_for_the_writers_raced_only(catalog):
    table = HandWritten(catalog, "rows")
    table.commit(1, "w1", 11)
    table.commit(2, "notebook", 1)  # a writer the race does not name: not judged
    check = race.check_table(catalog, "rows", {("w1", 11): 10, ("w1", 12): 10})
    assert check.problems == ["batch 12 of w1: 0 rows in the table, 10 appended"]
    table.commit(3, "w1", 11)  # the same batch's rows again, in a file of their own
    assert race.check_table(catalog, "rows", {("w1", 11): 10}).problems == [
        "batch 11 of w1: 20 rows in the table, 10 appended"
    ]


# ---------------------------------------------------------------------------------------------
# Creation reads what the server requires; version 0 is checked against it
# ---------------------------------------------------------------------------------------------


def test_the_server_says_what_version_zero_must_declare_and_the_workbook_reads_it(catalog):
    staged = catalog.stage(tables.CATALOG, tables.SCHEMA, "required")
    properties = staged.table_properties()
    assert properties["delta.feature.catalogManaged"] == "supported"
    assert properties[tables.TABLE_ID_PROPERTY] == staged.table_id
    assert None not in properties.values()  # a property the server leaves to Delta is not passed
    # the hand-kept list other code builds tables from asks for nothing the server does not
    assert tables.TABLE_PROPERTIES.items() <= properties.items()


def test_version_zero_without_a_required_feature_or_property_is_found(catalog):
    table = HandWritten(catalog, "declares")
    zero = tables.version_zero(table.staged.location)
    assert tables.undeclared(table.staged, zero) == {}
    for action in zero:  # the crafted break: one property and one feature left out
        if "metaData" in action:
            del action["metaData"]["configuration"]["delta.checkpointPolicy"]
        if "protocol" in action:
            for kind in ("readerFeatures", "writerFeatures"):
                action["protocol"][kind] = [
                    f for f in action["protocol"][kind] if f != "v2Checkpoint"
                ]
    assert set(tables.undeclared(table.staged, zero)) == {
        "delta.checkpointPolicy",
        "delta.feature.v2Checkpoint",
    }


# ---------------------------------------------------------------------------------------------
# Maintenance: each outcome read from what was raised and from storage
# ---------------------------------------------------------------------------------------------


class RefusingSession:
    """What notebook 15's driver meets from Python when Delta refuses an operation: ``sql`` raises
    Delta's error; ``writes`` first leaves a file under ``_delta_log/`` (the crafted break)."""

    def __init__(self, folder, writes: bool) -> None:
        self.folder, self.writes = folder, writes

    def sql(self, statement: str):
        if self.writes:
            (self.folder / "_delta_log" / "00000000000000000009.json").write_text("{}\n")
        raise RuntimeError(
            "[DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION] OPTIMIZE is blocked by the catalog"
        )


def test_a_refused_operation_is_recorded_with_its_error_and_what_it_left_in_the_log(catalog):
    table = HandWritten(catalog, "maintained")
    table.commit(1, "w1", 11)
    table.commit(2, "w2", 21)
    location = table.staged.location
    clean = maintenance.attempt(
        RefusingSession(table.folder, writes=False),
        "OPTIMIZE",
        "maintained",
        location,
        lambda: None,
    )
    assert clean["outcome"] == maintenance.REFUSED
    assert clean["error_class"] == "DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION"
    assert (clean["log_added"], clean["log_removed"], clean["files_before"]) == ([], [], 2)
    wrote = maintenance.attempt(
        RefusingSession(table.folder, writes=True), "OPTIMIZE", "maintained", location, lambda: None
    )
    assert wrote["outcome"] == maintenance.REFUSED
    assert wrote["log_added"] == ["00000000000000000009.json"]


def test_a_commit_is_read_back_with_its_files_and_data_change_flag(catalog):
    table = HandWritten(catalog, "read-back")
    table.commit(1, "w1", 11)
    assert maintenance.live_files(table.staged.location) == ["part-1-w1-11.parquet"]
    assert maintenance.commit_of(table.staged.location, 1)["data_change"] == [True]
    assert tables.published_versions(table.staged.location) == [0, 1]


def test_an_error_class_is_found_in_the_message():
    assert maintenance.error_of(RuntimeError("[DELTA_X_Y] blocked\nmore"))[0] == "DELTA_X_Y"
    assert maintenance.error_of(RuntimeError("no class here: at all")) == (
        "no class here",
        "no class here: at all",
    )


def test_the_session_settings_name_the_extension_and_the_testing_flag_only_to_create():
    writer, creator = (
        tables.session_conf("http://127.0.0.1:1"),
        tables.session_conf("http://127.0.0.1:1", creates_tables=True),
    )
    assert writer["spark.sql.extensions"].split(",") == [
        "io.delta.sql.DeltaSparkSessionExtension",
        tables.EXTENSION,
    ]
    assert writer[tables.URI_KEY] == "http://127.0.0.1:1"
    assert tables.TESTING_FLAG not in writer["spark.driver.extraJavaOptions"]
    assert tables.TESTING_FLAG in creator["spark.driver.extraJavaOptions"]


# ---------------------------------------------------------------------------------------------
# Notebook 15's settings to copy are the ones its drivers run
# ---------------------------------------------------------------------------------------------


def copy_cell_problems(source: str) -> list[str]:
    """What the copy cell of notebook 15 (``def catalog_managed_session``) says differently from the
    session the drivers run (:func:`helpers.catalog.tables.session_conf`, ``spark_conf``'s catalog and
    Delta package) and from their append (``writeTo("default.<table>").append()``)."""
    import ast

    from helpers.spark import sessions

    tree = ast.parse(source)
    problems = [
        f"imports {node.module}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers")
    ]
    settings = {
        node.args[0].value: node.args[1].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "config"
        and len(node.args) == 2
        and all(isinstance(a, ast.Constant) for a in node.args)
    }
    runs = {**sessions.spark_conf("local"), **tables.session_conf("http://127.0.0.1:1")}
    for key in ("spark.sql.extensions", "spark.sql.catalog.spark_catalog", "spark.jars.packages"):
        if settings.get(key) != runs[key]:
            problems.append(
                f"{key}: the cell says {settings.get(key)!r}, the drivers run {runs[key]!r}"
            )
    if tables.URI_KEY not in source:
        problems.append(f"the cell does not set {tables.URI_KEY}")
    if f'.writeTo("{tables.SCHEMA}.orders").append()' not in source:
        problems.append("the cell's append is not writeTo(<schema>.<table>).append()")
    return problems


def _copy_cell() -> str:
    from helpers.ground import config

    cells = json.loads((config.NOTEBOOKS_DIR / "15_catalog_managed_tables.ipynb").read_text())[
        "cells"
    ]
    return next(
        "".join(c["source"]) for c in cells if "def catalog_managed_session" in "".join(c["source"])
    )


def test_the_copy_cell_sets_what_the_drivers_run():
    assert copy_cell_problems(_copy_cell()) == []


def test_a_copy_cell_that_drifted_is_found():
    cell = _copy_cell()
    assert copy_cell_problems(cell.replace(",workbook.catalog.UnityCatalogCommits", "")) != []
    assert (
        copy_cell_problems(cell.replace('writeTo("default.orders").append()', 'save("/somewhere")'))
        != []
    )
    assert copy_cell_problems("from helpers import tables\n" + cell) != []
