"""deltalake's S3 DynamoDB log store "repairs" a commit that another writer is still making: when
the repair's copy of the staged file to ``N.json`` lands first, the writer's own copy is refused,
and the writer takes its own commit for a conflict. It is told the append failed although the
append is in the log, or it commits the append a second time.

Run it (one environment)::

    pip install deltalake==1.5.1 pyarrow "moto[server]"
    python repro.py

or with deltalake in one environment and moto in another::

    A/bin/python repro.py --moto-python B/bin/python

The script starts ``python -m moto.server`` (S3 + DynamoDB) on 127.0.0.1, on a free port, with
the ``--moto-python`` interpreter (default: the one running the script), and stops it at exit.
That interpreter also runs this file's ``--admin`` commands (boto3: the bucket, the lock table,
reading the log). Two HTTP relays of this script stand between the writers and moto's S3, one
per writer; each forwards every request unchanged, holding one back until the script lets it go.
No step depends on timing: each one waits until the request it needs is held.

With the DynamoDB log store (``AWS_S3_LOCKING_PROVIDER=dynamodb``), a writer commits version N in
four steps: stage ``_delta_log/_commit_<uuid>.json.tmp``; claim N with a conditional PutItem
(``complete = false``, ``tempPath`` = the staged file); copy the staged file to ``N.json`` and
delete it; mark the item complete. Whoever loads the table meanwhile finds the incomplete item
and repairs it: the same copy and delete. The script:

1. creates the table (version 0) through the log store;
2. writer A appends one batch; its relay holds A's copy to ``00000000000000000001.json`` (A has
   staged and claimed version 1);
3. reader B opens the table: it finds the incomplete item and copies A's staged file to
   ``1.json``; B's relay holds B's delete of the staged file;
4. A's copy goes on: S3 refuses it (``1.json`` exists) while the staged file is still there;
5. once A has answered (or is stuck), B's delete goes on; then the log is read from storage.

Exit codes: 1 the bug is present (A was told its append failed although it is in the log, or the
append is in more than one commit), 0 the append is committed once and A was told so (or A
failed and the append is not in the log), 2 the script could not run, 3 not applicable (this
deltalake does not use DynamoDB for its S3 commits: 1.6.1 and later).
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
import urllib.request

BUCKET = "repro"
PREFIX = "table"
TABLE_URI = f"s3://{BUCKET}/{PREFIX}"
LOCK_TABLE = "delta_log"
REGION = "us-east-1"
VERSION = 1
ROWS_PER_BATCH = 10
MOTO_START_TIMEOUT = 60.0
STEP_TIMEOUT = 120.0
"""How long a step may take before the script gives up as unable to run (a deadline for a hung
library, never an outcome: each step waits for an event, not for time to pass)."""

COMMIT_FILE = f"/{BUCKET}/{PREFIX}/_delta_log/{VERSION:020d}.json"
STAGED = re.compile(r"_commit_[0-9a-f-]+\.json\.tmp")


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


# ---------------------------------------------------------------------------------------------
# moto, and the admin commands its interpreter runs (boto3)
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
    done = subprocess.run([python, __file__, "--admin", endpoint, command], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CannotRun(f"--admin {command} failed ({done.returncode}): {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_admin(endpoint: str, command: str) -> dict:
    import boto3

    clients = {service: boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                                     aws_access_key_id="test", aws_secret_access_key="test")
               for service in ("s3", "dynamodb")}
    return ADMIN_COMMANDS[command](clients["s3"], clients["dynamodb"])


def setup(s3, dynamodb) -> dict:
    import moto

    s3.create_bucket(Bucket=BUCKET)
    dynamodb.create_table(
        TableName=LOCK_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"} for key in ("tablePath", "fileName")],
        KeySchema=[{"AttributeName": "tablePath", "KeyType": "HASH"}, {"AttributeName": "fileName", "KeyType": "RANGE"}])
    return {"moto": moto.__version__}


def log(s3, dynamodb) -> dict:
    """Each commit file of the table: the data files it adds; the staged files; the lock items."""
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{PREFIX}/_delta_log/").get("Contents", [])
    commits, staged = {}, []
    for obj in listed:
        name = obj["Key"].rsplit("/", 1)[-1]
        if re.fullmatch(r"\d{20}\.json", name):
            body = s3.get_object(Bucket=BUCKET, Key=obj["Key"])["Body"].read().decode()
            commits[str(int(name[:20]))] = [json.loads(line)["add"]["path"] for line in body.splitlines()
                                            if line.strip() and "add" in json.loads(line)]
        elif STAGED.fullmatch(name):
            staged.append(name)
    items = [{key: next(iter(value.values())) for key, value in item.items()} for item in dynamodb.scan(TableName=LOCK_TABLE)["Items"]]
    return {"commits": commits, "staged": staged, "items": sorted(items, key=lambda item: item["fileName"])}


ADMIN_COMMANDS = {"setup": setup, "log": log}


# ---------------------------------------------------------------------------------------------
# A relay that holds one request back
# ---------------------------------------------------------------------------------------------


class Relay:
    """An HTTP relay to moto on a free loopback port. The first request for which ``matches``
    (method, path with query, headers) is true waits until :meth:`release`; :attr:`held` is set
    while it waits. Every answer's status is recorded for that request (``held_status``)."""

    def __init__(self, upstream: str, name: str, matches) -> None:
        self.name, self.matches = name, matches
        self.upstream = upstream.removeprefix("http://")
        self.held, self._released, self.answered = threading.Event(), threading.Event(), threading.Event()
        self.held_request: str | None = None
        self.held_status: int | None = None
        self._taken = False
        self._lock = threading.Lock()
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _body(self) -> bytes | None:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        chunk = self.rfile.read(size) if size else b""
                        self.rfile.readline()  # the CRLF after each chunk
                        if not size:
                            return b"".join(chunks)
                        chunks.append(chunk)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            def _relay(self):
                body = self._body()
                held = relay._take(self.command, self.path, self.headers)
                if held:
                    relay.held_request = f"{self.command} {self.path}"
                    relay.held.set()
                    if not relay._released.wait(STEP_TIMEOUT):
                        self.send_error(504, "the script never released this request")
                        return
                host, port = relay.upstream.split(":")
                connection = http.client.HTTPConnection(host, int(port), timeout=STEP_TIMEOUT)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive", "transfer-encoding")}
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                if held:
                    relay.held_status = answer.status
                    relay.answered.set()
                self.send_response_only(answer.status, answer.reason)
                for key, value in answer.getheaders():
                    if key.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                connection.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda request, client_address: None  # a client that hangs up is not news
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        atexit.register(self.server.shutdown)

    def _take(self, method: str, path: str, headers) -> bool:
        with self._lock:
            if self._taken or not self.matches(method, path, headers):
                return False
            self._taken = True
            return True

    def release(self) -> None:
        self._released.set()

    def wait_held(self, what: str) -> None:
        if not self.held.wait(STEP_TIMEOUT):
            raise CannotRun(f"{self.name}'s relay never saw {what} within {STEP_TIMEOUT:.0f} s")


