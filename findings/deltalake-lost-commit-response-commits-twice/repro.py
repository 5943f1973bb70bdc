"""deltalake commits one append twice when the answer to its commit request is lost: the store
wrote ``_delta_log/N.json``, the connection closed before the answer arrived, the HTTP client
sent the same conditional request again, the store refused it because ``N.json`` now exists, and
deltalake took its own commit for another writer's and committed the same actions again as N+1.
The writer is told "success" once; the table's log holds the operation twice.

Run it against Azurite (Azure Blob's emulator, from npm)::

    npm install azurite@3.37.0                  # gives node_modules/.bin/azurite-blob
    pip install deltalake==1.6.6 pyarrow
    python repro.py --azurite node_modules/.bin/azurite-blob

or against moto's S3 server (conditional PutObject, ``If-None-Match: *``)::

    pip install deltalake==1.6.6 pyarrow "moto[server]"
    python repro.py --store s3 [--moto-python /path/to/env-with-moto/bin/python]

The script starts the server on 127.0.0.1 (a free port, state in a temporary folder) and a
small HTTP relay in front of it, and stops both at exit. deltalake talks to the relay. The relay
forwards every request unchanged, except one: the first request that writes a commit file
``_delta_log/<20 digits>.json`` after the script arms it. That one it forwards to the store, reads
the store's whole answer, and then closes the connection to deltalake without passing the answer
on: a response lost on the network, or a server that stopped right after writing.

1. creates a table (version 0) with one row, relay unarmed;
2. arms the relay and appends 3 rows with one ``write_deltalake(..., mode="append")``;
3. reads the log from storage (straight from the server, not through deltalake): which commits
   add the append's data file.

With ``--max-retries 0`` (storage option ``max_retries``, read by deltalake 1.x) the HTTP
client does not resend the commit: the append fails with an error although it landed once, which
a job can detect from the log before it retries (a workaround). With ``--app-transaction``
the append carries an idempotent-write id, ``Transaction(app_id, version)``: deltalake's conflict
checker then refuses the second attempt ("Concurrent transaction failed"), so the append is
committed once and the writer is told it failed (the other workaround); the script then reloads the
table and prints ``transaction_version(app_id)``, the check a job makes before it reruns an append
that failed.

After the verdict lines it prints what a user of the table sees: ``DeltaTable.history()`` and, on
releases that have it, ``DeltaTable.load_cdf`` (the table is created with the change data feed on).
With ``--operation delete`` the lost answer is a DELETE's (``delete("x >= 2")`` after an append):
its resent commit is refused and the conflict checker refuses the DELETE against its own commit.

Exit codes: 1 the bug is present (the append's file is added by two commits; with ``--operation
delete``, the DELETE is in the log and its caller was told it failed), 0 it is added by
exactly one commit (or the append failed with an error, which is also correct behaviour), 2 the
script could not run (a package or server missing, or an unexpected outcome).
"""

from __future__ import annotations

import argparse
import atexit
import base64
import hashlib
import hmac
import http.client
import http.server
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from email.utils import formatdate
from urllib.parse import unquote, urlparse

