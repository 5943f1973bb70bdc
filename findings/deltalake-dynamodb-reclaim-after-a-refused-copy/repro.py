"""deltalake 1.5.1's S3 DynamoDB log store: a writer whose copy of its staged commit to ``N.json`` is
refused takes its own claim for a lost one, claims version N+1 and commits the same staged file
again. On a correct S3 (moto) the staged file is gone by then, the copy answers 404, and the writer
marks version N+1 complete with no ``N+1.json``: the table takes no write any more. On an S3
that still copies a deleted file (versitygw v1.8.0 with versioning) the append is committed twice.

Run it::

    pip install deltalake==1.5.1 pyarrow "moto[server]"
    python repro.py                                   # the claim without a commit file, on moto
    python repro.py --scenario duplicate --s3 versitygw --versitygw PATH   # the append committed twice

or with deltalake in one environment and moto (boto3) in another: ``A/bin/python repro.py
--moto-python B/bin/python``. The script starts ``python -m moto.server`` (DynamoDB, and S3 unless
``--s3 versitygw``; then ``versitygw posix`` with a fresh folder of its own) on 127.0.0.1, on free
ports, and stops them at exit. Writer A and reader B reach them through recording relays of this
script, each of which can hold one request back until the script lets it go. No step depends on
timing: each waits for the request it needs to be held.

With the DynamoDB log store (``AWS_S3_LOCKING_PROVIDER=dynamodb``) a writer commits version N in
four steps: stage ``_delta_log/_commit_<uuid>.json.tmp``; claim N with a conditional PutItem
(``complete = false``, ``tempPath``); copy the staged file to ``N.json`` (a conditional multipart
copy since 1.5.1) and delete it; mark the item complete. Whoever loads the table meanwhile
"repairs" an incomplete item with the same copy and delete. The script:

1. creates the table (version 0);
2. writer A appends one batch: it stages, claims version 1 and copies; A's CompleteMultipartUpload
   of ``1.json`` is held;
3. reader B opens the table: it copies A's staged file to ``1.json``. ``phantom``: B's delete of
   the staged file is held; A's Complete goes on and is refused (412), and so are A's three more
   tries (the staged file is still there); A's next lock-table Query is held; then B deletes the
   staged file, marks item 1 complete and finishes. ``duplicate``: B finishes (copy, delete, mark);
4. A goes on. It reports ``VersionAlreadyExists(1)`` to its commit loop, which retries at version
   2 with the same staged file: claim 2 (accepted), copy the staged file to ``2.json``.
   ``phantom`` (any S3): the copy answers 404, which A reads as "already moved": it marks item 2
   complete, and ``2.json`` never exists. ``duplicate``: a correct S3 answers A's retried copies
   of step 3 with 404 and A reports version 1, committed once; versitygw v1.8.0 (versioning on)
   copies the deleted file, every try is refused with 412, and the retry writes ``2.json``;
5. ``phantom``: writer C appends and a reader opens the table; the log and the lock items are read.

Exit codes: 1 the bug is present (the append is in more than one commit; or A was told it failed
while it is in the log; or a lock item is complete without its commit file), 0 the append is
committed once and A was told so, 2 the script could not run, 3 not applicable (this deltalake
does not use DynamoDB for its S3 commits: 1.6.1 and later).
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import http.server
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request

BUCKET = "repro"
PREFIX = "table"
TABLE_URI = f"s3://{BUCKET}/{PREFIX}"
LOCK_TABLE = "delta_log"
REGION = "us-east-1"
KEY, SECRET = "testing", "testingsecret"
ROWS_PER_BATCH = 10
START_TIMEOUT = 60.0
STEP_TIMEOUT = float(os.environ.get("STEP_TIMEOUT", "120"))
COMMIT_1 = f"/{BUCKET}/{PREFIX}/_delta_log/{1:020d}.json"
STAGED = re.compile(r"_commit_[0-9a-f-]+\.json\.tmp")
SEQUENCE = itertools.count(1)
"""Orders the requests of all relays (each is recorded when its answer arrives)."""


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def wait_answers(url: str, server: subprocess.Popen, what: str, log) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise CannotRun(f"{what} exited ({server.returncode}): {log.read().strip()[-600:]}")
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers (versitygw answers an unsigned request with an S3 error)
        except OSError:
            time.sleep(0.1)
    raise CannotRun(f"{what} did not answer at {url}")


def start_moto(python: str) -> str:
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=log, stderr=subprocess.STDOUT, text=True)
    atexit.register(stop, server)
    wait_answers(f"http://127.0.0.1:{port}/moto-api/", server, "moto", log)
    return f"http://127.0.0.1:{port}"


def start_versitygw(binary: str) -> str:
    if not shutil.which(binary):
        raise CannotRun(f"no versitygw at {binary!r}: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, "
                        "or pass --versitygw PATH")
    root = tempfile.mkdtemp(prefix="repro-vgw-")
    atexit.register(shutil.rmtree, root, True)
    for sub in ("data", "versions"):
        os.makedirs(os.path.join(root, sub))
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")
    server = subprocess.Popen([binary, "--port", f"127.0.0.1:{port}", "posix", "--versioning-dir",
                               os.path.join(root, "versions"), os.path.join(root, "data")],
                              env={**os.environ, "ROOT_ACCESS_KEY": KEY, "ROOT_SECRET_KEY": SECRET},
                              stdout=log, stderr=subprocess.STDOUT, text=True)
    atexit.register(stop, server)
    wait_answers(f"http://127.0.0.1:{port}/", server, "versitygw", log)
    return f"http://127.0.0.1:{port}"


# -- admin commands, run by the moto interpreter (boto3) ------------------------------------------

def clients(s3_endpoint: str, ddb_endpoint: str):
    import boto3
    from botocore.config import Config

    common = dict(region_name=REGION, aws_access_key_id=KEY, aws_secret_access_key=SECRET)
    return (boto3.client("s3", endpoint_url=s3_endpoint, config=Config(s3={"addressing_style": "path"}), **common),
            boto3.client("dynamodb", endpoint_url=ddb_endpoint, **common))


def setup(s3, dynamodb, versioning: str) -> dict:
    import moto

    s3.create_bucket(Bucket=BUCKET)
    if versioning == "on":
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    dynamodb.create_table(
        TableName=LOCK_TABLE, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"} for k in ("tablePath", "fileName")],
        KeySchema=[{"AttributeName": "tablePath", "KeyType": "HASH"}, {"AttributeName": "fileName", "KeyType": "RANGE"}])
    return {"moto": moto.__version__, "versioning": s3.get_bucket_versioning(Bucket=BUCKET).get("Status", "off")}


def log(s3, dynamodb, _versioning: str) -> dict:
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
    items = [{k: next(iter(v.values())) for k, v in item.items()} for item in dynamodb.scan(TableName=LOCK_TABLE)["Items"]]
    return {"commits": commits, "staged": staged, "items": sorted(items, key=lambda i: i["fileName"])}


ADMIN = {"setup": setup, "log": log}


def admin(python: str, s3_endpoint: str, ddb_endpoint: str, command: str, versioning: str) -> dict:
    done = subprocess.run([python, __file__, "--admin", s3_endpoint, ddb_endpoint, command, versioning],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise CannotRun(f"--admin {command} failed: {done.stderr.strip()[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- a recording relay that can hold one request ----------------------------------------------------

class Relay:
    """Forwards every request to ``upstream``; records (method, what, status) of each; the first
    request for which ``matches`` is true waits until :meth:`release`."""

    def __init__(self, upstream: str, name: str, matches=None) -> None:
        self.name, self.matches, self.upstream = name, matches, upstream.removeprefix("http://")
        self.held, self._released, self.answered = threading.Event(), threading.Event(), threading.Event()
        self.held_status = None
        self.records: list[str] = []
        self._taken = matches is None
        self._lock = threading.Lock()
        relay = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _body(self):
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        chunk = self.rfile.read(size) if size else b""
                        self.rfile.readline()
                        if not size:
                            return b"".join(chunks)
                        chunks.append(chunk)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            def _relay(self):
                body = self._body()
                held = relay._take(self.command, self.path, self.headers)
                if held:
                    relay.held.set()
                    if not relay._released.wait(STEP_TIMEOUT):
                        self.send_error(504, "never released")
                        return
                host, port = relay.upstream.split(":")
                connection = http.client.HTTPConnection(host, int(port), timeout=STEP_TIMEOUT)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "expect", "content-length")}
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                connection.request(self.command, self.path, body=body, headers=headers)
                answer = connection.getresponse()
                data = answer.read()
                relay._record(self.command, self.path, self.headers, body, answer.status, data, held)
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
        self.server.handle_error = lambda request, client_address: None
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        atexit.register(self.server.shutdown)

    def _take(self, method, path, headers) -> bool:
        with self._lock:
            if self._taken or not self.matches(method, path, headers):
                return False
            self._taken = True
            return True

    def _record(self, method, path, headers, body, status, data, held) -> None:
        target = headers.get("X-Amz-Target") or ""
        if target.startswith("DynamoDB"):
            op = target.rsplit(".", 1)[-1]
            detail = ""
            try:
                request = json.loads(body or b"{}")
                item = request.get("Item") or request.get("Key") or {}
                name = (item.get("fileName") or {}).get("S")
                temp = (item.get("tempPath") or {}).get("S")
                if name:
                    detail += f" {name}"
                if temp:
                    detail += f" tempPath={temp.rsplit('/', 1)[-1][:20]}..."
                if request.get("ConditionExpression"):
                    detail += " (conditional)"
                if op == "UpdateItem":
                    detail += " (mark complete)"
            except ValueError:
                pass
            error = ""
            if status >= 400:
                try:
                    error = " " + str(json.loads(data).get("__type", "")).rsplit("#", 1)[-1]
                except ValueError:
                    pass
            line = f"DynamoDB {op}{detail} -> {status}{error}"
        else:
            short = path.replace(f"/{BUCKET}/{PREFIX}/", "")
            short = re.sub(r"uploadId=[^&]+", "uploadId=..", short)
            short = re.sub(r"_commit_([0-9a-f]{8})[0-9a-f-]+\.json\.tmp", r"_commit_\1...json.tmp", short)
            source = headers.get("x-amz-copy-source")
            if source:
                short += " copy-source=" + re.sub(r".*(_commit_[0-9a-f]{8}).*", r"\1...", source)
            if headers.get("If-None-Match"):
                short += f" If-None-Match:{headers.get('If-None-Match')}"
            if method == "POST" and "delete" in path.split("?", 1)[-1]:
                keys = re.findall(rb"<Key>([^<]*)</Key>", body or b"")
                short += " keys=" + ",".join(k.decode().rsplit("/", 1)[-1][:17] + "..." for k in keys)
            line = f"{method} {short} -> {status}"
        with self._lock:
            self.records.append((next(SEQUENCE), line + ("   [held]" if held else "")))

    def release(self) -> None:
        self._released.set()


def deletes_staged_file(method: str, path: str, headers) -> bool:
    target, _, query = path.partition("?")
    return (method == "DELETE" and bool(STAGED.search(target)) and "uploadId=" not in query) or \
        (method == "POST" and target.rstrip("/") == f"/{BUCKET}" and "delete" in query)


def completes_copy_to_commit_1(method: str, path: str, headers) -> bool:
    target, _, query = path.partition("?")
    return target == COMMIT_1 and ((method == "POST" and "uploadId=" in query) or
                                   (method == "PUT" and "partNumber=" not in query and
                                    "x-amz-copy-source" in {k.lower() for k in headers.keys()}))


# -- deltalake --------------------------------------------------------------------------------

def storage_options(s3_endpoint: str, ddb_endpoint: str) -> dict[str, str]:
    return {"AWS_REGION": REGION, "AWS_ENDPOINT_URL": s3_endpoint, "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_S3_LOCKING_PROVIDER": "dynamodb",
            "DELTA_DYNAMO_TABLE_NAME": LOCK_TABLE, "AWS_ENDPOINT_URL_DYNAMODB": ddb_endpoint}


def batch(number: int):
    import pyarrow as pa
    return pa.table({"batch": [number] * ROWS_PER_BATCH, "row": list(range(ROWS_PER_BATCH))})


def in_thread(name: str, work):
    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = work()
        except Exception as error:
            outcome["error"] = f"{type(error).__name__}: {error}".splitlines()[0]

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread, outcome


def reproduce(args) -> int:
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    try:
        import deltalake
        import pyarrow
        from deltalake import DeltaTable, write_deltalake
    except ImportError as missing:
        raise CannotRun(f"{missing}: pip install deltalake pyarrow") from None
    print(f"deltalake {deltalake.__version__}, pyarrow {pyarrow.__version__}, Python {sys.version.split()[0]}")
    ddb = start_moto(args.moto_python)
    s3 = start_versitygw(args.versitygw) if args.s3 == "versitygw" else start_moto(args.moto_python)
    info = admin(args.moto_python, s3, ddb, "setup", args.versioning)
    print(f"S3: {args.s3} at {s3} (bucket versioning: {info['versioning']}); DynamoDB: moto {info['moto']} at {ddb}")

    write_deltalake(TABLE_URI, batch(0), mode="append", storage_options=storage_options(s3, ddb))
    if not admin(args.moto_python, s3, ddb, "log", args.versioning)["items"]:
        print("NOT APPLICABLE: no DynamoDB item written (deltalake 1.6.1+ has no DynamoDB log store).")
        return 3
    print("1. table created through the DynamoDB log store (version 0)")

    phantom = args.scenario == "phantom"
    relay_a = Relay(s3, "A s3", completes_copy_to_commit_1)
    claimed = threading.Event()

    def a_query_after_refusals(method, path, headers):
        return claimed.is_set() and (headers.get("X-Amz-Target") or "").endswith(".Query") and \
            sum(" -> 412" in line for _, line in relay_a.records) >= 4

    relay_a_ddb = Relay(ddb, "A dynamodb", a_query_after_refusals if phantom else None)
    relay_b = Relay(s3, "B s3", deletes_staged_file if phantom else None)
    relay_b_ddb = Relay(ddb, "B dynamodb")

    a_thread, a = in_thread("A", lambda: write_deltalake(
        TABLE_URI, batch(1), mode="append", storage_options=storage_options(relay_a.endpoint, relay_a_ddb.endpoint)))
    if not relay_a.held.wait(STEP_TIMEOUT):
        raise CannotRun(f"A never sent its copy to 1.json: A={a}; A s3={relay_a.records[-8:]}")
    print("2. A staged and claimed version 1; its CompleteMultipartUpload of 1.json is held")

    claimed.set()
    b_thread, b = in_thread("B", lambda: DeltaTable(
        TABLE_URI, storage_options=storage_options(relay_b.endpoint, relay_b_ddb.endpoint)).version())
    if phantom:
        if not relay_b.held.wait(STEP_TIMEOUT):
            raise CannotRun("B never sent its delete of the staged file")
        print("2b. B copied A's staged file to 1.json; its delete of the staged file is held")
        relay_a.release()
        deadline = time.monotonic() + STEP_TIMEOUT
        while not relay_a_ddb.held.wait(0.2) and a_thread.is_alive():  # whichever comes first
            if time.monotonic() > deadline:
                raise CannotRun(f"A neither finished nor came back to DynamoDB: A={a}")
        refused = sum(" -> 412" in line for _, line in relay_a.records)
        if relay_a_ddb.held.is_set():
            print(f"2c. A's Complete was released: {refused} refused copies (412); A's next lock-table Query is held")
        else:
            print(f"2c. A's Complete was released and A finished ({refused} refused copies)")
        relay_b.release()
    b_thread.join(STEP_TIMEOUT)
    if b_thread.is_alive():
        raise CannotRun("B did not finish")
    print(f"3. B opened the table (version {b.get('result')}{', ' + b['error'] if 'error' in b else ''}); B's requests:")
    for _, line in sorted(relay_b_ddb.records + relay_b.records):
        if not line.startswith("GET"):
            print("     B " + line)

    relay_a.release()
    relay_a_ddb.release()
    a_thread.join(STEP_TIMEOUT)
    if a_thread.is_alive():
        raise CannotRun("A did not finish")
    told = a.get("error", "committed")
    print(f"4. A's held Complete answered {relay_a.held_status}; A was told: {told}. A's writes, in order of their answers:")
    for _, line in sorted(relay_a.records + relay_a_ddb.records):
        if not line.startswith("GET") and ("_delta_log/" in line or "delete" in line or "DynamoDB" in line):
            if "DynamoDB Query" in line or "GetItem" in line:
                continue
            print("     A " + line)

    before_c = admin(args.moto_python, s3, ddb, "log", args.versioning)  # A's data file: what commits 1+ add now
    first = set(before_c["commits"].get("0", []))
    files = {p for n, adds in before_c["commits"].items() if n != "0" for p in adds if p not in first}
    if phantom:
        c = {}
        try:
            write_deltalake(TABLE_URI, batch(2), mode="append", storage_options=storage_options(s3, ddb))
            c["append"] = "committed"
        except Exception as error:
            c["append"] = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        try:
            dt = DeltaTable(TABLE_URI, storage_options=storage_options(s3, ddb))
            c["read"] = f"version {dt.version()}, {dt.to_pyarrow_table().num_rows} rows"
        except Exception as error:
            c["read"] = f"{type(error).__name__}: {error}".splitlines()[0][:300]
        print(f"4b. then writer C appends one batch: {c['append']}; a reader opens the table: {c['read']}")
    state = admin(args.moto_python, s3, ddb, "log", args.versioning)
    print("5. the log, read from S3:")
    for number, adds in sorted(state["commits"].items(), key=lambda kv: int(kv[0])):
        print(f"     {int(number):020d}.json adds {', '.join(adds) or 'nothing'}")
    print(f"     staged files listed: {len(state['staged'])}; lock items: " +
          ", ".join(f"{i['fileName'][:20].lstrip('0') or '0'} complete={i['complete']}" for i in state["items"]))
    if len(files) > 1:
        raise CannotRun(f"unexpected: more than one data file appended: {sorted(files)}")
    counted = sum(p in adds for p in files for n, adds in state["commits"].items() if n != "0")
    versions = sorted(int(n) for p in files for n, adds in state["commits"].items() if n != "0" and p in adds)
    items = {int(i["fileName"][:20]) for i in state["items"]}
    missing = sorted(v for v in items if str(v) not in state["commits"])
    if missing:
        print(f"     lock items without a commit file: versions {missing}")
    problems = []
    if counted > 1:
        problems.append(f"A's append, acknowledged once ({told}), is committed {counted} times (versions {versions})")
    if counted == 1 and "error" in a:
        problems.append(f"A was told its append failed ({told}) although it is in the log (version {versions})")
    if missing:
        problems.append(f"lock items for versions {missing} are complete but have no commit file")
    if phantom and c["append"] != "committed":
        problems.append(f"the next append fails ({c['append']})")
    if problems:
        print("BUG PRESENT: " + "; ".join(problems) + ".")
        return 1
    if counted == 1:
        print(f"OK: the append is committed once (version {versions[0]}) and A was told: {told}.")
        return 0
    if "error" in a:
        print("OK: A failed and its append is not in the log.")
        return 0
    raise CannotRun("unexpected: A was told it committed but its append is in no commit")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moto-python", default=sys.executable)
    parser.add_argument("--s3", choices=("moto", "versitygw"), default="moto", help="the server playing S3 (default moto)")
    parser.add_argument("--versioning", choices=("on", "off"), default="on", help="bucket versioning (default on)")
    parser.add_argument("--versitygw", default=os.environ.get("VERSITYGW", "versitygw"),
                        help="the versitygw binary for --s3 versitygw (default: on PATH, or $VERSITYGW)")
    parser.add_argument("--scenario", choices=("phantom", "duplicate"), default="phantom",
                        help="phantom (default): also hold B's delete until A's copies were refused, and A's next "
                             "lock-table Query until B finished; duplicate: hold only A's first copy")
    parser.add_argument("--admin", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.admin:
        s3_endpoint, ddb_endpoint, command, versioning = args.admin
        s3, dynamodb = clients(s3_endpoint, ddb_endpoint)
        print(json.dumps(ADMIN[command](s3, dynamodb, versioning)))
        return 0
    try:
        return reproduce(args)
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
