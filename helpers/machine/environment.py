"""What is installed, against what is pinned: the evidence behind notebook 00.

Pins are read from the lock files in requirements/ (the one place they are written down), so
a report can never disagree with what ``make install`` installed on purpose.
"""

from __future__ import annotations

import re
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from helpers.ground import config, tools

KERNEL_PACKAGES = (
    "pyspark",
    "delta-spark",
    "deltalake",
    "daft",
    "pyarrow",
    "pandas",
    "boto3",
    "moto",
    "azure-storage-blob",
    "papermill",
    "nbval",
    "jupyterlab",
    "matplotlib",
)

_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s;\\]+)")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=None)
def lock_pins(lock_file: Path) -> dict[str, str]:
    """``{package: version}`` from a requirements lock file (``name==version`` lines)."""
    pins = {}
    for line in lock_file.read_text().splitlines():
        match = _PIN.match(line)
        if match:
            pins.setdefault(_normalise(match.group(1)), match.group(2))
    return pins


def pinned_version(package: str, lock_file: Path | None = None) -> str | None:
    """The version the kernel lock file (or ``lock_file``) pins ``package`` to, or None."""
    lock_file = lock_file or config.ROOT / "requirements" / "kernel.txt"
    return lock_pins(lock_file).get(_normalise(package))


def installed_version(package: str) -> str | None:
    """The version installed in this Python, or None."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def package_report(packages=KERNEL_PACKAGES) -> list[dict[str, object]]:
    """One row per package: pinned, installed, and whether they agree."""
    rows = []
    for package in packages:
        pinned, installed = pinned_version(package), installed_version(package)
        rows.append(
            {
                "package": package,
                "pinned": pinned,
                "installed": installed,
                "ok": pinned == installed,
            }
        )
    return rows


def _first_line(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return f"not found ({error.__class__.__name__})"
    return (
        (done.stdout + done.stderr).strip().splitlines()[0]
        if (done.stdout + done.stderr).strip()
        else ""
    )


def tool_report() -> list[dict[str, object]]:
    """Python, Java and Node.js: the major version found, what is required, and a fix if it is off."""
    java = tools.java_major(_first_line(["java", "-version"]))
    node_text = _first_line(["node", "--version"])
    node = int(node_text[1:].split(".")[0]) if node_text.startswith("v") else None
    import sys

    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return [
        {
            "tool": "Python",
            "required": "3.11",
            "found": python,
            "problem": tools.check_python(),
        },
        {
            "tool": "Java",
            "required": f"{tools.JAVA_MIN}-{tools.JAVA_MAX}",
            "found": java,
            "problem": tools.check_java(),
        },
        {
            "tool": "Node.js",
            "required": f">={tools.NODE_MIN}",
            "found": node,
            "problem": tools.check_node(),
        },
    ]


def workbook_imports() -> list[str]:
    """Every module outside the standard library and the workbook's own package that a notebook's
    code cell or a module of ``helpers/`` imports by name (``import a.b`` and ``from a.b import c``
    give ``a.b``), sorted. Notebook 00 imports each of them, so whatever a library does on import
    (Daft's telemetry, for one) happens there, where ``tests/test_privacy.py`` watches."""
    import ast
    import json
    import sys

    sources = [path.read_text() for path in sorted((config.ROOT / "helpers").rglob("*.py"))]
    for notebook in sorted(config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        sources += [
            "\n".join(
                line
                for line in "".join(c["source"]).splitlines()
                if not line.lstrip().startswith(("%", "!"))
            )
            for c in cells
            if c["cell_type"] == "code"
        ]
    found = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module)
    return sorted(
        m
        for m in found
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "helpers"
    )


def import_report(modules: list[str] | None = None) -> list[dict[str, object]]:
    """Import each of :func:`workbook_imports` (or ``modules``) in this Python: one row each with
    ``module`` and ``error`` (None when it imported)."""
    import importlib

    rows = []
    for module in workbook_imports() if modules is None else modules:
        try:
            importlib.import_module(module)
            error = None
        except (
            Exception
        ) as failure:  # the report is the record; notebook 00 turns it into a problem
            error = f"{type(failure).__name__}: {failure}".splitlines()[0]
        rows.append({"module": module, "error": error})
    return rows
