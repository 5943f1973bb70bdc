"""The race of Java Delta Kernel beside Delta Spark through the catalog, repeated: every run on a
fresh catalog-managed table of one server, Kernel's retries counted, each table checked from
storage and the catalog (:func:`helpers.catalog.race.check_table`), and a verdict that rests on all
runs.

    record = repeat_race(uc_server.uri, folder, runs=10)
    print(record.summary())
    record.passed          # no run had a problem
    record.to_dict()       # JSON-able

What a run costs is mostly JVMs, so they start once, not once a run: one Delta Spark driver with
Spark's testing flag creates every run's table (:func:`helpers.catalog.kernel_writer.create_in_a_driver`),
and ``spark_writers`` Delta Spark jobs without the flag (:class:`helpers.catalog.driver.Job`, as a
team's job runs) stay up through all runs. Each run starts one Kernel writer, a small JVM
(:mod:`helpers.catalog.kernel_writer`); once it has read the new table and every Spark job has read
it too, all are released together. The Kernel writer's first commit waits until the catalog has
ratified a Spark commit (``wait_for_a_rival``), so it asks for a version already given in every run.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from helpers.catalog import kernel_writer
from helpers.catalog.race import RUN_TIMEOUT_S, check_table
from helpers.catalog.rest import UnityCatalog
from helpers.catalog.tables import local_path, wait_published
from helpers.catalog.writer import ROWS_PER_BATCH, batches_of

KERNEL = "Delta Kernel"
SPARK = "Delta Spark"


def engine_name(engine_info: str) -> str:
    """Which engine a commit's ``engineInfo`` names: :data:`KERNEL`, :data:`SPARK`, or itself."""
    if engine_info.startswith("Kernel-"):
        return KERNEL
    if engine_info.startswith("Apache-Spark/"):
        return SPARK
    return engine_info


@dataclass
class KernelRun:
    """One run of the race: what each engine committed, Kernel's retries and the table's problems."""

    run: int
    table: str
    commits: dict[str, int]
    """Engine -> the table's versions after 0 whose commit it made (read from storage)."""
    retries: list[dict]
    """Each retry of the Kernel writer, in order, with its ``batch``
    (:mod:`helpers.catalog.kernel_writer`: ``by``, ``tried``, ``refusal``, ``raised``, ``next``)."""
    kernel_losers: int
    """Staged commits of Kernel's that lost their version at the catalog (read from storage)."""
    problems: list[str]
    seconds: float
    """The run, once the Spark jobs are up: from naming its table in them to the check's end."""

    @property
    def retry_counts(self) -> dict[str, int]:
        """Kernel's own retries (``kernel``) and the appender's (``appender``)."""
        return kernel_writer.retry_counts([{"retries": self.retries}])


