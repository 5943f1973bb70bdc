"""A real Spark cluster on this machine: a standalone master and two workers on 127.0.0.1.

pip's pyspark has no ``sbin/start-master.sh``, but it has Spark's launcher, ``bin/spark-class``,
which runs the master (``org.apache.spark.deploy.master.Master``) and a worker
(``org.apache.spark.deploy.worker.Worker``) as the scripts would. Each runs in a process group of
its own with its log in ``.state/logs/``; their pids and ports are in ``.state/cluster.json``.
Then every Spark session of the workbook, the notebooks' and the writer processes' drivers
alike, runs its executors on the workers instead of inside its own JVM::

    python -m helpers.spark.cluster up        # make cluster
    export WORKBOOK_SPARK_MASTER=spark://127.0.0.1:7077
    make workbook NB=09                 # notebook 09's drivers, each an application of the cluster
    python -m helpers.spark.cluster status    # workers, and the applications that ran
    python -m helpers.spark.cluster down      # make cluster-stop (make stop does it too)

Each worker offers :data:`WORKER_CORES` cores (more than the machine has: the workbook's jobs
wait on storage more than they compute) and each application takes one by default
(``spark.deploy.defaultCores``), so several drivers race at once as several clusters' would,
instead of the first taking every core and the others queueing. ``WORKBOOK_SPARK_MASTER_PORT``
moves the master from 7077. ``docker-compose.yml`` runs the same two commands
(``python -m helpers.spark.cluster master|worker``) as its ``spark-master`` and ``spark-worker``
services.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Sequence

from helpers.ground import config, local_processes, tools

MASTER_DEFAULT_PORT = 7077
WORKERS = 2
WORKER_CORES = 4
"""Cores each worker offers: 8 one-core applications at once over 2 workers (notebook 09 races 4 drivers)."""
WORKER_MEMORY = "4g"
"""Memory each worker offers its executors (1 GB each by default: 4 executors per worker)."""
START_TIMEOUT_S = 180.0
"""The master and its workers not registered after this long are broken (a hang detector, far above their start)."""
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


class ClusterError(RuntimeError):
    """The cluster could not be started, reached or stopped; the message says what to do."""


def master_port() -> int:
    return int(os.environ.get("WORKBOOK_SPARK_MASTER_PORT", MASTER_DEFAULT_PORT))


def master_url(host: str = config.LOCALHOST, port: int | None = None) -> str:
    return f"spark://{host}:{port or master_port()}"


def state_file() -> Path:
    return config.STATE_DIR / "cluster.json"


def log_file(role: str) -> Path:
    return config.STATE_DIR / "logs" / f"spark-{role}.log"


def spark_class_command(role: str, *arguments: str) -> list[str]:
    """``bin/spark-class`` of the installed pyspark running the master's or a worker's class."""
    import pyspark

    launcher = Path(pyspark.__file__).parent / "bin" / "spark-class"
    return [str(launcher), {"master": MASTER_CLASS, "worker": WORKER_CLASS}[role], *arguments]


def master_command(host: str, port: int, webui_port: int) -> list[str]:
    return spark_class_command(
        "master",
        "--host",
        host,
        "--port",
        str(port),
        "--webui-port",
        str(webui_port),
        "--properties-file",
        str(_properties_file()),
    )


def worker_command(host: str, master: str, webui_port: int, work_dir: Path) -> list[str]:
    return spark_class_command(
        "worker",
        "--host",
        host,
        "--cores",
        str(WORKER_CORES),
        "--memory",
        WORKER_MEMORY,
        "--webui-port",
        str(webui_port),
        "--work-dir",
        str(work_dir),
        "--properties-file",
        str(_properties_file()),
        master,
    )


def _properties_file() -> Path:
    """The master's and workers' settings: one core per application unless it asks for more."""
    path = config.STATE_DIR / "cluster" / "spark-cluster.conf"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "spark.deploy.defaultCores 1\n# finished applications' folders on the workers are removed\n"
        "spark.worker.cleanup.enabled true\n"
    )
    return path


def _environment(local_ip: str | None = config.LOCALHOST) -> dict[str, str]:
    import pyspark

    env = dict(os.environ)
    env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
    if local_ip:
        env["SPARK_LOCAL_IP"] = local_ip
    return env


def master_state(webui: str, timeout: float = 5.0) -> dict | None:
    """The master's own account (its web UI's ``/json/``: workers, applications), or None if nothing answers."""
    try:
        with urllib.request.urlopen(f"{webui}/json/", timeout=timeout) as answer:
            return json.loads(answer.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def read_state() -> dict | None:
    try:
        return json.loads(state_file().read_text())
    except (OSError, ValueError):
        return None


def _spawn(command: list[str], role: str) -> subprocess.Popen:
    log = log_file(role)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(
            f"\n--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(command)}\n".encode()
        )
        out.flush()
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=config.ROOT,
            env=_environment(),
            start_new_session=True,
        )


def _log_tails(roles: Sequence[str], lines: int = 15) -> str:
    parts = []
    for role in roles:
        try:
            text = log_file(role).read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            continue
        parts.append(f"Last lines of {config.shown(log_file(role))}:\n" + "\n".join(text))
    return "\n".join(parts)


def up(workers: int = WORKERS, quiet: bool = False) -> dict:
    """Start the master and ``workers`` workers unless the workbook's cluster already runs; wait
    until every worker has registered; return the state (``master``, ``webui``, pids)."""
    current = read_state()
    if current and master_state(current["webui"]) is not None:
        if not quiet:
            print(
                f"cluster: already running, master {current['master']} (web UI {current['webui']})"
            )
        return current
    problem = tools.check_java()
    if problem:
        raise ClusterError(problem)
    port = master_port()
    if not local_processes.port_is_free(port):
        raise ClusterError(
            f"Port {port} on {config.LOCALHOST} is taken by another program (another Spark master?). Stop it "
            f"(`lsof -i :{port}` shows it), or pick another port: `export WORKBOOK_SPARK_MASTER_PORT=<free port>`."
        )
    host, master = config.LOCALHOST, master_url(port=port)
    webui_port = local_processes.free_port()
    state = {"master": master, "webui": f"http://{host}:{webui_port}", "pids": []}
    roles = ["master"] + [f"worker-{i}" for i in range(1, workers + 1)]
    processes = [_spawn(master_command(host, port, webui_port), "master")]
    state["pids"].append(processes[0].pid)
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(state, indent=1))
    try:
        for i in range(1, workers + 1):
            work_dir = config.STATE_DIR / "cluster" / f"worker-{i}"
            work_dir.mkdir(parents=True, exist_ok=True)
            processes.append(
                _spawn(
                    worker_command(host, master, local_processes.free_port(), work_dir),
                    f"worker-{i}",
                )
            )
            state["pids"].append(processes[-1].pid)
            state_file().write_text(json.dumps(state, indent=1))
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            exited = [role for role, p in zip(roles, processes) if p.poll() is not None]
            if exited:
                raise ClusterError(
                    f"Spark's {', '.join(exited)} exited while starting.\n{_log_tails(exited)}"
                )
            seen = master_state(state["webui"])
            if seen and seen.get("aliveworkers", 0) >= workers:
                break
            time.sleep(0.5)
        else:
            raise ClusterError(
                f"The master did not report {workers} workers within {START_TIMEOUT_S:.0f} s.\n{_log_tails(roles)}"
            )
    except BaseException:
        down(quiet=True)
        raise
    if not quiet:
        print(
            f"cluster: master {master} with {workers} workers of {WORKER_CORES} cores (web UI {state['webui']}; "
            f"logs .state/logs/spark-*.log). Use it: export WORKBOOK_SPARK_MASTER={master}"
        )
    return state


def down(quiet: bool = False) -> bool:
    """Stop the master and workers this module started; True if there was a cluster to stop."""
    state = read_state()
    if state is None:
        return False
    for pid in reversed(state["pids"]):
        local_processes.stop_process_group(pid)
    state_file().unlink(missing_ok=True)
    if not quiet:
        print(f"cluster: stopped (master {state['master']} and its workers)")
    return True


def applications(state: dict | None = None) -> list[dict]:
    """Every application the master has run or runs (``name``, ``state``, ``cores``...), oldest first."""
    state = state or read_state()
    seen = master_state(state["webui"]) if state else None
    if seen is None:
        raise ClusterError("No workbook cluster answers: start one with `make cluster`.")
    return sorted(
        seen.get("completedapps", []) + seen.get("activeapps", []),
        key=lambda app: app.get("starttime", 0),
    )


def status() -> str:
    state = read_state()
    seen = master_state(state["webui"]) if state else None
    if seen is None:
        return "cluster: not running (`make cluster` starts one)"
    apps = applications(state)
    return (
        f"cluster: master {state['master']}, {seen.get('aliveworkers', 0)} workers alive, "
        f"{seen.get('coresused', 0)} of {seen.get('cores', 0)} cores in use, {len(apps)} applications so far (web UI {state['webui']})"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.spark.cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "action",
        choices=["up", "down", "status", "master", "worker"],
        help="master / worker: run one in the foreground (docker compose's services)",
    )
    parser.add_argument(
        "master_url", nargs="?", help="worker: the master to join (spark://HOST:PORT)"
    )
    parser.add_argument(
        "--quiet", action="store_true", help="down: say nothing when there is no cluster"
    )
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            up()
        elif args.action == "down":
            if not down() and not args.quiet:
                print("cluster: none was started by the workbook")
        elif args.action == "status":
            print(status())
        else:  # in a container (docker-compose.yml): in the foreground, named by its host name on the compose network
            host = os.environ.get("SPARK_HOST") or socket.gethostname()
            command = (
                master_command(host, master_port(), 8080)
                if args.action == "master"
                else worker_command(
                    host,
                    args.master_url or master_url("spark-master"),
                    8081,
                    config.STATE_DIR / "cluster" / "work",
                )
            )
            os.execvpe(command[0], command, _environment(local_ip=None))
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
