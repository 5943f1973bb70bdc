"""findings/: each upstream reproducer still reproduces with the versions the workbook pins.

Every ``findings/<name>/repro.py`` exits 1 while its library bug is present and 0 once it is
fixed (2: it could not run, 3: not applicable to that release). Each test runs one script with
the interpreter of the era whose version its report names and asserts exit 1, so a lock-file bump
to a release that fixes the bug fails here, and findings/README.md, the REPORT.md beside the
script and the notebooks' text that rely on the bug are then due for an update.

The scripts stand alone (no ``helpers`` import): they are run as an upstream maintainer would run
them, from a temporary folder, with no AWS variable of the machine running the tests in their environment. Each
takes a few seconds; the timeouts are generous for a loaded machine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import config, eras

FINDINGS = config.ROOT / "findings"
TIMEOUT = 300
"""Seconds per script at most: each takes 2-10 s on a quiet 2-core machine, the moto race up to
about 60 s if it needs all of its 400 rounds per service."""


def _reproduce(finding: str, python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ``findings/<finding>/repro.py`` with ``python``; its exit code and output."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    return subprocess.run([str(python), str(FINDINGS / finding / "repro.py"), *args],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd, env=env)


def _assert_still_reproduces(done: subprocess.CompletedProcess, what: str) -> None:
    output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-2000:]}"
    assert done.returncode != 0, f"{what} no longer reproduces: update findings/README.md and its REPORT.md.\n{output}"
    assert done.returncode == 1, f"the reproducer of {what} could not run (exit {done.returncode}).\n{output}"
    assert "BUG PRESENT" in done.stdout, output


def test_two_optimizes_from_one_snapshot_still_both_commit(tmp_path):
    current = eras.era(eras.CURRENT)
    done = _reproduce("deltalake-two-optimizes-both-commit", eras.python_for(eras.CURRENT), tmp_path)
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(done, f"two OPTIMIZEs from one snapshot both committing (deltalake {current.deltalake_version})")
    assert "120 rows (expected 60)" in done.stdout, done.stdout


def test_dynamodb_log_store_still_stuck_on_a_commit_copied_but_not_completed(tmp_path):
    interop = eras.era(eras.DYNAMODB_INTEROP)
    done = _reproduce("deltalake-dynamodb-repair-already-exists", eras.python_for(eras.DYNAMODB_INTEROP), tmp_path,
                      "--moto-python", str(eras.python_for(eras.CURRENT)))
    assert f"deltalake {interop.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(done, f"the DynamoDB log store's stuck repair (deltalake {interop.deltalake_version})")
    assert done.stdout.count("already exists.") >= 4, "three opens and an append fail the same way"


def test_moto_conditional_writes_still_let_two_writers_win(tmp_path):
    done = _reproduce("moto-conditional-writes-not-atomic", eras.python_for(eras.CURRENT), tmp_path)
    _assert_still_reproduces(done, "moto's non-atomic conditional writes")


AZURITE_BLOB = config.ROOT / "node_modules" / ".bin" / "azurite-blob"


@pytest.mark.parametrize("store", ["azure", "s3"])
def test_an_append_whose_commit_answer_is_lost_is_still_committed_twice(tmp_path, store):
    """A relay lets the commit's conditional write reach the store and drops its answer: the HTTP
    client resends it, the store refuses, and deltalake commits the append again at version 2."""
    current = eras.era(eras.CURRENT)
    args = ("--azurite", str(AZURITE_BLOB)) if store == "azure" else ("--store", "s3")
    done = _reproduce("deltalake-lost-commit-response-commits-twice", eras.python_for(eras.CURRENT), tmp_path, *args)
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(done, f"an append committed twice after its commit answer was lost ({store}, deltalake {current.deltalake_version})")
    assert "told the writer: success" in done.stdout and "is added by version(s) [1, 2]" in done.stdout, done.stdout
    assert ("-> 409" if store == "azure" else "-> 412") in done.stdout, done.stdout


def test_the_oldest_era_reads_the_twice_committed_append_twice(tmp_path):
    """deltalake 0.14.0 (the seeds' lock era) has the same retry, and its reader counts the
    appended file once per commit: 7 rows where 4 were written."""
    done = _reproduce("deltalake-lost-commit-response-commits-twice", eras.python_for(eras.OLD_LOCK), tmp_path,
                      "--azurite", str(AZURITE_BLOB))
    assert "deltalake 0.14.0," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(done, "an append committed twice after its commit answer was lost (deltalake 0.14.0)")
    assert "reads 7 rows at version 2; 4 were written" in done.stdout, done.stdout


def _assert_not_reproduced(done: subprocess.CompletedProcess, what: str) -> None:
    output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-2000:]}"
    assert done.returncode == 0, f"{what}: expected exit 0 (not affected), got {done.returncode}.\n{output}"
    assert "BUG PRESENT" not in done.stdout, output


def test_the_double_optimize_is_bracketed_by_the_last_release_that_refuses_it(tmp_path):
    """deltalake 1.6.3, the last release before the regression (its own era), gives exit 0: the
    reproducer tells the two apart, so its exit 1 above is the bug and not the script."""
    done = _reproduce("deltalake-two-optimizes-both-commit", eras.python_for(eras.LAST_REFUSING_DOUBLE_OPTIMIZE), tmp_path)
    assert "deltalake 1.6.3," in done.stdout, done.stdout + done.stderr
    _assert_not_reproduced(done, "deltalake 1.6.3 refusing the second OPTIMIZE")


def test_the_stuck_repair_is_bracketed_by_the_seeds_era_that_repairs_it(tmp_path):
    """deltalake 0.22.3's DynamoDB log store finishes the same half-done commit: exit 0."""
    done = _reproduce("deltalake-dynamodb-repair-already-exists", eras.python_for(eras.SEEDS), tmp_path,
                      "--moto-python", str(eras.python_for(eras.CURRENT)))
    assert "deltalake 0.22.3," in done.stdout, done.stdout + done.stderr
    _assert_not_reproduced(done, "deltalake 0.22.3 repairing the half-done commit")


def test_an_overwrite_after_a_concurrent_optimize_still_keeps_the_rows_it_replaced(tmp_path):
    current = eras.era(eras.CURRENT)
    done = _reproduce("deltalake-overwrite-after-optimize-keeps-rows", eras.python_for(eras.CURRENT), tmp_path)
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(done, f"an overwrite after a concurrent OPTIMIZE keeping the old rows (deltalake {current.deltalake_version})")
    assert "63 rows (any serial order leaves 3)" in done.stdout, done.stdout
    bracket = _reproduce("deltalake-overwrite-after-optimize-keeps-rows", eras.python_for(eras.LAST_REFUSING_DOUBLE_OPTIMIZE), tmp_path)
    _assert_not_reproduced(bracket, "deltalake 1.6.3 refusing the overwrite")


def test_every_finding_is_listed_in_both_tables():
    """README's Findings table and findings/README.md name every finding folder (and nothing else)."""
    import re

    folders = {p.name for p in FINDINGS.iterdir() if (p / "repro.py").is_file()}
    assert all((FINDINGS / name / "REPORT.md").is_file() for name in folders)
    for table, prefix in ((config.ROOT / "README.md", "findings/"), (FINDINGS / "README.md", "")):
        linked = set(re.findall(rf"\]\({re.escape(prefix)}([\w.-]+)/(?:REPORT\.md|repro\.py)\)", table.read_text()))
        assert linked == folders, f"{table.name}: {sorted(linked ^ folders)}"