def completes_copy_to_commit_file(method: str, path: str, headers) -> bool:
    """The request that makes ``N.json``: CompleteMultipartUpload (POST ?uploadId=) or CopyObject."""
    target, _, query = path.partition("?")
    if target != COMMIT_FILE:
        return False
    return (method == "POST" and "uploadId=" in query) or (method == "PUT" and "partNumber=" not in query
                                                           and "x-amz-copy-source" in {k.lower() for k in headers.keys()})


def deletes_staged_file(method: str, path: str, headers) -> bool:
    """The delete of a staged commit file: DeleteObject, or a DeleteObjects (POST ?delete)."""
    target, _, query = path.partition("?")
    return (method == "DELETE" and bool(STAGED.search(target)) and "uploadId=" not in query) or \
        (method == "POST" and target.rstrip("/") == f"/{BUCKET}" and re.search(r"(^|&)delete(=|&|$)", query) is not None)


# ---------------------------------------------------------------------------------------------
# deltalake: writer A and reader B
# ---------------------------------------------------------------------------------------------


def storage_options(s3_endpoint: str, dynamodb_endpoint: str) -> dict[str, str]:
    return {
        "AWS_REGION": REGION, "AWS_ENDPOINT_URL": s3_endpoint, "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_S3_LOCKING_PROVIDER": "dynamodb", "DELTA_DYNAMO_TABLE_NAME": LOCK_TABLE,
        "AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint,
    }


def batch(number: int):
    import pyarrow as pa

    return pa.table({"batch": [number] * ROWS_PER_BATCH, "row": list(range(ROWS_PER_BATCH))})


def first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


def in_thread(name: str, work) -> tuple[threading.Thread, dict]:
    """Run ``work()`` in a thread; the dict gets ``result`` or ``error`` when it ends."""
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except Exception as error:  # the failure is the observation
            outcome["error"] = first_line(error)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread, outcome


