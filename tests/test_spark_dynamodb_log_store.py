"""The workbook's DynamoDB log store (``workbook.storage.EndpointS3DynamoDBLogStore``) in the two
states that once hung a Spark writer, or told it that a decided commit failed. Nothing is mocked:
each test runs one Spark driver (its own JVM, a child process) against the emulators, prepares the
state, then makes a Spark append, a read and a listing (``DESCRIBE HISTORY``), each under a bound
(:data:`OP_BOUND_S`). A call still running at its bound fails the test; it never waits longer.

* (a) the table is at version 1 and DynamoDB holds an incomplete item for version 2 whose staged
  file does not exist, and there is no ``2.json``: the item can never be finished. The read and the
  listing come first, then the append.
* (b) the writer's own claim of version 2 wins, but S3 refuses its copy to ``2.json`` several
  times (a gate in front of the S3 emulator answers 403 to the first :data:`REFUSALS` PUTs of that
  file), more than the writer's own attempt and a listing's attempts to finish it. Then the same on
  a second table whose writer may try for 1 s only (``publishTimeoutSeconds``), while S3 refuses
  :data:`WINDOW_REFUSALS` PUTs: the append fails, saying the version IS committed, and the next
  read publishes it.

Run as a script, this file is the child: ``python tests/test_spark_dynamodb_log_store.py STATE URI [S3A_ENDPOINT]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OP_BOUND_S = 300.0
"""Each Spark call (append, read, listing) may take this long on a loaded 2-core machine; past it the test fails."""
CHILD_BOUND_S = 8 * OP_BOUND_S
"""The child process as a whole (its JVM start, the states' setup and up to six calls); then it is killed."""
REFUSALS = 6
"""State (b): the 403s the gate answers to PUTs of 2.json before it lets one through (the old class
gave up on a claim's copy after 1 attempt and on finishing after 4)."""
WINDOW_REFUSALS = 3
"""State (b), second table: more PUTs than a 1 s publish window can make (its pauses alone, 0.2 +
0.4 + 0.8 s, leave room for 3), fewer than a read's 4 attempts to finish the commit."""
WINDOW = "-window"
MISSING_STAGED = ".tmp/00000000000000000002.json.staged-file-that-never-existed"
RESULT_MARK = "log-store-result "


# ---------------------------------------------------------------------------------------------
# The child: one Spark driver
# ---------------------------------------------------------------------------------------------


def _bounded(op: str, call) -> dict:
    """Run ``call`` in a thread; its outcome, or ``hung`` when it is still running after OP_BOUND_S."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = call()
        except Exception as error:  # Spark's errors arrive as py4j / pyspark exceptions
            box["error"] = f"{type(error).__name__}: {error}"

    started = time.monotonic()
    thread = threading.Thread(target=run, name=op, daemon=True)
    thread.start()
    thread.join(OP_BOUND_S)
    seconds = round(time.monotonic() - started, 1)
    if thread.is_alive():
        return {"op": op, "outcome": "hung", "seconds": seconds}
    if "error" in box:
        return {"op": op, "outcome": "raised", "seconds": seconds, "error": box["error"][:3000]}
    return {"op": op, "outcome": "ok", "seconds": seconds, "value": box.get("value")}


def child(state: str, uri: str, s3a_endpoint: str = "") -> int:
    from helpers.ground import config
    from helpers.spark import sessions
    from helpers.stores import storage

    extra = {"spark.hadoop.fs.s3a.endpoint": s3a_endpoint} if s3a_endpoint else None
    spark = sessions.spark_session(
        "s3", "dynamodb", app_name=f"log-store-{state}", extra_conf=extra
    )
    spark.range(0, 3).write.format("delta").save(uri)
    spark.range(3, 6).write.format("delta").mode("append").save(uri)
    if state == "a":
        storage.dynamodb_client().put_item(
            TableName=config.names().dynamodb_lock_table,
            Item={
                "tablePath": {"S": uri},
                "fileName": {"S": "00000000000000000002.json"},
                "tempPath": {"S": MISSING_STAGED},
                "complete": {"S": "false"},
            },
        )
    # (a): the read and the listing first, so that a hung append (which ends the child) does not hide them;
    # (b): the append first, then whether the read and the listing see its commit
    _calls(
        spark, uri, ("read", "listing", "append") if state == "a" else ("append", "read", "listing")
    )
    if state == "b":
        window = (
            uri + WINDOW
        )  # a new table, so a new log store, made with the session's settings of now
        spark.conf.set("spark.workbook.storage.ddb.publishTimeoutSeconds", "1")
        spark.range(0, 3).write.format("delta").save(window)
        spark.range(3, 6).write.format("delta").mode("append").save(window)
        _calls(spark, window, ("append", "read", "listing"), prefix="window ")
    spark.stop()
    return 0


def _calls(spark, uri: str, order: tuple[str, ...], prefix: str = "") -> None:
    """Each call in ``order`` under its bound, its result printed for the parent."""
    calls = {
        "append": lambda: spark.range(6, 9).write.format("delta").mode("append").save(uri),
        "read": lambda: spark.read.format("delta").load(uri).count(),
        "listing": lambda: sorted(
            r.version for r in spark.sql(f"DESCRIBE HISTORY delta.`{uri}`").collect()
        ),
    }
    for op in order:
        result = _bounded(prefix + op, calls[op])
        print(RESULT_MARK + json.dumps(result), flush=True)
        if (
            result["outcome"] == "hung"
        ):  # the JVM is stuck in that call: nothing after it would answer
            os._exit(3)


# ---------------------------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def emulators():
    from helpers.stores import services, storage

    services.require("s3", "dynamodb")
    storage.ensure_bucket()
    storage.ensure_lock_table()


def _run_child(state: str, uri: str, s3a_endpoint: str = "") -> dict[str, dict]:
    env = {**os.environ, "WORKBOOK_SPARK_LOG_LEVEL": "WARN"}
    try:
        done = subprocess.run(
            [sys.executable, __file__, state, uri, s3a_endpoint],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=CHILD_BOUND_S,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(
            f"the Spark driver for state ({state}) ran past {CHILD_BOUND_S:.0f} s; output: {str(expired.stdout)[-2000:]}"
        )
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK) :])
            results[result["op"]] = result
            error = " ".join(
                text.strip()
                for text in result.get("error", "").splitlines()
                if not text.startswith("\tat ")
            )
            print(
                f"state ({state}) {result['op']}: {result['outcome']} in {result['seconds']} s: "
                f"{result['value'] if 'value' in result else error!s:.900}"
            )
    if not results:
        pytest.fail(
            f"the Spark driver for state ({state}) reported nothing (exit {done.returncode}): {done.stderr[-3000:]}"
        )
    return results


def _outcomes(results: dict[str, dict]) -> dict[str, str]:
    return {op: r["outcome"] for op, r in results.items()}


@pytest.mark.services
@pytest.mark.spark
def test_an_item_whose_staged_file_is_gone_fails_the_append_by_name_and_hangs_nothing(emulators):
    from helpers.stores import storage, tables

    uri = tables.s3_uri(f"test-log-store-a-{uuid.uuid4().hex[:8]}", scheme="s3a")
    results = _run_child("a", uri)
    assert _outcomes(results) == {"append": "raised", "read": "ok", "listing": "ok"}, results
    error = results["append"]["error"]
    for named in (
        f"Version 2 of {uri}",
        "00000000000000000002.json",
        MISSING_STAGED,
        "delete that item",
    ):
        assert named in error, f"the append's error does not name {named!r}: {error}"
    assert results["read"]["value"] == 6 and results["listing"]["value"] == [0, 1], results
    items = {i["fileName"]: i["complete"] for i in storage.lock_entries(uri)}
    assert (
        items["00000000000000000002.json"] == "false"
    )  # left for its operator: nothing guessed it away


class RefusingGate:
    """A gate in front of the S3 emulator that answers 403 AccessDenied to the first PUTs of some
    objects (a copy refused by S3, deterministically): ``refusals`` maps the end of an object's key
    to how many; everything else passes."""

    def __init__(self, refusals: dict[str, int]) -> None:
        from helpers.runs import commitgate

        outer = self
        self.refused = dict.fromkeys(refusals, 0)

        class Gate(commitgate.CommitGate):
            def forward(self, method, path, headers, body):
                key = path.split("?", 1)[0]
                ending = next((end for end in refusals if key.endswith(end)), None)
                if (
                    method == "PUT"
                    and ending is not None
                    and outer.refused[ending] < refusals[ending]
                ):
                    outer.refused[ending] += 1
                    return (
                        403,
                        "Forbidden",
                        [("Content-Type", "application/xml")],
                        (
                            b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code>'
                            b"<Message>refused by the test's gate</Message></Error>"
                        ),
                    )
                return super().forward(method, path, headers, body)

        self.gate = Gate()


@pytest.mark.services
@pytest.mark.spark
def test_a_won_claim_whose_copy_is_refused_for_a_while_is_reported_committed(emulators):
    from helpers.delta import delta_log
    from helpers.stores import storage, tables

    name = f"test-log-store-b-{uuid.uuid4().hex[:8]}"
    uri, window = tables.s3_uri(name, scheme="s3a"), tables.s3_uri(name + WINDOW, scheme="s3a")
    second = f"{name}/{delta_log.commit_file(2)}"
    second_in_window = f"{name}{WINDOW}/{delta_log.commit_file(2)}"
    refusing = RefusingGate({second: REFUSALS, second_in_window: WINDOW_REFUSALS})
    with refusing.gate as gate:
        results = _run_child("b", uri, gate.endpoint)
    assert refusing.refused == {second: REFUSALS, second_in_window: WINDOW_REFUSALS}, (
        refusing.refused
    )
    assert _outcomes(results) == {
        "append": "ok",
        "read": "ok",
        "listing": "ok",
        "window append": "raised",
        "window read": "ok",
        "window listing": "ok",
    }, results
    assert results["read"]["value"] == 9 and results["listing"]["value"] == [0, 1, 2], results
    # past its window the writer fails, and says that its version is committed: the read finds it
    error = results["window append"]["error"]
    for named in (
        f"Version 2 of {window} IS COMMITTED",
        "Do not run this write again",
        delta_log.commit_file_name(2),
    ):
        assert named in error, f"the append's error does not say {named!r}: {error}"
    assert results["window read"]["value"] == 9 and results["window listing"]["value"] == [
        0,
        1,
        2,
    ], results
    for table in (uri, window):
        items = {i["fileName"]: i["complete"] for i in storage.lock_entries(table)}
        assert items[delta_log.commit_file_name(2)] == "true", (table, items)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(child(*sys.argv[1:4]))
