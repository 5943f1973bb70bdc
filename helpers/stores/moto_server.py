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
``x-workbook-moto: atomic-writes``, by which ``helpers.stores.services`` tells this server from a plain
moto server.

moto keeps its state in memory, so a restart loses every bucket, object version and item. With
``--journal FILE`` it survives one, as S3 and DynamoDB would: each write moto accepted (answer
status below 400) is appended to FILE, one JSON line with its method, path, headers and body, and
flushed while the lock is still held, before the client hears the answer; so a client never sees
a write acknowledged that a restart then loses, and the order of the lines is the order in which
moto applied the writes. At start, before it serves, the server replays FILE in that order
through the same application. A line cut short by a kill (its client got no answer) is dropped
from the file. moto picks random upload ids and version ids; replay maps the ids of the original
answers to the new ones and rewrites the later requests that name them (``uploadId=``,
``versionId=``, also inside ``x-amz-copy-source`` and a multi-object delete), so the contents and
the order of versions come back, under new version ids and new modification times (a client that
kept an id from before the restart cannot use it: a multipart upload in progress then has to
start again). DynamoDB reads, which arrive as POST, are not written down; ``POST /moto-api/reset``
empties the journal. Replay costs what moto's own handling of each write costs, a few
milliseconds (1,000 PUTs of 10 KB: about 3 s), which is why ``helpers.stores.services`` asks for a
journal only when told to.

It imports only the standard library, moto, werkzeug and ``helpers/stores/moto_speedups.py`` (moto's own
answers with less work), so docker-compose.yml runs these same two files, as ``python -m
helpers.stores.moto_server``, inside the pinned moto image. Command line (moto's own flags, plus
``--journal``)::

    python -m helpers.stores.moto_server -H 127.0.0.1 -p 5050 [--journal .state/moto/journal]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import signal
import sys
import threading
import time
from urllib.parse import parse_qs, urlsplit

from helpers.stores import moto_speedups

MARK_HEADER = "x-workbook-moto"
MARK_VALUE = "atomic-writes"
READS = ("GET", "HEAD", "OPTIONS")


class AtomicWrites:
    """WSGI middleware: requests that may write reach the wrapped application one at a time, and
    those moto accepts are written to the journal, if there is one, before they are answered."""

    def __init__(self, app, journal: Journal | None = None) -> None:
        self.app = app
        self.journal = journal
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD", "GET").upper() in READS:
            return self.app(
                environ,
                lambda status, headers, exc_info=None: start_response(
                    status, [*headers, (MARK_HEADER, MARK_VALUE)], exc_info
                ),
            )
        body = _read_body(environ)  # off the lock: a slow client must not hold up everyone's writes
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        request = self.journal.request(environ, body) if self.journal else None
        with self.lock:
            status, headers, data = _call(self.app, environ)
            if request:
                self.journal.append(request, int(status.split()[0]), headers, data)
        start_response(status, [*headers, (MARK_HEADER, MARK_VALUE)])
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


HOP_BY_HOP = {
    f"HTTP_{name}"
    for name in (
        "CONNECTION",
        "KEEP_ALIVE",
        "TRANSFER_ENCODING",
        "TE",
        "TRAILER",
        "UPGRADE",
        "EXPECT",
        "PROXY_CONNECTION",
    )
}
"""Headers about the connection that carried a request, not the request: the journal leaves them out."""
DYNAMODB_READ = re.compile(r"DynamoDB_\d+\.(Get|BatchGet|TransactGet|Describe|List|Query|Scan)")
PRESERVED_NAMES = (
    "moto.preserved_header_names"  # moto's MotoRequestHandler: S3 metadata names with "_"
)
RESET_PATH = "/moto-api/reset"
IDS = re.compile(r"(?<=uploadId=)[^&\s]+|(?<=versionId=)[^&\s]+|(?<=<VersionId>)[^<\s]+")
"""Where a request names an id moto chose: in the query, in x-amz-copy-source, in a multi-delete body."""


