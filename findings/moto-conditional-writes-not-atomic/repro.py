"""moto's server lets two concurrent conditional writes both win: two PutObject with
``If-None-Match: *`` on one new key both answered 200 (S3), two PutItem with
``attribute_not_exists`` on one new key both accepted (DynamoDB).

Run it::

    pip install "moto[server]"      # brings boto3
    python repro.py

The script starts ``python -m moto.server``'s own entry point (``moto.server.main``) on
127.0.0.1, on a free port, in a process of its own, waits until it answers and stops it at exit.
That process runs with a short thread switch interval (``sys.setswitchinterval(1e-6)``, option
``--switch-interval``): it changes nothing in what moto does, it only lets the server's request
threads interleave more often, so the window between moto's condition check and its write is hit
in a few rounds instead of rarely.

Each round, WRITERS threads (8) are released together by a barrier and each sends one
conditional write of the same new key (a new key per round). S3 and DynamoDB guarantee that
exactly one of them succeeds and the others get 412 PreconditionFailed /
ConditionalCheckFailedException. The script runs up to ROUNDS rounds (400) per service, stops a
service at its first round with more than one winner and reads that key back (S3: its object
versions, from a versioned bucket; DynamoDB: whose write the item holds).

Exit codes: 1 the bug is present (some round had two or more winners), 0 every round of both
services had exactly one winner, 2 the script could not run (a package is missing, moto did not
start, or a write failed for another reason).
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
from concurrent.futures import ThreadPoolExecutor

ROUNDS = 400
WRITERS = 8
SWITCH_INTERVAL = 1e-6
BUCKET = "race"
TABLE = "race"
REGION = "us-east-1"
MOTO_START_TIMEOUT = 60.0
SERVER = ("import sys; sys.setswitchinterval(float(sys.argv[1])); "
          "from moto.server import main; main(['-H', '127.0.0.1', '-p', sys.argv[2]])")
"""moto's own command line (``python -m moto.server -H 127.0.0.1 -p PORT``), after setting the
switch interval of the server process."""


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(switch_interval: float) -> str:
    """Start moto's server on 127.0.0.1; wait (bounded) until it answers; stop it at exit.
    Returns its endpoint."""
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")  # not a pipe: moto logs every request, a full pipe would block it
    server = subprocess.Popen([sys.executable, "-c", SERVER, repr(switch_interval), str(port)],
                              stdout=log, stderr=subprocess.STDOUT, text=True)
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
                        config=botocore.config.Config(max_pool_connections=2 * WRITERS,
                                                      retries={"max_attempts": 1}))  # one attempt: one answer


class S3Race:
    """Conditional PutObject (If-None-Match: *) of one new key per round, in a versioned bucket."""

    name = "S3 PutObject If-None-Match: *"
    refusal = "PreconditionFailed"

    def __init__(self, endpoint: str) -> None:
        self.s3 = client("s3", endpoint)
        self.s3.create_bucket(Bucket=BUCKET)
        self.s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})

    def write(self, round_: int, writer: int) -> None:
        self.s3.put_object(Bucket=BUCKET, Key=f"key-{round_}", Body=f"writer {writer}".encode(), IfNoneMatch="*")

    def stored(self, round_: int) -> str:
        versions = self.s3.list_object_versions(Bucket=BUCKET, Prefix=f"key-{round_}")["Versions"]
        bodies = [self.s3.get_object(Bucket=BUCKET, Key=v["Key"], VersionId=v["VersionId"])["Body"].read().decode()
                  for v in versions]
        return (f"key-{round_} holds {len(versions)} object version(s), written by (oldest first): "
                f"{', '.join(reversed(bodies))}")


class DynamoDBRace:
    """Conditional PutItem (attribute_not_exists) of one new key per round."""

    name = "DynamoDB PutItem attribute_not_exists"
    refusal = "ConditionalCheckFailedException"

    def __init__(self, endpoint: str) -> None:
        self.dynamodb = client("dynamodb", endpoint)
        self.dynamodb.create_table(TableName=TABLE, BillingMode="PAY_PER_REQUEST",
                                   KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
                                   AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}])

    def write(self, round_: int, writer: int) -> None:
        self.dynamodb.put_item(TableName=TABLE, Item={"k": {"S": f"key-{round_}"}, "writer": {"N": str(writer)}},
                               ConditionExpression="attribute_not_exists(k)")

    def stored(self, round_: int) -> str:
        item = self.dynamodb.get_item(TableName=TABLE, Key={"k": {"S": f"key-{round_}"}})["Item"]
        return f"key-{round_} holds the write of writer {item['writer']['N']}; the other winners' writes are gone"


def run_round(race, pool: ThreadPoolExecutor, round_: int) -> list[int]:
    """One round: WRITERS writers released together; the writers whose write was accepted."""
    barrier = threading.Barrier(WRITERS)

    def attempt(writer: int) -> int | None:
        import botocore.exceptions

        barrier.wait()
        try:
            race.write(round_, writer)
            return writer
        except botocore.exceptions.ClientError as error:
            if error.response["Error"]["Code"] != race.refusal:
                raise
            return None

    return [writer for writer in pool.map(attempt, range(WRITERS)) if writer is not None]


def race_until_two_win(race, rounds: int) -> tuple[int, list[int]] | None:
    """Rounds until one has more than one winner: (round, winners), or None after ``rounds``."""
    with ThreadPoolExecutor(WRITERS) as pool:
        for round_ in range(1, rounds + 1):
            winners = run_round(race, pool, round_)
            if not winners:
                raise CannotRun(f"{race.name}: round {round_} had no winner at all")
            if len(winners) > 1:
                return round_, winners
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"rounds per service at most (default {ROUNDS})")
    parser.add_argument("--switch-interval", type=float, default=SWITCH_INTERVAL,
                        help=f"the moto server's sys.setswitchinterval (default {SWITCH_INTERVAL}; Python's own is 0.005)")
    args = parser.parse_args(argv)
    try:
        import boto3
        import moto
    except ImportError as missing:
        print(f'cannot run: {missing}. Install the package first: pip install "moto[server]"', file=sys.stderr)
        return 2
    print(f"moto {moto.__version__}, boto3 {boto3.__version__}, Python {sys.version.split()[0]}")
    try:
        endpoint = start_moto(args.switch_interval)
        print(f"moto server at {endpoint}, switch interval {args.switch_interval} s; "
              f"{WRITERS} writers per round, up to {args.rounds} rounds per service")
        doubled = False
        for race in (S3Race(endpoint), DynamoDBRace(endpoint)):
            started = time.monotonic()
            found = race_until_two_win(race, args.rounds)
            took = time.monotonic() - started
            if found is None:
                print(f"{race.name}: exactly one winner in each of {args.rounds} rounds ({took:.1f} s)")
                continue
            round_, winners = found
            doubled = True
            print(f"{race.name}: round {round_}: {len(winners)} writers were told their write succeeded "
                  f"(writers {', '.join(map(str, winners))}) ({took:.1f} s); {race.stored(round_)}")
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2
    if doubled:
        print("BUG PRESENT: a conditional write that must have exactly one winner had more than one.")
        return 1
    print("OK: every round had exactly one winner.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
