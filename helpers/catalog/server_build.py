"""The Unity Catalog server's build: **olai-uc-server 0.0.11 + workbook patch sts-endpoint**
(:data:`BUILD_NAME`), the crate's sources with one patch, ``patches/sts-endpoint.patch``, compiled with
:data:`PROFILE` into ``.cache/uc/``, once. :mod:`helpers.catalog.server` starts what it builds.

Command line (the Makefile calls it)::

    python -m helpers.catalog.server_build build               # make uc-server: once, then from .cache/ (OFFLINE=1: no network)
    python -m helpers.catalog.server_build build --if-cargo    # make prefetch: the same, or a note when Rust cannot build it
    python -m helpers.catalog.server_build build --background  # make test: the same beside the tests (log in .cache/uc/build.log)

``make test`` builds in the background, so that nothing waits for cargo's minutes on a cold machine
but what needs the server: notebook 15 and the catalog's tests wait for the build (:func:`ready`;
:mod:`helpers.ground.background_build`), the installs and every other test run beside it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Sequence

from helpers.ground import background_build, config

CRATE = "olai-uc-server"
VERSION = "0.0.11"
"""The newest release on 2026-11-27 (published 2026-11-01): the first that serves the Delta v1 API's
commits as Delta Spark 4.4's REST client sends them. Its ``rust-version`` is 1.95 (:data:`RUST_MIN`)."""
RUST_MIN = (1, 95)
BUILD_DIR = config.CACHE_DIR / "uc"
BINARY = BUILD_DIR / "install" / "bin" / "uc-server"
STAMP = BUILD_DIR / "install" / "uc-server.version"
BUILD_LOCK = BUILD_DIR / "build.lock"
"""Held by a build started with ``--background`` for as long as it runs."""
BUILD_LOG = BUILD_DIR / "build.log"
"""What a background build printed."""
PATCH = Path(__file__).parent / "patches" / "sts-endpoint.patch"
PATCH_NAME = "sts-endpoint"
BUILD_NAME = f"{CRATE} {VERSION} + workbook patch {PATCH_NAME}"
"""How the build is named wherever it appears: the crate's release with the workbook's patch."""
PROFILE: dict[str, str] = {
    "CARGO_PROFILE_RELEASE_OPT_LEVEL": "0",
    "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "256",
}
"""Cargo's release profile, changed by these settings (environment variables cargo reads): no
optimisation, and each crate cut into as many pieces as the compiler likes. The server serves one
machine's tests and lessons, a few hundred requests a run. On 2026-11-28, on one shared 2-core
machine, the patched build took 2386 s with the release profile (1-minute load 9.3 on average),
and with these settings 459 s (load 5.7) and, through :func:`build`, 926 s (load 12.3 at its start,
4.9 at its end; 344 s of user CPU); notebook 15 and the object-storage tests pass with it
(docs/versions.md)."""


class UCServerError(RuntimeError):
    """The server could not be built, started or asked; the message says what to do."""


def cargo_version() -> tuple[int, int] | None:
    """The cargo on PATH as (major, minor), or None if there is none."""
    from helpers.ground import tools

    return tools.tool_version(["cargo", "--version"], r"cargo (\d+)\.(\d+)")


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


def stamp_text() -> str:
    """What the stamp beside the binary says of the build: the release, the patch (with a digest
    of its text) and the profile; a binary whose stamp says anything else is built again."""
    digest = hashlib.sha256(PATCH.read_bytes()).hexdigest()[:12]
    profile = " ".join(f"{key}={value}" for key, value in sorted(PROFILE.items())) or "release"
    return f"{BUILD_NAME} (patch sha256 {digest}); profile {profile}"


def built() -> bool:
    return BINARY.is_file() and STAMP.is_file() and STAMP.read_text().strip() == stamp_text()


def ready() -> bool:
    """Whether the server is built, once a build running in the background (``make test`` starts
    one) has ended: waits for it, saying so on the process's own stderr, not a notebook's."""
    background_build.wait(
        BUILD_LOCK,
        lambda line: print(line, file=sys.__stderr__, flush=True),
        f"the build of {BUILD_NAME} (its log: {config.shown(BUILD_LOG)})",
    )  # no last line: a failed build's reason is in the error (not_built)
    return built()


def not_built() -> UCServerError:
    """The error for a server that is not built, with the end of a failed background build's log."""
    text = f"{CRATE} is not built: run `make uc-server` ({check_cargo() or 'Rust is ready'})."
    if BUILD_LOG.is_file():
        text += f" The background build's log ends:\n{background_build.log_tail(BUILD_LOG)}"
    return UCServerError(text)


