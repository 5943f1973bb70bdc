"""Hold a delta-rs commit on local disk at the call that decides its version (``commit_hold.c``).

The conflict matrix races B's data files written *before* A commits (:data:`helpers.matrix.operations.INTERLEAVINGS`):
B runs in a thread from its stale handle, writes its files and its commit, and is stopped at the
``linkat`` that would make its commit file ``N.json``; A then commits ``N.json``; B is released, its
link fails and delta-rs's conflict checker decides, as it does when two writers meet. delta-rs offers
no hook there, so the hold is a small C library that defines ``linkat`` and is loaded before the C
library's (``LD_PRELOAD``) into the worker process of each delta-rs era (:func:`preload`); it does
nothing until a hold is armed.

The parent builds it with the machine's C compiler (``cc``, once, into ``build/matrix/``) and starts
the era's worker with :func:`preload`'s environment; inside the worker :func:`hold` arms it. Without
a compiler, :func:`preload` says why, and those races are reported "not available" with that reason.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from helpers.ground import config

SOURCE = Path(__file__).with_name("commit_hold.c")
LIBRARY_VARIABLE = "WORKBOOK_COMMIT_HOLD"
"""The environment variable naming the built library in a worker it was preloaded into."""


class HoldUnavailable(RuntimeError):
    """The hold cannot be built or is not loaded; the message says why and what to do."""


def build() -> Path:
    """The compiled library (built on first use, and again when the source changes)."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    target = config.BUILD_DIR / "matrix" / f"commit_hold-{digest}.so"
    if target.exists():
        return target
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise HoldUnavailable(
            "no C compiler (cc) on PATH to build helpers/matrix/commit_hold.c: install one "
            "(Debian: apt-get install gcc libc6-dev) to race delta-rs with B's files written first"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.tmp")
    built = subprocess.run(
        [compiler, "-shared", "-fPIC", "-O2", "-o", str(partial), str(SOURCE), "-ldl", "-lpthread"],
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        raise HoldUnavailable(
            f"{compiler} could not build helpers/matrix/commit_hold.c: {built.stderr.strip()[-600:]}"
        )
    partial.replace(target)
    return target


def preload(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with the hold preloaded, or with the reason it cannot be
    (:data:`LIBRARY_VARIABLE` then says ``unavailable: <why>``)."""
    env = dict(os.environ if env is None else env)
    try:
        library = str(build())
    except HoldUnavailable as error:
        env[LIBRARY_VARIABLE] = f"unavailable: {error}"
        return env
    env["LD_PRELOAD"] = " ".join(filter(None, (library, env.get("LD_PRELOAD", ""))))
    env[LIBRARY_VARIABLE] = library
    return env


def unavailable() -> str | None:
    """In a worker: None if the hold is loaded here, else why not."""
    named = os.environ.get(LIBRARY_VARIABLE, "")
    if not named:
        return "the worker was not started with the hold preloaded (helpers.matrix.commit_hold.preload)"
    if named.startswith("unavailable: "):
        return named.removeprefix("unavailable: ")
    if named not in os.environ.get("LD_PRELOAD", ""):
        return f"{named} is not in LD_PRELOAD"
    return None


class Hold:
    """The preloaded library's hold, for one table at a time (:meth:`arm` ... :meth:`release`)."""

    def __init__(self) -> None:
        why = unavailable()
        if why:
            raise HoldUnavailable(why)
        library = ctypes.CDLL(os.environ[LIBRARY_VARIABLE])  # the copy LD_PRELOAD loaded: one state
        self._arm, self._await = library.workbook_hold_arm, library.workbook_hold_await
        self._await.argtypes, self._arm.argtypes = [ctypes.c_long], [ctypes.c_char_p]
        self._file = library.workbook_hold_file
        self._file.restype = ctypes.c_char_p
        self._release, self._abandon = library.workbook_hold_release, library.workbook_hold_abandon

    def arm(self, table: str) -> None:
        """Hold the next commit of the table in this local folder."""
        folder = str(Path(table).resolve() / "_delta_log") + "/"
        if self._arm(folder.encode()) != 0:
            raise HoldUnavailable(f"the table's path is too long for the hold: {folder}")

    def wait_held(self, timeout_s: float) -> str | None:
        """The held commit file's name once a commit is held; None if the writer ended first.
        Raises TimeoutError after ``timeout_s`` (a bound against a hang)."""
        result = self._await(int(timeout_s * 1000))
        if result == 0:
            raise TimeoutError(f"no commit was held within {timeout_s:.0f} s")
        return self._file().decode() if result == 1 else None

    def release(self) -> None:
        self._release()

    def abandon(self) -> None:
        self._abandon()
