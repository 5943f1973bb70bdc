"""The retry advice of the answer page, from notebook 11's committed full run
(``data/full_runs/bench/commits.csv.gz``): the ``max_commit_retries`` to set per commit path, what each writer
count needed, and the rule above the counts measured; the page, notebook 11, the solutions and the copy cells
quote the same figures (a test holds them to it)."""

from __future__ import annotations

import csv
import gzip

from helpers.bench import stats
from helpers.ground import config
from helpers.page.notebook_sections import Section

S11_3 = Section("11_commit_throughput.ipynb", "3", "The full run: every protocol, 1 to 16 writers")
BENCH_COMMITS = config.DATA_DIR / "full_runs" / "bench" / "commits.csv.gz"


def retry_runs(protocol: str) -> list[stats.RetriesNeeded]:
    """Notebook 11's committed full run of ``protocol``, read for ``max_commit_retries``, one entry per writer
    count (:func:`helpers.bench.stats.retries_needed`)."""
    with gzip.open(BENCH_COMMITS, "rt", newline="", encoding="utf-8") as handle:
        return stats.retries_needed(r for r in csv.DictReader(handle) if r["protocol"] == protocol)


def advised_retries(protocol: str) -> int:
    """The ``max_commit_retries`` the page advises for ``protocol``, and its copy cells set: for the most writers
    measured, what they needed, or where some gave up, the bound (:attr:`helpers.bench.stats.RetriesNeeded.advised`)."""
    return max(run.advised for run in retry_runs(protocol))


def retry_figures(protocol: str) -> str:
    """What the run measured, in the words the page, notebook 11 and the solutions share (a test holds them
    to it): :func:`helpers.bench.stats.retry_words`."""
    return stats.retry_words(retry_runs(protocol))


def retries(protocol: str) -> str:
    """The retry advice for ``protocol``, from notebook 11's committed full run: the figure to set
    (:func:`advised_retries`), what each writer count needed, and the rule above the counts measured."""
    runs = retry_runs(protocol)
    most = runs[-1]
    if all(r.needed is not None for r in runs):
        return f"keep the library's default retries ({retry_figures(protocol)}; {S11_3.link})"
    return (
        f"keep retries on, and set `CommitProperties(max_commit_retries={advised_retries(protocol)})`: in notebook "
        f"11's run ({most.appends} appends per writer, back to back), {retry_figures(protocol)} "
        "(`CommitFailedError`, loudly: rerun them, each with its idempotent-write id, which finds an append that "
        "landed all the same); every retry is a version another job's "
        "commit took, so (jobs at once − 1) × (appends each makes meanwhile) retries cannot run out: "
        f"{most.bound} for the {most.writers} writers measured, N − 1 for N jobs that each append once ({S11_3.link})"
    )
