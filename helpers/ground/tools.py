"""This machine's tools: which are on PATH, at which version, and what to do when one is missing.

Each tool's own check lives here, below everything that needs the tool: a Spark session asks
:func:`check_java`, Azurite :func:`check_node_runtime`, the matrix :func:`check_cc`, and
:mod:`helpers.machine.preflight` asks them all before ``make`` does anything. Standard library
only (and :mod:`helpers.ground.config`), so it runs before any virtual environment exists.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.ground import config

PYTHON_VERSION = (3, 11)
JAVA_MIN, JAVA_MAX = 17, 21  # Spark 4.2 runs on Java 17 and 21
NODE_MIN = 20
DISK_NEEDED_GB = 5  # a fresh install keeps 3.4 GB (docs/install.md); runs add build/ and .state/


def _version_of(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout + done.stderr).strip()


def tool_version(command: list[str], pattern: str) -> tuple[int, int] | None:
    """(major, minor) of a tool on PATH, read from what ``command`` prints with ``pattern`` (two
    groups), e.g. ``tool_version(["cargo", "--version"], r"cargo (\\d+)\\.(\\d+)")``; None if the
    tool is missing or says no version."""
    if shutil.which(command[0]) is None:
        return None
    match = re.search(pattern, _version_of(command) or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_python() -> str | None:
    if sys.version_info[:2] != PYTHON_VERSION:
        found = ".".join(map(str, sys.version_info[:3]))
        return (
            f"Python {found} is running this check; the workbook is pinned to Python 3.11. "
            "Install Python 3.11 and run `make PYTHON=/path/to/python3.11 install`."
        )
    return None


def java_major(text: str) -> int | None:
    """The major version in `java -version` output (1.8 -> 8, 17.0.15 -> 17)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_java() -> str | None:
    if shutil.which("java") is None:
        return (
            "Java is not on PATH; Spark needs a JDK 17 (or 21). Install one (Debian/Ubuntu: "
            "`apt-get install openjdk-17-jdk-headless`; macOS: `brew install openjdk@17`) or set JAVA_HOME and PATH."
        )
    text = _version_of(["java", "-version"]) or ""
    major = java_major(text)
    if major is None:
        return f"Could not read the Java version from `java -version` ({text[:80]!r}); Spark needs Java 17 or 21."
    if not JAVA_MIN <= major <= JAVA_MAX:
        return f"Java {major} is on PATH; Spark 4.2 needs Java {JAVA_MIN} or {JAVA_MAX}. Point JAVA_HOME and PATH at a JDK 17."
    return None


def check_javac() -> str | None:
    """The JDK's compiler: the workbook compiles one small Java class (a Delta log store, see
    ``helpers/spark/java/``) the first time a Spark session uses DynamoDB."""
    if shutil.which("javac") is None:
        return (
            "javac is not on PATH: a Java runtime without its JDK. Install the JDK 17 "
            "(Debian/Ubuntu: `apt-get install openjdk-17-jdk-headless`; macOS: `brew install openjdk@17`)."
        )
    return None


def check_cc() -> str | None:
    """A C compiler: the conflict matrix builds a small library that holds a delta-rs commit on local
    disk (``helpers/matrix/commit_hold.c``) the first time it races B's data files written first."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        return (
            "No C compiler (cc) on PATH: the conflict matrix (notebook 13, `make matrix`) compiles a small "
            "library with it. Install one (Debian/Ubuntu: `apt-get install gcc libc6-dev`; macOS: "
            "`xcode-select --install`)."
        )
    return None


def check_node_runtime() -> str | None:
    """Node.js itself, which runs Azurite (the one place that knows the version it needs)."""
    if shutil.which("node") is None:
        return (
            f"Node.js is not on PATH; the Azure emulator (Azurite) needs Node.js {NODE_MIN}+. Install it "
            f"(Debian/Ubuntu: `apt-get install nodejs npm`; macOS: `brew install node@{NODE_MIN}`), or use docker compose."
        )
    text = _version_of(["node", "--version"]) or ""
    match = re.match(r"v(\d+)", text)
    if not match or int(match.group(1)) < NODE_MIN:
        return f"Node.js {text or '?'} is on PATH; Azurite needs Node.js {NODE_MIN} or newer. Upgrade Node.js, or use docker compose."
    return None


def check_node() -> str | None:
    """Node.js, and npm beside it (it installs Azurite)."""
    problem = check_node_runtime()
    if problem:
        return problem
    if shutil.which("npm") is None:
        return "npm is not on PATH; it installs Azurite. Install npm next to Node.js."
    return None


def check_disk(root: Path = config.ROOT) -> str | None:
    """Free space for a first install; none is asked of a folder `make install` already filled."""
    if (root / ".venv" / ".installed").exists():
        return None
    free_gb = shutil.disk_usage(root).free / 2**30
    if free_gb < DISK_NEEDED_GB:
        return (
            f"{free_gb:.1f} GB free on the disk of this folder; `make install` needs about {DISK_NEEDED_GB} GB "
            "(environments, jars, emulators and their caches). Free some space, or clone the workbook onto a "
            "larger disk; `make distclean` removes what an earlier install left here."
        )
    return None


def check_browser() -> str | None:
    """Chromium and its driver, which `make test` (the answer page) and `make lab-check` (JupyterLab) drive;
    the notebooks run without them."""
    import os

    if (
        os.environ.get("WORKBOOK_CHROMIUM")
        or shutil.which("chromium")
        or shutil.which("chromium-browser")
    ) and (os.environ.get("WORKBOOK_CHROMEDRIVER") or shutil.which("chromedriver")):
        return None
    return (
        "Chromium or chromedriver is not on PATH: `make test` drives docs/answer.html in it, and `make lab-check` "
        "JupyterLab (the notebooks run without it). Install them (Debian/Ubuntu: `apt-get install chromium "
        "chromium-driver`), or point WORKBOOK_CHROMIUM and WORKBOOK_CHROMEDRIVER at a Chrome and its driver."
    )


def apply_patch(patch: str, folder: Path) -> None:
    """Apply a unified diff (``--- a/<path>``, ``+++ b/<path>``, hunks) to the files under ``folder``:
    each hunk's old lines must be found exactly once, and are replaced by its new lines. Raises
    ValueError naming the hunk that does not apply (the sources are not the ones the patch is for)."""
    target: Path | None = None
    hunks: list[tuple[Path, list[str], list[str]]] = []
    for line in patch.splitlines():
        if line.startswith("+++ "):
            target = folder / line[4:].split("\t")[0].strip().split("/", 1)[1]
        elif line.startswith("--- "):
            continue
        elif line.startswith("@@"):
            hunks.append((target, [], []))
        elif hunks and line[:1] in (" ", "-", "+", ""):
            old, new = hunks[-1][1], hunks[-1][2]
            if line[:1] in (" ", ""):
                old.append(line[1:])
                new.append(line[1:])
            elif line[:1] == "-":
                old.append(line[1:])
            else:
                new.append(line[1:])
    for number, (path, old, new) in enumerate(hunks, 1):
        text = path.read_text()
        before, after = "\n".join(old) + "\n", "\n".join(new) + "\n"
        if text.count(before) != 1:
            raise ValueError(
                f"hunk {number} does not apply to {path.name} ({text.count(before)} matches)"
            )
        path.write_text(text.replace(before, after))
