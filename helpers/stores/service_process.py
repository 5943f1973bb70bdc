"""A service's process and its files under ``.state/``: what a service is (:class:`Service`), where
it stands (:class:`Status`), how :mod:`helpers.stores.services` starts it detached with its log and
pid file, and how that pid file is read back (a pid still alive, the block that started it).

Imports: :mod:`helpers.ground` only.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from helpers.ground import config
from helpers.ground.local_processes import process_alive


@dataclass(frozen=True)
class Service:
    name: str
    provides: tuple[str, ...]
    host: Callable[[], str]
    port: Callable[[], int]
    identify: Callable[[str, int], str | None]
    """Returns a description of the server answering on the port if it is this service, else None."""
    command: Callable[[int], list[str]]
    port_variable: str
    environment: Callable[[], dict[str, str]] | None = None
    """The process's environment, when it needs more than this one's (versitygw: its root keys)."""

    @property
    def pid_file(self) -> Path:
        return config.STATE_DIR / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return config.STATE_DIR / "logs" / f"{self.name}.log"

    @property
    def data_dir(self) -> Path:
        return config.STATE_DIR / self.name


@dataclass(frozen=True)
class Status:
    name: str
    host: str
    port: int
    answering: bool
    identity: str | None
    pid: int | None
    """Set when the workbook started the process (it has a pid file)."""
    log_file: Path

    @property
    def managed(self) -> bool:
        return self.pid is not None

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


def read_pid(service: Service) -> int | None:
    """The pid of the process the workbook started for the service, if it is still alive."""
    try:
        pid = int(json.loads(service.pid_file.read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not process_alive(pid):
        service.pid_file.unlink(missing_ok=True)
        return None
    return pid


def started_by(service: Service) -> str | None:
    """Which :func:`helpers.stores.services.running` block started the service (its token), from its pid file."""
    try:
        return json.loads(service.pid_file.read_text()).get("owner")
    except (OSError, ValueError, AttributeError):
        return None


def log_tail(service: Service, lines: int = 15) -> str:
    try:
        text = service.log_file.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join("    " + line for line in text[-lines:]) or "    (log is empty)"


def status_of(service: Service) -> Status:
    """Where the service stands: answering or not, and whether the workbook started it."""
    host, port = service.host(), service.port()
    identity = service.identify(host, port)
    return Status(
        service.name,
        host,
        port,
        identity is not None,
        identity,
        read_pid(service),
        service.log_file,
    )


def spawn(service: Service, command: list[str], port: int, owner: str) -> subprocess.Popen:
    """Start ``command`` as the service's detached process, its output appended to the service's log,
    and write its pid file (with ``owner``, the token of the block that starts it)."""
    service.log_file.parent.mkdir(parents=True, exist_ok=True)
    service.data_dir.mkdir(parents=True, exist_ok=True)
    with open(service.log_file, "ab") as log:
        log.write(
            f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(command)}\n".encode()
        )
        log.flush()
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=config.ROOT,
            env=service.environment() if service.environment else None,
            start_new_session=True,  # survives the notebook kernel or make that started it
        )
    service.pid_file.write_text(
        json.dumps(
            {
                "pid": process.pid,
                "port": port,
                "command": command,
                "owner": owner,
            }
        )
    )
    return process
