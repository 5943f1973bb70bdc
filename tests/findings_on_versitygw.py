"""The findings that need the real S3 server versitygw, run by ``make probe-versitygw`` (CI runs it)
once ``make versitygw`` has built it. ``make test`` leaves this file out (its name does not start
with ``test_``): without Go the workbook runs on moto alone, and these need the binary.

Like tests/test_findings.py, each test runs a standalone ``findings/<name>/repro.py`` and asserts
exit 1 (the bug present), so a versitygw or deltalake release that fixes it fails here."""

from __future__ import annotations

import subprocess
import sys

from helpers.ground import config, eras
from helpers.stores import versitygw
from tests.test_findings import _assert_still_reproduces, _reproduce
from tests.test_probe import _verdicts


def _binary() -> str:
    assert versitygw.built(), (
        f"versitygw {versitygw.VERSION} is not built: run `make versitygw` first"
    )
    return str(versitygw.BINARY)


def test_versitygw_still_copies_an_object_whose_current_version_is_a_delete_marker(tmp_path):
    done = _reproduce(
        "versitygw-copies-a-deleted-object",
        eras.python_for(eras.CURRENT),
        tmp_path,
        "--versitygw",
        _binary(),
    )
    assert done.stdout.startswith(f"versitygw {versitygw.VERSION},"), done.stdout + done.stderr
    _assert_still_reproduces(done, f"versitygw {versitygw.VERSION} copying a deleted object")
    assert "CopyObject of staged.tmp -> 200 copied-1 holds b'hello staged'" in done.stdout, (
        done.stdout
    )
    assert "UploadPartCopy of staged.tmp -> 404 NoSuchKey" in done.stdout, (
        "unversioned buckets refuse the copy"
    )


def test_on_versitygw_deltalake_1_5_commits_an_append_twice_after_a_refused_copy(tmp_path):
    interop = eras.era(eras.DYNAMODB_INTEROP)
    done = _reproduce(
        "deltalake-dynamodb-reclaim-after-a-refused-copy",
        eras.python_for(eras.DYNAMODB_INTEROP),
        tmp_path,
        "--moto-python",
        str(eras.python_for(eras.CURRENT)),
        "--scenario",
        "duplicate",
        "--s3",
        "versitygw",
        "--versitygw",
        _binary(),
    )
    assert f"deltalake {interop.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done, f"an append committed twice on versitygw (deltalake {interop.deltalake_version})"
    )
    assert (
        "A's append, acknowledged once (committed), is committed 2 times (versions [1, 2])"
        in done.stdout
    ), done.stdout


def test_the_probe_warns_that_versitygw_copies_a_deleted_object():
    """The store probe against a versitygw of its own: the copy of a deleted object is answered (a
    hazard for delta-rs's DynamoDB log store, not for Delta's default writers: exit 0)."""
    _binary()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "helpers.stores.versitygw",
            "run",
            "--",
            sys.executable,
            "-m",
            "helpers.probe",
            "--writers",
            "4",
            "--rounds",
            "2",
            "--no-delta",
        ],
        cwd=config.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = _verdicts(done.stdout)
    assert verdicts["a copy of a deleted object is refused"] == "fail", done.stdout
    assert (
        "CopyObject: 200 (copied the deleted bytes); UploadPartCopy: 200 (copied the deleted bytes)"
        in done.stdout
    )
    assert (
        "Beware, though Delta's default writers do not rely on it: CopyObject If-None-Match: *, 4 writers; "
        "a copy of a deleted object is refused (its row says who does)."
    ) in done.stdout, done.stdout
