"""Say at once when an emulator stops answering under a running notebook.

A client that loses its server does not say so quickly: delta-rs retries a refused connection
with backoff for minutes, then fails with ``Could not connect to the endpoint URL:
"http://127.0.0.1:5050/..."``, a message that names neither the emulator nor the command that
brings it back. :func:`watch` starts one background thread per process that tries a TCP
connection to each emulator the notebook asked for (:func:`helpers.stores.services.require` calls it in a
kernel) every :data:`INTERVAL_S` seconds. When one refuses, the thread prints, into the output of
the cell that is running::

    moto (S3 + DynamoDB, 127.0.0.1:5050) stopped answering. Start it again with `make services`
    in a terminal, then rerun this cell.

and, when it answers again, one line that says so. Only a refused connection counts: a server
too busy to accept within :data:`CONNECT_TIMEOUT_S` is slow, not gone, and is not reported.
Nothing is printed while every emulator answers, so a notebook's outputs do not change.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

INTERVAL_S = 1.0
CONNECT_TIMEOUT_S = 10.0
RESTART_COMMAND = "make services"


@dataclass(frozen=True)
class Endpoint:
    name: str
    plays: tuple[str, ...]
    host: str
    port: int

    restart: str = RESTART_COMMAND

    def __str__(self) -> str:
        plays = " + ".join(_PLAYS.get(p, p) for p in self.plays)
        return f"{self.name} ({plays}, {self.host}:{self.port})"


_PLAYS = {"s3": "S3", "dynamodb": "DynamoDB", "azure": "Azure Blob"}


def refused(endpoint: Endpoint, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """True when nothing listens on the endpoint: the connection is refused (or the host unreachable),
    not merely slow."""
    try:
        with socket.create_connection((endpoint.host, endpoint.port), timeout=timeout):
            return False
    except socket.timeout:
        return False
    except OSError:
        return True


def stopped_message(endpoint: Endpoint) -> str:
    return (
        f"{endpoint} stopped answering. Start it again with `{endpoint.restart}` in a terminal, "
        "then rerun this cell."
    )


def back_message(endpoint: Endpoint) -> str:
    return f"{endpoint} answers again."


@dataclass
class Watcher:
    """Watches endpoints from one daemon thread; :meth:`check` is one round, for tests."""

    endpoints: list[Endpoint] = field(default_factory=list)
    out: Callable[[], TextIO] = lambda: sys.stderr
    interval: float = INTERVAL_S
    down: set[Endpoint] = field(default_factory=set)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, endpoints: list[Endpoint]) -> None:
        with self._lock:
            self.endpoints.extend(e for e in endpoints if e not in self.endpoints)

    def check(self) -> list[str]:
        """One round: the messages it printed."""
        with self._lock:
            endpoints = list(self.endpoints)
        said = []
        for endpoint in endpoints:
            gone = refused(endpoint)
            if gone and endpoint not in self.down:
                self.down.add(endpoint)
                said.append(stopped_message(endpoint))
            elif not gone and endpoint in self.down:
                self.down.discard(endpoint)
                said.append(back_message(endpoint))
        for line in said:
            print(line, file=self.out(), flush=True)
        return said

    def start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="service-watch", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:  # a daemon thread: it ends with the kernel
            time.sleep(self.interval)
            self.check()


_WATCHER = Watcher()


def in_a_kernel() -> bool:
    """True inside a Jupyter kernel (JupyterLab, papermill, nbval), where a cell's output is read."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and type(get()).__name__ == "ZMQInteractiveShell"


def watch(endpoints: list[Endpoint]) -> Watcher:
    """Watch these endpoints for the rest of the process (once per process; later calls add)."""
    _WATCHER.add(endpoints)
    _WATCHER.start()
    return _WATCHER
