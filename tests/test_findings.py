"""findings/: each upstream reproducer still reproduces with the versions the workbook pins.

Every ``findings/<name>/repro.py`` exits 1 while its library bug is present and 0 once it is
fixed (2: it could not run, 3: not applicable to that release). Each test runs one script with
the interpreter of the era whose version its report names and asserts exit 1, so a lock-file bump
to a release that fixes the bug fails here, and findings/README.md, the REPORT.md beside the
script and the notebooks' text that rely on the bug are then due for an update. Two runs live in
notebook 12 instead, which `make test` executes with the same checks: its appendix B runs the lost
commit answer on Azurite (this module runs it on S3), its appendix C the live repair.

The scripts stand alone (no ``helpers`` import): they are run as an upstream maintainer would run
them, from a temporary folder, with no AWS variable of the machine running the tests in their environment. Each
takes a few seconds; the timeouts are generous for a loaded machine.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from helpers.ground import config, eras

FINDINGS = config.ROOT / "findings"
TIMEOUT = 300
"""Seconds per script at most: each takes 2-10 s on a quiet 2-core machine, the moto race up to
about 60 s if it needs all of its 400 rounds per service."""


def _reproduce(finding: str, python: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """Run ``findings/<finding>/repro.py`` with ``python``; its exit code and output."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AWS_")}
    return subprocess.run(
        [str(python), str(FINDINGS / finding / "repro.py"), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
        env=env,
    )


def _assert_still_reproduces(done: subprocess.CompletedProcess, what: str) -> None:
    output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-2000:]}"
    assert done.returncode != 0, (
        f"{what} no longer reproduces: update findings/README.md and its REPORT.md.\n{output}"
    )
    assert done.returncode == 1, (
        f"the reproducer of {what} could not run (exit {done.returncode}).\n{output}"
    )
    assert "BUG PRESENT" in done.stdout, output


def test_operations_beside_an_optimize_still_commit_and_leave_rows_no_serial_order_leaves(tmp_path):
    """One reproducer, four operations made from the snapshot before a concurrent OPTIMIZE: a second
    compaction and a Z-order double the rows, an overwrite keeps the rows it replaced, and a DELETE
    of every row reports 60 deleted rows and deletes none."""
    current = eras.era(eras.CURRENT)
    done = _reproduce(
        "deltalake-two-optimizes-both-commit", eras.python_for(eras.CURRENT), tmp_path
    )
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done, f"operations beside an OPTIMIZE committing (deltalake {current.deltalake_version})"
    )
    for line in (
        "optimize.compact(): committed version 7, returned {'numFilesAdded': 1, 'numFilesRemoved': 6}; "
        "the table holds 120 rows (any serial order leaves 60)",
        "optimize.z_order(['row']): committed version 7",
        "write_deltalake(mode='overwrite'), 3 rows: committed version 7; the table holds 63 rows (any serial order leaves 3)",
        "delete() (no predicate): committed version 7, returned {'num_deleted_rows': 60}; "
        "the table holds 60 rows (any serial order leaves 0)",
        "BUG PRESENT: 4 of 4 operations",
    ):
        assert line in done.stdout, f"missing: {line}\n{done.stdout}"


def test_dynamodb_log_store_still_stuck_on_a_commit_copied_but_not_completed(tmp_path):
    interop = eras.era(eras.DYNAMODB_INTEROP)
    done = _reproduce(
        "deltalake-dynamodb-repair-already-exists",
        eras.python_for(eras.DYNAMODB_INTEROP),
        tmp_path,
        "--moto-python",
        str(eras.python_for(eras.CURRENT)),
    )
    assert f"deltalake {interop.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done, f"the DynamoDB log store's stuck repair (deltalake {interop.deltalake_version})"
    )
    assert done.stdout.count("already exists.") >= 4, "three opens and an append fail the same way"


