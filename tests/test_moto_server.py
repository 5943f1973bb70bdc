"""helpers/stores/moto_server.py: conditional writes that arrive together have exactly one winner, and
with a journal (WORKBOOK_MOTO_DURABLE=1) the state survives a restart.

The server runs in a process of its own, started by helpers.stores.services, with a very short thread
switch interval, which makes moto's check-then-write window easy to hit (plain moto 5.2.5 let
two writers win in about one round in ten of these, for S3 and DynamoDB alike). Outcomes are
read back from the store. The durable server is stopped and started through helpers.stores.services,
as the torture run does, and everything read back before and after must be equal.
"""

import dataclasses
import io
import json
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import boto3
import boto3.s3.transfer
import botocore.config
import botocore.exceptions
import pytest

from helpers.ground import config
from helpers.stores import moto_server, moto_speedups, services

ROUNDS = 60
WRITERS = 8
FAST_SWITCHING = (
    "import sys; sys.setswitchinterval(1e-6); "
    "from helpers.stores.moto_server import main; main(['-H', '127.0.0.1', '-p', sys.argv[1]])"
)


def _moto_started_with(monkeypatch, command) -> str:
    """Start the workbook's moto service (private port and state, see ``private_services``) with
    another command, through helpers.stores.services as ``make services`` would; return its endpoint."""
    monkeypatch.setitem(
        services.SERVICES, "moto", dataclasses.replace(services.SERVICES["moto"], command=command)
    )
    assert services.up(["moto"], quiet=True) == ["moto"]
    return config.moto_endpoint()


@pytest.fixture
def atomic_moto(private_services, monkeypatch):
    """helpers/stores/moto_server.py with a very short thread switch interval."""
    return _moto_started_with(
        monkeypatch, lambda port: [sys.executable, "-c", FAST_SWITCHING, str(port)]
    )


def _client(service: str, endpoint: str):
    return boto3.client(
        service,
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
        config=botocore.config.Config(max_pool_connections=2 * WRITERS),
    )


def _race(write) -> list[int]:
    """Run ROUNDS rounds of WRITERS writers released together; the number of accepted writes per round."""
    winners = []
    with ThreadPoolExecutor(WRITERS) as pool:
        for round_ in range(ROUNDS):
            barrier = threading.Barrier(WRITERS)

            def attempt(writer: int) -> int:
                barrier.wait()
                try:
                    write(round_, writer)
                    return 1
                except botocore.exceptions.ClientError as error:
                    assert error.response["Error"]["Code"] in (
                        "PreconditionFailed",
                        "ConditionalCheckFailedException",
                    ), error
                    return 0

            winners.append(sum(pool.map(attempt, range(WRITERS))))
    return winners


def test_if_none_match_puts_have_one_winner_and_leave_one_version(atomic_moto):
    s3 = _client("s3", atomic_moto)
    s3.create_bucket(Bucket="race")
    s3.put_bucket_versioning(Bucket="race", VersioningConfiguration={"Status": "Enabled"})
    winners = _race(
        lambda r, w: s3.put_object(
            Bucket="race", Key=f"k{r}", Body=f"writer {w}".encode() * 100, IfNoneMatch="*"
        )
    )
    versions = s3.list_object_versions(Bucket="race")["Versions"]
    assert winners == [1] * ROUNDS
    assert sorted(v["Key"] for v in versions) == sorted(f"k{r}" for r in range(ROUNDS))


