"""Loaded at start-up by every Python process whose PYTHONPATH holds this folder (tests/test_privacy.py
puts it there): an audit hook that refuses any network look-up or connection beyond loopback and
appends what it refused, one JSON line each, to the file named by WORKBOOK_EGRESS_LOG.

The hook sees what Python code asks of the socket module (name look-ups, connects, datagrams), in
this process and in every Python process it starts with the same environment (a notebook's
kernel, Spark's Python workers). It does not see a JVM's own sockets. A refused call raises
OSError in the caller, so nothing leaves the machine while the test runs.
"""

import ipaddress
import json
import os
import socket
import sys
import traceback

_LOG = os.environ.get("WORKBOOK_EGRESS_LOG")
_EVENTS = (
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "socket.gethostbyname_ex",
    "socket.gethostbyaddr",
    "socket.connect",
    "socket.sendto",
    "socket.sendmsg",
)


def _local(host) -> bool:
    """A loopback name or address (or none: a local wildcard)."""
    if host in (None, "", b""):
        return True
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    host = str(host).strip("[]").lower().split("%")[0]
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def _host(event: str, args: tuple):
    """The host a socket event names, or None where it names no network host (a Unix socket)."""
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[-1]
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6) or not isinstance(
            address, tuple
        ):
            return None
        return address[0]
    return args[0]


def _refuse(event: str, args: tuple) -> None:
    if event not in _EVENTS:
        return
    host = _host(event, args)
    if host is None or _local(host):
        return
    stack = traceback.extract_stack()[:-2]
    packages = [
        f"{f.filename.split('/site-packages/', 1)[1]}:{f.lineno}"
        for f in stack
        if "/site-packages/" in f.filename
    ]
    caller = packages[-4:] or [f"{os.path.basename(f.filename)}:{f.lineno}" for f in stack[:3]]
    if _LOG:
        with open(_LOG, "a") as log:
            log.write(
                json.dumps(
                    {"pid": os.getpid(), "event": event, "host": str(host), "caller": caller}
                )
                + "\n"
            )
    raise OSError(f"refused by the no-egress check: {event} to {host}")


if _LOG:
    sys.addaudithook(_refuse)