def test_a_writer_whose_copy_was_refused_still_claims_a_version_it_never_writes(tmp_path):
    """deltalake 1.5.1, on plain moto: writer A's copy of its staged commit to 1.json is refused 4
    times while a reader's repair holds the staged file; A's commit loop then claims version 2 with
    the same staged file, which is gone by then: the copy answers 404, A marks item 2 complete
    without a 2.json, and every later append fails (measured by hand: 1.5.0 exits 0, 1.6.0 1)."""
    interop = eras.era(eras.DYNAMODB_INTEROP)
    done = _reproduce(
        "deltalake-dynamodb-reclaim-after-a-refused-copy",
        eras.python_for(eras.DYNAMODB_INTEROP),
        tmp_path,
        "--moto-python",
        str(eras.python_for(eras.CURRENT)),
    )
    assert f"deltalake {interop.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done, f"a claim without its commit file (deltalake {interop.deltalake_version})"
    )
    assert "2c. A's Complete was released: 4 refused copies (412)" in done.stdout, done.stdout
    assert "lock items for versions [2] are complete but have no commit file" in done.stdout, (
        done.stdout
    )
    assert "the next append fails (DeltaError: Invalid table version: 2)" in done.stdout, (
        done.stdout
    )


def test_moto_conditional_writes_still_let_two_writers_win(tmp_path):
    """Deterministic: the server holds each pair of writes between check and write until both are
    there, at Python's default switch interval, so every round has two winners."""
    done = _reproduce("moto-conditional-writes-not-atomic", eras.python_for(eras.CURRENT), tmp_path)
    _assert_still_reproduces(done, "moto's non-atomic conditional writes")
    assert "(switch interval 0.005 s)" in done.stdout, done.stdout
    assert (
        "server: 6 times two requests were held" in done.stdout
        and "in 6 of 6 rounds" in done.stdout
    ), done.stdout


AZURITE_BLOB = config.ROOT / "node_modules" / ".bin" / "azurite-blob"


def test_an_append_whose_commit_answer_is_lost_is_still_committed_twice(tmp_path):
    """A relay lets the commit's conditional write reach the store and drops its answer: the HTTP
    client resends it, the store refuses, and deltalake commits the append again at version 2. On
    S3 here; notebook 12's appendix B runs the same reproducer on Azurite (with the same checks, and
    its two workarounds) in every `make test`."""
    current = eras.era(eras.CURRENT)
    done = _reproduce(
        "deltalake-lost-commit-response-commits-twice",
        eras.python_for(eras.CURRENT),
        tmp_path,
        "--store",
        "s3",
    )
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done,
        f"an append committed twice after its commit answer was lost (s3, deltalake {current.deltalake_version})",
    )
    assert (
        "told the writer: success" in done.stdout and "is added by version(s) [1, 2]" in done.stdout
    ), done.stdout
    assert "-> 412" in done.stdout, done.stdout
    # the harm a user sees beyond the history: the change data feed reports every appended row twice
    assert (
        "DeltaTable.load_cdf(starting_version=1): 6 rows, x = [1, 1, 2, 2, 3, 3], versions [1, 2]"
        in done.stdout
    ), done.stdout


def test_the_unity_catalog_server_still_vends_s3_credentials_only_through_aws_sts(tmp_path):
    """Notebook 15's S3 route stops here: the server sends AssumeRole to AWS STS whatever endpoint it
    is given, so a managed table cannot be staged on S3-compatible storage. The script's proxy keeps
    the request on this machine."""
    from helpers.catalog import server_build

    assert server_build.ready(), (
        f"{server_build.CRATE} is not built: run `make uc-server` (make test does it first)."
    )
    done = _reproduce(
        "olai-uc-server-s3-vending-only-through-aws-sts",
        eras.python_for(eras.CURRENT),
        tmp_path,
        str(server_build.BINARY),
    )
    _assert_still_reproduces(
        done,
        f"{server_build.CRATE} {server_build.VERSION} vending s3:// credentials only through AWS STS",
    )
    assert (
        "CONNECT sts.us-east-1.amazonaws.com:443" in done.stdout
        and "AssumeRole calls the stub received: 0" in done.stdout
    ), done.stdout


