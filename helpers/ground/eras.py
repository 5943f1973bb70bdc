"""The delta-rs eras the workbook shows, each in its own Python environment.

The seeds were written against delta-rs releases whose S3 behaviour no longer exists, so the
workbook keeps one isolated environment per era and runs writer processes in it by name::

    run_in_era("deltalake-0.22.3", ["-c", "import deltalake; print(deltalake.__version__)"])

``make install`` creates the writer environments under ``.envs/<name>/`` from
``requirements/writer-<name>.txt``; the current era is the notebook kernel's own environment.

Three registers: :data:`ERAS` is the timeline of S3 commit behaviours (seeds' era, DynamoDB
interop, today) that notebooks iterate, e.g. notebook 08's table of eras; :data:`LOCK_SHAPE_ERAS`
holds an era kept for one comparison only, the seeds' own lock table (``key``-shaped, deltalake
0.14.0, notebook 06); :data:`CONFLICT_MATRIX_ERAS` holds deltalake 1.6.3, 1.1.4, 0.25.5 and 1.5.0,
kept for the conflict matrix (:mod:`helpers.matrix`). :func:`era` resolves a name from all of them
(:data:`ALL_ERAS`).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers.ground import config


def environment_python(name: str, in_kernel: bool) -> Path:
    """The Python of an era's environment: the kernel's, or ``.envs/<name>``'s."""
    if in_kernel:
        return config.ROOT / ".venv" / "bin" / "python"
    return config.ENVS_DIR / name / "bin" / "python"


@dataclass(frozen=True)
class Era:
    name: str
    deltalake_version: str
    summary: str
    in_kernel: bool = False
    timeline: bool = True
    """In :data:`ERAS`, the timeline of S3 behaviours; False: installed for one comparison only."""

    @property
    def requirements(self) -> Path:
        file = "kernel.txt" if self.in_kernel else f"writer-{self.name}.txt"
        return config.ROOT / "requirements" / file

    @property
    def python(self) -> Path:
        return environment_python(self.name, self.in_kernel)


ALL_ERAS: dict[str, Era] = {
    era.name: era
    for era in (
        Era(
            "deltalake-0.22.3",
            "0.22.3",
            "The seeds' era (last release before conditional put became the S3 default): an S3 commit is a "
            "copy + delete 'rename' that needs a lock client, or AWS_S3_ALLOW_UNSAFE_RENAME=true and the hope of "
            "a single writer.",
        ),
        Era(
            "deltalake-1.5.1",
            "1.5.1",
            "S3 conditional writes (If-None-Match) by default; still speaks Delta Spark's DynamoDB "
            "log-store protocol, so Spark and delta-rs writers can share one lock table.",
        ),
        Era(
            "deltalake-1.6.6",
            "1.6.6",
            "Today: conditional writes only; the DynamoDB log store is gone and its options are ignored.",
            in_kernel=True,
        ),
        Era(
            "deltalake-0.14.0",
            "0.14.0",
            "The seeds' lock table shape (last release before 0.15.0 replaced it): S3 commits rename under "
            "the dynamodb_lock crate's lease, one item keyed by `key` (DYNAMO_LOCK_PARTITION_KEY_VALUE) per lock.",
            timeline=False,
        ),
        Era(
            "deltalake-1.6.3",
            "1.6.3",
            "The last release that refuses the second of two OPTIMIZEs built on one snapshot (1.6.4 to 1.6.6 "
            "commit it, and every compacted row is then in the table twice): kept for the conflict matrix "
            "(helpers.matrix), so the regression is bracketed by measurement.",
            timeline=False,
        ),
        Era(
            "deltalake-1.1.4",
            "1.1.4",
            "The last release that commits a blind append made beside a DELETE, UPDATE, MERGE or overwrite "
            "(1.2.0 and later refuse it): kept for the conflict matrix (helpers.matrix), so releases 0.23.0 "
            "to 1.1.4 are measured with a release of their own.",
            timeline=False,
        ),
        Era(
            "deltalake-0.25.5",
            "0.25.5",
            "The last release before 1.0.0, whose VACUUM gained the full mode that deletes files younger than "
            "the retention (up to 1.5.0): kept for the conflict matrix (helpers.matrix), so releases 0.23.0 to "
            "0.25.5 are measured with a release of their own.",
            timeline=False,
        ),
        Era(
            "deltalake-1.5.0",
            "1.5.0",
            "The last release whose VACUUM with full=True deletes files younger than the retention (1.5.1 keeps "
            "them): kept for the conflict matrix (helpers.matrix), so releases 1.2.0 to 1.5.0 are measured with "
            "a release of their own.",
            timeline=False,
        ),
    )
}
"""Every era with an environment: what ``make install`` installs and :func:`era` resolves."""

ERAS: dict[str, Era] = {name: era for name, era in ALL_ERAS.items() if era.timeline}
"""The timeline of S3 commit behaviours that notebooks iterate (e.g. notebook 08's table of eras)."""

CURRENT = "deltalake-1.6.6"
SEEDS = "deltalake-0.22.3"
DYNAMODB_INTEROP = "deltalake-1.5.1"
OLD_LOCK = "deltalake-0.14.0"
LAST_REFUSING_DOUBLE_OPTIMIZE = "deltalake-1.6.3"
LAST_COMMITTING_BLIND_APPEND = "deltalake-1.1.4"
LAST_BEFORE_1_0 = "deltalake-0.25.5"
LAST_VACUUM_FULL_WITHIN_RETENTION = "deltalake-1.5.0"

LOCK_SHAPE_ERAS: dict[str, Era] = {OLD_LOCK: ALL_ERAS[OLD_LOCK]}
"""The era installed for one comparison only (notebook 06: the lock table of the seeds' text), kept
apart from :data:`ERAS`, the timeline of S3 behaviours that other notebooks iterate."""

