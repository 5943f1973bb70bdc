"""Start a run's processes from an era's Python that has already imported delta-rs and pyarrow.

A writer, benchmark or torture process is ``<era python> -m <module> <spec file>``: a process of
its own, as each of the seeds' Lambda invocations was. Most of what one costs to start is
importing pyarrow and deltalake: 0.2 to 0.4 CPU-seconds each, and a ``make test`` starts some 340
of them. So each era gets one fork server per process that runs writers (a notebook's kernel, a
test): ``python -m helpers.ground.forkserver`` imports those two libraries once (and nothing of the
workbook's, whose settings are read from the environment at import), then forks a child for each
process asked for. The child takes its own environment, working folder, standard streams and
session, seeds its random numbers afresh, and runs the module as ``python -m`` would. It is a
separate process as before: it has its own pid, is killed and waited for the same way, and leaves
its result file; only its start is cheaper. Its parent is the server, which lives as long as the
process that asked for it: a writer waiting at its barrier for a runner that is gone
(:func:`helpers.writers.protocol.wait_at_barrier`) sees its parent end with it.

The server is single-threaded (a fork copies only the thread that forks, so no lock can be held
by a thread that does not exist in the child); it learns of exits from SIGCHLD and reports them.
``WORKBOOK_FORKSERVER=0`` starts every process with a fresh interpreter instead (what the server
saves is then visible: the same runs, each process about 0.3 CPU-seconds dearer).

Protocol, one JSON object per line: the client sends ``{"module", "args", "env", "cwd",
"stdout", "stderr", "new_session"}``; the server answers ``{"started": pid}`` (or
``{"error": text}``) in request order, and ``{"exited": pid, "code": code}`` when a child ends
(``code``: its exit status, or minus the signal that killed it, as :class:`subprocess.Popen`).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
from pathlib import Path

PRELOAD = ("pyarrow", "deltalake")
"""What the server imports before it forks: what every era's writer imports, and most of its start."""


# ---------------------------------------------------------------------------------------------
# The server (``python -m helpers.ground.forkserver``, in an era's Python)
# ---------------------------------------------------------------------------------------------