def test_a_delete_whose_commit_answer_is_lost_is_still_told_it_failed_although_committed(tmp_path):
    current = eras.era(eras.CURRENT)
    done = _reproduce(
        "deltalake-lost-commit-response-commits-twice",
        eras.python_for(eras.CURRENT),
        tmp_path,
        "--store",
        "s3",
        "--operation",
        "delete",
    )
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done,
        f"a committed DELETE reported failed after its commit answer was lost (deltalake {current.deltalake_version})",
    )
    assert (
        "told the caller: CommitFailedError: Failed to commit transaction: Commit failed: a concurrent transaction "
        "deleted data this operation read."
    ) in done.stdout, done.stdout
    assert (
        "operations by version {0: 'WRITE', 1: 'WRITE', 2: 'DELETE'}; the table holds x = [0, 1]"
        in done.stdout
    ), done.stdout


def _lost_claim_outcomes(relay_port: int, table_name: str) -> dict:
    """In a fresh process (jars are fixed when a JVM starts, and this worker may have started one
    already): a Spark session whose DynamoDB log store reaches moto through the relay at
    ``relay_port``; for ``recognizeOwnClaim`` false then true, a table, the relay armed, one append.
    What the relay saw and which versions add the appended file, read from storage."""
    import json
    import urllib.request

    from helpers.delta import delta_log, integrity
    from helpers.spark import sessions
    from helpers.stores import tables

    def relay_control(what: str) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{relay_port}/relay-control/{what}", data=b"", method="POST"
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())

    outcome = {}
    spark = sessions.spark_session(
        "s3",
        "dynamodb",
        app_name="test-lost-claim-answer",
        extra_conf={sessions.DYNAMODB_ENDPOINT_KEY: f"http://127.0.0.1:{relay_port}"},
    )
    try:
        for recognise in ("false", "true"):
            spark.conf.set("spark.workbook.storage.ddb.recognizeOwnClaim", recognise)
            uri = tables.s3_uri(f"{table_name}-{recognise}", scheme="s3a")
            spark.createDataFrame([(0,)], "x int").write.format("delta").save(uri)
            relay_control("arm")
            spark.createDataFrame([(1,), (2,), (3,)], "x int").coalesce(1).write.format(
                "delta"
            ).mode("append").save(uri)
            state = relay_control("state")
            commits = integrity.check_table(uri.replace("s3a://", "s3://", 1)).commit_bodies
            appended = {a["path"] for a in delta_log.read_commit(commits[1])[1]}
            outcome[recognise] = {
                "armed": state["armed"],
                "seen": state["seen"],
                "versions with the appended file": sorted(
                    v
                    for v, body in commits.items()
                    if appended & {a["path"] for a in delta_log.read_commit(body)[1]}
                ),
                "rows": spark.read.format("delta").load(uri).count(),
            }
    finally:
        spark.stop()
    return outcome


_DYNAMODB_CLAIM_RELAY = """
import json, runpy, sys
finding = runpy.run_path(sys.argv[1])  # the reproducer's relay, without running its main

def claim(self, body):
    if not self.headers.get("X-Amz-Target", "").endswith(".PutItem") or b"ConditionExpression" not in body:
        return None
    return f"PutItem {json.loads(body)['Item']['fileName']['S']} (conditional)"

finding["RelayHandler"].claim = claim
finding["Relay"](int(sys.argv[2]), int(sys.argv[3])).serve_forever()
"""
"""The finding's relay, made to drop the answer to a conditional DynamoDB ``PutItem`` (the claim of a
DynamoDB log store) instead of a commit file's: a mode only this test needs, so it lives here."""


