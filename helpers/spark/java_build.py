"""Java compiled by the workbook: a jar built from its sources with the JDK's javac, once, and again
when a source changes. The DynamoDB log store (:func:`helpers.spark.sessions.log_store_jar`) and
notebook 15's Kernel writer are built with it.
"""

from __future__ import annotations

import os
from pathlib import Path

from helpers.ground import config


def compile_jar(jar: Path, sources, classpath, source_dir: Path, error: type[Exception]) -> Path:
    """``jar`` compiled from the Java ``sources`` (under ``source_dir``) against ``classpath()`` with
    the JDK's javac, unless it is newer than every source; one process compiles while the others
    wait (writers start in parallel). A missing JDK tool or a compile error raises ``error``."""
    import fcntl
    import shutil
    import subprocess
    import tempfile

    def up_to_date() -> bool:
        return jar.is_file() and jar.stat().st_mtime >= max(p.stat().st_mtime for p in sources)

    if up_to_date():
        return jar
    if shutil.which("javac") is None or shutil.which("jar") is None:
        from helpers.ground import tools

        raise error(
            tools.check_javac() or "The JDK's `jar` tool is not on PATH; install the JDK 17."
        )
    jar.parent.mkdir(parents=True, exist_ok=True)
    with open(jar.parent / f".{jar.stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if up_to_date():  # another process compiled it while this one waited
            return jar
        with tempfile.TemporaryDirectory(dir=jar.parent) as work:
            classes = Path(work) / "classes"
            compiled = subprocess.run(
                [
                    "javac",
                    "--release",
                    "17",
                    "-nowarn",
                    "-cp",
                    os.pathsep.join(map(str, classpath())),
                    "-d",
                    str(classes),
                    *map(str, sources),
                ],
                capture_output=True,
                text=True,
            )
            if compiled.returncode != 0:
                raise error(
                    f"javac could not compile {config.shown(source_dir)}:\n{compiled.stderr[-2000:]}"
                )
            packed = Path(work) / jar.name
            subprocess.run(
                ["jar", "cf", str(packed), "-C", str(classes), "."], check=True, capture_output=True
            )
            os.replace(packed, jar)
    return jar
