"""deltalake's S3 DynamoDB log store cannot repair a commit whose writer died between copying its
staged file to ``N.json`` and completing its DynamoDB item: every later open and write of the
table fails with "version N already exists".

Run it (one environment)::

    pip install deltalake==1.5.1 pyarrow "moto[server]"
    python repro.py

or with deltalake in one environment and moto in another::

    pip install deltalake==1.5.1 pyarrow            # environment A
    pip install "moto[server]"                      # environment B
    A/bin/python repro.py --moto-python B/bin/python

The script starts ``python -m moto.server`` (S3 + DynamoDB) on 127.0.0.1, on a free port, with
the ``--moto-python`` interpreter (default: the one running the script), and stops it at exit.
That interpreter also runs this file's ``--admin`` commands, which create the bucket and the
lock table and read or change S3 objects and DynamoDB items with boto3 (a dependency of moto).

What it does, with the DynamoDB log store (``AWS_S3_LOCKING_PROVIDER=dynamodb``):

1. creates a table (version 0) and appends to it (version 1); both commits go through the lock
   table, so its item for version 1 is complete;
2. puts back the state a writer of version 1 leaves when it dies after copying its staged commit
   ``_delta_log/_commit_<uuid>.json.tmp`` to ``_delta_log/00000000000000000001.json`` and before
   deleting the staged file and marking the item complete: the staged file (same bytes as
   ``1.json``) is there again, and the item says ``complete = false``, names that staged file as
   its ``tempPath`` and has no ``expireTime``. The log store commits in four steps (stage the
   commit, claim N with a conditional PutItem, copy the staged file to N.json then delete it,
   mark the item complete), so this state is exactly a crash between the copy and the delete;
3. opens the table three times and appends once, as the next reader or writer would. Each open
   finds the incomplete item and "repairs" it by moving the staged file to ``1.json`` again;
4. deletes the staged file and opens once more (the known way out, shown for information).

Exit codes: 1 the bug is present (the opens fail with "version 1 already exists"), 0 the opens
repair the item and read the table, 2 the script could not run (a package is missing, moto did
not start, or an unexpected outcome), 3 not applicable: this deltalake does not use DynamoDB for
its S3 commits (deltalake 1.6.1 and later removed the DynamoDB log store and ignore its options).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.request
import uuid

BUCKET = "repro"
PREFIX = "table"
TABLE_URI = f"s3://{BUCKET}/{PREFIX}"
LOCK_TABLE = "delta_log"
REGION = "us-east-1"
WEDGED_VERSION = 1
OPENS = 3
ROWS_PER_BATCH = 10
MOTO_START_TIMEOUT = 60.0


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


# ---------------------------------------------------------------------------------------------
# moto: started with --moto-python, driven through this file's --admin commands (boto3)
# ---------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_moto(python: str) -> str:
    """Start moto's server on 127.0.0.1 with ``python``; wait (bounded) until it answers; stop it
    at exit. Returns its endpoint."""
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")  # not a pipe: moto logs every request, a full pipe would block it
    server = subprocess.Popen([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, text=True)
    atexit.register(stop, server)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + MOTO_START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise CannotRun(f"moto's server exited ({server.returncode}): {log.read().strip()[-600:]} "
                            f'(is "moto[server]" installed for {python}?)')
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


def admin(python: str, endpoint: str, command: str) -> dict:
    """Run one ``--admin`` command of this file with the moto interpreter; its JSON answer."""
    done = subprocess.run([python, __file__, "--admin", endpoint, command],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CannotRun(f"--admin {command} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_admin(endpoint: str, command: str) -> dict:
    """The ``--admin`` side, run by the moto interpreter (which has boto3)."""
    import boto3

    clients = {service: boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                                     aws_access_key_id="test", aws_secret_access_key="test")
               for service in ("s3", "dynamodb")}
    return ADMIN_COMMANDS[command](clients["s3"], clients["dynamodb"])


def setup(s3, dynamodb) -> dict:
    """The bucket, and the lock table as the log store expects it (tablePath, fileName); moto's version."""
    import moto

    s3.create_bucket(Bucket=BUCKET)
    dynamodb.create_table(
        TableName=LOCK_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in ("tablePath", "fileName")],
        KeySchema=[{"AttributeName": "tablePath", "KeyType": "HASH"}, {"AttributeName": "fileName", "KeyType": "RANGE"}])
    return {"moto": moto.__version__}