@pytest.mark.spark
def test_delta_spark_commits_an_append_twice_unless_its_log_store_recognises_its_own_claim(
    stores, table_name
):
    """The same lost answer in Delta Spark 4.4.0 with the DynamoDB log store: the finding's relay
    (made by ``_DYNAMODB_CLAIM_RELAY`` to drop a claim's answer) sits between the workbook's log store and moto's DynamoDB
    and drops the answer to one append's claim. The AWS SDK resends the PutItem and DynamoDB
    refuses it. Taken for a lost race (``recognizeOwnClaim=false``, as a log store that does not
    look), Delta's commit loop commits the same file again at the next version; the workbook's log
    store reads the item, finds its own staged file and keeps the claim: one commit."""
    import json
    import sys
    import time
    import urllib.request

    from helpers.ground import config, local_processes

    relay_port = local_processes.free_port()
    relay = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _DYNAMODB_CLAIM_RELAY,
            str(FINDINGS / "deltalake-lost-commit-response-commits-twice" / "repro.py"),
            str(relay_port),
            str(config.moto_port()),
        ]
    )
    try:
        for _ in range(
            600
        ):  # up to a minute for the relay's Python to bind its port; not a timing of the test
            try:
                urllib.request.urlopen(
                    urllib.request.Request(
                        f"http://127.0.0.1:{relay_port}/relay-control/state",
                        data=b"",
                        method="POST",
                    ),
                    timeout=60,
                ).close()
                break
            except OSError:
                time.sleep(0.1)
        code = (
            "import json, runpy, sys; outcome = runpy.run_path(sys.argv[1])['_lost_claim_outcomes'](int(sys.argv[2]), sys.argv[3]); "
            "print('OUTCOME ' + json.dumps(outcome))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code, __file__, str(relay_port), table_name],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            cwd=config.ROOT,
        )
    finally:
        relay.terminate()
        relay.wait(timeout=60)
    lines = [line for line in done.stdout.splitlines() if line.startswith("OUTCOME ")]
    assert done.returncode == 0 and lines, (
        f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    outcome = json.loads(lines[-1].removeprefix("OUTCOME "))
    dropped = [line for line in outcome["false"]["seen"] if "answer dropped" in line]
    assert not outcome["false"]["armed"] and dropped == [
        "PutItem 00000000000000000001.json (conditional) -> 200 (written; answer dropped, connection closed)"
    ], outcome
    assert "PutItem 00000000000000000001.json (conditional) -> 400" in outcome["false"]["seen"], (
        outcome
    )  # the SDK resent it: refused
    assert outcome["false"]["versions with the appended file"] == [1, 2], (
        outcome
    )  # Delta committed it again: the finding
    assert outcome["true"]["versions with the appended file"] == [1], (
        outcome
    )  # the log store kept its own claim
    assert outcome["true"]["rows"] == 4 and outcome["false"]["rows"] == 4, outcome


def test_the_oldest_era_reads_the_twice_committed_append_twice(tmp_path):
    """deltalake 0.14.0 (the seeds' lock era) has the same retry, and its reader counts the
    appended file once per commit: 7 rows where 4 were written."""
    done = _reproduce(
        "deltalake-lost-commit-response-commits-twice",
        eras.python_for(eras.OLD_LOCK),
        tmp_path,
        "--azurite",
        str(AZURITE_BLOB),
    )
    assert "deltalake 0.14.0," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done, "an append committed twice after its commit answer was lost (deltalake 0.14.0)"
    )
    assert "reads 7 rows at version 2; 4 were written" in done.stdout, done.stdout


def _assert_not_reproduced(done: subprocess.CompletedProcess, what: str) -> None:
    output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr[-2000:]}"
    assert done.returncode == 0, (
        f"{what}: expected exit 0 (not affected), got {done.returncode}.\n{output}"
    )
    assert "BUG PRESENT" not in done.stdout, output


def test_the_double_optimize_is_bracketed_by_the_last_release_that_refuses_it(tmp_path):
    """deltalake 1.6.3, the last release before the regression (its own era), gives exit 0: the
    reproducer tells the two apart, so its exit 1 above is the bug and not the script."""
    done = _reproduce(
        "deltalake-two-optimizes-both-commit",
        eras.python_for(eras.LAST_REFUSING_DOUBLE_OPTIMIZE),
        tmp_path,
    )
    assert "deltalake 1.6.3," in done.stdout, done.stdout + done.stderr
    _assert_not_reproduced(done, "deltalake 1.6.3 refusing the four operations")
    assert (
        done.stdout.count("refused: CommitFailedError") == 4
        and done.stdout.count("deleted the same data") == 4
    ), done.stdout


def test_the_stuck_repair_is_bracketed_by_the_seeds_era_that_repairs_it(tmp_path):
    """deltalake 0.22.3's DynamoDB log store finishes the same half-done commit: exit 0."""
    done = _reproduce(
        "deltalake-dynamodb-repair-already-exists",
        eras.python_for(eras.SEEDS),
        tmp_path,
        "--moto-python",
        str(eras.python_for(eras.CURRENT)),
    )
    assert "deltalake 0.22.3," in done.stdout, done.stdout + done.stderr
    _assert_not_reproduced(done, "deltalake 0.22.3 repairing the half-done commit")


