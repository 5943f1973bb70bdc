"""Hold a Delta Spark commit at its claim in the DynamoDB lock table, until another writer committed.

Delta Spark with the DynamoDB log store commits version N in four steps: it stages the commit in
``_delta_log/.tmp/N.json.<uuid>``, claims N with a conditional ``PutItem`` of an incomplete item
(``complete = "false"``) in the lock table, copies the staged file to ``N.json`` and marks the item
complete. The claim is where two writers meet. :class:`ClaimHold` is a pass-through HTTP proxy in
front of the DynamoDB endpoint, given to Delta Spark only (``spark.workbook.storage.ddb.endpoint``):
armed for a table, it holds the first claim of that table (a ``PutItem`` whose item names the
table's ``tablePath`` and is incomplete) before it reaches DynamoDB, says so, and sends it on once
released. Every other request passes straight through, and what DynamoDB answers is its own.

A race of the mixed matrix (:mod:`helpers.matrix.mixed`) with Delta Spark as B: B reads version N,
writes its data files and its staged commit, and is held at its claim of N+1; A (deltalake, in a
process of its own that talks to DynamoDB directly) commits N+1; B is released, its claim is refused,
and Delta Spark's conflict checker decides: refuse, or commit at N+2. The same hold as the matrix's
(:mod:`helpers.matrix.spark`), placed one step later: in the lock table instead of the log store,
which the DynamoDB log store is here. The order is forced by two events, never by a sleep.

The proxy binds a free port on 127.0.0.1 and forwards to one endpoint (the emulator's).
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class ClaimHold:
    """The proxy and its one hold (one table at a time)."""

    def __init__(self, target: str) -> None:
        parsed = urllib.parse.urlsplit(target)
        self.target = (parsed.hostname, parsed.port or 80)
        self._state = threading.Condition()
        self._armed: str | None = None
        self._held: str | None = None
        self._released = True
        self._abandoned = False
        hold = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hold._maybe_hold(self.headers.get("X-Amz-Target", ""), body)
                self._forward("POST", body)

            def do_GET(self) -> None:
                self._forward("GET", b"")

            def _forward(self, method: str, body: bytes) -> None:
                connection = http.client.HTTPConnection(*hold.target, timeout=120)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
                    headers["Host"] = self.headers.get("Host", "")
                    connection.request(method, self.path, body=body, headers=headers)
                    answer = connection.getresponse()
                    data = answer.read()
                    self.send_response(answer.status, answer.reason)
                    for key, value in answer.getheaders():
                        if key.lower() not in HOP_BY_HOP:
                            self.send_header(key, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                finally:
                    connection.close()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, name="claim-hold", daemon=True).start()

    def _maybe_hold(self, target: str, body: bytes) -> None:
        if not target.endswith(".PutItem"):
            return
        with self._state:
            if self._armed is None:
                return
            try:
                item = json.loads(body or b"{}").get("Item", {})
            except ValueError:
                return
            path = item.get("tablePath", {}).get("S", "").rstrip("/")
            if path != self._armed or item.get("complete", {}).get("S") != "false":
                return
            self._armed, self._held, self._released = None, item["fileName"]["S"], False
            self._state.notify_all()
            self._state.wait_for(lambda: self._released)

    # -- what a race calls ---------------------------------------------------------------------
    def arm(self, table_path: str) -> None:
        """Hold the next claim of this table (its ``tablePath``: ``s3a://bucket/prefix``)."""
        with self._state:
            self._armed, self._held = table_path.rstrip("/"), None
            self._released, self._abandoned = False, False

    def wait_held(self, timeout_s: float) -> str | None:
        """The commit file the claim was held at, once it is; None if B ended first (abandoned).
        Raises TimeoutError after ``timeout_s`` (a safety bound: nothing else is timed)."""
        with self._state:
            if not self._state.wait_for(
                lambda: self._held is not None or self._abandoned, timeout_s
            ):
                raise TimeoutError(f"no claim of {self._armed} within {timeout_s:.0f} s")
            return self._held

    def release(self) -> None:
        """Send the held claim on (and disarm)."""
        with self._state:
            self._armed, self._released = None, True
            self._state.notify_all()

    def abandon(self) -> None:
        """B ended: wake :meth:`wait_held` (with None if nothing was held) and disarm."""
        with self._state:
            self._abandoned, self._armed = True, None
            self._state.notify_all()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
