"""A build that runs beside other work: started in the background by one command, waited for by
whoever needs what it builds.

``make test`` starts the Unity Catalog server's build this way (cargo, minutes on a cold machine)
and runs the installs and the tests meanwhile: only notebook 15 and the catalog's tests need the
server, and only they wait. CI starts versitygw's build the same way, before ``make test``, so
that the store probe after it finds versitygw built.

    background_build.begin(name, lock, log, "helpers.catalog.server_build")  # build --holding-lock
    ...
    background_build.wait(lock)   # True if it had to wait; returns when no build holds the lock

The started process holds an exclusive ``flock`` on ``lock`` for as long as it lives: the lock is
taken here, before the process starts, and handed to it, so nobody can look between the start
and the build's first step and find no build. Waiting is blocking on the same lock, so it ends when
the build ends, however long that takes on a loaded machine, and at once if the build process
died (the kernel releases the lock). There is no clock in it.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
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


def begin(name: str, lock: Path, log: Path, module: str, extra: Sequence[str] = ()) -> str:
    """Start ``python -m module build --holding-lock *extra`` (:func:`start`, from the workbook's
    folder) and say what happened: the build started, or one that runs already."""
    from helpers.ground import config

    command = [sys.executable, "-m", module, "build", "--holding-lock", *extra]
    try:
        pid = start(lock, log, command, cwd=config.ROOT)
    except BlockingIOError:
        return f"{name}: a build runs already (its log: {config.shown(log)})"
    return f"Building {name} in the background (pid {pid}; its log: {config.shown(log)})"


def add_options(parser: argparse.ArgumentParser, log: Path) -> None:
    """A build command's two options for this: ``--background``, and ``--holding-lock``, which only
    the build :func:`begin` starts is given."""
    from helpers.ground import config

    parser.add_argument(
        "--background",
        action="store_true",
        help=f"start the build in a process of its own and return (its log: {config.shown(log)})",
    )
    parser.add_argument("--holding-lock", action="store_true", help=argparse.SUPPRESS)


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


def wait(
    lock: Path,
    say: Callable[[str], None] | None = None,
    what: str = "the build",
    log: Path | None = None,
) -> bool:
    """Block until no build holds ``lock``; True if one did. ``say`` is told before waiting, and
    after it the last line of ``log`` (built, and in how long, or why not)."""
    if not running(lock):
        return False
    if say is not None:
        say(f"waiting for {what}, which runs in the background ...")
    descriptor = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
    finally:
        os.close(descriptor)
    if say is not None and log is not None:
        for line in log_tail(log, 400).splitlines()[-1:]:
            say(line)
    return True


def log_tail(log: Path, characters: int = 1500) -> str:
    """The end of a background build's log, for an error that says why it failed."""
    if not log.is_file():
        return f"(no log at {log.name})"
    return log.read_text(errors="replace").strip()[-characters:]
