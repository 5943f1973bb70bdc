"""The processes of a run: started in an era's Python, met at a barrier, waited for, and killed if
they outstay the run. Shared by the writer runner (:mod:`helpers.runs.runner`, one append per process)
and the benchmark (:mod:`helpers.bench.one_run`, many appends per process).

Each process is started as ``<era python> -m <module> <spec file>`` from the workbook's folder,
with the era's environment alone on its path (forked from the era's fork server,
:mod:`helpers.ground.forkserver`, unless ``WORKBOOK_FORKSERVER=0``), and announces itself in the barrier folder under
its ``name``: ``ready-<name>`` once it waits for ``go``, ``gone-<name>`` if it failed before
(:mod:`helpers.writers.protocol`). Whoever runs them decides when to open the barrier and how
long a run may last; nothing here keeps a clock of its own beyond the deadline it is given.
Inside such a process, :func:`run_at_barrier` is its main: prepare, wait for ``go``, work, and a
failure recorded in its result (notebook 14's producers and committer, notebook 15's Spark drivers).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.ground import config, eras
from helpers.ground import progress as progress_display
from helpers.ground import forkserver
from helpers.writers.protocol import gone_file, one_line, ready_file, wait_at_barrier

POLL_S = 0.005
STDERR_TAIL_CHARS = 1500


@dataclass
class EraProcess:
    """One process of a run, and what became of it."""

    name: str
    """Its name at the barrier (``ready-<name>``)."""
    era: str
    module: str
    spec_path: Path
    stdout_path: Path
    stderr_path: Path
    process: subprocess.Popen | forkserver.ForkedProcess | None = None
    t_launched: float = 0.0
    t_exited: float | None = None
    killed: bool = False


def launch(procs: list[EraProcess], *, new_session: bool = False) -> None:
    """Start every process, each with its stdout and stderr in its own files. ``new_session``: each
    in a process group of its own, which ``os.killpg(p.process.pid, ...)`` kills whole (a Spark
    writer's JVM with it)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)  # an era's environment must not see the kernel's packages
    for p in procs:
        p.t_launched = time.time()
        if (
            forkserver.enabled()
        ):  # a child of the era's fork server: the same process, started for less CPU
            p.process = forkserver.start(
                eras.python_for(p.era),
                p.module,
                [str(p.spec_path)],
                env=config.without_telemetry(env),
                cwd=config.ROOT,
                stdout=p.stdout_path,
                stderr=p.stderr_path,
                new_session=new_session,
            )
            continue
        with open(p.stdout_path, "wb") as out, open(p.stderr_path, "wb") as err:
            p.process = eras.start_in_era(
                p.era,
                ["-m", p.module, str(p.spec_path)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=new_session,
            )


def poll_exits(procs: list[EraProcess]) -> int:
    """Note exit times; return how many processes have exited."""
    for p in procs:
        if p.t_exited is None and p.process.poll() is not None:
            p.t_exited = time.time()
    return sum(p.t_exited is not None for p in procs)


def absent(procs: list[EraProcess], barrier: Path) -> list[EraProcess]:
    """Processes that will never come to the barrier: gone (failed before it) or exited without arriving."""
    poll_exits(procs)
    return [
        p
        for p in procs
        if not ready_file(barrier, p.name).exists()
        and (gone_file(barrier, p.name).exists() or p.t_exited is not None)
    ]


def wait_for_barrier(
    procs: list[EraProcess], barrier: Path, deadline: float, shown: progress_display.RunProgress
) -> bool:
    """Wait until every process is ready, gone or exited; return True then, or False if the deadline came first."""
    while time.monotonic() < deadline:
        missing = absent(procs, barrier)
        arrived = sum(ready_file(barrier, p.name).exists() for p in procs)
        shown.status(f"{arrived} at the barrier, {len(missing)} gone")
        if arrived + len(missing) == len(procs):
            return True
        time.sleep(POLL_S)
    return False


def wait_for_exits(
    procs: list[EraProcess], deadline: float, shown: progress_display.RunProgress, *, status=None
) -> None:
    """Wait until every process has exited or the deadline came. ``status``: a function giving
    the progress line while they run (default: how many are done)."""
    done = -1
    while time.monotonic() < deadline:
        exited = poll_exits(procs)
        if exited != done:
            done = exited
            shown.done(done)
        shown.status(status() if status else f"released; {done} of {len(procs)} done")
        if done == len(procs):
            return
        time.sleep(POLL_S)


def kill_stragglers(procs: list[EraProcess]) -> list[str]:
    """Kill every process still running; return their names."""
    killed = []
    for p in procs:
        if p.process is not None and p.process.poll() is None:
            if (
                os.getpgid(p.process.pid) == p.process.pid
            ):  # launched with new_session: its children (a JVM) too
                os.killpg(p.process.pid, signal.SIGKILL)
            else:
                p.process.kill()
            p.process.wait(timeout=10)
            p.t_exited = time.time()
            p.killed = True
            killed.append(p.name)
    return killed


def stderr_tail(path: Path) -> str:
    """The end of a process's stderr, on one line ('' if there is none)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return one_line(text[-STDERR_TAIL_CHARS:], STDERR_TAIL_CHARS)


# ---------------------------------------------------------------------------------------------
# Inside a process of a run
# ---------------------------------------------------------------------------------------------


def run_at_barrier(spec: dict, result: dict, prepare, work) -> dict:
    """The main of a process that works after the barrier (notebook 14's producers and committer,
    notebook 15's Spark drivers): ``prepare()`` (its state, before the barrier), then the barrier
    (``result["t_go"]``), then ``work(state)``, then ``result["t_end"]``; a failure is recorded in
    ``result`` (:func:`_record_failure`), never raised. Returns ``result``. ``spec`` names the
    process (``process``), its ``barrier_dir`` and its ``runner_pid``."""
    ready = False
    try:
        state = prepare()
        ready = True
        result["t_go"] = wait_at_barrier(
            spec["barrier_dir"], spec["process"], None, spec["runner_pid"]
        )
        work(state)
        result["t_end"] = time.time()
    except Exception as error:  # noqa: BLE001  (the runner reads it from the result)
        _record_failure(result, spec, error, before_barrier=not ready)
    return result


def _record_failure(result: dict, spec: dict, error: Exception, *, before_barrier: bool) -> None:
    """A process's failure in its result; one that failed before the barrier also says so there
    (``gone-<name>``), so nobody waits for it."""
    import traceback

    result["error"] = f"{type(error).__name__}: {one_line(str(error), 600)}"
    result["traceback"] = traceback.format_exc()[-3000:]
    if before_barrier:
        gone_file(spec["barrier_dir"], spec["process"]).touch()
