"""The commit gate's HTTP side (:mod:`helpers.runs.commitgate`): the threading server it listens
with, the request handler that reads each request, logs it, waits while the gate holds it,
forwards it and writes the answer back unchanged, and the keep-alive connections (one per upstream
and handler thread) that carry requests on to the emulator.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

from helpers.delta import delta_log
from helpers.runs.gate_log import CommitRequest, LockRequest, client_of, parse_lock_request

HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "expect",
    "content-length",
}
UPSTREAM_TIMEOUT_S = 60.0


class AnswerDropped(ConnectionAbortedError):
    """Raised by a gate's ``forward`` for a request the store has answered ``status``: the handler
    then closes the client's connection without a word, as a network that lost the answer does."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Server(ThreadingHTTPServer):
    """The gate's HTTP server: a client that hung up before its answer is no error to print (a
    profile's meter sees hundreds of them)."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def send(
    local: threading.local,
    target: tuple[str, int],
    method: str,
    path: str,
    headers: list[tuple[str, str]],
    body: bytes | None,
):
    """Send one request to ``target`` on this thread's connection to it (kept in ``local``, made
    again once if it broke); return (status, reason, headers, body)."""
    connections = getattr(local, "connections", None)
    if connections is None:
        connections = local.connections = {}  # this thread's, one per upstream
    for attempt in (1, 2):
        connection = connections.get(target)
        if connection is None:
            connection = connections[target] = http.client.HTTPConnection(
                *target, timeout=UPSTREAM_TIMEOUT_S
            )
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for name, value in headers:
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            data = response.read()
            return response.status, response.reason, response.getheaders(), data
        except (ConnectionError, http.client.HTTPException, OSError):
            connection.close()
            connections.pop(target, None)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


class GateHandler(BaseHTTPRequestHandler):
    """One request through a gate (``gate``, set by :func:`handler_class`): every method is
    ``_handle``, which a gate's subclass may wrap in its own handler class."""

    gate = None
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave in two writes: without this, each
    # answer with a body waited ~40 ms for the client's delayed ACK

    def log_message(self, format, *args):  # noqa: A002  (quiet: the gate keeps its own log)
        pass

    def _body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return None

    def _handle(self) -> None:
        gate = self.gate
        body = self._body()
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        lock_request = parse_lock_request(
            self.headers.get("X-Amz-Target", ""),
            body,
            client_of(self.headers.get("User-Agent", "")),
        )
        request, slot = self._hold_commit()
        try:
            status, reason, response_headers, data = gate.forward(
                self.command, self.path, headers, body
            )
        except AnswerDropped as dropped:  # the store applied it; its client hears nothing
            if request is not None:
                request.status = dropped.status
            if lock_request is not None:
                self._log_lock_write(lock_request, dropped.status, b"")
            self.close_connection = True
            return
        except Exception as error:  # the emulator is down or hung: say so to the client
            status, reason, response_headers = (
                502,
                "Bad Gateway",
                [("Content-Type", "text/plain")],
            )
            data = f"commit gate: the emulator at {gate.upstream_host}:{gate.upstream_port} did not answer: {error}".encode()
        finally:
            if slot is not None:
                slot.done.set()
        if request is not None:
            request.status = status
        if lock_request is not None:
            self._log_lock_write(lock_request, status, data)
        self._answer(status, reason, response_headers, data)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle

    def _hold_commit(self) -> tuple[CommitRequest | None, object | None]:
        """The commit-file request this is (a HEAD or PUT; None for any other, reads are not
        logged), logged with the gate, and its waiting slot if the gate holds it: then this
        returns at its turn."""
        path_only = unquote(urlparse(self.path).path)
        version = delta_log.commit_version(path_only)
        if version is None or self.command not in ("PUT", "HEAD"):  # the check and the write
            return None, None
        request = CommitRequest(
            t_arrived=time.time(),
            method=self.command,
            key=path_only.lstrip("/"),
            version=version,
            client=client_of(self.headers.get("User-Agent", "")),
            conditional="If-None-Match" in self.headers,
            copy="x-amz-copy-source" in self.headers,
        )
        slot = self.gate._admit(request)
        if slot is not None:
            slot.turn.wait()
            request.held_s = round(time.time() - request.t_arrived, 3)
        return request, slot

    def _log_lock_write(self, lock_request: LockRequest, status: int, data: bytes) -> None:
        """Log a lock-item write with what DynamoDB answered (its error type if it refused)."""
        lock_request.status = status
        if status >= 400:
            try:
                lock_request.error = (
                    str(json.loads(data).get("__type", "")).rsplit("#", 1)[-1] or None
                )
            except ValueError:
                lock_request.error = None
        with self.gate._lock:
            self.gate._lock_requests.append(lock_request)

    def _answer(self, status: int, reason: str, response_headers, data: bytes) -> None:
        """Write the upstream's answer back to the client (a HEAD keeps its Content-Length)."""
        self.send_response_only(status, reason)
        length = None
        for name, value in response_headers:
            if name.lower() == "content-length":
                length = value
            elif name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header(
            "Content-Length",
            length if self.command == "HEAD" and length is not None else str(len(data)),
        )
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def handler_class(gate) -> type[GateHandler]:
    """A handler class for ``gate``'s server, whose requests go through that gate."""

    class Handler(GateHandler):
        pass

    Handler.gate = gate
    return Handler