def test_conditional_put_items_have_one_winner(atomic_moto):
    dynamodb = _client("dynamodb", atomic_moto)
    dynamodb.create_table(
        TableName="race",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    winners = _race(
        lambda r, w: dynamodb.put_item(
            TableName="race",
            Item={"k": {"S": f"k{r}"}, "writer": {"N": str(w)}},
            ConditionExpression="attribute_not_exists(k)",
        )
    )
    assert winners == [1] * ROUNDS
    assert dynamodb.scan(TableName="race", Select="COUNT")["Count"] == ROUNDS


def test_bodies_pass_through_whole_and_answers_carry_the_mark(atomic_moto):
    s3 = _client("s3", atomic_moto)
    s3.create_bucket(Bucket="bodies")
    body = bytes(range(256)) * 4096  # 1 MiB
    s3.put_object(Bucket="bodies", Key="k", Body=body)
    answer = s3.get_object(Bucket="bodies", Key="k")
    assert answer["Body"].read() == body
    assert (
        answer["ResponseMetadata"]["HTTPHeaders"][moto_server.MARK_HEADER] == moto_server.MARK_VALUE
    )


def test_a_plain_moto_server_is_named_as_such(private_services, monkeypatch):
    _moto_started_with(
        monkeypatch,
        lambda port: [sys.executable, "-m", "moto.server", "-H", config.LOCALHOST, "-p", str(port)],
    )
    (state,) = services.status(["moto"])
    assert "WITHOUT atomic writes" in state.identity and "make services" in state.identity


# ---------------------------------------------------------------------------------------------
# The journal: state that survives a restart
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def durable_moto(private_services, monkeypatch):
    """The workbook's moto service with WORKBOOK_MOTO_DURABLE=1 (private port and state)."""
    monkeypatch.setenv("WORKBOOK_MOTO_DURABLE", "1")
    assert services.up(["moto"], quiet=True) == ["moto"]
    return config.moto_endpoint()


def _restart() -> str:
    """Stop moto and start it again, as the torture run does; return what its log says of the replay."""
    assert services.down(["moto"], quiet=True) == ["moto"]
    assert services.up(["moto"], quiet=True) == ["moto"]
    return [
        line
        for line in services.SERVICES["moto"].log_file.read_text().splitlines()
        if line.startswith("journal:")
    ][-1]


def _s3_state(s3) -> dict:
    """Every bucket's versioning, every version of every key in list order (body, not id: ids are
    moto's to choose again), every delete marker, and each current object with its metadata."""
    state = {}
    for bucket in sorted(b["Name"] for b in s3.list_buckets()["Buckets"]):
        listing = s3.list_object_versions(Bucket=bucket)
        state[bucket] = {
            "versioning": s3.get_bucket_versioning(Bucket=bucket).get("Status"),
            "versions": [
                (
                    v["Key"],
                    v["IsLatest"],
                    v["ETag"],
                    s3.get_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])[
                        "Body"
                    ].read(),
                )
                for v in listing.get("Versions", [])
            ],
            "delete markers": [(m["Key"], m["IsLatest"]) for m in listing.get("DeleteMarkers", [])],
            "objects": {
                o["Key"]: (
                    s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read(),
                    s3.head_object(Bucket=bucket, Key=o["Key"])["Metadata"],
                )
                for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])
            },
        }
    return state


def _dynamodb_state(dynamodb) -> dict:
    return {
        table: sorted(dynamodb.scan(TableName=table)["Items"], key=lambda item: item["k"]["S"])
        for table in dynamodb.list_tables()["TableNames"]
    }


