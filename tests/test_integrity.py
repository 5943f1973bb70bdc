"""The auditor on damaged tables: each problem named by file and version, a non-zero exit, no crash.

Each test damages a local table made with the kernel's deltalake the way a user's table gets
damaged (a data file deleted, a commit file edited, a stray file, a missing commit, a broken
checkpoint) and checks what ``helpers.delta.integrity``, ``audit.audit_table`` and
``python -m helpers.runs.audit`` say.
"""

import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from helpers.delta import delta_log, integrity
from helpers.ground import config
from helpers.runs import audit


def _table(path, appends=3, checkpoint_at=None):
    for n in range(appends):
        write_deltalake(
            str(path),
            pa.table({"id": pa.array(range(10 * n, 10 * n + 10), pa.int64())}),
            mode="append",
        )
        if checkpoint_at == n:
            DeltaTable(str(path)).create_checkpoint()
    return path


def _live_file(path, version):
    _, adds, _ = delta_log.read_commit((path / delta_log.commit_file(version)).read_bytes())
    return adds[0]["path"]


def _kinds(check):
    return [(p.kind, p.file, p.version) for p in check.problems]


def test_a_sound_table_passes_with_its_row_count(tmp_path, capsys):
    table = _table(tmp_path / "t")
    check = integrity.check_table(str(table))
    assert (check.ok, check.commit_versions, check.rows, len(check.live_files)) == (
        True,
        [0, 1, 2],
        30,
        3,
    )
    assert audit.main([str(table)]) == 0
    assert "No problems." in capsys.readouterr().out


def test_a_deleted_data_file_is_named_with_the_version_that_added_it(tmp_path, capsys):
    table = _table(tmp_path / "t")
    victim = _live_file(table, 1)
    (table / victim).unlink()
    check = integrity.check_table(str(table))
    assert _kinds(check) == [("missing data file", victim, 1)]
    with pytest.raises(audit.AuditError, match=f"missing data file: {victim} \\(version 1\\)"):
        audit.audit_table(str(table))
    assert audit.main([str(table)]) == 1
    assert f"- missing data file: {victim} (version 1)" in capsys.readouterr().out


def test_a_malformed_commit_names_its_file_and_line(tmp_path):
    table = _table(tmp_path / "t")
    lines = len((table / delta_log.commit_file(2)).read_text().splitlines())
    with open(table / delta_log.commit_file(2), "ab") as commit:
        commit.write(b'\n{"add": {"path": "x.parquet"\n["not", "an action"]\n')
    (table / delta_log.commit_file(1)).write_bytes(b"")
    check = integrity.check_table(str(table))
    problems = [str(p) for p in check.problems]
    assert [p.kind for p in check.problems] == ["malformed commit"] * 3
    assert (
        problems[0]
        == f"malformed commit: {delta_log.commit_file(1)} (version 1): the file is empty"
    )
    assert (
        f"line {lines + 1} is not JSON" in problems[1]
        and f"line {lines + 2} is not one Delta action" in problems[2]
    )
    assert audit.main([str(table)]) == 1


def test_stray_files_in_the_log_are_named_and_known_ones_are_not(tmp_path):
    table = _table(tmp_path / "t")
    (table / "_delta_log" / "3.json").write_text("{}")
    (table / "_delta_log" / "notes.txt").write_text("hello")
    (table / "_delta_log" / "00000000000000000002.crc").write_text("{}")
    (table / "_delta_log" / "_last_vacuum_info").write_text("{}")  # Delta Spark's, after a VACUUM
    (table / "_delta_log" / "_commit_0b6f5a36-1c2d-4e5f-8a9b-0c1d2e3f4a5b.json.tmp").write_text(
        "{}"
    )
    (
        table / "_delta_log" / ".00000000000000000001.crc.90f14241-7f76-4229-ab55-e75e9f38d16c.tmp"
    ).write_text("{}")
    check = integrity.check_table(str(table))
    assert _kinds(check) == [
        ("stray file", "_delta_log/3.json", None),
        ("stray file", "_delta_log/notes.txt", None),
    ]
    assert "exactly 20 digits" in check.problems[0].detail
    assert check.staged_leftovers == [
        "_delta_log/.00000000000000000001.crc.90f14241-7f76-4229-ab55-e75e9f38d16c.tmp",
        "_delta_log/_commit_0b6f5a36-1c2d-4e5f-8a9b-0c1d2e3f4a5b.json.tmp",
    ]
    assert audit.main([str(table)]) == 1  # reported, and the exit says so
    assert (
        audit.audit_table(str(table)).rows_actual == 30
    )  # readers skip stray files: the audit goes on