def state(s3, dynamodb) -> dict:
    """The table's log files in S3 and its lock items in DynamoDB."""
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/_delta_log/").get("Contents", [])
    items = dynamodb.scan(TableName=LOCK_TABLE)["Items"]
    return {"log": sorted(obj["Key"].removeprefix(f"{PREFIX}/") for obj in listed),
            "items": sorted(({name: next(iter(value.values())) for name, value in item.items()} for item in items),
                            key=lambda item: item["fileName"])}


def wedge(s3, dynamodb) -> dict:
    """Put back the state of a writer of WEDGED_VERSION killed between its copy and its cleanup."""
    file_name = f"{WEDGED_VERSION:020d}.json"
    items = [item for item in state(s3, dynamodb)["items"] if item["fileName"] == file_name]
    if not items:
        raise RuntimeError(f"no lock item for {file_name}")
    staged = f"_commit_{uuid.uuid4()}.json.tmp"
    s3.copy_object(Bucket=BUCKET, Key=f"{PREFIX}/_delta_log/{staged}",
                   CopySource={"Bucket": BUCKET, "Key": f"{PREFIX}/_delta_log/{file_name}"})
    dynamodb.update_item(
        TableName=LOCK_TABLE, Key={"tablePath": {"S": items[0]["tablePath"]}, "fileName": {"S": file_name}},
        UpdateExpression="SET complete = :incomplete, tempPath = :staged REMOVE expireTime",
        ExpressionAttributeValues={":incomplete": {"S": "false"}, ":staged": {"S": staged}})
    return {"staged": f"_delta_log/{staged}"}


def delete_staged(s3, dynamodb) -> dict:
    """Delete every staged commit file of the table (the way out of the wedge)."""
    staged = [key for key in state(s3, dynamodb)["log"] if key.endswith(".json.tmp")]
    for key in staged:
        s3.delete_object(Bucket=BUCKET, Key=f"{PREFIX}/{key}")
    return {"deleted": staged}


ADMIN_COMMANDS = {"setup": setup, "state": state, "wedge": wedge, "delete-staged": delete_staged}


# ---------------------------------------------------------------------------------------------
# deltalake: the writer and reader under test
# ---------------------------------------------------------------------------------------------


def storage_options(endpoint: str) -> dict[str, str]:
    return {
        "AWS_REGION": REGION, "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_S3_LOCKING_PROVIDER": "dynamodb", "DELTA_DYNAMO_TABLE_NAME": LOCK_TABLE,
        "AWS_ENDPOINT_URL_DYNAMODB": endpoint,
    }


def batch(number: int):
    import pyarrow as pa

    return pa.table({"batch": [number] * ROWS_PER_BATCH, "row": list(range(ROWS_PER_BATCH))})


def first_line(error: Exception) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


def open_table(options: dict) -> tuple[int | None, int | None, str | None]:
    """(version, rows, None) or (None, None, error)."""
    from deltalake import DeltaTable

    try:
        table = DeltaTable(TABLE_URI, storage_options=options)
        return table.version(), table.to_pyarrow_table().num_rows, None
    except Exception as error:  # the failure is the observation
        return None, None, first_line(error)


def append(options: dict, number: int) -> str | None:
    from deltalake import write_deltalake

    try:
        write_deltalake(TABLE_URI, batch(number), mode="append", storage_options=options)
    except Exception as error:  # the failure is the observation
        return first_line(error)
    return None