def test_every_finding_is_listed_in_both_tables():
    """README's Findings table and findings/README.md name every finding folder (and nothing else)."""
    import re

    folders = {
        p.name for p in FINDINGS.iterdir() if (p / "REPORT.md").is_file()
    }  # with a repro.py, or a report alone
    assert all(
        (p / "REPORT.md").is_file() for p in FINDINGS.iterdir() if (p / "repro.py").is_file()
    ), "a repro.py without its REPORT.md"
    for table, prefix in ((config.ROOT / "README.md", "findings/"), (FINDINGS / "README.md", "")):
        linked = set(
            re.findall(
                rf"\]\({re.escape(prefix)}([\w.-]+)/(?:REPORT\.md|repro\.py)\)", table.read_text()
            )
        )
        assert linked == folders, f"{table.name}: {sorted(linked ^ folders)}"


REPORT_SECTIONS = (
    "Environment",
    "Reproducer",
    "Expected and actual",
    "Cause",
    "Objections",
    "Proposed fix",
    "Related upstream issues",
)
"""The sections a maintainer expects in a report to file, in this order (each a ``## `` heading that
starts with these words); the title is the report's first line."""

WORKBOOK_INTERNALS = re.compile(
    r"\bmake (?:matrix|test|install|student|probe|versitygw|torture|bench)\b|\bhelpers\b|torture"
    r"|\bworkbook\b|\bnotebooks?\b|--relay-drops|\.envs/|python_for"
    r"|\bfindings/[\w.-]+|\btests/test_\w+\.py",
    re.IGNORECASE,
)
"""What a maintainer cannot run or does not care about: the workbook's make targets, its package, its
torture run, its notebooks, its environments, the relay modes only its own tests use, and paths of
its own tree (a finding's folder, ``findings/<name>``; a test module, ``tests/test_<name>.py``)."""

UPSTREAM_TEXTS = (
    "*/REPORT*.md",
    "*/ADVISORY.md",
    "*/repro.py",
    "*/*.java",
    "*/*.rs",
    "*/Cargo.toml",
)
"""What is pasted or attached upstream: each folder's report(s), the advisory, the reproducers."""


def _to_file() -> list[str]:
    """The folders findings/README.md marks as reports to **file** (in its "where each goes" table)."""
    rows = re.findall(
        r"^\| \[([\w.-]+)\]\([\w.-]+/REPORT\.md\) \| [^|]+ \| \*\*file\*\*",
        (FINDINGS / "README.md").read_text(),
        re.M,
    )
    assert rows, "findings/README.md marks no report to file"
    return rows


def _missing_sections(report: str) -> list[str]:
    lines = report.splitlines()
    headings = [line[3:] for line in lines if line.startswith("## ")]
    missing = [] if lines and lines[0].startswith("# ") and len(lines[0]) > 20 else ["title"]
    at = 0
    for section in REPORT_SECTIONS:
        found = next((i for i in range(at, len(headings)) if headings[i].startswith(section)), None)
        if found is None:
            missing.append(section)
        else:
            at = found + 1
    reproducer = report.split("\n## Reproducer", 1)[-1].split("\n## ", 1)[0]
    if "```" not in reproducer:
        missing.append("an inline reproducer (a fenced block under Reproducer)")
    return missing


def test_each_report_to_file_has_the_sections_a_maintainer_expects():
    """Every report of a folder marked to file: its REPORT.md and any further REPORT-<issue>.md (a
    folder whose finding is filed as several issues)."""
    reports = [
        report for name in _to_file() for report in sorted((FINDINGS / name).glob("REPORT*.md"))
    ]
    assert len(reports) > len(_to_file()), (
        "no folder to file has a second report: the glob above is not looking"
    )
    problems = {
        str(report.relative_to(FINDINGS)): missing
        for report in reports
        if (missing := _missing_sections(report.read_text()))
    }
    assert not problems, (
        f"reports to file lacking sections (in this order: {', '.join(REPORT_SECTIONS)}): {problems}"
    )


