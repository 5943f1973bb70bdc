"""The commit gate: a transparent proxy that holds commit-file PUTs and releases them in order."""

from __future__ import annotations

import threading
import time

import pytest
from botocore.exceptions import ClientError

from helpers.delta import delta_log
from helpers.ground import config
from helpers.runs import commitgate, gate_log, runner
from helpers.stores import storage, tables

COMMIT = "_delta_log/00000000000000000001.json"


@pytest.fixture
def gate(stores):
    with commitgate.CommitGate() as proxy:
        yield proxy


def _race(gate, key: str, writers: list[tuple[str, bool]]) -> dict[str, object]:
    """PUT ``key`` from one thread per (name, conditional), each sent only once the gate holds the
    ones before it (no clock decides who arrives first); return name -> status."""
    s3, answers = storage.s3_client(gate.endpoint), {}

    def put(name: str, conditional: bool) -> None:
        try:
            extra = {"IfNoneMatch": "*"} if conditional else {}
            answers[name] = s3.put_object(
                Bucket=config.names().s3_bucket, Key=key, Body=name.encode(), **extra
            )["ResponseMetadata"]["HTTPStatusCode"]
        except ClientError as error:
            answers[name] = error.response["ResponseMetadata"]["HTTPStatusCode"]

    threads = []
    for number, writer in enumerate(writers, start=1):
        thread = threading.Thread(target=put, args=writer)
        thread.start()
        threads.append(thread)
        while (
            number < len(writers) and gate.waiting() < number
        ):  # the next one goes once this one is held
            time.sleep(0.01)
    for thread in threads:
        thread.join()
    return answers


def test_an_open_gate_passes_everything_through_and_logs_commit_requests(gate, table_name):
    uri = tables.s3_uri(table_name)
    options = gate.route(tables.s3_storage_options())
    assert options["AWS_ENDPOINT_URL"] == gate.endpoint
    runner.create_table(uri, options)  # delta-rs: a conditional PUT of commit 0, through the gate
    assert runner.table_state(uri, options).version == 0
    log = gate.commit_requests(uri)
    put = log[log["method"] == "PUT"].iloc[0]
    assert put["file"] == "00000000000000000000.json"
    assert (put["client"], bool(put["conditional"]), put["status"], put["held_s"]) == (
        "delta-rs",
        True,
        200,
        0.0,
    )


@pytest.mark.parametrize(
    "order, first, answers",
    [
        (
            "conditional-first",
            "c",
            {"c": 200, "u": 200},
        ),  # the plain PUT lands second and replaces it
        ("unconditional-first", "u", {"c": 412, "u": 200}),  # the conditional PUT finds the object
    ],
)
def test_held_puts_meet_and_the_order_decides(gate, table_name, order, first, answers):
    key = f"{table_name}/{COMMIT}"
    gate.hold(together=2, max_wait_s=3600, order=order)
    assert _race(gate, key, [("u", False), ("c", True)]) == answers
    log = gate.commit_requests(tables.s3_uri(table_name))
    assert list(log["released_by"]) == [
        "together",
        "together",
    ]  # both arrived; no clock let them go
    assert list(log.sort_values("released_as")["conditional"]) == [first == "c", first != "c"]
    body = storage.s3_client().get_object(Bucket=config.names().s3_bucket, Key=key)["Body"].read()
    assert body == b"u"


def test_a_lone_put_waits_max_wait_s_and_other_versions_pass(gate, table_name):
    gate.hold(together=3, max_wait_s=1.0, version=1)
    assert _race(gate, f"{table_name}/{COMMIT}", [("a", True)]) == {"a": 200}
    assert _race(gate, f"{table_name}/_delta_log/00000000000000000002.json", [("b", True)]) == {
        "b": 200
    }
    log = gate.commit_requests(tables.s3_uri(table_name)).set_index("version")
    assert log.loc[1, "released_by"] == "max_wait_s"  # the others never came: its timer let it go
    assert (
        log.loc[2, "released_by"] is None and log.loc[2, "held_s"] == 0.0
    )  # not version 1: not held


def test_opening_the_gate_releases_what_it_holds(gate, table_name):
    gate.hold(together=2, max_wait_s=3600)
    s3 = storage.s3_client(gate.endpoint)
    answer = {}
    thread = threading.Thread(
        target=lambda: answer.update(
            status=s3.put_object(
                Bucket=config.names().s3_bucket, Key=f"{table_name}/{COMMIT}", Body=b"x"
            )["ResponseMetadata"]["HTTPStatusCode"]
        )
    )
    thread.start()
    while gate.waiting() < 1:
        time.sleep(0.01)
    gate.open()
    thread.join()
    assert answer == {"status": 200} and gate.waiting() == 0
    assert list(gate.commit_requests(tables.s3_uri(table_name))["released_by"]) == ["open"]


def test_bad_arguments_are_refused(gate):
    with pytest.raises(commitgate.GateError, match="together"):
        gate.hold(together=0)
    with pytest.raises(commitgate.GateError, match="Unknown order"):
        gate.hold(together=2, order="random")
    with pytest.raises(commitgate.GateError, match="AWS_ENDPOINT_URL"):
        gate.route({"AWS_REGION": "us-east-1"})


