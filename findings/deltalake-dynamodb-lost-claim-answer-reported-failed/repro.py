"""deltalake's S3 DynamoDB log store, when the answer to its claim of a version is lost: DynamoDB
applied the conditional PutItem that claims ``N.json``, the connection closed before the answer
arrived, the AWS SDK sent the PutItem again and DynamoDB refused it (ConditionalCheckFailedException:
the item exists). deltalake takes its own claim for another writer's. Its commit loop repairs that
claim (copies its own staged file to ``N.json``: the append is committed), then claims N+1 with the
same staged file, which the repair has deleted; the copy answers 404, read as "already moved", and
item N+1 is marked complete although ``N+1.json`` does not exist. From then on every writer with the
DynamoDB log store fails (``Invalid table version: N+1``). deltalake 1.2.0 and later also raise
``LogSegment end version N not the same as the specified end version N+1`` from the
``write_deltalake`` that committed the append; earlier releases return normally.

Run it (one environment)::

    pip install deltalake==1.5.1 pyarrow "moto[server]"
    python repro.py

or with deltalake in one environment and moto in another::

    A/bin/python repro.py --moto-python B/bin/python

The script starts ``python -m moto.server`` (S3 and DynamoDB) on 127.0.0.1, on a free port, with
the ``--moto-python`` interpreter (default: the one running the script); that interpreter also
runs this file's ``--admin`` commands (boto3: the bucket, the lock table, reading the log and the
lock items). deltalake reaches moto through a small HTTP relay of this script (a process of its
own, ``--relay``), which forwards every request unchanged, except one: once armed, the first
conditional ``PutItem`` of the lock item ``00000000000000000001.json`` that DynamoDB accepts. That
one it forwards, reads DynamoDB's whole answer, and closes deltalake's connection without passing
it on: an answer lost on the network. No step depends on timing. The script:

1. creates the table (version 0, one row) through the log store, relay unarmed;
2. arms the relay and appends 3 rows with one ``write_deltalake(..., mode="append")``, and prints
   the lock-table and ``_delta_log/`` writes the relay saw;
3. reads the log (with each commit's row counts) and the lock items from storage (boto3, not
   deltalake);
4. then a fresh writer appends one more row and a reader opens the table;
5. reads the log and the lock items again: the verdict is taken from this state.

With ``--app-transaction`` the append carries ``Transaction(app_id, 1)`` and, when it raises, the
script reloads the table and reads ``transaction_version(app_id)``: the check a job makes before it
reruns an append that failed (the workaround). ``--max-commit-retries N`` passes
``CommitProperties(max_commit_retries=N)``.

Exit codes: 1 the bug is present (the append is committed and the writer was told it failed, with
``--app-transaction`` unless its check finds it; or the append is committed more than once; or a
lock item is complete without its commit file; or the next append fails), 0 the append is
committed once, the writer learns it and the table takes the next append, 2 the script could not
run, 3 not applicable (this deltalake does not use DynamoDB for its S3 commits: 1.6.1 and later).
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from urllib.parse import unquote, urlparse

BUCKET = "repro"
PREFIX = "table"
TABLE_URI = f"s3://{BUCKET}/{PREFIX}"
LOCK_TABLE = "delta_log"
REGION = "us-east-1"
APP_ID = "repro-job"
APPENDED_ROWS = 3
"""The append whose claim's answer is lost writes x = 1, 2, 3 (the table's other commits, one row each)."""
CLAIMED = f"{1:020d}.json"
"""The lock item whose claim's answer the relay drops: version 1, the append."""
START_TIMEOUT = 60.0
CONTROL = "/relay-control/"
STAGED = re.compile(r"_commit_([0-9a-f]{8})[0-9a-f-]*\.json\.tmp")


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


