"""moto's server lets two concurrent conditional writes both win: two PutObject with
``If-None-Match: *`` on one new key both answered 200 (S3), two PutItem with
``attribute_not_exists`` on one new key both accepted (DynamoDB).

Run it::

    pip install "moto[server]"      # brings boto3
    python repro.py

The script starts moto's server through its own entry point (``moto.server.main``, as ``python
-m moto.server -H 127.0.0.1 -p PORT``) in a process of its own, on 127.0.0.1 and a free port, at
Python's default thread switch interval. Before ``main`` runs, that process wraps the one step
that comes after the condition check and before the write, and makes it a barrier of two:

- S3: ``S3Backend.put_object``, which ``S3Response.put_object`` calls once its ``If-None-Match: *``
  check has found no object;
- DynamoDB: ``get_filter_expression``, which ``Table.put_item`` calls after it has read the
  current item and before it evaluates the condition against it and stores the new item.

Each round, two client threads send one conditional write each of the same new key. The server
holds the first request that reaches the wrapped step until the second reaches it too, then lets
both go on. A server whose conditional write is atomic never lets the second request reach that
step while the first is held (it refuses it, or blocks it on a lock): the hold then times out
after HOLD_TIMEOUT seconds, the first request goes on alone, and the round has one winner. The
outcome depends on moto's code only, not on how the threads happen to be scheduled.

Without moto's internals touched, ``python repro.py --no-barrier`` runs moto's server as it is
(``python -m moto.server``) and releases 8 client threads per round together (``--writers``), up to
400 rounds per service (``--rounds``), stopping a service at its first round with two winners. Then
the race depends on thread scheduling: it shows the bug when it sees two winners, and a run that
sees none proves nothing.

Exit codes: 1 the bug is present (a round had two winners), 0 every round of both services had
exactly one winner, 2 the script could not run (a package is missing, moto did not start, the
step to wrap is no longer there, or a write failed for another reason).
"""

from __future__ import annotations

import argparse
import atexit
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

ROUNDS = 3
NO_BARRIER_ROUNDS = 400
NO_BARRIER_WRITERS = 8
HOLD_TIMEOUT = 10.0
BUCKET = "race"
TABLE = "race"
REGION = "us-east-1"
MOTO_START_TIMEOUT = 60.0
SERVER = r'''
import sys, threading
import moto.dynamodb.models.table as dynamodb_table
import moto.s3.models as s3_models
from moto.server import main

hold_timeout = float(sys.argv[1])
barrier = threading.Barrier(2)

def hold(what):
    """Wait until a second request reaches the same step, at most hold_timeout seconds."""
    try:
        if barrier.wait(timeout=hold_timeout) == 0:  # one of the two reports it
            sys.stderr.write(f"HOLD {what}: two requests reached it and were released together\n")
    except threading.BrokenBarrierError:
        barrier.reset()
        sys.stderr.write(f"HOLD {what}: timed out with one request\n")
    sys.stderr.flush()

s3_put_object = s3_models.S3Backend.put_object
def put_object(self, bucket_name, key_name, *args, **kwargs):
    if key_name.startswith("race-"):
        hold("S3Backend.put_object")
    return s3_put_object(self, bucket_name, key_name, *args, **kwargs)
s3_models.S3Backend.put_object = put_object

get_filter_expression = dynamodb_table.get_filter_expression
def held_get_filter_expression(expression, *args, **kwargs):
    if expression == "attribute_not_exists(k)":
        hold("dynamodb Table.put_item, between get_item and the condition")
    return get_filter_expression(expression, *args, **kwargs)
dynamodb_table.get_filter_expression = held_get_filter_expression

main(["-H", "127.0.0.1", "-p", sys.argv[2]])
'''
"""moto's own command line, after wrapping the step between each conditional write's check and its
write (the names below are moto 5.x's; if they are gone, the server fails to start: exit 2)."""


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(log, barrier: bool = True) -> str:
    """Start moto's server on 127.0.0.1 (with the barrier of SERVER, or as it is); wait (bounded)
    until it answers; stop it at exit."""
    port = free_port()
    command = ([sys.executable, "-c", SERVER, repr(HOLD_TIMEOUT), str(port)] if barrier
               else [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)])
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
    atexit.register(stop, server)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + MOTO_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise CannotRun(f"moto's server exited ({server.returncode}): {log.read().strip()[-600:]}")
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
            return endpoint
        except OSError:
            time.sleep(0.1)  # waiting for the server to listen, not deciding any outcome
    raise CannotRun(f"moto's server did not answer at {endpoint} within {MOTO_START_TIMEOUT:.0f} s")


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def client(service: str, endpoint: str):
    import boto3
    import botocore.config

    return boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id="test", aws_secret_access_key="test",
                        config=botocore.config.Config(retries={"max_attempts": 1},  # one attempt: one answer
                                                      read_timeout=3 * HOLD_TIMEOUT))