def show_state(moto_python: str, endpoint: str) -> dict:
    current = admin(moto_python, endpoint, "state")
    print(f"  S3 {TABLE_URI}/_delta_log: {', '.join(key.removeprefix('_delta_log/') for key in current['log'])}")
    for item in current["items"]:
        print(f"  DynamoDB item {item['fileName']}: complete={item['complete']}, tempPath={item.get('tempPath')}, "
              f"expireTime={item.get('expireTime', '-')}")
    return current


def reproduce(moto_python: str) -> int:
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # everything is local: no instance metadata lookups
    try:
        import deltalake
        import pyarrow
    except ImportError as missing:
        raise CannotRun(f"{missing}. Install the packages first: pip install deltalake pyarrow") from None
    print(f"deltalake {deltalake.__version__}, pyarrow {pyarrow.__version__}, Python {sys.version.split()[0]}")
    endpoint = start_moto(moto_python)
    print(f"moto {admin(moto_python, endpoint, 'setup')['moto']} serving S3 and DynamoDB at {endpoint}")
    options = storage_options(endpoint)

    write_table(options)
    if not show_state(moto_python, endpoint)["items"]:
        print("NOT APPLICABLE: this deltalake wrote no DynamoDB item, so it does not use the DynamoDB log store "
              "(deltalake 1.6.1 and later removed it and ignore AWS_S3_LOCKING_PROVIDER).")
        return 3
    staged = admin(moto_python, endpoint, "wedge")["staged"]
    print(f"writer of version {WEDGED_VERSION} 'died' after its copy: {staged} is back, the item is incomplete")
    show_state(moto_python, endpoint)

    opens = open_and_append(options)
    show_state(moto_python, endpoint)
    deleted = admin(moto_python, endpoint, "delete-staged")["deleted"]
    version, rows, error = open_table(options)
    print(f"after deleting {', '.join(deleted) or 'no staged file'}: open: " + (error or f"version {version}, {rows} rows"))
    show_state(moto_python, endpoint)
    return verdict(opens)


def write_table(options: dict) -> None:
    """Versions 0..WEDGED_VERSION, one batch each, through the log store."""
    for number in range(WEDGED_VERSION + 1):
        error = append(options, number)
        if error:
            raise CannotRun(f"writing batch {number} failed: {error}")
    print(f"table {TABLE_URI} written with AWS_S3_LOCKING_PROVIDER=dynamodb: versions 0..{WEDGED_VERSION}")


def open_and_append(options: dict) -> list[tuple[int | None, int | None, str | None]]:
    """What the next readers and a writer see: OPENS opens, then one append; the opens' results."""
    opens = [open_table(options) for _ in range(OPENS)]
    for number, (version, rows, error) in enumerate(opens, 1):
        print(f"open {number}: " + (error or f"version {version}, {rows} rows"))
    print(f"append: {append(options, WEDGED_VERSION + 1) or 'committed'}")
    return opens


def verdict(opens: list[tuple[int | None, int | None, str | None]]) -> int:
    """1 if every open failed with "already exists", 0 if every open read the whole table."""
    if all(error and "already exists" in error for _, _, error in opens):
        print(f"BUG PRESENT: every open fails with 'version {WEDGED_VERSION} already exists' although "
              f"{WEDGED_VERSION:020d}.json holds the commit; the repair takes the refused copy for an error.")
        return 1
    expected_rows = (WEDGED_VERSION + 1) * ROWS_PER_BATCH
    if all(error is None and version >= WEDGED_VERSION and rows >= expected_rows for version, rows, error in opens):
        print("OK: the opens repaired the incomplete item and read the table.")
        return 0
    raise CannotRun("unexpected outcome (neither the bug nor a repair): see the opens above")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moto-python", default=sys.executable, metavar="PATH",
                        help='Python interpreter with "moto[server]" installed (default: this one)')
    parser.add_argument("--admin", nargs=2, metavar=("ENDPOINT", "COMMAND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.admin:
        print(json.dumps(run_admin(*args.admin)))
        return 0
    try:
        return reproduce(args.moto_python)
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