# -- servers: moto, the relay, and the admin commands moto's interpreter runs (boto3) -----------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(command: list[str], port: int, what: str) -> None:
    """Start ``command`` (listening on ``port``), wait until it answers HTTP, stop it at exit."""
    log = tempfile.TemporaryFile(mode="w+")  # not a pipe: moto logs every request, a full pipe would block it
    try:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
    except OSError as error:
        raise CannotRun(f"{what} did not start ({error})") from None

    def stop() -> None:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=60)

    atexit.register(stop)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise CannotRun(f"{what} exited at start: {log.read().strip()[-600:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}{CONTROL}state", timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers (moto answers this path with an error of its own)
        except OSError:
            time.sleep(0.1)  # waiting for the server to listen, not deciding any outcome
    raise CannotRun(f"{what} did not answer on 127.0.0.1:{port} within {START_TIMEOUT:.0f} s")


def admin(python: str, endpoint: str, command: str) -> dict:
    """Run one ``--admin`` command of this file with the moto interpreter; its JSON answer."""
    done = subprocess.run([python, __file__, "--admin", endpoint, command], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CannotRun(f"--admin {command} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_admin(endpoint: str, command: str) -> dict:
    import boto3

    s3, dynamodb = (boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                                 aws_access_key_id="test", aws_secret_access_key="test") for service in ("s3", "dynamodb"))
    if command == "setup":
        import moto

        s3.create_bucket(Bucket=BUCKET)
        dynamodb.create_table(
            TableName=LOCK_TABLE, BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in ("tablePath", "fileName")],
            KeySchema=[{"AttributeName": "tablePath", "KeyType": "HASH"}, {"AttributeName": "fileName", "KeyType": "RANGE"}])
        return {"moto": moto.__version__}
    commits, staged = {}, []
    for obj in s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/_delta_log/").get("Contents", []):
        name = obj["Key"].rsplit("/", 1)[-1]
        if re.fullmatch(r"\d{20}\.json", name):
            body = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read().decode()
            adds = [json.loads(line)["add"] for line in body.splitlines() if line.strip() and "add" in json.loads(line)]
            commits[str(int(name[:20]))] = [json.loads(add.get("stats") or "{}").get("numRecords") for add in adds]
        elif STAGED.fullmatch(name):
            staged.append(name)
    items = [{key: next(iter(value.values())) for key, value in item.items()}
             for item in dynamodb.scan(TableName=LOCK_TABLE)["Items"]]
    return {"commits": commits, "staged": staged, "items": sorted(items, key=lambda item: item["fileName"])}


class Relay(http.server.ThreadingHTTPServer):
    """Forwards every request to moto; records the lock-table writes and the log's writes; once
    armed, drops the answer to the first accepted conditional PutItem of :data:`CLAIMED`. It runs in
    a process of its own (``--relay``), so it serves deltalake whatever deltalake does with Python's
    GIL; the script arms it and reads what it saw through ``/relay-control/...``."""

    daemon_threads = True

    def __init__(self, port: int, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", port), RelayHandler)
        self.upstream_port = upstream_port
        self.armed = False
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:
        pass  # the dropped connection is the point


class RelayHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Relay

    def log_message(self, *args) -> None:
        pass

    def body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()  # the CRLF after each chunk
            self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def forward(self) -> None:
        if self.path.startswith(CONTROL):
            return self.control()
        body = self.body()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "content-length")}
        headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        line, claim = self.describe(body, answer.status, data)
        with self.server.lock:
            drop = self.server.armed and claim and answer.status == 200
            if drop:
                self.server.armed = False
            if line:
                self.server.seen.append(line + ("   [applied; answer dropped, connection closed]" if drop else ""))
        if drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def describe(self, body: bytes, status: int, data: bytes) -> tuple[str | None, bool]:
        """A line for a lock-table write or a write under ``_delta_log/`` (else None), and whether
        the request is a conditional PutItem of :data:`CLAIMED`."""
        target = self.headers.get("X-Amz-Target") or ""
        if target.startswith("DynamoDB"):
            operation = target.rsplit(".", 1)[-1]
            if operation not in ("PutItem", "UpdateItem", "DeleteItem"):
                return None, False
            request = json.loads(body or b"{}")
            item = request.get("Item") or request.get("Key") or {}
            name = (item.get("fileName") or {}).get("S", "?")
            temp = STAGED.search((item.get("tempPath") or {}).get("S", ""))
            conditional = bool(request.get("ConditionExpression") or request.get("Expected"))
            error = " " + json.loads(data).get("__type", "").rsplit("#", 1)[-1] if status >= 400 and data else ""
            return (f"DynamoDB {operation} {name}" + (f" tempPath=_commit_{temp.group(1)}..." if temp else "")
                    + (" (conditional)" if conditional else "") + f" -> {status}{error}",
                    operation == "PutItem" and conditional and name == CLAIMED)
        path = unquote(urlparse(self.path).path)
        deletes = self.command == "POST" and "delete" in urlparse(self.path).query
        if self.command == "GET" or self.command == "HEAD" or ("/_delta_log/" not in path and not deletes):
            return None, False
        short = STAGED.sub(lambda m: f"_commit_{m.group(1)}...json.tmp", path.split("/_delta_log/")[-1])
        query = re.sub(r"uploadId=[^&]+", "uploadId=..", urlparse(self.path).query)
        source = STAGED.search(unquote(self.headers.get("x-amz-copy-source") or ""))
        return (f"S3 {self.command} {short}{'?' + query if query else ''}"
                + (f" copy-source=_commit_{source.group(1)}..." if source else "")
                + (f" If-None-Match:{self.headers['If-None-Match']}" if self.headers.get("If-None-Match") else "")
                + f" -> {status}", False)

    def control(self) -> None:
        with self.server.lock:
            if self.path == f"{CONTROL}arm":
                self.server.armed, self.server.seen = True, []
            answer = json.dumps({"armed": self.server.armed, "seen": self.server.seen}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


def relay_control(port: int, what: str) -> dict:
    with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}{CONTROL}{what}", method="POST"),
                                timeout=30) as answer:
        return json.loads(answer.read())