@dataclass
class KernelRaces:
    """The race repeated (:func:`repeat_race`): each run, and the verdict on all of them."""

    spark_writers: int
    batches_per_writer: int
    runs: list[KernelRun] = field(default_factory=list)
    testing_flags: dict[str, str | None] = field(default_factory=dict)
    """Spark job -> Spark's testing flag in it (:func:`helpers.catalog.writer.testing_flag`): None,
    or the job would have refused to start."""
    setup_seconds: float = 0.0
    """Before the first run: every table created, the Spark jobs started."""
    seconds: float = 0.0
    """The whole repetition: the setup and every run."""

    @property
    def passed(self) -> bool:
        """True when there were runs and none had a problem."""
        return bool(self.runs) and not any(run.problems for run in self.runs)

    @property
    def commits(self) -> dict[str, int]:
        """Engine -> commits over all runs."""
        return dict(sum((Counter(run.commits) for run in self.runs), Counter()))

    @property
    def retry_counts(self) -> dict[str, int]:
        """Kernel's own retries and the appender's, over all runs."""
        return kernel_writer.retry_counts([{"retries": r.retries} for r in self.runs])

    def summary(self) -> str:
        lines = [
            (
                f"{len(self.runs)} runs of {self.spark_writers} Delta Spark + 1 Delta Kernel "
                f"writers, {self.batches_per_writer} batches each, in {self.seconds:.0f} s "
                f"({self.setup_seconds:.0f} s to create the tables and start the Spark jobs)"
            )
        ]
        for run in self.runs:
            counts = run.retry_counts
            lines.append(
                f"run {run.run}: "
                + ", ".join(f"{engine} {n}" for engine, n in sorted(run.commits.items()))
                + f" commits; Kernel's retries: {len(run.retries)} ({counts['kernel']} its own, "
                f"{counts['appender']} the appender's); "
                + (f"{len(run.problems)} problem(s)" if run.problems else "no problems")
                + f"; {run.seconds:.1f} s"
            )
            lines += [f"  - {problem}" for problem in run.problems]
        totals = self.retry_counts
        lines.append(
            "total: "
            + ", ".join(f"{engine} {n}" for engine, n in sorted(self.commits.items()))
            + f" commits; Kernel's retries: {sum(totals.values())} ({totals['kernel']} its own, "
            f"{totals['appender']} the appender's)"
        )
        failed = [run.run for run in self.runs if run.problems]
        lines.append(
            "Verdict: every run without a problem."
            if self.passed
            else f"Verdict: failed; runs with problems: {failed or 'no run finished'}."
        )
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "passed": self.passed,
            "commits": self.commits,
            "retry_counts": self.retry_counts,
        }


def disagreements(appends: list[dict], owners: dict[int, str], kernel_losers: int) -> list[str]:
    """Where the Kernel writer's reports (its ``appends``) disagree with storage: the versions it
    says it committed against those whose commit is Kernel's (``owners``: version -> engine), and
    the attempts it says were refused against its staged commits that lost their version (each
    attempt stages a file of its own before it asks the catalog)."""
    found = []
    reported = sorted(a["version"] for a in appends)
    stored = sorted(v for v, engine in owners.items() if engine == KERNEL)
    if reported != stored:
        found.append(f"Kernel reported versions {reported}; storage has its commits at {stored}")
    refused = sum(len(a.get("retries", [])) for a in appends)
    if refused != kernel_losers:
        found.append(
            f"Kernel reported {refused} refused attempts; storage holds {kernel_losers} of its "
            "staged commits that lost their version"
        )
    return found


def _spark_appends(job, name: str, writer: str, batches: list[int], go, told: dict) -> None:
    """A Spark job's side of a run: wait for the release, then append each batch, keeping what the
    job was told of each in ``told[writer]`` (``success``, Delta's error, or the job's failure)."""
    go.wait()
    told[writer] = answers = {}
    for batch in batches:
        try:
            answers[batch] = job.append(name, writer, batch)
        except Exception as error:  # noqa: BLE001 - a job that failed is a problem of the run
            answers[batch] = f"{type(error).__name__}: {error}"
            return


def _release(jobs: dict, spec: dict, batches: dict, run_dir: Path) -> tuple[list, list[str]]:
    """Start the Kernel writer of ``spec``, wait until it has read the table, then release it and
    the Spark ``jobs`` together; return the Kernel writer's appends and the writers' failures."""
    run_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = run_dir / "k1.java.err"
    java, _ = kernel_writer.start(spec, stderr_path)
    release, told, appends, problems = threading.Event(), {}, [], []
    threads = [
        threading.Thread(
            target=_spark_appends, args=(job, spec["table"], w, batches[w], release, told)
        )
        for w, job in jobs.items()
    ]
    for thread in threads:
        thread.start()
    watchdog = threading.Timer(RUN_TIMEOUT_S, java.kill)  # a bound against a hang
    watchdog.start()
    release.set()
    try:
        kernel_writer.go(java, stderr_path, appends)
    except kernel_writer.KernelWriterError as error:
        problems.append(f"the Kernel writer failed: {error}")
    finally:
        watchdog.cancel()
        for thread in threads:
            thread.join()
    for writer, answers in sorted(told.items()):
        problems += [f"{writer} batch {b}: told {t}" for b, t in answers.items() if t != "success"]
    return appends, problems


