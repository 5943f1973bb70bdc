"""helpers/moto_server.py: conditional writes that arrive together have exactly one winner.

The server runs in a process of its own, started by helpers.services, with a very short thread
switch interval, which makes moto's check-then-write window easy to hit (plain moto 5.2.5 let
two writers win in about one round in ten of these, for S3 and DynamoDB alike). Outcomes are
read back from the store.
"""

import dataclasses
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import boto3
import botocore.config
import botocore.exceptions
import pytest

from helpers import config, moto_server, services

ROUNDS = 60
WRITERS = 8
FAST_SWITCHING = ("import sys; sys.setswitchinterval(1e-6); "
                  "from helpers.moto_server import main; main(['-H', '127.0.0.1', '-p', sys.argv[1]])")


def _moto_started_with(monkeypatch, command) -> str:
    """Start the workbook's moto service (private port and state, see ``private_services``) with
    another command, through helpers.services as ``make services`` would; return its endpoint."""
    monkeypatch.setitem(services.SERVICES, "moto", dataclasses.replace(services.SERVICES["moto"], command=command))
    assert services.up(["moto"], quiet=True) == ["moto"]
    return config.moto_endpoint()


@pytest.fixture
def atomic_moto(private_services, monkeypatch):
    """helpers/moto_server.py with a very short thread switch interval."""
    return _moto_started_with(monkeypatch, lambda port: [sys.executable, "-c", FAST_SWITCHING, str(port)])


def _client(service: str, endpoint: str):
    return boto3.client(service, endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                        region_name="us-east-1", config=botocore.config.Config(max_pool_connections=2 * WRITERS))


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
                    assert error.response["Error"]["Code"] in ("PreconditionFailed", "ConditionalCheckFailedException"), error
                    return 0

            winners.append(sum(pool.map(attempt, range(WRITERS))))
    return winners


def test_if_none_match_puts_have_one_winner_and_leave_one_version(atomic_moto):
    s3 = _client("s3", atomic_moto)
    s3.create_bucket(Bucket="race")
    s3.put_bucket_versioning(Bucket="race", VersioningConfiguration={"Status": "Enabled"})
    winners = _race(lambda r, w: s3.put_object(Bucket="race", Key=f"k{r}", Body=f"writer {w}".encode() * 100, IfNoneMatch="*"))
    versions = s3.list_object_versions(Bucket="race")["Versions"]
    assert winners == [1] * ROUNDS
    assert sorted(v["Key"] for v in versions) == sorted(f"k{r}" for r in range(ROUNDS))


def test_conditional_put_items_have_one_winner(atomic_moto):
    dynamodb = _client("dynamodb", atomic_moto)
    dynamodb.create_table(TableName="race", KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                          AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
    winners = _race(lambda r, w: dynamodb.put_item(TableName="race", Item={"k": {"S": f"k{r}"}, "writer": {"N": str(w)}},
                                                   ConditionExpression="attribute_not_exists(k)"))
    assert winners == [1] * ROUNDS
    assert dynamodb.scan(TableName="race", Select="COUNT")["Count"] == ROUNDS


def test_bodies_pass_through_whole_and_answers_carry_the_mark(atomic_moto):
    s3 = _client("s3", atomic_moto)
    s3.create_bucket(Bucket="bodies")
    body = bytes(range(256)) * 4096  # 1 MiB
    s3.put_object(Bucket="bodies", Key="k", Body=body)
    answer = s3.get_object(Bucket="bodies", Key="k")
    assert answer["Body"].read() == body
    assert answer["ResponseMetadata"]["HTTPHeaders"][moto_server.MARK_HEADER] == moto_server.MARK_VALUE


def test_a_plain_moto_server_is_named_as_such(private_services, monkeypatch):
    _moto_started_with(monkeypatch, lambda port: [sys.executable, "-m", "moto.server", "-H", config.LOCALHOST, "-p", str(port)])
    (state,) = services.status(["moto"])
    assert "WITHOUT atomic writes" in state.identity and "make services" in state.identity