# -- deltalake ------------------------------------------------------------------------------

def storage_options(endpoint: str) -> dict[str, str]:
    return {"AWS_REGION": REGION, "AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_S3_LOCKING_PROVIDER": "dynamodb", "DELTA_DYNAMO_TABLE_NAME": LOCK_TABLE,
            "AWS_ENDPOINT_URL_DYNAMODB": endpoint}


def first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def attempt(work) -> str:
    """``work()``'s outcome in a line: what it returned, or the error it raised."""
    try:
        return f"returned {work()}"
    except Exception as error:  # what the caller is told is the observation
        return f"raised {first_line(error)}"


def reproduce(args) -> int:
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # everything is local: no instance metadata lookups
    try:
        import deltalake
        import pyarrow
        from deltalake import DeltaTable, write_deltalake
    except ImportError as missing:
        raise CannotRun(f"{missing}. Install the packages first: pip install deltalake pyarrow") from None
    print(f"deltalake {deltalake.__version__}, pyarrow {pyarrow.__version__}, Python {sys.version.split()[0]}")
    moto_port, relay_port = free_port(), free_port()
    start_server([args.moto_python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)], moto_port,
                 f'moto\'s server ({args.moto_python} -m moto.server; pip install "moto[server]")')
    moto_endpoint = f"http://127.0.0.1:{moto_port}"
    print(f"moto {admin(args.moto_python, moto_endpoint, 'setup')['moto']} serving S3 and DynamoDB at {moto_endpoint}")
    start_server([sys.executable, __file__, "--relay", str(relay_port), str(moto_port)], relay_port, "the relay")
    options = storage_options(f"http://127.0.0.1:{relay_port}")

    write_deltalake(TABLE_URI, pyarrow.table({"x": [0]}), storage_options=options)
    if not admin(args.moto_python, moto_endpoint, "log")["items"]:
        print("NOT APPLICABLE: this deltalake wrote no DynamoDB item, so it does not use the DynamoDB log store "
              "(deltalake 1.6.1 and later removed it and ignore AWS_S3_LOCKING_PROVIDER).")
        return 3
    print(f"1. table {TABLE_URI} created through the DynamoDB log store (version 0); relay in front of moto "
          f"at 127.0.0.1:{relay_port}")

    properties = {}
    if args.app_transaction:
        properties["app_transactions"] = [deltalake.Transaction(app_id=APP_ID, version=1)]
    if args.max_commit_retries is not None:
        properties["max_commit_retries"] = args.max_commit_retries
    extra = {"commit_properties": deltalake.CommitProperties(**properties)} if properties else {}
    relay_control(relay_port, "arm")
    told = attempt(lambda: write_deltalake(TABLE_URI, pyarrow.table({"x": list(range(1, APPENDED_ROWS + 1))}), mode="append",
                                           storage_options=options, **extra))
    state = relay_control(relay_port, "state")
    if state["armed"]:
        raise CannotRun(f"the append never claimed {CLAIMED} through the relay ({told})")
    shown = ", ".join(f"{key}={value!r}" for key, value in properties.items())
    print(f"2. write_deltalake(mode='append'{', commit_properties=CommitProperties(' + shown + ')' if shown else ''}) {told}")
    print("   its writes, in order (lock table and _delta_log/):")
    for line in state["seen"]:
        print(f"     {line}")

    show("3. right after the append", admin(args.moto_python, moto_endpoint, "log"))
    check = None
    if args.app_transaction and told.startswith("raised"):
        table = DeltaTable(TABLE_URI, storage_options=options)
        check = str(table.transaction_version(APP_ID) if hasattr(table, "transaction_version")  # 1.x; 0.x: a dict
                    else getattr(table.transaction_versions().get(APP_ID), "version", None))
        print(f"   reloaded, DeltaTable.transaction_version({APP_ID!r}) = {check}")
    after = attempt(lambda: write_deltalake(TABLE_URI, pyarrow.table({"x": [4]}), mode="append", storage_options=options))

    def open_table() -> str:
        table = DeltaTable(TABLE_URI, storage_options=options)
        return f"version {table.version()}, x = {sorted(table.to_pyarrow_table().column('x').to_pylist())}"

    read = attempt(open_table)
    print(f"4. then a fresh writer appends x=[4]: {after}; a reader opens the table: {read}")
    log = admin(args.moto_python, moto_endpoint, "log")
    holding, phantoms = show("5. at the end", log)
    return verdict(told, holding, check, phantoms, after)