START_TIMEOUT = 60.0
CONTROL = "/relay-control/"
COMMIT_FILE = re.compile(r"/_delta_log/(\d{20})\.json$")
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account (the same in every Azurite)."""
AZURE_API_VERSION = "2021-10-04"
ROWS_WRITTEN = 4
"""One row when the table is created, three appended."""


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(command: list[str], port: int, what: str) -> None:
    """Start ``command`` (listening on ``port``), wait until it accepts connections, stop it at exit."""
    try:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as error:
        raise CannotRun(f"{what} did not start ({error}); see the usage at the top of this file") from None

    def stop() -> None:
        # killed, not asked to stop: on SIGTERM Azurite waits for its clients' open connections to
        # close, and deltalake's runtime keeps its own open until this process ends (a 10 s wait
        # each run). The server's folder is a temporary one, and nothing is read from it after.
        if server.poll() is None:
            server.kill()
            server.wait(timeout=60)

    atexit.register(stop)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise CannotRun(f"{what} exited at start: {server.stderr.read().decode(errors='replace')[-500:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)  # waiting for the server to listen, not deciding any outcome
    raise CannotRun(f"{what} did not answer on 127.0.0.1:{port} within {START_TIMEOUT:.0f} s")


def call(port: int, method: str, path: str, headers: dict | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, headers={"Content-Length": "0", **(headers or {})})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


class Azurite:
    name = "Azurite"

    def __init__(self, binary: str, folder: str) -> None:
        self.port = free_port()
        start_server([binary, "--blobHost", "127.0.0.1", "--blobPort", str(self.port), "--location", folder,
                      "--skipApiVersionCheck", "--loose"], self.port, f"Azurite ({binary})")
        self.container = "repro"
        status, body = self.signed("PUT", f"/{self.container}", "restype=container")
        if status != 201:
            raise CannotRun(f"Azurite refused to create the container: {status} {body[:200]!r}")

    def signed(self, method: str, path: str, query: str = "") -> tuple[int, bytes]:
        """A request signed with the account's Shared Key (only what this script sends: no body)."""
        date = formatdate(usegmt=True)
        full = f"/{AZURITE_ACCOUNT}{path}"
        resource = f"/{AZURITE_ACCOUNT}{full}" + "".join(f"\n{k}:{v}" for k, v in sorted(
            item.split("=", 1) for item in query.split("&") if item))
        to_sign = "\n".join([method] + [""] * 11 + [f"x-ms-date:{date}\nx-ms-version:{AZURE_API_VERSION}", resource])
        signature = base64.b64encode(hmac.new(base64.b64decode(AZURITE_KEY), to_sign.encode(), hashlib.sha256).digest())
        return call(self.port, method, full + (f"?{query}" if query else ""),
                    {"x-ms-date": date, "x-ms-version": AZURE_API_VERSION,
                     "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{signature.decode()}"})

    def table(self, relay_port: int) -> tuple[str, dict]:
        return (f"az://{self.container}/table",
                {"account_name": AZURITE_ACCOUNT, "account_key": AZURITE_KEY, "allow_http": "true",
                 "azure_storage_endpoint": f"http://127.0.0.1:{relay_port}/{AZURITE_ACCOUNT}"})

    def commits(self) -> dict[int, bytes]:
        status, listing = self.signed("GET", f"/{self.container}", "comp=list&prefix=table/_delta_log/&restype=container")
        if status != 200:
            raise CannotRun(f"Azurite refused to list the log: {status}")
        names = re.findall(r"<Name>(table/_delta_log/(\d{20})\.json)</Name>", listing.decode())
        return {int(version): self.signed("GET", f"/{self.container}/{name}")[1] for name, version in names}


