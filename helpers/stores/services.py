"""Start, check and stop the local cloud emulators the notebooks write to.

Two services, or three, all bound to 127.0.0.1 only:

* ``moto``: moto server, playing S3 (with object versioning and conditional PUTs) and DynamoDB,
  with its writes made atomic (``helpers/stores/moto_server.py`` says why).
* ``azurite``: Azurite's Blob service, playing Azure Blob Storage.
* ``versitygw``, only with ``WORKBOOK_S3_SERVER=versitygw``: a real S3 server (built by ``make
  versitygw``) playing S3, with bucket versioning; moto then plays DynamoDB alone.

Each runs as a detached process whose pid file, log and state live under ``.state/``. ``up`` is
idempotent (a service that already answers is left alone, even one started by docker compose),
``down`` stops only what this module started, ``reset`` wipes emulator state.

moto keeps its state in memory, so a restart empties it, unless ``WORKBOOK_MOTO_DURABLE=1`` when
it starts: then it journals each write to ``.state/moto/journal`` and replays that file when it
starts again, so its buckets, object versions and items survive ``down`` and ``up`` as they would
in the cloud (``helpers/stores/moto_server.py`` says how). It is off by default because the journal
only grows: over a whole test suite it would hold every object ever written, and each start
would replay all of it. ``reset`` empties the journal too.

Command line::

    python -m helpers.stores.services up|down|status|reset [moto|azurite|versitygw|s3|dynamodb|azure ...]
    python -m helpers.stores.services run -- COMMAND ...   # services up, COMMAND, then stop what was started

Every failure raises :class:`ServiceError` with a message that says what to do.

What a service is, and its process's log and pid file, are in :mod:`helpers.stores.service_process`;
how each emulator is told apart on its port, in :mod:`helpers.stores.service_probes`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator, Sequence

from helpers.ground import config, tools
from helpers.ground.local_processes import port_is_free, stop_process_group
from helpers.stores import service_probes, service_process, service_watch, versitygw

OWNER_VARIABLE = "WORKBOOK_SERVICES_OWNER"
"""Set by :func:`running` for its block (and inherited by what it runs); a service's pid file keeps
it, so the block stops what it started and nothing another command started meanwhile."""
START_TIMEOUT_S = 60.0
REPLAY_START_TIMEOUT_S = 900.0
"""A durable moto replays its journal before it answers, a few ms per write: a long run's journal takes minutes."""


class ServiceError(RuntimeError):
    """A service could not be started, reached or stopped; the message names the fix."""


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------


def _moto_command(port: int) -> list[str]:
    try:
        import moto.server  # noqa: F401
    except ImportError:
        raise ServiceError(
            f"moto server is not installed in this Python ({sys.executable}). Run `make install`, "
            "or start the emulators with `docker compose up -d`."
        ) from None
    command = [
        sys.executable,
        "-m",
        "helpers.stores.moto_server",
        "-H",
        config.LOCALHOST,
        "-p",
        str(port),
    ]
    if durable_moto():
        command += ["--journal", str(moto_journal())]
    return command


def durable_moto() -> bool:
    """Whether moto, when this module starts it, keeps its state across restarts (read each time)."""
    return os.environ.get("WORKBOOK_MOTO_DURABLE") == "1"


def moto_journal() -> Path:
    """The file a durable moto writes its writes to and replays at start."""
    return SERVICES["moto"].data_dir / "journal"


AZURITE_FLAGS = (
    "--skipApiVersionCheck",  # today's SDKs speak newer API versions than the emulator knows
    "--loose",  # ignore headers it does not support instead of failing the request
    "--disableTelemetry",
)
"""Also in docker-compose.yml (tests/test_compose.py keeps them equal)."""