def build_in_background(offline: bool = False) -> str:
    """Start :func:`build` in a process of its own (``make test``) and return what to say of it:
    nothing to do if the server is built or a build runs already."""
    problem = check_cargo()
    if problem:
        raise UCServerError(problem)
    if built():
        return f"{BUILD_NAME}: built already ({config.shown(BINARY)})"
    started = background_build.begin(
        BUILD_NAME, BUILD_LOCK, BUILD_LOG, __spec__.name, ["--offline"] if offline else []
    )
    return f"{started}; notebook 15 and the catalog's tests wait for it"


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
    env.update(PROFILE)
    return env


def crate_file(offline: bool) -> Path:
    """The crate's ``.crate`` archive in cargo's download cache, downloaded by cargo if missing (by
    ``cargo fetch`` in a throwaway project that depends on it, so cargo's own registry client does it)."""
    found = sorted(
        (BUILD_DIR / "cargo-home" / "registry" / "cache").glob(f"*/{CRATE}-{VERSION}.crate")
    )
    if found:
        return found[0]
    with tempfile.TemporaryDirectory(prefix="uc-fetch-") as scratch:
        (Path(scratch) / "src").mkdir()
        (Path(scratch) / "src" / "lib.rs").write_text("")
        (Path(scratch) / "Cargo.toml").write_text(
            f'[package]\nname = "uc-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n'
            f'[dependencies]\n{CRATE} = "={VERSION}"\n'
        )
        done = subprocess.run(
            ["cargo", "fetch"],
            env=cargo_environment(offline),
            cwd=scratch,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise UCServerError(
                f"`cargo fetch` of {CRATE} {VERSION} failed:\n{done.stderr.strip()[-1500:]}"
            )
    return crate_file(offline=True)


def build(offline: bool = False, holding_lock: bool = False) -> Path:
    """Build :data:`BUILD_NAME` into ``.cache/uc/install/bin/`` unless it is there already: the
    crate's sources unpacked into ``.cache/uc/src/``, :data:`PATCH` applied, then
    ``cargo install --path`` with the crate's own lock file and :data:`PROFILE`. A build running in
    the background is waited for first (``holding_lock``: this is that build)."""
    if not holding_lock:
        background_build.wait(BUILD_LOCK, print, f"the build of {BUILD_NAME}", BUILD_LOG)
    if built():
        return BINARY
    problem = check_cargo()
    if problem:
        raise UCServerError(problem)
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    sources = BUILD_DIR / "src"
    shutil.rmtree(sources, ignore_errors=True)
    sources.mkdir()
    with tarfile.open(crate_file(offline)) as archive:
        archive.extractall(sources, filter="data")
    package = sources / f"{CRATE}-{VERSION}"
    from helpers.ground import tools

    try:
        tools.apply_patch(PATCH.read_text(), package)
    except ValueError as error:
        raise UCServerError(f"{PATCH.name}: {error}") from None
    # --locked: the crate's own Cargo.lock, so every build compiles the same 406 packages
    command = [
        "cargo",
        "install",
        "--path",
        str(package),
        "--features",
        "bin",
        "--locked",
        "--root",
        str(BINARY.parent.parent),
        "--jobs",
        str(os.cpu_count() or 2),
    ]
    print(f"Building {BUILD_NAME} with cargo ({stamp_text().split('; ')[-1]}) ...", flush=True)
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
            f"`cargo install --path {config.shown(package)}` ({BUILD_NAME}) failed:\n"
            f"{done.stderr.strip()[-1500:]}\n{hint.strip()}"
        )
    STAMP.write_text(stamp_text() + "\n")
    # the compiled dependencies (1.3 GB) and the unpacked sources (0.3 GB) serve only a rebuild; the
    # downloaded crates stay, and cargo unpacks them again when it needs them
    for folder in (BUILD_DIR / "target", BUILD_DIR / "cargo-home" / "registry" / "src", sources):
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"{BUILD_NAME} built in {time.monotonic() - started:.0f} s: {config.shown(BINARY)} "
        f"({BINARY.stat().st_size / 2**20:.0f} MB; its crates kept in {config.shown(BUILD_DIR / 'cargo-home')})"
    )
    return BINARY


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.catalog.server_build", description=__doc__.split("\n\n")[0]
    )
    sub = parser.add_subparsers(dest="action", required=True)
    building = sub.add_parser("build", help=f"build {BUILD_NAME} into .cache/uc/ (once)")
    building.add_argument(
        "--offline", action="store_true", help="from the crates already downloaded only"
    )
    background_build.add_options(building, BUILD_LOG)
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
        if args.background:
            print(build_in_background(offline=args.offline), flush=True)
        else:
            build(offline=args.offline, holding_lock=args.holding_lock)
    except UCServerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
