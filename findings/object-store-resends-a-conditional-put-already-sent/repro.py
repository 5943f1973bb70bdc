"""object_store resends a conditional PUT (``PutMode::Create``, ``If-None-Match: *``) whose request
was sent in full when the connection closes before the answer: the store applied the first one, so
the resend is refused, and the caller is told ``AlreadyExists`` for an object that it wrote itself.

Run it (obstore is object_store's Python binding; moto's server plays S3)::

    pip install obstore==0.12.1 "moto[server]"
    python repro.py                    # object_store's default retries: the bug
    python repro.py --max-retries 0    # no retries: one PUT, and an error that leaves the outcome open

The script starts moto's S3 server on 127.0.0.1 (a free port) and, in a process of its own, a small
HTTP relay in front of it; both stop when the script exits. The relay forwards every request
unchanged, except the first PUT that carries ``If-None-Match``: that one it forwards, reads the
store's whole answer, and then closes the client's connection without passing the answer on (an
answer lost on the network, or a load balancer that closed the connection). No timing and no
threads racing: the same on every run.

1. creates a bucket;
2. ``obstore.put(store, "lock", b"writer-1", mode="create")`` through the relay;
3. lists what the relay saw and reads the object back from moto directly.

Exit codes: 1 the bug is present (the conditional PUT was sent twice and the caller was told
AlreadyExists for its own object), 0 the caller was told it succeeded, or was told that the outcome
is unknown (an error that is not AlreadyExists), 2 the script could not run.
"""

from __future__ import annotations

import argparse
import atexit
import http.client
import http.server
import json
import socket
import subprocess
import sys
import time
import traceback

START_TIMEOUT = 60.0
BUCKET = "repro"
CONTROL = "/relay-control/state"


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(command: list[str], port: int, what: str) -> None:
    """Start ``command`` (listening on ``port``), wait until it accepts connections, stop it at exit."""
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    atexit.register(lambda: server.poll() is None and (server.kill(), server.wait(timeout=60)))
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


class Relay(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", port), RelayHandler)
        self.upstream_port = upstream_port
        self.dropped = False
        self.seen: list[str] = []

    def handle_error(self, request, client_address) -> None:
        pass  # the dropped connection is the point


class RelayHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Relay

    def log_message(self, *args) -> None:
        pass

    def forward(self) -> None:
        if self.path == CONTROL:
            answer = json.dumps(self.server.seen).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        upstream.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        conditional = self.command == "PUT" and "If-None-Match" in self.headers
        drop = conditional and not self.server.dropped
        if conditional:
            self.server.dropped = True
            self.server.seen.append(f"PUT {self.path} If-None-Match: {self.headers['If-None-Match']} "
                                    f"({len(body)} bytes, {self.headers.get('User-Agent', '?')}) -> {answer.status}"
                                    + (" (applied; answer dropped, connection closed)" if drop else ""))
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

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--relay", nargs=2, type=int, metavar=("PORT", "UPSTREAM_PORT"),
                        help="only run the relay in front of 127.0.0.1:UPSTREAM_PORT (the script starts it for itself)")
    parser.add_argument("--max-retries", type=int, metavar="N",
                        help="the store's retry_config max_retries (default: object_store's own, 10)")
    args = parser.parse_args(argv)
    if args.relay:
        Relay(*args.relay).serve_forever()
        return 0
    try:
        import boto3
        import obstore
        from obstore.store import S3Store
    except ImportError as missing:
        print(f'cannot run: {missing}. Install the packages first: pip install obstore "moto[server]"', file=sys.stderr)
        return 2
    print(f"obstore {obstore.__version__}, Python {sys.version.split()[0]}"
          + ("" if args.max_retries is None else f", retry_config max_retries={args.max_retries}"))
    try:
        moto_port, relay_port = free_port(), free_port()
        start([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(moto_port)], moto_port, "moto's server")
        start([sys.executable, __file__, "--relay", str(relay_port), str(moto_port)], relay_port, "the relay")
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{moto_port}", region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
        s3.create_bucket(Bucket=BUCKET)
        retries = {} if args.max_retries is None else {"retry_config": {"max_retries": args.max_retries}}
        store = S3Store(BUCKET, endpoint=f"http://127.0.0.1:{relay_port}", region="us-east-1", access_key_id="test",
                        secret_access_key="test", conditional_put="etag", client_options={"allow_http": True}, **retries)
        try:
            obstore.put(store, "lock", b"writer-1", mode="create")
            told = None
        except Exception as error:  # what the caller is told is the finding
            told = error
        connection = http.client.HTTPConnection("127.0.0.1", relay_port, timeout=30)
        connection.request("GET", CONTROL)
        seen = json.loads(connection.getresponse().read())
        print("Conditional PUTs through the relay, in order:")
        for line in seen:
            print(f"  {line}")
        print("obstore.put(mode='create') told the caller: "
              + ("success" if told is None else f"{type(told).__name__}: {str(told).splitlines()[0][:300]}"))
        stored = s3.get_object(Bucket=BUCKET, Key="lock")["Body"].read()
        print(f"the object 'lock', read from the store: {stored!r}")
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2
    if len(seen) > 1 and told is not None and "AlreadyExists" in type(told).__name__ and stored == b"writer-1":
        print(f"BUG PRESENT: the conditional PUT was sent {len(seen)} times, and the caller was told its own object "
              "already exists.")
        return 1
    print("OK: the caller was told success, or that the outcome is unknown.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