def test_a_dead_emulator_is_a_502_that_names_it():
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind((config.LOCALHOST, 0))
        port = probe.getsockname()[1]
    with commitgate.CommitGate(f"http://{config.LOCALHOST}:{port}") as gate:
        import urllib.error
        import urllib.request

        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"{gate.endpoint}/bucket/key", timeout=30)
        assert answer.value.code == 502 and b"did not answer" in answer.value.read()


def test_dynamodb_requests_go_to_their_own_upstream_when_another_server_plays_s3():
    """With versitygw playing S3, a gate that routes the lock too sends DynamoDB requests (those with
    an ``X-Amz-Target: DynamoDB_...`` header) to moto and everything else to the S3 server."""
    import http.server
    import threading
    import urllib.request

    def upstream(name):
        class Answer(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Length", str(len(name)))
                self.end_headers()
                self.wfile.write(name)

            do_GET = do_POST

        server = http.server.ThreadingHTTPServer((config.LOCALHOST, 0), Answer)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    s3, dynamodb = upstream(b"s3"), upstream(b"dynamodb")
    try:
        with commitgate.CommitGate(
            f"http://{config.LOCALHOST}:{s3.server_address[1]}",
            dynamodb_upstream=f"http://{config.LOCALHOST}:{dynamodb.server_address[1]}",
        ) as gate:
            lock = urllib.request.Request(
                gate.endpoint + "/",
                data=b"{}",
                method="POST",
                headers={"X-Amz-Target": "DynamoDB_20120810.GetItem"},
            )
            assert urllib.request.urlopen(lock, timeout=30).read() == b"dynamodb"
            assert urllib.request.urlopen(gate.endpoint + "/bucket/key", timeout=30).read() == b"s3"
    finally:
        s3.shutdown()
        dynamodb.shutdown()


def test_the_cloud_profile_has_no_gate(monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    with pytest.raises(commitgate.GateError, match="local S3 emulator"):
        commitgate.CommitGate()


def test_lock_item_writes_are_parsed_and_other_requests_ignored():
    claim = (
        b'{"TableName": "delta_log", "Item": {"tablePath": {"S": "s3://b/t"}, "fileName": {"S": "00000000000000000002.json"}, '
        b'"tempPath": {"S": "_commit_1.json.tmp"}, "complete": {"S": "false"}}, "ConditionExpression": "attribute_not_exists(fileName)"}'
    )
    parsed = gate_log.parse_lock_request("DynamoDB_20120810.PutItem", claim, "delta-rs")
    assert (parsed.operation, parsed.version, parsed.temp_path, parsed.conditional) == (
        "PutItem",
        2,
        "_commit_1.json.tmp",
        True,
    )
    update = b'{"TableName": "delta_log", "Key": {"tablePath": {"S": "s3://b/t"}, "fileName": {"S": "00000000000000000002.json"}}}'
    assert (
        gate_log.parse_lock_request("DynamoDB_20120810.UpdateItem", update, "x").temp_path is None
    )
    assert gate_log.parse_lock_request("DynamoDB_20120810.Query", claim, "x") is None  # a read
    assert (
        gate_log.parse_lock_request(
            "DynamoDB_20120810.PutItem", b'{"Item": {"key": {"S": "t"}}}', "x"
        )
        is None
    )  # not a log-store item
    assert gate_log.parse_lock_request("DynamoDB_20120810.PutItem", b"not json", "x") is None
    assert gate_log.parse_lock_request("", claim, "x") is None  # an S3 request


def test_routing_the_lock_needs_a_dynamodb_endpoint(gate):
    with pytest.raises(commitgate.GateError, match="AWS_ENDPOINT_URL_DYNAMODB"):
        gate.route(tables.s3_storage_options(), dynamodb=True)
    locked = tables.s3_storage_options(locking_provider="dynamodb")
    assert (
        gate.route(locked)["AWS_ENDPOINT_URL_DYNAMODB"] == locked["AWS_ENDPOINT_URL_DYNAMODB"]
    )  # by default DynamoDB stays direct
    assert gate.route(locked, dynamodb=True)["AWS_ENDPOINT_URL_DYNAMODB"] == gate.endpoint


def test_the_gate_logs_claims_of_a_lock_item_and_the_refusals(gate):
    dynamodb = storage.dynamodb_client(gate.endpoint)
    table_path = (
        f"s3://{config.names().s3_bucket}/gate-lock-{threading.get_ident()}-{time.time_ns()}"
    )
    item = {
        "tablePath": {"S": table_path},
        "fileName": {"S": "00000000000000000001.json"},
        "tempPath": {"S": "_commit_a.json.tmp"},
    }
    table = config.names().dynamodb_lock_table
    dynamodb.put_item(
        TableName=table, Item=item, ConditionExpression="attribute_not_exists(fileName)"
    )
    with pytest.raises(ClientError):
        dynamodb.put_item(
            TableName=table,
            Item={**item, "tempPath": {"S": "_commit_b.json.tmp"}},
            ConditionExpression="attribute_not_exists(fileName)",
        )
    log = gate.lock_requests(table_path + "/")  # the same table, whichever trailing slash
    assert log[["operation", "version", "temp_path", "status"]].values.tolist() == [
        ["PutItem", 1, "_commit_a.json.tmp", 200],
        ["PutItem", 1, "_commit_b.json.tmp", 400],
    ]
    assert log["error"].tolist()[1] == "ConditionalCheckFailedException"
    storage.delete_lock_entries(table_path)


def _claims(rows):
    import pandas as pd

    frame = pd.DataFrame(rows, columns=["operation", "version", "temp_path", "status"])
    frame["version"] = frame["version"].astype("Int64")
    return frame


def test_claims_are_attributed_to_writers_through_their_staged_file():
    log = _claims(
        [
            ("PutItem", 2, "a.tmp", 200),
            ("PutItem", 2, "b.tmp", 400),
            ("UpdateItem", 2, None, 200),
            ("PutItem", 3, "b.tmp", 200),
        ]
    )
    frame = commitgate.claims_per_writer(log, {"a.tmp": "w1", "b.tmp": "w2"})
    assert frame.loc["w1"].tolist() == [1, 0, 2, 2] and frame.loc["w2"].tolist() == [2, 1, 2, 3]
    never_won = commitgate.claims_per_writer(
        _claims([("PutItem", 2, "a.tmp", 200), ("PutItem", 2, "b.tmp", 400)]),
        {"a.tmp": "w1", "b.tmp": "w2"},
    )
    assert never_won.loc["w2", "claims"] == 1 and never_won["won"].isna().tolist() == [False, True]
    unknown = commitgate.claims_per_writer(_claims([("PutItem", 2, "c.tmp", 200)]), {"a.tmp": "w1"})
    assert unknown.index.tolist() == ["None"]


def test_the_claims_check_fails_when_the_lock_saw_fewer_attempts_than_the_log_implies():
    from helpers.ground import checks

    implied = {"w1": 1, "w2": 2}  # commit version - snapshot version, as the auditor infers them
    missing_refusal = _claims(
        [("PutItem", 2, "a.tmp", 200), ("PutItem", 3, "b.tmp", 200)]
    )  # w2's refused claim never reached the store
    seen = commitgate.claims_per_writer(missing_refusal, {"a.tmp": "w1", "b.tmp": "w2"})[
        "claims"
    ].to_dict()
    with pytest.raises(
        checks.CheckFailed, match=r"expected \{'w1': 1, 'w2': 2\}, found \{'w1': 1, 'w2': 1\}"
    ):
        checks.equal("each writer's claims at the lock", seen, implied)


def test_the_winning_claim_check_fails_when_the_log_credits_another_writer():
    """Notebook 07's check "each writer's winning claim is its commit in the log": the claim is
    attributed through what its staged file holds, the commit through the log's tag, so a version
    w1 won at the lock whose commit carries w2's tag (and the reverse) is caught."""
    from helpers.ground import checks

    lock = _claims(
        [("PutItem", 2, "a.tmp", 200), ("PutItem", 2, "b.tmp", 400), ("PutItem", 3, "b.tmp", 200)]
    )
    won = commitgate.claims_per_writer(lock, {"a.tmp": "w1", "b.tmp": "w2"})["won"].to_dict()
    checks.equal("each writer's winning claim is its commit in the log", won, {"w1": 2, "w2": 3})
    swapped_log = {"w1": 3, "w2": 2}  # the commit files' tags say the opposite
    with pytest.raises(checks.CheckFailed, match="winning claim"):
        checks.equal("each writer's winning claim is its commit in the log", won, swapped_log)


@pytest.mark.services
def test_staged_commits_are_read_back_from_object_versions_with_their_writer(stores, table_name):
    """A staged commit the log store deleted is still in the bucket's versions, with its tag."""
    uri = tables.s3_uri(table_name)
    client, bucket = storage.s3_client(), config.names().s3_bucket
    staged = f"{table_name}/_delta_log/_commit_0b6f5a36-1c2d-4e5f-8a9b-0c1d2e3f4a5b.json.tmp"
    client.put_object(
        Bucket=bucket,
        Key=staged,
        Body=b'{"commitInfo": {"workbook.writer": "w7", "workbook.batch": "3"}}\n',
    )
    client.delete_object(Bucket=bucket, Key=staged)
    client.put_object(
        Bucket=bucket,
        Key=f"{table_name}/_delta_log/{delta_log.commit_file_name(0)}",
        Body=b'{"commitInfo": {"workbook.writer": "w1"}}\n',
    )
    try:
        assert commitgate.staged_commit_writers(uri) == {
            "_commit_0b6f5a36-1c2d-4e5f-8a9b-0c1d2e3f4a5b.json.tmp": "w7"
        }
    finally:
        storage.remove_table(uri)
