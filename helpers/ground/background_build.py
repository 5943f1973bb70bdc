"""A build that runs beside other work: started in the background by one command, waited for by
whoever needs what it builds.

``make test`` starts the Unity Catalog server's build this way and runs the tests meanwhile: the
build (cargo, minutes on a cold machine) leaves a core idle for long stretches, and only
notebook 15 and the catalog's tests need the server. CI starts versitygw's build the same way.

    background_build.start(lock, log, [sys.executable, "-m", "helpers.catalog.server_build", "build"])
    ...
    background_build.wait(lock)   # True if it had to wait; returns when no build holds the lock

The started process holds an exclusive ``flock`` on ``lock`` for as long as it lives: the lock is
taken here, before the process starts, and handed to it, so nobody can look between the start
and the build's first step and find no build. Waiting is blocking on the same lock, so it ends when
the build ends, however long that takes on a loaded machine, and at once if the build process
died (the kernel releases the lock). There is no clock in it.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
from pathlib import Path
from typing import Callable, Sequence


def start(lock: Path, log: Path, command: Sequence[str], *, cwd: Path) -> int:
    """Start ``command``, its output in ``log``, holding ``lock`` until it exits; returns its pid.
    It stays in the caller's process group, so a Ctrl-C that stops ``make test`` stops it too.
    Raises BlockingIOError if a build already holds the lock."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with open(log, "wb") as output:
            process = subprocess.Popen(
                list(command),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                pass_fds=(descriptor,),
            )
        os.ftruncate(descriptor, 0)
        os.write(descriptor, f"{process.pid}\n".encode())
    finally:
        os.close(descriptor)  # the process keeps its copy, and with it the lock
    return process.pid


def begin(name: str, lock: Path, log: Path, command: Sequence[str], *, cwd: Path) -> str:
    """:func:`start`, and what to say of it: the build started, or one that runs already."""
    from helpers.ground import config

    try:
        pid = start(lock, log, command, cwd=cwd)
    except BlockingIOError:
        return f"{name}: a build runs already (its log: {config.shown(log)})"
    return f"Building {name} in the background (pid {pid}; its log: {config.shown(log)})"


def running(lock: Path) -> bool:
    """Whether a build holds ``lock`` now."""
    if not lock.is_file():
        return False
    descriptor = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


def wait(lock: Path, say: Callable[[str], None] | None = None, what: str = "the build") -> bool:
    """Block until no build holds ``lock``; True if one did. ``say`` is told once, before waiting."""
    if not running(lock):
        return False
    if say is not None:
        say(f"waiting for {what}, which runs in the background ...")
    descriptor = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
    finally:
        os.close(descriptor)
    return True


def log_tail(log: Path, characters: int = 1500) -> str:
    """The end of a background build's log, for an error that says why it failed."""
    if not log.is_file():
        return f"(no log at {log.name})"
    return log.read_text(errors="replace").strip()[-characters:]