class Journal:
    """The writes moto accepted, one JSON line each, in the order moto applied them.

    A line is whole once it ends in a newline: no line has one inside it (the body is base64),
    so a line without one is a write whose process was killed while writing it down, before
    its client got an answer, and replay cuts it off."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.file = None

    def request(self, environ, body: bytes) -> dict | None:
        """What replay needs of a request, taken before moto sees it; None for a DynamoDB read."""
        if DYNAMODB_READ.match(environ.get("HTTP_X_AMZ_TARGET", "")):
            return None
        query = environ.get("QUERY_STRING", "")
        path = environ.get("RAW_URI") or environ.get("PATH_INFO", "/") + (
            f"?{query}" if query else ""
        )
        headers = {
            k: v
            for k, v in environ.items()
            if (k.startswith("HTTP_") and k not in HOP_BY_HOP) or k == "CONTENT_TYPE"
        }
        request = {
            "method": environ["REQUEST_METHOD"],
            "path": path,
            "headers": headers,
            "body": base64.b64encode(body).decode("ascii"),
        }
        if environ.get(PRESERVED_NAMES):
            request["names"] = environ[PRESERVED_NAMES]
        return request

    def append(self, request: dict, status: int, headers, data: bytes) -> None:
        """Write down a write moto accepted (called under the lock, before the answer leaves)."""
        if status >= 400:
            return
        if urlsplit(request["path"]).path == RESET_PATH:
            self.file.seek(0)
            self.file.truncate()
            return
        line = json.dumps({**request, **_chosen_ids(request, headers, data)}, separators=(",", ":"))
        self.file.write(line.encode() + b"\n")
        self.file.flush()  # into the operating system: a killed process loses nothing it answered

    def replay(self, app) -> str:
        """Apply every whole line to the application, in order; drop a cut-off last line; open
        the file for appending. Returns the line to log."""
        started, count, failures, whole, cut, ids = time.monotonic(), 0, [], 0, 0, {}
        if os.path.exists(self.path):
            with open(self.path, "rb") as lines:
                for line in lines:
                    if not line.endswith(b"\n"):
                        break
                    whole += len(line)
                    count += 1
                    try:
                        failure = _replay(app, json.loads(line), ids)
                    except (
                        Exception
                    ) as error:  # one bad line must not keep the rest of the state away
                        failure = f"line {count}: {type(error).__name__}: {error}"
                    if failure:
                        failures.append(failure)
            cut = os.path.getsize(self.path) - whole
            if cut:
                os.truncate(self.path, whole)
        self.file = open(self.path, "ab")
        message = f"journal: replayed {count} writes from {self.path} in {time.monotonic() - started:.1f} s"
        if failures:
            message += f"; {len(failures)} failed, the first: {failures[0]}"
        if cut:
            message += f"; dropped a cut-off last record ({cut} bytes)"
        return message


def _replay(app, record: dict, ids: dict[str, str]) -> str | None:
    """Apply one journaled write, with the ids moto chose before replaced by those it chose now
    (and learn the ones this write makes); returns what went wrong, if it did."""
    from werkzeug.test import EnvironBuilder

    def renamed(text: str) -> str:
        return IDS.sub(lambda m: ids.get(m[0], m[0]), text)

    path, body = renamed(record["path"]), base64.b64decode(record["body"])
    if "delete" in parse_qs(urlsplit(path).query, keep_blank_values=True):
        body = renamed(body.decode()).encode()
    environ = EnvironBuilder(path=path, method=record["method"], data=body).get_environ()
    environ.update(record["headers"])
    if "HTTP_X_AMZ_COPY_SOURCE" in environ:
        environ["HTTP_X_AMZ_COPY_SOURCE"] = renamed(environ["HTTP_X_AMZ_COPY_SOURCE"])
    if "names" in record:
        environ[PRESERVED_NAMES] = record["names"]
    status, headers, data = _call(app, environ)
    chosen = _chosen_ids({"method": record["method"], "path": path}, headers, data)
    ids.update((record[key], chosen[key]) for key in chosen if key in record)
    return f"{status} {record['method']} {path}" if int(status.split()[0]) >= 400 else None


def _chosen_ids(request: dict, headers, data: bytes) -> dict:
    """The ids moto chose for this write, which later requests may name: the version id of an
    object version or delete marker, the upload id of a new multipart upload."""
    found = {}
    version = next((v for k, v in headers if k.lower() == "x-amz-version-id"), None)
    if version and version != "null":
        found["version_id"] = version
    if request["method"] == "POST" and "uploads" in parse_qs(
        urlsplit(request["path"]).query, keep_blank_values=True
    ):
        upload = re.search(rb"<UploadId>([^<]+)</UploadId>", data)
        if upload:
            found["upload_id"] = upload[1].decode()
    return found


def _call(app, environ) -> tuple[str, list, bytes]:
    """Run the WSGI application on one request to the end: (status line, headers, body)."""
    answered = []
    answer = app(environ, lambda status, headers, exc_info=None: answered.extend((status, headers)))
    try:
        data = b"".join(answer)
    finally:
        if hasattr(answer, "close"):
            answer.close()
    return answered[0], answered[1], data


def application(journal: str | None = None):
    """moto's server application, as ``python -m moto.server`` builds it, with atomic writes;
    with a journal file, the state it records is replayed first (and the result printed)."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    moto_speedups.remember_pure_lookups()
    moto_speedups.look_only_where_asked()
    app = DomainDispatcherApplication(create_backend_app)
    app.debug = True  # as moto's own command line: errors come back as AWS answers, not tracebacks
    if journal is None:
        return AtomicWrites(app)
    kept = Journal(journal)
    print(kept.replay(app), flush=True)
    return AtomicWrites(app, kept)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.stores.moto_server", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "-H", "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)"
    )
    parser.add_argument("-p", "--port", type=int, default=5000, help="port to listen on")
    parser.add_argument(
        "--journal",
        metavar="FILE",
        help="keep state across restarts: replay FILE at start, "
        "append each accepted write to it (default: state in memory only)",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault(
        "MOTO_PORT", str(args.port)
    )  # as moto's command line: moto builds some URLs from it

    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import run_simple

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    run_simple(
        args.host,
        args.port,
        application(args.journal),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