def _child(request: dict, closing: list[int], set_up: int) -> None:
    """In the forked child: become the process asked for, run the module, never return. Closing
    ``set_up`` tells the server that the process is what was asked for (its session, its files),
    as :class:`subprocess.Popen` returns only once its child has them."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in closing:
            os.close(fd)
        if request["new_session"]:
            os.setsid()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        # the module search path `python -m` would have: the folder, PYTHONPATH, then the era's own
        sys.path[:] = [
            request["cwd"],
            *filter(None, request["env"].get("PYTHONPATH", "").split(os.pathsep)),
            *_ERA_PATH,
        ]
        streams = [
            os.open(os.devnull, os.O_RDONLY),
            os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
            os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        ]
        for target, fd in enumerate(streams):
            os.dup2(fd, target)
            os.close(fd)
        os.close(set_up)
        import random

        random.seed()  # else every child would draw the server's numbers
        import runpy

        sys.argv = [request["module"], *request["args"]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if not isinstance(stop.code, int) and stop.code is not None:
            print(stop.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001  (the child's own failure, reported as a Python process would)
        import traceback

        traceback.print_exc()
    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


_ERA_PATH: list[str] = []
"""The server's module search path without its folder and its PYTHONPATH: the era's own."""


def serve() -> None:
    given = set(filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    _ERA_PATH[:] = [entry for entry in sys.path[1:] if entry not in given]
    os.environ.setdefault(
        "OPENBLAS_NUM_THREADS", "1"
    )  # numpy's BLAS need start no threads in the server
    for name in PRELOAD:
        try:
            __import__(name)
        except ImportError:
            pass
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    requests, out = sys.stdin.buffer, sys.stdout
    pending = b""
    children: set[int] = set()

    def say(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    def reap() -> None:
        for pid in list(children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 0
            if done:
                children.discard(pid)
                say({"exited": pid, "code": os.waitstatus_to_exitcode(status)})

    say({"ready": os.getpid()})
    while True:
        readable, _, _ = select.select([requests.fileno(), wake_read], [], [])
        if wake_read in readable:
            os.read(wake_read, 4096)
        reap()
        if requests.fileno() not in readable:
            continue
        chunk = os.read(requests.fileno(), 65536)
        if (
            not chunk
        ):  # the client is gone: its children live on, as processes started by Popen would
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            request = json.loads(line)
            set_up_read, set_up = os.pipe()
            try:
                pid = os.fork()
            except OSError as error:
                os.close(set_up_read)
                os.close(set_up)
                say({"error": f"fork failed: {error}"})
                continue
            if pid == 0:
                os.close(set_up_read)
                _child(request, [wake_read, wake_write], set_up)
            os.close(set_up)
            os.read(set_up_read, 1)  # end of file once the child has set itself up (or has died)
            os.close(set_up_read)
            children.add(pid)
            say({"started": pid})


# ---------------------------------------------------------------------------------------------
# The client: a Popen-like handle per process
# ---------------------------------------------------------------------------------------------


class ForkServerError(RuntimeError):
    """The fork server of an era did not start, or stopped answering."""


class ForkedProcess:
    """What :mod:`helpers.writers.processes` uses of a :class:`subprocess.Popen`, for a forked child."""

    def __init__(self, server: _Server, pid: int) -> None:
        self._server, self.pid = server, pid

    @property
    def returncode(self) -> int | None:
        return self._server.exit_codes.get(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self._server.changed:
            if not self._server.changed.wait_for(
                lambda: self.pid in self._server.exit_codes or self._server.lost, timeout=timeout
            ):
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout)
        if self.pid not in self._server.exit_codes:
            raise ForkServerError(f"the fork server stopped before pid {self.pid} exited")
        return self._server.exit_codes[self.pid]

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass


class _Server:
    """One era's fork server, as its client sees it."""

    def __init__(self, python: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [str(python), "-m", "helpers.ground.forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=WORKBOOK,
        )
        self.exit_codes: dict[int, int] = {}
        self.started: list[dict] = []
        self.changed = threading.Condition()
        self.lost = False
        self.send_lock = threading.Lock()
        first = self.process.stdout.readline()
        if not first.startswith(b'{"ready"'):
            self.process.kill()
            why = self.process.stderr.read().decode(errors="replace")[-1500:]
            raise ForkServerError(
                f"the fork server of {python} did not start: {why or first[:300]!r}"
            )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            message = json.loads(line)
            with self.changed:
                if "exited" in message:
                    self.exit_codes[message["exited"]] = message["code"]
                else:
                    self.started.append(message)
                self.changed.notify_all()
        with self.changed:
            self.lost = True
            self.changed.notify_all()

    def start(self, request: dict) -> ForkedProcess:
        with self.send_lock:  # one request in flight: the next answer is its own
            with self.changed:
                self.started.clear()
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
            with self.changed:
                self.changed.wait_for(lambda: self.started or self.lost)
                if not self.started:
                    raise ForkServerError("the fork server stopped answering")
                answer = self.started.pop(0)
        if "error" in answer:
            raise ForkServerError(answer["error"])
        return ForkedProcess(self, answer["started"])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # the server returns; its children are not touched
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()


WORKBOOK = Path(__file__).resolve().parents[2]
"""Where the server starts, so that ``-m helpers.ground.forkserver`` is found (each child changes to its own folder)."""
_SERVERS: dict[tuple[int, str], _Server] = {}
_SERVERS_LOCK = threading.Lock()


def enabled() -> bool:
    return os.environ.get("WORKBOOK_FORKSERVER", "1") != "0"


def start(
    python: Path,
    module: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: Path,
    stdout: Path,
    stderr: Path,
    new_session: bool = False,
) -> ForkedProcess:
    """Start ``python -m module args`` as a child of ``python``'s fork server (started on first use,
    with this environment, and kept for this process's later runs), with this environment, folder
    and output files."""
    key = (os.getpid(), str(python))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None or server.lost or server.process.poll() is not None:
            server = _SERVERS[key] = _Server(
                python, {k: v for k, v in env.items() if k != "PYTHONPATH"}
            )
    return server.start(
        {
            "module": module,
            "args": args,
            "env": env,
            "cwd": str(cwd),
            "stdout": str(stdout),
            "stderr": str(stderr),
            "new_session": new_session,
        }
    )


@atexit.register
def stop_all() -> None:
    """Stop every fork server this process started (their children, if any still run, are left alone)."""
    with _SERVERS_LOCK:
        for (pid, _), server in _SERVERS.items():
            if pid == os.getpid():
                server.stop()
        _SERVERS.clear()


if __name__ == "__main__":
    serve()
