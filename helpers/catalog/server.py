"""A Unity Catalog server for catalog-managed Delta tables (notebook 15): olai-uc-server (Rust,
Apache-2.0), a server that speaks Unity Catalog's REST API and its Delta API (``/delta/v1``, the
one Delta's own ``UCDeltaTokenBasedRestClient`` calls), built from its crate at a pinned version
into ``.cache/uc/`` and started on 127.0.0.1, its catalog in memory, tables on local disk under
the run's folder.

Command line (the Makefile calls it)::

    python -m helpers.catalog.server build             # make uc-server: once, then from .cache/ (OFFLINE=1: no network)
    python -m helpers.catalog.server build --if-cargo  # make prefetch: the same, or a note when Rust cannot build it

In Python (what notebook 15 does)::

    uc_server = server.start(root)   # a UCServer; uc_server.uri is http://127.0.0.1:<port>
    ...
    uc_server.stop()                 # or at the interpreter's exit
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from helpers import config

CRATE = "olai-uc-server"
VERSION = "0.0.11"
"""The newest release on 2026-11-27 (published 2026-11-01): the first that serves the Delta v1 API's
commits as Delta Spark 4.4's REST client sends them. Its ``rust-version`` is 1.95 (:data:`RUST_MIN`)."""
RUST_MIN = (1, 95)
BUILD_DIR = config.CACHE_DIR / "uc"
BINARY = BUILD_DIR / "install" / "bin" / "uc-server"
STAMP = BUILD_DIR / "install" / "uc-server.version"
START_TIMEOUT_S = 60.0


class UCServerError(RuntimeError):
    """The server could not be built, started or asked; the message says what to do."""


def cargo_version() -> tuple[int, int] | None:
    """The cargo on PATH as (major, minor), or None if there is none."""
    from helpers import preflight

    return preflight.tool_version(["cargo", "--version"], r"cargo (\d+)\.(\d+)")


def check_cargo() -> str | None:
    """Why the server cannot be built here (None: it can). Rust is needed for notebook 15 only."""
    found = cargo_version()
    wanted = ".".join(map(str, RUST_MIN))
    if found is None:
        return (
            f"cargo is not on PATH: notebook 15's Unity Catalog server ({CRATE} {VERSION}) is built with Rust {wanted}+. "
            "Every other notebook runs without it; to add it, install Rust (https://rustup.rs) and run `make uc-server`."
        )
    if found < RUST_MIN:
        return (
            f"Rust {found[0]}.{found[1]} is on PATH; {CRATE} {VERSION} needs Rust {wanted}+ (its Cargo.toml): "
            "`rustup update`, then `make uc-server`."
        )
    return None


def built() -> bool:
    return BINARY.is_file() and STAMP.is_file() and STAMP.read_text().strip() == VERSION


def cargo_environment(offline: bool) -> dict[str, str]:
    """Where the build keeps everything: inside ``.cache/uc/``. The downloaded crates stay there, so a
    second build (another version, or after the binary is deleted) downloads only what it lacks, and
    one offline none; the compiled dependencies are deleted after a build (:func:`build`)."""
    env = {
        **os.environ,
        "CARGO_HOME": str(BUILD_DIR / "cargo-home"),
        "CARGO_TARGET_DIR": str(BUILD_DIR / "target"),
    }
    if offline:
        env["CARGO_NET_OFFLINE"] = "true"
    return env


