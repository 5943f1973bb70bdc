"""versitygw, a real S3 server (Apache-2.0, written in Go), beside moto: built from its Go module
at a pinned version into ``.cache/bin/``, started on 127.0.0.1 with its posix backend (each object
is a file under a folder, so a learner can ``ls`` a table's ``_delta_log``) and bucket versioning.

Command line (the Makefile calls it)::

    python -m helpers.stores.versitygw build            # make versitygw: once, then from .cache/ (OFFLINE=1: no network)
    python -m helpers.stores.versitygw build --if-go    # make prefetch: the same, or a note when Go cannot build it
    python -m helpers.stores.versitygw build --background  # CI: the same beside make test; make versitygw waits for it
    python -m helpers.stores.versitygw run -- COMMAND   # a versitygw of its own on a free port for COMMAND,
                                                 # which finds it in AWS_ENDPOINT_URL and the AWS_* keys

The root credentials are the emulators' (``config.EMULATOR_AWS_ACCESS_KEY_ID``), so every client
that reaches moto reaches versitygw the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator, Sequence

from helpers.ground import background_build, config

VERSION = "v1.8.0"
"""The newest release on 2026-11-25; its go.mod asks for Go 1.25 (:data:`GO_MIN`)."""
MODULE = "github.com/versity/versitygw/cmd/versitygw"
GO_MIN = (1, 25)
BIN_DIR = config.CACHE_DIR / "bin"
BINARY = BIN_DIR / "versitygw"
STAMP = BIN_DIR / "versitygw.version"
BUILD_LOCK = BIN_DIR / "versitygw.build.lock"
"""Held by a build started with ``--background`` for as long as it runs."""
BUILD_LOG = BIN_DIR / "versitygw.build.log"
START_TIMEOUT_S = 60.0


class VersitygwError(RuntimeError):
    """versitygw could not be built or started; the message says what to do."""


def go_version() -> tuple[int, int] | None:
    """The Go on PATH as (major, minor), or None if there is none."""
    from helpers.ground import tools

    return tools.tool_version(["go", "version"], r"go(\d+)\.(\d+)")


def check_go() -> str | None:
    """Why versitygw cannot be built here (None: it can). Go is optional: without it the workbook
    runs on moto alone."""
    found = go_version()
    wanted = ".".join(map(str, GO_MIN))
    if found is None:
        return (
            f"Go is not on PATH: the real S3 server versitygw ({VERSION}) is built with Go {wanted}+. Without it "
            "everything runs on moto; to add the real server, install Go (https://go.dev/doc/install, or "
            "Debian's golang-go if it is 1.25 or newer) and run `make versitygw`."
        )
    if found < GO_MIN:
        return (
            f"Go {found[0]}.{found[1]} is on PATH; versitygw {VERSION} needs Go {wanted}+ (its go.mod). Everything "
            f"runs on moto without it; upgrade Go, or `export GOTOOLCHAIN=go{wanted}.0` to let the go command fetch one."
        )
    return None


def built() -> bool:
    return BINARY.is_file() and STAMP.is_file() and STAMP.read_text().strip() == VERSION


def go_environment(offline: bool) -> dict[str, str]:
    """Where the build keeps everything: inside .cache/, so a second build, or one offline, downloads nothing."""
    env = {
        **os.environ,
        "GOBIN": str(BIN_DIR),
        "GOMODCACHE": str(config.CACHE_DIR / "go" / "mod"),
        "GOCACHE": str(config.CACHE_DIR / "go" / "build"),
        "GOFLAGS": "-modcacherw",
        "CGO_ENABLED": "0",
    }
    if offline:
        env["GOPROXY"] = "off"
    return env


def build(offline: bool = False, holding_lock: bool = False) -> Path:
    """Build versitygw at :data:`VERSION` into .cache/bin/ unless it is there already, after a build
    running in the background has ended (``holding_lock``: this is that build)."""
    if not holding_lock:
        background_build.wait(BUILD_LOCK, print, f"versitygw {VERSION}'s build", BUILD_LOG)
    if built():
        return BINARY
    problem = check_go()
    if problem:
        raise VersitygwError(problem)
    BIN_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    done = subprocess.run(
        ["go", "install", f"{MODULE}@{VERSION}"],
        env=go_environment(offline),
        cwd=config.ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        hint = (
            " Offline, it builds only from a module cache that `make prefetch` (or an earlier build) filled."
            if offline
            else " Check that the Go module proxy is reachable (HTTPS_PROXY behind a proxy)."
        )
        raise VersitygwError(
            f"`go install {MODULE}@{VERSION}` failed:\n{done.stderr.strip()[-1500:]}\n{hint.strip()}"
        )
    STAMP.write_text(VERSION + "\n")
    print(
        f"versitygw {VERSION} built in {time.monotonic() - started:.0f} s: {config.shown(BINARY)} "
        f"({BINARY.stat().st_size / 2**20:.0f} MB)"
    )
    return BINARY


def build_in_background(offline: bool = False) -> str:
    """Start :func:`build` in a process of its own and return what to say of it."""
    problem = check_go()
    if problem:
        raise VersitygwError(problem)
    if built():
        return f"versitygw {VERSION}: built already ({config.shown(BINARY)})"
    return background_build.begin(
        f"versitygw {VERSION}",
        BUILD_LOCK,
        BUILD_LOG,
        __spec__.name,
        ["--offline"] if offline else [],
    )


def command(port: int, root: Path) -> list[str]:
    """versitygw on 127.0.0.1:``port``, objects under ``root/data``, older versions under ``root/versions``."""
    return [
        str(BINARY),
        "--port",
        f"{config.LOCALHOST}:{port}",
        "posix",
        "--versioning-dir",
        str(root / "versions"),
        str(root / "data"),
    ]


def environment() -> dict[str, str]:
    """The server's root credentials: the emulators' keys."""
    return {
        **os.environ,
        "ROOT_ACCESS_KEY": config.EMULATOR_AWS_ACCESS_KEY_ID,
        "ROOT_SECRET_KEY": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
    }


def answers(port: int) -> bool:
    """Something speaking HTTP answers on the port (versitygw answers an unsigned request with an S3 error)."""
    try:
        urllib.request.urlopen(f"http://{config.LOCALHOST}:{port}/", timeout=2)
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


@contextlib.contextmanager
def running(root: Path) -> Iterator[str]:
    """A versitygw of its own, on a free loopback port, its state under ``root``; yields its endpoint."""
    from helpers.ground import local_processes

    if not built():
        raise VersitygwError(
            f"versitygw is not built: run `make versitygw` ({check_go() or 'Go is ready'})."
        )
    for folder in ("data", "versions"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    port = local_processes.free_port()
    log = open(root / "versitygw.log", "ab")
    process = subprocess.Popen(
        command(port, root),
        env=environment(),
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise VersitygwError(
                    f"versitygw did not answer on {config.LOCALHOST}:{port} (exit code {process.poll()}); "
                    f"its log: {config.shown(root / 'versitygw.log')}"
                )
            time.sleep(0.2)
        yield f"http://{config.LOCALHOST}:{port}"
    finally:
        local_processes.stop_process_group(process.pid)
        log.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.stores.versitygw", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="action", required=True)
    building = sub.add_parser("build", help=f"build versitygw {VERSION} into .cache/bin/ (once)")
    building.add_argument("--offline", action="store_true", help="from the module cache only")
    background_build.add_options(building, BUILD_LOG)
    building.add_argument(
        "--if-go",
        action="store_true",
        help="without a Go that can build it, say so and exit 0 (make prefetch)",
    )
    run = sub.add_parser(
        "run", help="start a versitygw of its own, run COMMAND against it, stop it"
    )
    run.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    try:
        if args.action == "build":
            if args.if_go and check_go():
                print(f"versitygw not built (optional): {check_go()}")
                return 0
            if args.background:
                print(build_in_background(offline=args.offline), flush=True)
            else:
                build(offline=args.offline, holding_lock=args.holding_lock)
            return 0
        command_line = args.command[1:] if args.command[:1] == ["--"] else args.command
        if not command_line:
            parser.error("run needs a command after --")
        with (
            tempfile.TemporaryDirectory(
                prefix="versitygw-", dir=config.BUILD_DIR if config.BUILD_DIR.is_dir() else None
            ) as tmp,
            running(Path(tmp)) as endpoint,
        ):
            env = {
                **os.environ,
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_ACCESS_KEY_ID": config.EMULATOR_AWS_ACCESS_KEY_ID,
                "AWS_SECRET_ACCESS_KEY": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
                "AWS_REGION": config.EMULATOR_AWS_REGION,
            }
            print(f"versitygw {VERSION} answering on {endpoint}", flush=True)
            return subprocess.run(command_line, env=env).returncode
    except VersitygwError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
