"""moto server with every write applied atomically, as S3 and DynamoDB apply them.

moto checks a condition and then applies the write as two steps of Python, on one thread per
request. Two conditional writes that arrive together can both pass the check: two PUTs of one
key with ``If-None-Match: *`` both answered 200 (two object versions), or two ``PutItem`` with
``attribute_not_exists`` both accepted. Measured with moto 5.2.5 and 8 concurrent writers per
round (a short thread switch interval makes the window easy to hit): 19 of 200 rounds of S3 PUTs
and 18 of 200 rounds of DynamoDB PutItem had more than one winner. The same race, rarer at the
default switch interval, made a commit of notebook 08's safe protocol vanish on a loaded
machine. S3 and DynamoDB guarantee that such writes are atomic, and every protocol the workbook
calls safe relies on it; an emulator that breaks it would teach a loss that the cloud does not
have.

So this module runs moto's own application behind one small WSGI layer: every request that can
change state (any method but GET and HEAD; DynamoDB sends reads as POST too) has its body read
first, then is handed to moto while holding one lock, so the condition check and the write
happen with no other write between them. Reads stay concurrent. Each answer carries the header
``x-workbook-moto: atomic-writes``, by which ``helpers.services`` tells this server from a plain
moto server.

It imports only the standard library, moto and werkzeug, so docker-compose.yml runs this same
file inside the pinned moto image. Command line (moto's own flags)::

    python -m helpers.moto_server -H 127.0.0.1 -p 5050
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
import threading

MARK_HEADER = "x-workbook-moto"
MARK_VALUE = "atomic-writes"
READS = ("GET", "HEAD", "OPTIONS")


class AtomicWrites:
    """WSGI middleware: requests that may write reach the wrapped application one at a time."""

    def __init__(self, app) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        def marked_start_response(status, headers, exc_info=None):
            return start_response(status, [*headers, (MARK_HEADER, MARK_VALUE)], exc_info)

        if environ.get("REQUEST_METHOD", "GET").upper() in READS:
            return self.app(environ, marked_start_response)
        body = _read_body(environ)  # off the lock: a slow client must not hold up everyone's writes
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        with self.lock:
            answer = self.app(environ, marked_start_response)
            try:
                data = b"".join(answer)
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        return [data]


def _read_body(environ) -> bytes:
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):  # chunked upload: the server ends the stream for us
        return stream.read()
    length = environ.get("CONTENT_LENGTH") or "0"
    try:
        return stream.read(int(length)) if int(length) > 0 else b""
    except ValueError:
        return b""


def application():
    """moto's server application, as ``python -m moto.server`` builds it, with atomic writes."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # as moto's own command line: errors come back as AWS answers, not tracebacks
    return AtomicWrites(app)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m helpers.moto_server", description=__doc__.split("\n\n")[0])
    parser.add_argument("-H", "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("-p", "--port", type=int, default=5000, help="port to listen on")
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_PORT", str(args.port))  # as moto's command line: moto builds some URLs from it

    from werkzeug.serving import run_simple
    from moto.moto_server.werkzeug_app import MotoRequestHandler

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple(args.host, args.port, application(), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