def build(offline: bool = False) -> Path:
    """Build ``uc-server`` at :data:`VERSION` into ``.cache/uc/install/bin/`` unless it is there already."""
    if built():
        return BINARY
    problem = check_cargo()
    if problem:
        raise UCServerError(problem)
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # --locked: the crate's own Cargo.lock, so every build compiles the same 406 packages
    command = [
        "cargo",
        "install",
        CRATE,
        "--version",
        VERSION,
        "--features",
        "bin",
        "--locked",
        "--root",
        str(BINARY.parent.parent),
        "--jobs",
        str(os.cpu_count() or 2),
    ]
    print(
        f"Building {CRATE} {VERSION} with cargo (the first time: about 7 minutes on 2 cores) ...",
        flush=True,
    )
    done = subprocess.run(
        command, env=cargo_environment(offline), cwd=config.ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        hint = (
            " Offline, it builds only from crates an earlier build (or `make prefetch`) downloaded."
            if offline
            else " Check that the crate registry is reachable (HTTPS_PROXY behind a proxy) and that a C compiler is on PATH."
        )
        raise UCServerError(
            f"`cargo install {CRATE} --version {VERSION}` failed:\n{done.stderr.strip()[-1500:]}\n{hint.strip()}"
        )
    STAMP.write_text(VERSION + "\n")
    # the compiled dependencies (1.3 GB) and the unpacked sources (0.3 GB) serve only a rebuild; the
    # downloaded crates stay, and cargo unpacks them again when it needs them
    for folder in (BUILD_DIR / "target", BUILD_DIR / "cargo-home" / "registry" / "src"):
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"{CRATE} {VERSION} built in {time.monotonic() - started:.0f} s: {config.shown(BINARY)} "
        f"({BINARY.stat().st_size / 2**20:.0f} MB; its crates kept in {config.shown(BUILD_DIR / 'cargo-home')})"
    )
    return BINARY


def config_text(root: Path) -> str:
    """The server's configuration: loopback only, its catalog in memory (gone when it stops), and
    local disk under ``root/tables`` the only storage a table may live in (the server refuses
    every ``file://`` location outside its allowed roots)."""
    tables = (root / "tables").resolve()
    return json.dumps(
        {  # JSON is YAML
            "host": config.LOCALHOST,
            "backend": {"engine": "sqlite", "path": ":memory:"},
            "local_storage": {"allowed-roots": [str(tables)]},
            "managed_storage_root": tables.as_uri(),
            "ui": {"serve": False},
        },
        indent=1,
    )


def health(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass
class UCServer:
    """A running server: its root URI (what Delta's REST client takes as ``uri``), its process,
    and the folder of its tables and log."""

    uri: str
    root: Path
    process: subprocess.Popen = field(repr=False)

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def log(self) -> Path:
        return self.root / "uc-server.log"

    def stop(self) -> None:
        from helpers import local_processes

        if self.process.poll() is None:
            local_processes.stop_process_group(self.process.pid)

    def __enter__(self) -> "UCServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(root: Path) -> UCServer:
    """Start a server of its own on a free loopback port, its tables and log under ``root``;
    returns once it answers ``/health``."""
    from helpers import local_processes

    if not built():
        raise UCServerError(
            f"{CRATE} is not built: run `make uc-server` ({check_cargo() or 'Rust is ready'})."
        )
    root = Path(root)
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "uc.yaml").write_text(config_text(root))
    port = local_processes.free_port()
    with open(root / "uc-server.log", "ab") as log:
        process = subprocess.Popen(
            [
                str(BINARY),
                "serve",
                "-c",
                str(root / "uc.yaml"),
                "--host",
                config.LOCALHOST,
                "--port",
                str(port),
                "--no-ui",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=root,
        )
    server = UCServer(f"http://{config.LOCALHOST}:{port}", root, process)
    atexit.register(server.stop)  # a kernel that ends without stopping it leaves no server behind
    deadline = time.monotonic() + START_TIMEOUT_S
    while not health(server.uri):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise UCServerError(
                f"{CRATE} did not answer on {server.uri}/health (exit code {process.poll()}); "
                f"its log: {config.shown(server.log)}"
            )
        time.sleep(0.2)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.catalog.server", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="action", required=True)
    building = sub.add_parser("build", help=f"build {CRATE} {VERSION} into .cache/uc/ (once)")
    building.add_argument(
        "--offline", action="store_true", help="from the crates already downloaded only"
    )
    building.add_argument(
        "--if-cargo",
        action="store_true",
        help="without a Rust that can build it, say so and exit 0 (make prefetch)",
    )
    args = parser.parse_args(argv)
    if args.if_cargo and check_cargo():
        print(f"{CRATE} not built (optional): {check_cargo()}")
        return 0
    try:
        build(offline=args.offline)
    except UCServerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