class S3Race:
    """Conditional PutObject (If-None-Match: *) of one new key per round, in a versioned bucket."""

    name = "S3 PutObject If-None-Match: *"
    refusal = "PreconditionFailed"

    def __init__(self, endpoint: str) -> None:
        self.s3 = client("s3", endpoint)
        self.s3.create_bucket(Bucket=BUCKET)
        self.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})

    def write(self, round_: int, writer: int) -> None:
        self.s3.put_object(Bucket=BUCKET, Key=f"race-{round_}", Body=f"writer {writer}".encode(), IfNoneMatch="*")

    def stored(self, round_: int) -> str:
        versions = self.s3.list_object_versions(Bucket=BUCKET, Prefix=f"race-{round_}").get("Versions", [])
        bodies = [self.s3.get_object(Bucket=BUCKET, Key=v["Key"], VersionId=v["VersionId"])["Body"].read().decode()
                  for v in versions]
        return f"race-{round_} holds {len(versions)} object version(s), written by (oldest first): {', '.join(reversed(bodies))}"


class DynamoDBRace:
    """Conditional PutItem (attribute_not_exists) of one new key per round."""

    name = "DynamoDB PutItem attribute_not_exists(k)"
    refusal = "ConditionalCheckFailedException"

    def __init__(self, endpoint: str) -> None:
        self.dynamodb = client("dynamodb", endpoint)
        self.dynamodb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                                   KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                                   AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}])

    def write(self, round_: int, writer: int) -> None:
        self.dynamodb.put_item(TableName=TABLE, Item={"k": {"S": f"race-{round_}"}, "writer": {"N": str(writer)}},
                               ConditionExpression="attribute_not_exists(k)")

    def stored(self, round_: int) -> str:
        item = self.dynamodb.get_item(TableName=TABLE, Key={"k": {"S": f"race-{round_}"}})["Item"]
        return f"race-{round_} holds the write of writer {item['writer']['N']}"


def run_round(race, round_: int, writers: int = 2) -> list[int]:
    """``writers`` threads, released together, one conditional write each of the same new key: the
    writers told they won."""
    import botocore.exceptions

    outcome: dict[int, object] = {}
    start = threading.Barrier(writers)

    def attempt(writer: int) -> None:
        start.wait()
        try:
            race.write(round_, writer)
            outcome[writer] = "won"
        except botocore.exceptions.ClientError as error:
            outcome[writer] = "refused" if error.response["Error"]["Code"] == race.refusal else error
        except Exception as error:  # reported as "could not run" below
            outcome[writer] = error

    threads = [threading.Thread(target=attempt, args=(writer,)) for writer in range(1, writers + 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [value for value in outcome.values() if isinstance(value, Exception)]
    if errors:
        raise CannotRun(f"{race.name}: a write failed for another reason: {errors[0]!r}")
    return sorted(writer for writer, value in outcome.items() if value == "won")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, help=f"rounds per service (default {ROUNDS}; {NO_BARRIER_ROUNDS} with --no-barrier)")
    parser.add_argument("--no-barrier", action="store_true",
                        help="run moto's server unmodified; the race then depends on thread scheduling")
    parser.add_argument("--writers", type=int,
                        help=f"writers per round (default 2; {NO_BARRIER_WRITERS} with --no-barrier)")
    args = parser.parse_args(argv)
    barrier = not args.no_barrier
    rounds = args.rounds or (ROUNDS if barrier else NO_BARRIER_ROUNDS)
    writers = args.writers or (2 if barrier else NO_BARRIER_WRITERS)
    try:
        import boto3
        import moto
    except ImportError as missing:
        print(f'cannot run: {missing}. Install the package first: pip install "moto[server]"', file=sys.stderr)
        return 2
    print(f"moto {moto.__version__}, boto3 {boto3.__version__}, Python {sys.version.split()[0]} "
          f"(switch interval {sys.getswitchinterval()} s)")
    doubled = played = 0
    with tempfile.TemporaryFile(mode="w+") as log:  # not a pipe: moto logs every request, a full pipe would block it
        try:
            endpoint = start_moto(log, barrier)
            print(f"moto server at {endpoint} ({'the step between check and write made a barrier of two' if barrier else 'unmodified'}); "
                  f"{writers} writers per round, {rounds} rounds per service"
                  + ("" if barrier else " at most, a service stopping at its first round with two winners"))
            for race in (S3Race(endpoint), DynamoDBRace(endpoint)):
                for round_ in range(1, rounds + 1):
                    winners = run_round(race, round_, writers)
                    played += 1
                    if not winners:
                        raise CannotRun(f"{race.name}: round {round_} had no winner at all")
                    doubled += len(winners) > 1
                    if barrier or len(winners) > 1:
                        print(f"{race.name}: round {round_}: {len(winners)} writer(s) told their write succeeded; "
                              f"{race.stored(round_)}")
                    if not barrier and len(winners) > 1:
                        break
                else:
                    if not barrier:
                        print(f"{race.name}: {rounds} rounds, one winner each")
        except CannotRun as problem:
            print(f"cannot run: {problem}", file=sys.stderr)
            return 2
        except Exception:  # anything unforeseen is "could not run", never taken for the bug
            traceback.print_exc()
            print("cannot run: unexpected error (above)", file=sys.stderr)
            return 2
        log.seek(0)
        server_log = log.read()
    if barrier:
        print(f"server: {server_log.count('released together')} times two requests were held at the step between "
              f"check and write and released together; {server_log.count('timed out with one')} times one request "
              "waited there alone")
    if doubled:
        print(f"BUG PRESENT: in {doubled} of {played} rounds {'both' if writers == 2 else 'two or more'} conditional "
              "writes of one new key passed the condition and were accepted.")
        return 1
    print("OK: every round had exactly one winner."
          + ("" if barrier else " (Without the barrier this can also mean the race was missed.)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
