"""deltalake 1.6.6 built from its source distribution with the proposed fix of
``create_write_transaction`` (:data:`helpers.producers.committer.FIX_PATCH`: one ``set_state``
with the commit's snapshot), for the committer's run at the serial limit. A maintainers' command,
never part of ``make test`` or CI::

    python -m helpers.producers.deltalake_fix            # make deltalake-fix

Everything stays in ``.cache/deltalake-fix/``: a Python environment holding only the pinned
:data:`MATURIN` (``venv/``), the source distribution (``sdist/``), its sources unpacked and
patched (``src/``), cargo's downloads and build (``cargo-home/``, ``target/``), the wheel
(``wheels/``), and the wheel installed on its own (``site/``), which only the process that
measures the committer puts first on its path
(:func:`helpers.producers.scenarios.at_the_limit`'s ``deltalake_from``). The workbook's own
environment keeps the released 1.6.6.

The build uses cargo's ``release`` profile (the crates' own ``python-release`` profile, with
whole-program optimisation, is the published wheels' and takes hours on two cores), so the run at
the limit compares the committer with one writer appending alone on this same build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from helpers.ground import config, tools
from helpers.producers.committer import FIX_PATCH

VERSION = "1.6.6"
"""The release the workbook runs, and the one the patch is written against."""
MATURIN = "maturin==1.16.0"
"""The build tool (the source distribution asks for maturin >= 1.6, < 2)."""
PROFILE = "release"
RUST_MIN = (1, 94)
"""The crates' ``rust-version`` (1.94.1)."""
FIX_DIR = config.CACHE_DIR / "deltalake-fix"
SITE = FIX_DIR / "site"
STAMP = SITE / "deltalake-fix.version"


class FixBuildError(RuntimeError):
    """The fix could not be built; the message says what to do."""


def stamp_text() -> str:
    """What the stamp in ``site/`` says of the build: the release, the patch (a digest of its
    text) and the profile; a build whose stamp says anything else is made again."""
    digest = hashlib.sha256(FIX_PATCH.read_bytes()).hexdigest()[:12]
    return f"deltalake {VERSION} + {FIX_PATCH.name} (sha256 {digest}); cargo profile {PROFILE}"


def built() -> bool:
    return STAMP.is_file() and STAMP.read_text().strip() == stamp_text()


def where() -> str | None:
    """The folder to put first on a process's path for the fixed build; None when not built."""
    return str(SITE) if built() else None


def _run(command: list[str], what: str, **kwargs) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, **kwargs)
    if done.returncode != 0:
        raise FixBuildError(f"{what} failed:\n{(done.stderr or done.stdout).strip()[-2000:]}")


def _build_tool() -> Path:
    """The environment that holds only :data:`MATURIN` (made once)."""
    venv = FIX_DIR / "venv"
    maturin = venv / "bin" / "maturin"
    if not maturin.is_file():
        _run([sys.executable, "-m", "venv", str(venv)], "creating the build tool's environment")
        _run([str(venv / "bin" / "pip"), "install", "-q", MATURIN], f"installing {MATURIN}")
    return venv / "bin"


def _sources(tool_bin: Path) -> Path:
    """The source distribution, downloaded once, unpacked and patched (again only when the patch
    changed)."""
    sdist = FIX_DIR / "sdist" / f"deltalake-{VERSION}.tar.gz"
    if not sdist.is_file():
        _run(
            [
                *(str(tool_bin / "pip"), "download", f"deltalake=={VERSION}"),
                *("--no-binary", "deltalake", "--no-deps", "--no-build-isolation"),
                *("-d", str(sdist.parent)),
            ],
            f"downloading deltalake {VERSION}'s source distribution",
            env={**os.environ, "PATH": f"{tool_bin}{os.pathsep}{os.environ.get('PATH', '')}"},
        )
    package = FIX_DIR / "src" / f"deltalake-{VERSION}"
    patched = FIX_DIR / "src" / "patched"
    if not (patched.is_file() and patched.read_text() == stamp_text()):
        shutil.rmtree(FIX_DIR / "src", ignore_errors=True)
        (FIX_DIR / "src").mkdir(parents=True)
        with tarfile.open(sdist) as archive:
            archive.extractall(FIX_DIR / "src", filter="data")
        try:
            tools.apply_patch(FIX_PATCH.read_text(), package)
        except ValueError as error:
            raise FixBuildError(f"{FIX_PATCH.name}: {error}") from None
        patched.write_text(stamp_text())
    return package


def build() -> str:
    """Build and install the fixed deltalake into ``site/`` unless it is there; returns the folder."""
    if built():
        return str(SITE)
    found = tools.tool_version(["cargo", "--version"], r"cargo (\d+)\.(\d+)")
    if found is None or found < RUST_MIN:
        raise FixBuildError(
            f"deltalake {VERSION} builds with Rust {'.'.join(map(str, RUST_MIN))}+; "
            f"{'no cargo is on PATH' if found is None else f'cargo {found[0]}.{found[1]} is'}: "
            "install or update Rust (https://rustup.rs), then run `make deltalake-fix` again."
        )
    started = time.monotonic()
    tool_bin = _build_tool()
    package = _sources(tool_bin)
    wheels = FIX_DIR / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    print(f"Building {stamp_text()} (an hour or more on two cores the first time) ...", flush=True)
    _run(
        [
            *(str(tool_bin / "maturin"), "build", "--profile", PROFILE),
            *("--jobs", str(os.cpu_count() or 2), "--compatibility", "linux"),
            *("--auditwheel", "skip", "--interpreter", sys.executable, "--out", str(wheels)),
        ],
        "maturin build",
        cwd=package,
        env={
            **os.environ,
            "CARGO_HOME": str(FIX_DIR / "cargo-home"),
            "CARGO_TARGET_DIR": str(FIX_DIR / "target"),
            "PATH": f"{tool_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        },
    )
    (wheel,) = wheels.glob("deltalake-*.whl")
    shutil.rmtree(SITE, ignore_errors=True)
    _run(
        [str(tool_bin / "pip"), "install", "-q", "--no-deps", "--target", str(SITE), str(wheel)],
        "installing the wheel into site/",
    )
    check = (
        "import deltalake, pathlib; print(deltalake.__version__, "
        "pathlib.Path(deltalake.__file__).resolve().parent.parent)"
    )
    done = subprocess.run(
        [sys.executable, "-c", check],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SITE)},
    )
    if done.stdout.split() != [VERSION, str(SITE.resolve())]:
        raise FixBuildError(f"the build in site/ does not import as deltalake {VERSION}: {done}")
    STAMP.write_text(stamp_text() + "\n")
    print(f"Built in {time.monotonic() - started:.0f} s: {config.shown(SITE)} ({wheel.name})")
    return str(SITE)


def main() -> int:
    try:
        build()
    except FixBuildError as error:
        print(f"deltalake-fix: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