class MotoS3:
    name = "moto (S3)"

    def __init__(self, python: str) -> None:
        self.python = python
        self.port = free_port()
        start_server([python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)], self.port,
                     f"moto's server ({python} -m moto.server; pip install \"moto[server]\")")
        self.bucket = "repro"
        status, body = call(self.port, "PUT", f"/{self.bucket}")
        if status != 200:
            raise CannotRun(f"moto refused to create the bucket: {status} {body[:200]!r}")

    def table(self, relay_port: int) -> tuple[str, dict]:
        return (f"s3://{self.bucket}/table",
                {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{relay_port}", "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1",
                 "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "conditional_put": "etag"})

    def commits(self) -> dict[int, bytes]:
        """Read with boto3 in the moto interpreter (moto answers unsigned reads with 403)."""
        done = subprocess.run([self.python, "-c", READ_S3_LOG, f"http://127.0.0.1:{self.port}", self.bucket],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise CannotRun(f"could not read the log from moto: {done.stderr[-500:]}")
        return {int(version): body.encode() for version, body in json.loads(done.stdout).items()}


READ_S3_LOG = """
import json, re, sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=sys.argv[2], Prefix="table/_delta_log/").get("Contents", [])]
print(json.dumps({int(k[-25:-5]): s3.get_object(Bucket=sys.argv[2], Key=k)["Body"].read().decode()
                  for k in keys if re.fullmatch(r"table/_delta_log/\\d{20}\\.json", k)}))
"""


class Relay(http.server.ThreadingHTTPServer):
    """Forwards every request to the store; once armed, drops the answer to the first commit write.
    It runs in a process of its own (``--relay``), so it serves deltalake whatever deltalake does
    with Python's GIL; the script arms it and reads what it saw through ``/relay-control/...``."""

    daemon_threads = True

    def __init__(self, port: int, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", port), RelayHandler)
        self.upstream_port = upstream_port
        self.armed = False
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def handle_error(self, request, client_address) -> None:
        pass  # the dropped connection is the point


def start_relay(upstream_port: int) -> int:
    port = free_port()
    start_server([sys.executable, __file__, "--relay", str(port), str(upstream_port)], port, "the relay")
    return port


def relay_control(port: int, what: str) -> dict:
    status, body = call(port, "POST", f"{CONTROL}{what}")
    if status != 200:
        raise CannotRun(f"the relay did not answer {what}: {status}")
    return json.loads(body)


class RelayHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Relay

    def log_message(self, *args) -> None:
        pass

    def forward(self) -> None:
        if self.path.startswith(CONTROL):
            return self.control()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        with self.server.lock:
            claim = self.claim(body)
            drop = self.server.armed and claim is not None
            if drop:
                self.server.armed = False
            if claim is not None:
                self.server.seen.append(f"{claim} -> {answer.status}{' (written; answer dropped, connection closed)' if drop else ''}")
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

    def claim(self, body: bytes) -> str | None:
        """What this request claims, shown, if it is the kind the relay drops (a commit file's write,
        ``PUT .../_delta_log/N.json``); else None."""
        path = unquote(urlparse(self.path).path)
        if self.command != "PUT" or COMMIT_FILE.search(path) is None:
            return None
        conditional = self.headers.get("If-None-Match")
        return f"PUT {path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]}{' If-None-Match: ' + conditional if conditional else ''}"

    def control(self) -> None:
        with self.server.lock:
            if self.path == f"{CONTROL}arm":
                self.server.armed = True
            answer = json.dumps({"armed": self.server.armed, "seen": self.server.seen}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


def adds(commit: bytes) -> set[str]:
    return {json.loads(line)["add"]["path"] for line in commit.splitlines() if line.strip() and "add" in json.loads(line)}


def run_through_relay(relay: int, what: str, operation) -> str:
    """Arm the relay, run ``operation``, list the commit-file writes the relay saw; what the caller
    was told ("success" or its error's first line; an error is a correct outcome here)."""
    relay_control(relay, "arm")
    try:
        operation()
        told = "success"
    except Exception as error:  # what the caller is told is the finding
        told = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    state = relay_control(relay, "state")
    if state["armed"]:
        raise CannotRun(f"{what} never wrote a commit file through the relay")
    print("Writes of commit files through the relay, in order:")
    for line in state["seen"]:
        print(f"  {line}")
    return told


def show_history_and_change_feed(table) -> None:
    """What a user of the table sees of the operation besides its rows: the history, and the change
    data feed (each when the release has it)."""
    entries = sorted((entry.get("version", -1), entry.get("operation")) for entry in table.history())
    print(f"DeltaTable.history(), (version, operation): {entries}")
    if hasattr(table, "load_cdf"):
        changes = table.load_cdf(starting_version=1).read_all()
        print(f"DeltaTable.load_cdf(starting_version=1): {changes.num_rows} rows, "
              f"x = {sorted(changes.column('x').to_pylist())}, versions {sorted(set(changes.column('_commit_version').to_pylist()))}")


def delete_case(store, relay: int, uri: str, options: dict) -> int:
    """A DELETE whose commit answer is lost: the resent commit is refused, the conflict checker then
    refuses the DELETE against its own commit, and the caller is told it failed."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(uri, pa.table({"x": [1, 2, 3]}), mode="append", storage_options=options)  # version 1, nothing dropped
    told = run_through_relay(relay, "the DELETE", lambda: DeltaTable(uri, storage_options=options).delete("x >= 2"))
    print(f"DeltaTable.delete('x >= 2') told the caller: {told}")
    commits = store.commits()
    operations = {version: json.loads(next(line for line in body.splitlines() if b'"commitInfo"' in line))["commitInfo"]
                  .get("operation") for version, body in commits.items()}
    table = DeltaTable(uri, storage_options=options)
    rows = sorted(table.to_pyarrow_table().column("x").to_pylist())
    print(f"The log (read from {store.name}): operations by version {operations}; the table holds x = {rows}")
    show_history_and_change_feed(table)
    if told != "success" and operations.get(2) == "DELETE":
        print("BUG PRESENT: the DELETE is committed (version 2) and its caller was told it failed.")
        return 1
    print("OK: the DELETE's caller was told what happened.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("azure", "s3"), default="azure", help="Azurite (default) or moto's S3")
    parser.add_argument("--azurite", default="azurite-blob", help="Azurite's blob server (default: azurite-blob on PATH)")
    parser.add_argument("--moto-python", default=sys.executable, help="a Python with moto[server] (default: this one)")
    parser.add_argument("--max-retries", help="storage option max_retries for deltalake (0: the workaround, deltalake 1.x)")
    parser.add_argument("--app-transaction", action="store_true",
                        help="append with CommitProperties(app_transactions=[Transaction('repro-job', 1)]) (the other workaround)")
    parser.add_argument("--operation", choices=("append", "delete"), default="append",
                        help="the operation whose commit answer is lost (default: an append of 3 rows)")
    parser.add_argument("--relay", nargs=2, type=int, metavar=("PORT", "UPSTREAM_PORT"),
                        help="only run the relay, in front of 127.0.0.1:UPSTREAM_PORT (what the script starts for itself)")
    args = parser.parse_args(argv)
    if args.relay:
        Relay(*args.relay).serve_forever()
        return 0
    try:
        import deltalake
        import pyarrow as pa
        from deltalake import DeltaTable, write_deltalake
    except ImportError as missing:
        print(f"cannot run: {missing}. Install the packages first: pip install deltalake pyarrow", file=sys.stderr)
        return 2
    print(f"deltalake {deltalake.__version__}, Python {sys.version.split()[0]}")
    folder = tempfile.mkdtemp(prefix="lost-commit-response-")
    atexit.register(shutil.rmtree, folder, True)
    try:
        store = Azurite(shutil.which(args.azurite) or args.azurite, folder) if args.store == "azure" else MotoS3(args.moto_python)
        relay = start_relay(store.port)
        uri, options = store.table(relay)
        if args.max_retries is not None:
            options["max_retries"] = args.max_retries
            print(f"storage option max_retries={args.max_retries}")
        print(f"{store.name} on 127.0.0.1:{store.port}, deltalake through a relay on 127.0.0.1:{relay}; table {uri}")
        # the change data feed on, so that its readers can be shown too (deltalake 0.14.0 ignores it)
        write_deltalake(uri, pa.table({"x": [0]}), storage_options=options,
                        configuration={"delta.enableChangeDataFeed": "true"})
        if args.operation == "delete":
            return delete_case(store, relay, uri, options)
        extra = {}
        if args.app_transaction:
            from deltalake import CommitProperties, Transaction
            extra["commit_properties"] = CommitProperties(app_transactions=[Transaction(app_id="repro-job", version=1)])
            print("the append carries Transaction(app_id='repro-job', version=1)")
        told = run_through_relay(relay, "the append", lambda: write_deltalake(
            uri, pa.table({"x": [1, 2, 3]}), mode="append", storage_options=options, **extra))
        print(f"write_deltalake(mode='append') told the writer: {told}")
        commits = store.commits()
        new = adds(commits.get(1, b""))
        if len(new) != 1:
            raise CannotRun(f"version 1 does not add exactly one file: {sorted(new)}")
        appended = new.pop()
        holding = sorted(version for version, commit in commits.items() if appended in adds(commit))
        print(f"The log (read from {store.name}): versions {sorted(commits)}; the append's data file {appended} "
              f"is added by version(s) {holding}")
        table = DeltaTable(uri, storage_options=options)
        rows = table.to_pyarrow_table().num_rows
        print(f"deltalake reads {rows} rows at version {max(commits)}; {ROWS_WRITTEN} were written"
              + (", so the appended rows are read twice" if rows > ROWS_WRITTEN
                 else " (it counts a file added by two commits once)" if len(holding) > 1 else ""))
        show_history_and_change_feed(table)
        if args.app_transaction:
            # the check before any rerun: the table reloaded, is this job's version there?
            landed = (table.transaction_version("repro-job") if hasattr(table, "transaction_version")
                      else getattr(getattr(table, "transaction_versions", dict)().get("repro-job"), "version", None))
            print(f"reloaded, DeltaTable.transaction_version('repro-job') = {landed}: "
                  + ("the append is in the table: the job must not rerun it" if landed == 1
                     else "the append is not in the table"))
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2
    if len(holding) > 1:
        print(f"BUG PRESENT: one append, acknowledged once, is committed {len(holding)} times "
              f"(versions {', '.join(map(str, holding))}).")
        return 1
    print("OK: the append is committed once.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