def test_a_gap_in_versions_is_reported_by_the_auditor_not_by_a_kernel_error(tmp_path):
    table = _table(tmp_path / "t", appends=5)
    for version in (1, 2):
        (table / delta_log.commit_file(version)).unlink()
    check = integrity.check_table(str(table))
    assert _kinds(check)[0] == ("version gap", delta_log.commit_file(1), 1)
    assert "versions 1-2 are missing" in check.problems[0].detail
    with pytest.raises(audit.AuditError, match="version gap"):
        audit.audit_table(str(table))


def test_a_log_that_starts_late_needs_a_checkpoint(tmp_path):
    table = _table(tmp_path / "t")
    (table / delta_log.commit_file(0)).unlink()
    assert [p.kind for p in integrity.check_table(str(table)).problems] == ["no starting point"]

    cleaned = _table(
        tmp_path / "cleaned", appends=4, checkpoint_at=2
    )  # checkpoint at version 2, then log cleanup
    for version in (0, 1):
        (cleaned / delta_log.commit_file(version)).unlink()
    check = integrity.check_table(str(cleaned))
    assert (check.ok, check.start, check.rows) == (True, 2, 40)


def test_a_file_removed_by_two_commits_is_named_and_the_rows_it_doubled_are_still_read(
    tmp_path, capsys
):
    """What two concurrent OPTIMIZEs leave when both commit: the second commit removes the files
    the first already removed and adds its own compacted copy of their rows."""
    table = _table(tmp_path / "t")
    DeltaTable(str(table)).optimize.compact()  # version 3: removes the three files, adds one
    first = (table / delta_log.commit_file(3)).read_text()
    _, (compacted,), removed = delta_log.read_commit(first.encode())
    (table / f"again-{compacted['path']}").write_bytes((table / compacted["path"]).read_bytes())
    (table / delta_log.commit_file(4)).write_text(
        first.replace(compacted["path"], f"again-{compacted['path']}")
    )
    check = integrity.check_table(str(table))
    assert _kinds(check) == [
        ("removed twice", r["path"], 4) for r in sorted(removed, key=lambda r: r["path"])
    ]
    assert "version 3 already removed it" in check.problems[0].detail
    assert (check.blocking, check.rows) == ([], 60)
    assert audit.main([str(table)]) == 1
    assert "3 problem(s)" in capsys.readouterr().out


def test_an_unreadable_checkpoint_is_named(tmp_path):
    table = _table(tmp_path / "t", checkpoint_at=1)
    (checkpoint,) = (table / "_delta_log").glob("*.checkpoint.parquet")
    checkpoint.write_bytes(b"not parquet at all")
    check = integrity.check_table(str(table))
    assert [(p.kind, p.version) for p in check.problems] == [("unreadable checkpoint", 1)]
    assert check.problems[0].file == f"_delta_log/{checkpoint.name}"
    assert audit.main([str(table)]) == 1

    checkpoint.unlink()  # now _last_checkpoint points at nothing
    assert [str(p) for p in integrity.check_table(str(table)).problems] == [
        "unreadable checkpoint: _delta_log/_last_checkpoint (version 1): it points at version 1, which has no checkpoint file"
    ]


def test_the_command_line_exits_2_on_what_it_cannot_read_and_never_shows_a_traceback(tmp_path):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "helpers.runs.audit", *args],
            cwd=config.ROOT,
            capture_output=True,
            text=True,
        )

    unknown = run("ftp://somewhere/t")
    empty = run(str(tmp_path / "nothing"))
    damaged = _table(tmp_path / "t")
    (damaged / delta_log.commit_file(1)).write_text("{oops\n")
    broken = run(str(damaged))
    assert (unknown.returncode, empty.returncode, broken.returncode) == (2, 2, 1)
    assert "Unknown scheme 'ftp'" in unknown.stderr and "no commit files" in empty.stderr
    assert (
        "malformed commit: _delta_log/00000000000000000001.json (version 1): line 1 is not JSON"
        in broken.stdout
    )
    assert all("Traceback" not in done.stdout + done.stderr for done in (unknown, empty, broken))