def test_the_internals_check_catches_a_path_of_the_project():
    """A reproducer once named the folder of another finding in its docstring: the check must see it."""
    for text in (
        "(``findings/deltalake-dynamodb-reclaim-after-a-refused-copy``).",
        "see findings/versitygw-copies-a-deleted-object/REPORT.md",
        "measured by tests/test_findings.py",
    ):
        assert WORKBOOK_INTERNALS.search(text), text
    for text in (
        "docs/src/content/docs/delta-storage.mdx",
        "tests/aws_minter_emulator.rs",
        "crates/core/tests/it_datafusion",
    ):
        assert not WORKBOOK_INTERNALS.search(text), (
            f"an upstream project's path taken for the workbook's: {text}"
        )


def test_no_report_or_reproducer_names_the_workbooks_internals():
    """Reports, the advisory and the reproducers are read and run by upstream maintainers: nothing in
    them may need the workbook (its make targets, helpers, torture run, notebooks, environments,
    test-only modes, or a path of its tree)."""
    found = {}
    paths = sorted({path for pattern in UPSTREAM_TEXTS for path in FINDINGS.glob(pattern)})
    assert any(path.suffix == ".java" for path in paths) and any(
        path.name.startswith("REPORT-") for path in paths
    ), paths
    for path in paths:
        hits = sorted({match.group(0) for match in WORKBOOK_INTERNALS.finditer(path.read_text())})
        if hits:
            found[str(path.relative_to(FINDINGS))] = hits
    assert not found, f"workbook internals named where a maintainer reads: {found}"


def test_create_write_transaction_still_leaves_its_table_behind(tmp_path):
    """The Python binding drops the finalized commit of ``create_write_transaction``: the object stays
    at version 0 after committing version 1, and the next batch with the same app id is refused as
    concurrent with its own previous commit (measured by hand: 1.6.3 the same, 1.5.1 stale too but
    writes no ``txn`` action, so its next batch commits)."""
    current = eras.era(eras.CURRENT)
    done = _reproduce(
        "deltalake-create-write-transaction-leaves-the-table-behind",
        eras.python_for(eras.CURRENT),
        tmp_path,
    )
    assert f"deltalake {current.deltalake_version}," in done.stdout, done.stdout + done.stderr
    _assert_still_reproduces(
        done,
        f"create_write_transaction leaving its DeltaTable behind (deltalake {current.deltalake_version})",
    )
    for line in (
        "   dt says:                 version() = 0, transaction_version('nightly-ingest') = None",
        "   a new DeltaTable says:   version() = 1, transaction_version('nightly-ingest') = 1",
        "2. dt.create_write_transaction(batch 2, Transaction('nightly-ingest', 2)): refused: "
        "CommitFailedError: Failed to commit transaction: Concurrent transaction failed.",
        "dt2 says: version() = 2, transaction_version('nightly-ingest') = 2",
    ):
        assert line in done.stdout, f"missing: {line}\n{done.stdout}"


@pytest.mark.parametrize("era", [eras.SEEDS, eras.DYNAMODB_INTEROP])
def test_a_lost_dynamodb_claim_answer_still_stops_later_writes_unless_an_app_transaction_checks(
    tmp_path, era
):
    """deltalake's DynamoDB log store, the answer to its claim lost: the table refuses every later
    write (and 1.5.1 reports the committed append failed); with an app transaction and a check of
    ``transaction_version`` after the error, committed once and the table still writable."""
    moto = ("--moto-python", str(eras.python_for(eras.CURRENT)))
    finding = "deltalake-dynamodb-lost-claim-answer-reported-failed"
    release = eras.era(era).deltalake_version
    done = _reproduce(finding, eras.python_for(era), tmp_path, *moto)
    _assert_still_reproduces(done, f"the lost DynamoDB claim answer (deltalake {release})")
    remedied = _reproduce(finding, eras.python_for(era), tmp_path, *moto, "--app-transaction")
    assert remedied.returncode == 0, remedied.stdout + remedied.stderr[-2000:]