def reproduce(moto_python: str) -> int:
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # everything is local: no instance metadata lookups
    try:
        import deltalake
        import pyarrow
        from deltalake import DeltaTable, write_deltalake
    except ImportError as missing:
        raise CannotRun(f"{missing}. Install the packages first: pip install deltalake pyarrow") from None
    print(f"deltalake {deltalake.__version__}, pyarrow {pyarrow.__version__}, Python {sys.version.split()[0]}")
    endpoint = start_moto(moto_python)
    print(f"moto {admin(moto_python, endpoint, 'setup')['moto']} serving S3 and DynamoDB at {endpoint}")

    write_deltalake(TABLE_URI, batch(0), mode="append", storage_options=storage_options(endpoint, endpoint))
    if not admin(moto_python, endpoint, "log")["items"]:
        print("NOT APPLICABLE: this deltalake wrote no DynamoDB item, so it does not use the DynamoDB log store "
              "(deltalake 1.6.1 and later removed it and ignore AWS_S3_LOCKING_PROVIDER).")
        return 3
    print(f"1. table {TABLE_URI} created through the DynamoDB log store (version 0)")

    relay_a = Relay(endpoint, "writer A", completes_copy_to_commit_file)
    relay_b = Relay(endpoint, "reader B", deletes_staged_file)
    a_thread, a = in_thread("A", lambda: write_deltalake(TABLE_URI, batch(1), mode="append",
                                                         storage_options=storage_options(relay_a.endpoint, endpoint)))
    relay_a.wait_held("its copy to the commit file")
    print(f"2. writer A staged and claimed version {VERSION}; its copy is held: {relay_a.held_request}")

    b_thread, b = in_thread("B", lambda: DeltaTable(TABLE_URI, storage_options=storage_options(relay_b.endpoint, endpoint)).version())
    relay_b.wait_held("its delete of the staged file")
    print(f"3. reader B found the incomplete item and copied A's staged file to {VERSION:020d}.json; "
          f"its delete of the staged file is held: {relay_b.held_request}")

    relay_a.release()
    if not relay_a.answered.wait(STEP_TIMEOUT):
        raise CannotRun("writer A's held copy was never answered")
    a_thread.join(STEP_TIMEOUT)
    a_done = not a_thread.is_alive()
    print(f"4. A's copy answered {relay_a.held_status}; A " + (
        ("was told: " + (a["error"] if "error" in a else "committed")) if a_done else "has not finished (still retrying)"))
    relay_b.release()
    b_thread.join(STEP_TIMEOUT)
    a_thread.join(STEP_TIMEOUT)
    if a_thread.is_alive() or b_thread.is_alive():
        raise CannotRun("writer A or reader B did not finish")
    print(f"5. B's delete went on; B opened version {b.get('result')}" + (f" ({b['error']})" if "error" in b else "")
          + ("" if a_done else "; A was then told: " + (a["error"] if "error" in a else "committed")))

    state = admin(moto_python, endpoint, "log")
    for number, adds in sorted(state["commits"].items(), key=lambda kv: int(kv[0])):
        print(f"   {int(number):020d}.json adds {', '.join(adds) or 'nothing'}")
    print(f"   staged files left: {len(state['staged'])}; lock items: " +
          ", ".join(f"{item['fileName']} complete={item['complete']}" for item in state["items"]))
    return verdict(state["commits"], a)


def verdict(commits: dict[str, list[str]], a: dict) -> int:
    """A's append is the data file added after version 0: in how many commits, and what A was told."""
    first = set(commits.get("0", []))
    files = {path for number, adds in commits.items() if number != "0" for path in adds if path not in first}
    if len(files) > 1:
        raise CannotRun(f"unexpected: more than one data file appended ({sorted(files)})")
    counted = sum(path in adds for path in files for number, adds in commits.items() if number != "0")
    told_failed = "error" in a
    if counted > 1:
        print(f"BUG PRESENT: A's append is in {counted} commits (A was told: {a.get('error', 'committed')}).")
        return 1
    if counted == 1 and told_failed:
        print(f"BUG PRESENT: A was told its append failed ({a['error']}) although it is in the log "
              "(B's repair committed it); a job that retries would append it twice.")
        return 1
    if counted == 1 or told_failed:
        print("OK: " + ("the append is committed once and A was told so." if counted else "A failed and its append is not in the log."))
        return 0
    raise CannotRun("unexpected: A was told it committed, but its append is in no commit")


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