def _versitygw_command(port: int) -> list[str]:
    if not versitygw.built():
        raise ServiceError(
            f"versitygw is not built: run `make versitygw` ({versitygw.check_go() or 'Go is ready'}), "
            "or unset WORKBOOK_S3_SERVER to play S3 on moto."
        )
    root = SERVICES["versitygw"].data_dir
    for folder in ("data", "versions"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    return versitygw.command(port, root)


def _azurite_command(port: int) -> list[str]:
    problem = tools.check_node_runtime()
    if problem:
        raise ServiceError(problem)
    node = shutil.which("node")
    script = config.ROOT / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
    if not script.is_file():
        raise ServiceError(
            f"Azurite {config.AZURITE_VERSION} is not installed in node_modules/. Run `make install`."
        )
    service = SERVICES["azurite"]
    return [
        node,
        str(script),
        "--blobHost",
        config.LOCALHOST,
        "--blobPort",
        str(port),
        "--location",
        str(
            service.data_dir
        ),  # no --debug: its log (about 200 MB a `make test`) costs Azurite a fifth more CPU
        *AZURITE_FLAGS,
    ]


SERVICES: dict[str, service_process.Service] = {
    "moto": service_process.Service(
        name="moto",
        provides=("s3", "dynamodb"),
        host=config.moto_host,
        port=config.moto_port,
        identify=service_probes.identify_moto,
        command=_moto_command,
        port_variable="WORKBOOK_MOTO_PORT",
    ),
    "azurite": service_process.Service(
        name="azurite",
        provides=("azure",),
        host=config.azurite_host,
        port=config.azurite_port,
        identify=service_probes.identify_azurite,
        command=_azurite_command,
        port_variable="WORKBOOK_AZURITE_PORT",
    ),
    "versitygw": service_process.Service(
        name="versitygw",
        provides=("s3",),
        host=config.versitygw_host,
        port=config.versitygw_port,
        identify=service_probes.identify_versitygw,
        command=_versitygw_command,
        port_variable="WORKBOOK_VERSITYGW_PORT",
        environment=versitygw.environment,
    ),
}


def active() -> list[service_process.Service]:
    """The services the workbook runs: moto and Azurite, and versitygw when it plays S3
    (``WORKBOOK_S3_SERVER=versitygw``; moto then plays DynamoDB alone)."""
    return [
        SERVICES[name]
        for name in ("moto", "azurite", "versitygw")
        if name != "versitygw" or config.s3_server() == "versitygw"
    ]


def plays(service: service_process.Service) -> tuple[str, ...]:
    """What ``service`` plays now: moto leaves S3 to versitygw when that one plays it."""
    return tuple(p for p in service.provides if p != "s3" or service.name == config.s3_server())


def _select(names: Sequence[str] | None) -> list[service_process.Service]:
    """The services ``names`` name (services or what they play); None: every one the workbook runs.
    An empty list names none."""
    if names is None:
        return active()
    chosen = []
    for name in names:
        matches = (
            [SERVICES[name]] if name in SERVICES else [s for s in active() if name in plays(s)]
        )
        if not matches:
            known = sorted(set(SERVICES) | {p for s in SERVICES.values() for p in s.provides})
            raise ServiceError(f"Unknown service {name!r}; choose from {', '.join(known)}.")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def status(names: Sequence[str] | None = None) -> list[service_process.Status]:
    """Where each service stands: answering or not, and whether this module started it."""
    return [service_process.status_of(service) for service in _select(names)]


def _start(service: service_process.Service) -> int:
    host, port = service.host(), service.port()
    if host != config.LOCALHOST:
        raise ServiceError(
            f"{service.name} is expected at {host}:{port} (WORKBOOK_{service.name.upper()}_HOST) and does "
            "not answer. Start it there (`docker compose up -d`), or unset the variable to run it here."
        )
    if not port_is_free(port):
        raise ServiceError(
            f"Port {port} on {config.LOCALHOST} is taken by another program that does not answer like "
            f"{service.name}. Stop that program (`lsof -i :{port}` shows it), or pick another port: "
            f"`export {service.port_variable}=<free port>` and run again."
        )
    command = service.command(port)
    process = service_process.spawn(service, command, port, os.environ.get(OWNER_VARIABLE, ""))
    timeout = (
        REPLAY_START_TIMEOUT_S if service.name == "moto" and durable_moto() else START_TIMEOUT_S
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            service.pid_file.unlink(missing_ok=True)
            raise ServiceError(
                f"{service.name} exited with code {process.returncode} while starting. "
                f"Last lines of {service.log_file}:\n{service_process.log_tail(service)}"
            )
        if service.identify(host, port):
            return process.pid
        time.sleep(0.2)
    stop_process_group(process.pid)
    service.pid_file.unlink(missing_ok=True)
    raise ServiceError(
        f"{service.name} did not answer on {config.LOCALHOST}:{port} within {timeout:.0f} s. "
        f"Last lines of {service.log_file}:\n{service_process.log_tail(service)}"
    )


def up(names: Sequence[str] | None = None, quiet: bool = False) -> list[str]:
    """Start each service that does not answer yet; return the names of those it started."""
    config.STATE_DIR.mkdir(parents=True, exist_ok=True)
    started = []
    for service in _select(names):
        host, port = service.host(), service.port()
        identity = service.identify(host, port)
        if identity:
            if not quiet:
                print(f"{service.name}: already answering on {host}:{port} ({identity})")
            continue
        pid = _start(service)
        started.append(service.name)
        if not quiet:
            print(
                f"{service.name}: started on {host}:{port} (pid {pid}, log {config.shown(service.log_file)})"
            )
    return started


def down(names: Sequence[str] | None = None, quiet: bool = False) -> list[str]:
    """Stop the services this module started; return their names. Others are left alone."""
    stopped = []
    for service in _select(names):
        pid = service_process.read_pid(service)
        if pid is None:
            if not quiet and service.identify(service.host(), service.port()):
                print(
                    f"{service.name}: answering, but not started by the workbook (docker compose?); left running"
                )
            continue
        stop_process_group(pid)
        service.pid_file.unlink(missing_ok=True)
        stopped.append(service.name)
        if not quiet:
            print(f"{service.name}: stopped (pid {pid})")
    return stopped


def reset(names: Sequence[str] | None = None) -> None:
    """Wipe emulator state: every bucket, table and container is gone afterwards."""
    for service in _select(names):
        host, port = service.host(), service.port()
        if service.name == "moto":
            if service.identify(host, port):
                request = urllib.request.Request(
                    f"http://{host}:{port}/moto-api/reset", method="POST"
                )
                urllib.request.urlopen(
                    request, timeout=10
                ).close()  # a durable moto empties its journal too
                print("moto: state reset (every bucket and table is gone)")
            elif moto_journal().exists():
                moto_journal().unlink()
                print(
                    f"moto: not running; its journal deleted ({config.shown(moto_journal())}), so it starts empty"
                )
            else:
                print(
                    "moto: not running; it keeps its state in memory, so there is nothing to wipe"
                )
        else:
            was_running = service_process.read_pid(service) is not None
            if service.identify(host, port) and not was_running:
                raise ServiceError(
                    f"{service.name} answers on port {port} but was not started by the workbook; "
                    "reset it where it runs (for docker compose: `docker compose down -v`)."
                )
            down([service.name], quiet=True)
            shutil.rmtree(service.data_dir, ignore_errors=True)
            print(f"{service.name}: state wiped ({service.data_dir})")
            if was_running:
                up([service.name])


def require(*capabilities: str) -> None:
    """Make sure the services providing these capabilities (``s3``, ``dynamodb``, ``azure``) answer,
    starting any that do not. Notebooks call this in their setup cell; it prints one line each."""
    if config.profile() == "cloud":
        print("WORKBOOK_PROFILE=cloud: using real cloud services, no emulator needed")
        return
    selected = _select(capabilities or None)
    up([s.name for s in selected], quiet=True)
    for state in status([s.name for s in selected]):
        print(f"{state.name}: answering on {state.endpoint}")
    if service_watch.in_a_kernel():  # say at once if one stops answering under a later cell
        service_watch.watch([endpoint(s) for s in selected])


def endpoint(service: service_process.Service) -> service_watch.Endpoint:
    """``service`` as the service watch names it: what it plays, where, and the command that starts
    it again."""
    prefix = "WORKBOOK_S3_SERVER=versitygw " if config.s3_server() == "versitygw" else ""
    return service_watch.Endpoint(
        service.name, plays(service), service.host(), service.port(), f"{prefix}make services"
    )


@contextlib.contextmanager
def running(names: Sequence[str] | None = None) -> Iterator[list[str]]:
    """Services up for the duration of the block; afterwards stop those the block started, itself or
    through a process it ran (a notebook's kernel, a test): each service's pid file names the block
    whose :data:`OWNER_VARIABLE` was in force when it started. A service another command started
    meanwhile, on the same ports, is left running for that command to stop."""
    before = {s.name for s in status() if s.answering or s.managed}
    token, outer = uuid.uuid4().hex, os.environ.get(OWNER_VARIABLE)
    os.environ[OWNER_VARIABLE] = token
    try:
        up(names)
        yield [s.name for s in _select(names)]
    finally:
        if outer is None:
            os.environ.pop(OWNER_VARIABLE, None)
        else:
            os.environ[OWNER_VARIABLE] = outer
        started = [
            s.name
            for s in status()
            if s.managed
            and s.name not in before
            and service_process.started_by(SERVICES[s.name]) == token
        ]
        down(started)


def _print_status(states: list[service_process.Status]) -> None:
    for s in states:
        state = "answering" if s.answering else "not running"
        who = (
            f"started by the workbook, pid {s.pid}"
            if s.managed
            else ("started elsewhere" if s.answering else "")
        )
        role = "plays " + " + ".join(plays(SERVICES[s.name])) if s.name in SERVICES else ""
        print(
            f"{s.name:9} {role:25} {s.endpoint:16} {state:12} {who:36} {s.identity or ''}".rstrip()
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.stores.services", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("action", choices=["up", "down", "status", "reset", "run"])
    parser.add_argument(
        "names",
        nargs="*",
        help="moto, azurite, versitygw (or s3, dynamodb, azure); default: all the workbook runs "
        "(versitygw only with WORKBOOK_S3_SERVER=versitygw)",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        command = argv[argv.index("--") + 1 :]
        argv = argv[: argv.index("--")]
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            up(args.names or None)
        elif args.action == "down":
            down(args.names or None)
        elif args.action == "status":
            _print_status(status(args.names or None))
        elif args.action == "reset":
            reset(args.names or None)
        elif args.action == "run":
            if not command:
                parser.error("run needs a command after --")
            with running(args.names or None):
                return subprocess.call(command)
    except (ServiceError, config.ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