def test_a_durable_moto_keeps_its_state_across_a_restart(durable_moto):
    s3, dynamodb = _client("s3", durable_moto), _client("dynamodb", durable_moto)
    s3.create_bucket(Bucket="kept")
    s3.put_bucket_versioning(Bucket="kept", VersioningConfiguration={"Status": "Enabled"})
    first = s3.put_object(Bucket="kept", Key="log/0.json", Body=b"v0", IfNoneMatch="*")["VersionId"]
    for n in range(1, 4):
        s3.put_object(Bucket="kept", Key="log/0.json", Body=f"v{n}".encode())
    with pytest.raises(botocore.exceptions.ClientError, match="PreconditionFailed"):
        s3.put_object(Bucket="kept", Key="log/0.json", Body=b"refused", IfNoneMatch="*")
    s3.put_object(
        Bucket="kept", Key="odd name ü+%.txt", Body=b"odd", Metadata={"with_underscore": "1"}
    )
    s3.put_object(Bucket="kept", Key="gone", Body=b"soon deleted")
    s3.delete_object(Bucket="kept", Key="gone")  # a delete marker
    s3.copy_object(
        Bucket="kept",
        Key="copy-of-v0",
        CopySource={"Bucket": "kept", "Key": "log/0.json", "VersionId": first},
    )
    s3.delete_object(Bucket="kept", Key="log/0.json", VersionId=first)  # this version, for good
    s3.create_bucket(Bucket="plain")
    big = bytes(range(256)) * (11 * 2**12)  # 11 MiB: three parts
    s3.upload_fileobj(
        io.BytesIO(big),
        "plain",
        "big",
        Config=boto3.s3.transfer.TransferConfig(
            multipart_threshold=5 * 2**20, multipart_chunksize=5 * 2**20
        ),
    )
    dynamodb.create_table(
        TableName="items",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(3):
        dynamodb.put_item(
            TableName="items",
            Item={"k": {"S": f"k{n}"}, "n": {"N": str(n)}},
            ConditionExpression="attribute_not_exists(k)",
        )
    dynamodb.update_item(
        TableName="items",
        Key={"k": {"S": "k1"}},
        UpdateExpression="SET n = n + :ten",
        ExpressionAttributeValues={":ten": {"N": "10"}},
    )
    dynamodb.delete_item(TableName="items", Key={"k": {"S": "k2"}})
    before = _s3_state(s3), _dynamodb_state(dynamodb)
    assert [body for key, _, _, body in before[0]["kept"]["versions"] if key == "log/0.json"] == [
        b"v3",
        b"v2",
        b"v1",
    ]
    assert (
        before[0]["plain"]["objects"]["big"][0] == big
        and before[0]["kept"]["objects"]["copy-of-v0"][0] == b"v0"
    )

    replayed = _restart()

    assert (_s3_state(s3), _dynamodb_state(dynamodb)) == before
    assert "failed" not in replayed and "cut-off" not in replayed, replayed


def test_a_record_cut_off_by_a_kill_is_dropped_and_the_rest_replayed(durable_moto):
    s3 = _client("s3", durable_moto)
    s3.create_bucket(Bucket="cut")
    s3.put_object(Bucket="cut", Key="whole", Body=b"whole")
    journal = services.moto_journal()
    whole = journal.read_bytes()
    half_a_record = whole.splitlines(keepends=True)[-1][:40]
    assert services.down(["moto"], quiet=True) == ["moto"]
    journal.write_bytes(
        whole + half_a_record
    )  # as if killed in the middle of writing the next write down

    assert services.up(["moto"], quiet=True) == ["moto"]

    assert s3.get_object(Bucket="cut", Key="whole")["Body"].read() == b"whole"
    assert journal.read_bytes() == whole, (
        "the cut-off record is gone, so the next one starts on a line of its own"
    )
    s3.put_object(Bucket="cut", Key="after", Body=b"after")
    replayed = _restart()
    assert s3.get_object(Bucket="cut", Key="after")["Body"].read() == b"after"
    assert replayed.startswith("journal: replayed 3 writes") and "failed" not in replayed, replayed


def test_reset_empties_the_journal_running_or_not(durable_moto):
    s3 = _client("s3", durable_moto)
    s3.create_bucket(Bucket="wiped")
    services.reset(["moto"])
    assert services.moto_journal().read_bytes() == b""
    s3.create_bucket(Bucket="wiped-later")
    assert services.down(["moto"], quiet=True) == ["moto"]
    services.reset(["moto"])
    assert not services.moto_journal().exists()
    assert services.up(["moto"], quiet=True) == ["moto"]
    assert s3.list_buckets()["Buckets"] == []


def test_without_the_variable_moto_keeps_no_journal(private_services, monkeypatch):
    monkeypatch.delenv("WORKBOOK_MOTO_DURABLE", raising=False)
    assert "--journal" not in services.SERVICES["moto"].command(5050)
    monkeypatch.setenv("WORKBOOK_MOTO_DURABLE", "1")
    assert services.SERVICES["moto"].command(5050)[-2:] == [
        "--journal",
        str(services.moto_journal()),
    ]


def test_the_remembered_lookups_apply_to_the_pinned_moto_and_answer_as_moto_does():
    """moto_speedups.remember_pure_lookups patches two of moto's functions by name: a moto release
    that renames them fails here, not silently in a slower server. The remembered answers are
    moto's own, asked twice (the second from memory)."""
    from datetime import datetime, timezone

    from moto.core.serialize import TimestampSerializer
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    assert moto_speedups.remember_pure_lookups() == [
        "DomainDispatcherApplication.get_backend_for_host",
        "TimestampSerializer._convert_timestamp_to_str",
    ]
    assert moto_speedups.remember_pure_lookups()  # a second call leaves the first patch in place
    assert TimestampSerializer._convert_timestamp_to_str.remembered
    assert DomainDispatcherApplication.get_backend_for_host.remembered
    original = TimestampSerializer._convert_timestamp_to_str.original
    serializer = TimestampSerializer("iso8601")
    when = datetime(2026, 11, 25, 23, 59, 58, 123456, tzinfo=timezone.utc)
    for value, style in (
        (when, "iso8601"),
        (when, "rfc822"),
        ("2026-11-25T23:59:58.000Z", "iso8601"),
        (1795650000, "unixtimestamp"),
    ):
        first = serializer._convert_timestamp_to_str(value, style)
        assert serializer._convert_timestamp_to_str(value, style) == first
        assert first == original(serializer, value, style)
    assert serializer._convert_timestamp_to_str(when, "iso8601") == "2026-11-25T23:59:58.123456Z"
    dispatcher = DomainDispatcherApplication(create_backend_app)
    for host in (
        "s3.us-east-1.amazonaws.com",
        "dynamodb.us-east-1.amazonaws.com",
        "s3",
        "moto_api",
        None,
    ):
        answer = dispatcher.get_backend_for_host(host)
        assert (
            dispatcher.get_backend_for_host(host)
            == answer
            == DomainDispatcherApplication.get_backend_for_host.original(dispatcher, host)
        )
    assert dispatcher.get_backend_for_host("s3.us-east-1.amazonaws.com") == "s3"
    assert dispatcher.get_backend_for_host("dynamodb.us-east-1.amazonaws.com") == "dynamodb"


def test_the_narrowed_listings_and_queries_answer_as_moto_does(monkeypatch):
    """moto_speedups.look_only_where_asked makes moto's S3 listings and DynamoDB queries look only
    under the prefix or in the partition asked for. On a bucket with versions, delete markers and
    keys that share the prefix's first letters, and a lock table with several partitions, every
    answer equals what moto's own function gives, and each patch applies to the pinned moto."""
    from moto import settings as moto_settings
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table
    from moto.s3.models import S3Backend, s3_backends
    from werkzeug.test import Client

    monkeypatch.setattr(
        moto_settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf")
    )  # another test may have imported moto with it at 0
    client = Client(moto_server.application())
    assert moto_speedups.look_only_where_asked() == [
        "S3Backend.list_object_versions",
        "S3Backend.list_objects",
        "Table.query",
    ]
    signed = "AWS4-HMAC-SHA256 Credential=a/20261126/us-east-1/{}/aws4_request, SignedHeaders=host, Signature=0"
    s3_headers = {"Host": "localhost", "Authorization": signed.format("s3")}
    bucket = f"narrowed-{uuid.uuid4().hex[:8]}"
    assert client.put(f"/{bucket}", headers=s3_headers).status_code == 200
    versioning = b"<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>"
    assert (
        client.put(f"/{bucket}?versioning", data=versioning, headers=s3_headers).status_code == 200
    )
    keys = [
        "t/_delta_log/0.json",
        "t/_delta_log/1.json",
        "t/_delta_log/.tmp/1.json.x",
        "t/part-0.parquet",
        "t2/_delta_log/0.json",
        "t-other/a",
        "u/_delta_log/0.json",
        "top",
    ]
    for round_ in range(2):
        for key in keys:
            assert (
                client.put(
                    f"/{bucket}/{key}", data=f"{key} {round_}".encode(), headers=s3_headers
                ).status_code
                == 200
            )
    assert (
        client.delete(f"/{bucket}/t/_delta_log/1.json", headers=s3_headers).status_code == 204
    )  # a delete marker

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    fake_bucket = backend.get_bucket(bucket)

    def versions_of(answer):
        listed, prefixes, markers, next_key, next_version = answer
        return (
            [(v.name, v.version_id, v.is_latest) for v in listed],
            prefixes,
            [(m.name, m.version_id) for m in markers],
            next_key,
            next_version,
        )

    def objects_of(answer):
        listed, prefixes, truncated, marker = answer
        return [v.name for v in listed], list(prefixes), truncated, marker

    narrowed, original = S3Backend.list_object_versions, S3Backend.list_object_versions.original
    for prefix in ("t", "t/", "t/_delta_log/", "t/_delta_log/1", "t2/", "nothing/", ""):
        for delimiter in (None, "/"):
            for max_keys in (1000, 2):
                asked = dict(delimiter=delimiter, max_keys=max_keys, prefix=prefix)
                assert versions_of(narrowed(backend, bucket, **asked)) == versions_of(
                    original(backend, bucket, **asked)
                ), asked
            asked = dict(prefix=prefix, delimiter=delimiter, marker=None, max_keys=2)
            assert objects_of(S3Backend.list_objects(backend, fake_bucket, **asked)) == objects_of(
                S3Backend.list_objects.original(backend, fake_bucket, **asked)
            ), asked
    assert versions_of(narrowed(backend, bucket, prefix="t/_delta_log/"))[2] == [
        ("t/_delta_log/1.json", fake_bucket.keys.getlist("t/_delta_log/1.json")[-1].version_id)
    ]

    dynamodb_headers = {
        "Host": "localhost",
        "Authorization": signed.format("dynamodb"),
        "Content-Type": "application/x-amz-json-1.0",
    }

    def dynamodb(action: str, body: dict) -> None:
        answer = client.post(
            "/",
            data=json.dumps(body),
            headers={**dynamodb_headers, "X-Amz-Target": f"DynamoDB_20120810.{action}"},
        )
        assert answer.status_code == 200, answer.get_data(as_text=True)

    lock_table = f"narrowed-{uuid.uuid4().hex[:8]}"
    dynamodb(
        "CreateTable",
        {
            "TableName": lock_table,
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": [
                {"AttributeName": "tablePath", "KeyType": "HASH"},
                {"AttributeName": "fileName", "KeyType": "RANGE"},
            ],
            "AttributeDefinitions": [
                {"AttributeName": "tablePath", "AttributeType": "S"},
                {"AttributeName": "fileName", "AttributeType": "S"},
            ],
        },
    )
    for path in ("s3://b/t", "s3://b/t/", "s3://b/t2"):
        for version in range(4):
            dynamodb(
                "PutItem",
                {
                    "TableName": lock_table,
                    "Item": {
                        "tablePath": {"S": path},
                        "fileName": {"S": f"{version:020d}.json"},
                        "complete": {"S": "true"},
                    },
                },
            )
    table = dynamodb_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].get_table(lock_table)

    def items_of(answer):
        found, scanned, last = answer
        return [item.to_json() for item in found], scanned, last

    for path in ("s3://b/t", "s3://b/t/", "s3://b/none"):
        for comparison, values, forward, limit in (
            (None, [], False, 1),
            ("BEGINS_WITH", ["0000"], True, 10),
            ("GT", ["00000000000000000001.json"], True, 2),
        ):
            asked = (
                DynamoType({"S": path}),
                comparison,
                [DynamoType({"S": v}) for v in values],
                limit,
                None,
                forward,
                None,
            )
            assert items_of(Table.query(table, *asked)) == items_of(
                Table.query.original(table, *asked)
            ), asked
    latest = Table.query(table, DynamoType({"S": "s3://b/t"}), None, [], 1, None, False, None)[0]
    assert [item.to_json()["Attributes"]["fileName"] for item in latest] == [
        {"S": "00000000000000000003.json"}
    ]