CONFLICT_MATRIX_ERAS: dict[str, Era] = {
    name: ALL_ERAS[name]
    for name in (
        LAST_REFUSING_DOUBLE_OPTIMIZE,
        LAST_COMMITTING_BLIND_APPEND,
        LAST_BEFORE_1_0,
        LAST_VACUUM_FULL_WITHIN_RETENTION,
    )
}
"""Eras installed for the conflict matrix only (:mod:`helpers.matrix`), beside the timeline's:
deltalake 1.6.3, the last release that refuses a second OPTIMIZE from a stale snapshot; 1.1.4, the last
that commits a blind append beside a DELETE, UPDATE, MERGE or overwrite; 0.25.5, the last before 1.0.0; and
1.5.0, the last whose VACUUM with ``full=True`` deletes files younger than the retention."""


@dataclass(frozen=True)
class SparkEra:
    """A Delta Spark release with the Spark line it runs on, in a Python environment of its own
    (the kernel's for the current one): its drivers are processes started in that environment, so
    one notebook or one run can race both releases."""

    name: str
    delta_version: str
    spark_line: str
    """The Spark line its jars are built for (``"3.5"``), as its environment's pyspark is."""
    scala: str
    summary: str
    in_kernel: bool = False

    @property
    def requirements(self) -> Path:
        file = "kernel.txt" if self.in_kernel else f"spark-delta-{self.delta_version}.txt"
        return config.ROOT / "requirements" / file

    @property
    def python(self) -> Path:
        return environment_python(self.name, self.in_kernel)


CURRENT_SPARK = "delta-spark-4.4.0"
GLUE_SPARK = "delta-spark-3.3.2"
SPARK_ERAS: dict[str, SparkEra] = {
    spark.name: spark
    for spark in (
        SparkEra(
            CURRENT_SPARK,
            "4.4.0",
            "4.2",
            "2.13",
            "Today's Delta Spark on Spark 4.2, the kernel's pyspark.",
            in_kernel=True,
        ),
        SparkEra(
            GLUE_SPARK,
            "3.3.2",
            "3.5",
            "2.12",
            "Delta Spark 3.3 on Spark 3.5, the release AWS Glue 5 and EMR 7 run; installed only when "
            "asked (make spark-era, make matrix).",
        ),
    )
}
"""The Delta Spark releases the workbook runs (``SPARK_ERA`` of notebook 09, the matrix's Delta
Spark engines); :func:`spark_era` resolves a name, :func:`python_for` its environment."""


class EraError(RuntimeError):
    """An era is unknown or its environment is not installed; the message says what to do."""


def era(name: str) -> Era:
    """The era called ``name`` (e.g. ``"deltalake-0.22.3"``); raises EraError naming the known ones."""
    try:
        return ALL_ERAS[name]
    except KeyError:
        raise EraError(f"Unknown era {name!r}; the workbook has {', '.join(ALL_ERAS)}.") from None


def spark_era(name: str) -> SparkEra:
    """The Spark era called ``name`` (e.g. ``"delta-spark-3.3.2"``); raises EraError naming the known ones."""
    try:
        return SPARK_ERAS[name]
    except KeyError:
        raise EraError(
            f"Unknown Spark era {name!r}; the workbook has {', '.join(SPARK_ERAS)}."
        ) from None


def python_for(name: str) -> Path:
    """The Python executable of an era's environment, a delta-rs era or a Spark era (raises
    EraError if it is not installed, naming the command that installs it)."""
    chosen = SPARK_ERAS[name] if name in SPARK_ERAS else era(name)
    if not chosen.python.exists():
        command = "make spark-era" if name in SPARK_ERAS else "make install"
        raise EraError(
            f"The environment of {name} is not installed ({config.shown(chosen.python)} is missing). Run `{command}`."
        )
    return chosen.python


def run_in_era(
    name: str, args: list[str], *, timeout: float = 300, **kwargs
) -> subprocess.CompletedProcess:
    """Run ``python <args>`` in an era's environment, from the workbook's folder (so ``-m helpers...``
    works), with telemetry off (``config.NO_TELEMETRY`` added to ``env``), and wait; output is
    captured as text."""
    kwargs.setdefault("cwd", config.ROOT)
    kwargs["env"] = config.without_telemetry(kwargs.get("env"))
    return subprocess.run(
        [str(python_for(name)), *args], capture_output=True, text=True, timeout=timeout, **kwargs
    )


def start_in_era(name: str, args: list[str], **popen_kwargs) -> subprocess.Popen:
    """Start ``python <args>`` in an era's environment, from the workbook's folder, with telemetry off
    (as :func:`run_in_era`), without waiting (a writer process)."""
    popen_kwargs.setdefault("cwd", config.ROOT)
    popen_kwargs["env"] = config.without_telemetry(popen_kwargs.get("env"))
    return subprocess.Popen([str(python_for(name)), *args], **popen_kwargs)


def installed_deltalake_version(name: str) -> str:
    """The deltalake version an era's environment really imports."""
    done = run_in_era(name, ["-c", "import deltalake; print(deltalake.__version__)"], timeout=120)
    if done.returncode != 0:
        raise EraError(
            f"deltalake does not import in {name}: {done.stderr.strip()[-400:]} Run `make install`."
        )
    return done.stdout.strip()


def main() -> int:
    for chosen in ALL_ERAS.values():
        where = ".venv (the kernel)" if chosen.in_kernel else f".envs/{chosen.name}"
        try:
            version = installed_deltalake_version(chosen.name)
        except EraError as error:
            version = f"not installed ({error})"
        print(f"{chosen.name:18} {where:20} deltalake {version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
