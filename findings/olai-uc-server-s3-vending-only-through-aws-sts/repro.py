"""olai-uc-server: vending an s3:// credential always calls AWS STS; no setting names another endpoint.

A managed table on S3-compatible storage (MinIO, Ceph, a local emulator) cannot be created: the
staging-table call vends a credential for its location, and for an `aws_iam_role` credential the
server always sends AssumeRole to https://sts.<region>.amazonaws.com/. Three variables are set here
to an STS stub on 127.0.0.1, and none is used: AWS_ENDPOINT_URL_STS and AWS_ENDPOINT_URL, which AWS's
SDKs honour, and AWS_STS_ENDPOINT, the server's own HTTP library's name for the same setting
(olai-http's `aws_sts_endpoint`). A second staging call with the same name shows what the failed
one left behind.

Usage:  cargo install olai-uc-server --version 0.0.11 --features bin --locked
        python repro.py [path/to/uc-server]           (standard library only)
        python repro.py path/to/uc-server --also-set NAME
                                                      (also set NAME to the stub: a patched build's setting)

Nothing leaves the machine: the server runs with HTTPS_PROXY set to a listener of this script that
records where the server asks to connect and refuses it. Exit 1: the server went to AWS STS
(BUG PRESENT); 0: it called the stub and staged the table; 2: it could not run.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

ASSUME_ROLE = ("<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><Credentials>"
               "<AccessKeyId>ASIASTUBSTUBSTUBSTUB</AccessKeyId><SecretAccessKey>stub</SecretAccessKey>"
               "<SessionToken>stub</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>"
               "</AssumeRoleResult></AssumeRoleResponse>")


STS_VARIABLES = ("AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL", "AWS_STS_ENDPOINT")
"""Every name under which an STS endpoint could be given to the server: AWS's two, and olai-http's."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubSTS(BaseHTTPRequestHandler):
    calls: list = []

    def do_POST(self):  # noqa: N802
        StubSTS.calls.append(self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode())
        body = ASSUME_ROLE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def refusing_proxy(port: int, seen: list) -> None:
    """Accept connections, record each request line (CONNECT host:443), close: nothing goes further."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    while True:
        connection, _ = listener.accept()
        with connection:
            seen.append(connection.recv(512).split(b"\r\n")[0].decode(errors="replace"))


def call(base: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                     method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=300) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def main() -> int:
    args = sys.argv[1:]
    variables = STS_VARIABLES
    if "--also-set" in args:
        at = args.index("--also-set")
        variables = STS_VARIABLES + (args[at + 1],)
        del args[at:at + 2]
    binary = args[0] if args else shutil.which("uc-server")
    if not binary or not os.path.exists(binary):
        print("uc-server not found: cargo install olai-uc-server --version 0.0.11 --features bin --locked")
        return 2
    stub = HTTPServer(("127.0.0.1", 0), StubSTS)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    proxy_port, seen = free_port(), []
    threading.Thread(target=refusing_proxy, args=(proxy_port, seen), daemon=True).start()
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        config = os.path.join(folder, "uc.yaml")
        with open(config, "w") as out:  # JSON is YAML
            json.dump({"host": "127.0.0.1", "backend": {"engine": "sqlite", "path": ":memory:"},
                       "managed_storage_root": "s3://bucket/uc", "ui": {"serve": False}}, out)
        env = {**os.environ, "HTTPS_PROXY": f"http://127.0.0.1:{proxy_port}", "HTTP_PROXY": f"http://127.0.0.1:{proxy_port}",
               "NO_PROXY": "127.0.0.1,localhost", **{variable: f"http://127.0.0.1:{stub.server_port}" for variable in variables}}
        server = subprocess.Popen([binary, "serve", "-c", config, "--host", "127.0.0.1", "--port", str(port), "--no-ui"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}/api/2.1/unity-catalog"
            for _ in range(300):
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                print("the server did not answer /health")
                return 2
            steps = [("POST", "/catalogs", {"name": "main"}),
                     ("POST", "/schemas", {"name": "default", "catalog_name": "main"}),
                     ("POST", "/credentials", {"name": "s3", "purpose": "STORAGE", "aws_iam_role": {
                         "role_arn": "arn:aws:iam::123456789012:role/uc", "region": "us-east-1",
                         "access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}}),
                     ("POST", "/external-locations", {"name": "s3", "url": "s3://bucket/uc", "credential_name": "s3"})]
            for method, path, body in steps:
                status, answer = call(base, method, path, body)
                if status != 200:
                    print(f"{method} {path}: HTTP {status} {answer}")
                    return 2
            status, answer = call(base, "POST", "/delta/v1/catalogs/main/schemas/default/staging-tables", {"name": "t"})
            again, answer_again = call(base, "POST", "/delta/v1/catalogs/main/schemas/default/staging-tables", {"name": "t"})
        finally:
            server.kill()
            server.wait()
    message = (answer.get("error") or {}).get("message", "")
    message_again = (answer_again.get("error") or {}).get("message", "") or answer_again.get("message", "")
    print(", ".join(f"{variable}={env[variable]}" for variable in variables) + " (a stub answering AssumeRole)")
    vended = [c.get("config", {}).get("s3.access-key-id") for c in answer.get("storage-credentials") or []]
    print(f"staging-tables: HTTP {status} {message[:300]}" + (f"credentials vended with access key {vended}" if vended else ""))
    print(f"staging-tables again, same name: HTTP {again} {message_again[:300]}")
    print(f"AssumeRole calls the stub received: {len(StubSTS.calls)}")
    print(f"connections the server asked the proxy for: {sorted(set(seen))}")
    if any("amazonaws.com" in line for line in seen):
        print("BUG PRESENT: the server sent AssumeRole to AWS STS; nothing could name the S3-compatible storage's STS")
        return 1
    if status == 200 and StubSTS.calls:
        print("FIXED: the server minted through the STS endpoint it was given")
        return 0
    print("unexpected outcome")
    return 2


if __name__ == "__main__":
    sys.exit(main())
