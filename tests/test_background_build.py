"""helpers.ground.background_build: a build started in the background holds its lock from before it
starts until it ends, a second start is refused, and a waiter returns when the build ends, also when
it dies. The "build" is a Python process that blocks on a FIFO until the test writes to it: no clock."""

from __future__ import annotations

import os
import signal
import sys
import threading

from helpers.ground import background_build

BUILD = (
    "import sys; print('compiling', flush=True); "
    "line = open(sys.argv[1]).readline().strip(); print('built' if line == 'go' else 'failed')"
)


def _start(tmp_path):
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    lock, log = tmp_path / "build.lock", tmp_path / "build.log"
    pid = background_build.start(lock, log, [sys.executable, "-c", BUILD, str(fifo)], cwd=tmp_path)
    return fifo, lock, log, pid


def test_the_lock_is_held_from_the_start_until_the_build_ends(tmp_path):
    fifo, lock, log, pid = _start(tmp_path)
    assert background_build.running(lock)  # at once: the lock was taken before the process started
    assert "a build runs already" in background_build.begin("it", lock, log, "helpers.nothing")
    said, waited, told = [], [], threading.Event()

    def waiter():
        waited.append(
            background_build.wait(lock, lambda s: (said.append(s), told.set()), "it", log)
        )

    thread = threading.Thread(target=waiter)
    thread.start()
    told.wait()  # the waiter found the build running, said so, and now blocks on the lock
    with open(fifo, "w") as release:  # opens once the build reads it
        release.write("go\n")
    thread.join()
    assert (said, waited) == (["waiting for it, which runs in the background ...", "built"], [True])
    os.waitpid(pid, 0)
    assert not background_build.running(lock)
    assert background_build.wait(lock) is False
    assert background_build.log_tail(log).splitlines() == ["compiling", "built"]


def test_a_build_that_dies_releases_its_waiters(tmp_path):
    fifo, lock, log, pid = _start(tmp_path)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    assert background_build.wait(lock) is False  # the kernel released the lock with the process
    assert not background_build.running(lock)


def test_no_lock_file_means_no_build(tmp_path):
    assert not background_build.running(tmp_path / "never.lock")
    assert background_build.log_tail(tmp_path / "never.log") == "(no log at never.log)"