def show(when: str, log: dict) -> tuple[list[int], list[int]]:
    """Print the log and the lock items as read from storage; return the versions whose commit adds
    the append (the file of :data:`APPENDED_ROWS` rows) and those of complete items without a commit
    file."""
    holding = sorted(int(number) for number, rows in log["commits"].items() if APPENDED_ROWS in rows)
    complete = {int(item["fileName"][:20]): str(item.get("complete")).lower() == "true" for item in log["items"]}
    phantoms = sorted(version for version, done in complete.items() if done and str(version) not in log["commits"])
    print(f"{when}, read from S3 and DynamoDB: commits " + ", ".join(
        f"{int(number)} (adds {rows} rows)" for number, rows in sorted(log["commits"].items(), key=lambda kv: int(kv[0])))
        + f"; staged files {len(log['staged'])}; lock items " + ", ".join(
        f"{version} {'complete' if done else 'incomplete'}" for version, done in sorted(complete.items()))
        + (f"; complete items without a commit file: {phantoms}" if phantoms else ""))
    return holding, phantoms


def verdict(told: str, holding: list[int], check: str | None, phantoms: list[int], after: str) -> int:
    """What the job was told (and, with ``--app-transaction``, what its check read: ``check``, None
    when not made) against the log; then whether the table still takes a write."""
    problems = []
    if len(holding) > 1:
        problems.append(f"the append is committed {len(holding)} times (versions {holding}); the writer was told: {told}")
    elif holding and told.startswith("raised") and check != "1":
        problems.append(f"the append is committed once (version {holding[0]}) but write_deltalake {told}"
                        + (f", and the reloaded table's transaction_version is {check}" if check else ""))
    if phantoms:
        problems.append(f"the lock items of versions {phantoms} are complete without their commit file")
    if after.startswith("raised"):
        problems.append(f"the next append {after}")
    if problems:
        print("BUG PRESENT: " + "; ".join(problems) + ".")
        return 1
    print("OK: " + (f"the append is committed once (version {holding[0]}); " if holding else "the append is not in the log; ")
          + f"write_deltalake {told}" + (f", and the reloaded table's transaction_version is {check}" if check else "")
          + "; the next append commits.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moto-python", default=sys.executable, metavar="PATH",
                        help='Python interpreter with "moto[server]" installed (default: this one)')
    parser.add_argument("--app-transaction", action="store_true",
                        help=f"append with Transaction({APP_ID!r}, 1); when it raises, reload and read transaction_version")
    parser.add_argument("--max-commit-retries", type=int, help="CommitProperties(max_commit_retries=N) for the append")
    parser.add_argument("--relay", nargs=2, type=int, metavar=("PORT", "UPSTREAM_PORT"), help=argparse.SUPPRESS)
    parser.add_argument("--admin", nargs=2, metavar=("ENDPOINT", "COMMAND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay:
        Relay(*args.relay).serve_forever()
        return 0
    if args.admin:
        print(json.dumps(run_admin(*args.admin)))
        return 0
    try:
        return reproduce(args)
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