def race_once(
    catalog: UnityCatalog,
    jobs: dict,
    run: int,
    name: str,
    created: tuple[str, str],
    batches_per_writer: int,
    run_dir: Path,
) -> KernelRun:
    """One run on the fresh table ``name`` (``created``: its id and location): the Spark ``jobs``
    (writer -> :class:`helpers.catalog.driver.Job`) and one Kernel writer, released together, then
    the table checked from storage and the catalog, and Kernel's reports checked against storage:
    its versions, and its refused attempts against its staged commits that lost their version."""
    started = time.monotonic()
    table_id, location = created
    batches = {writer: batches_of(n, batches_per_writer) for n, writer in enumerate(jobs, 1)}
    batches["k1"] = batches_of(len(jobs) + 1, batches_per_writer)
    for job in jobs.values():
        job.open(name, location)
        job.count(name)  # the table, read before the release
    spec = {
        "uri": catalog.uri,
        "table_id": table_id,
        "table": name,
        "location": location,
        "process": "k1",
        "batches": batches["k1"],
        "wait_for_a_rival": True,
    }
    appends, problems = _release(jobs, spec, batches, run_dir)
    try:
        wait_published(catalog, name)
    except TimeoutError as error:
        problems.append(str(error))
    expected = {(w, b): ROWS_PER_BATCH for w, bs in batches.items() for b in bs}
    check = check_table(catalog, name, expected)
    owners = {v: engine_name(info) for v, info in kernel_writer.engines(check).items()}
    folder = local_path(location)
    losers = sum(engine_name(kernel_writer.engine_of(folder, n)) == KERNEL for n in check.losers)
    return KernelRun(
        run=run,
        table=name,
        commits=dict(Counter(engine for v, engine in owners.items() if v > 0)),
        retries=[{"batch": a["batch"], **r} for a in appends for r in a.get("retries", [])],
        kernel_losers=losers,
        problems=check.problems + problems + disagreements(appends, owners, losers),
        seconds=round(time.monotonic() - started, 3),
    )


def repeat_race(
    uri: str,
    folder: Path,
    *,
    runs: int = 10,
    spark_writers: int = 2,
    batches_per_writer: int = 2,
    prefix: str = "kernel_race",
    created: dict[str, tuple[str, str]] | None = None,
) -> KernelRaces:
    """Race ``spark_writers`` Delta Spark jobs and one Delta Kernel writer ``runs`` times through the
    Unity Catalog server at ``uri``, each run on a fresh table ``<prefix>_<n>`` and each writer
    appending ``batches_per_writer`` batches; the jobs' and writers' files go under ``folder``.
    Returns the record of every run (:class:`KernelRaces`); its verdict fails if any run has a
    problem.

    ``created``: ``runs`` fresh tables already created by the caller
    (:func:`helpers.catalog.kernel_writer.create_in_a_driver`'s answer), raced in its order instead
    of creating ``<prefix>_<n>`` (a driver fewer)."""
    from helpers.catalog.driver import Job

    began = time.monotonic()
    catalog = UnityCatalog(uri)
    if created is None:
        names = [f"{prefix}_{run}" for run in range(1, runs + 1)]
        created = kernel_writer.create_in_a_driver(uri, *names)
    elif len(created) != runs:
        raise ValueError(f"{len(created)} tables created for {runs} runs")
    names = list(created)
    kernel_writer.kernel_jar()  # compiled before the first run, not during it
    record = KernelRaces(spark_writers, batches_per_writer)
    jobs = {}
    try:
        for n in range(1, spark_writers + 1):
            jobs[f"w{n}"] = Job(folder / f"w{n}", uri)
        record.testing_flags = {writer: job.testing_flag for writer, job in jobs.items()}
        record.setup_seconds = round(time.monotonic() - began, 1)
        for run, name in enumerate(names, start=1):
            record.runs.append(
                race_once(
                    catalog, jobs, run, name, created[name], batches_per_writer, folder / name
                )
            )
    finally:
        for job in jobs.values():
            job.close()
    record.seconds = round(time.monotonic() - began, 1)
    return record
