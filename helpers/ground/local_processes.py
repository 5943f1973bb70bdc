"""Ports on 127.0.0.1 and the detached processes the workbook starts on them: a free port, whether
a port is free, and how a process group is stopped. The emulators (:mod:`helpers.stores.services`),
versitygw, the Spark cluster and the tests' own servers use these; none of them needs the others.
"""

from __future__ import annotations

import os
import signal
import socket
import time

from helpers.ground import config

STOP_TIMEOUT_S = 15.0


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now (the system's choice)."""
    with socket.socket() as sock:
        sock.bind((config.LOCALHOST, 0))
        return sock.getsockname()[1]


def port_is_free(port: int) -> bool:
    """True if nothing listens on 127.0.0.1:port (we could bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((config.LOCALHOST, port))
        except OSError:
            return False
    return True


def process_alive(pid: int) -> bool:
    """Does a process with this id run (ours or anyone's)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def stop_process_group(pid: int) -> None:
    """SIGTERM the process group ``pid`` leads (a service started in a session of its own), then
    SIGKILL it if it is still there after :data:`STOP_TIMEOUT_S`."""
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
