"""What :mod:`helpers.catalog.cost` measured, as a record: each table's timed commits, each counted
commit's and read's requests by kind, and what the run was (machine, load, versions, date);
:class:`CommitCost` with its medians, p99s, tables, summary and problems. A committed run is this
record as data (:meth:`CommitCost.to_dict`, :meth:`CommitCost.from_dict`)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

CATALOG_MANAGED = "catalog-managed"
SAME_FEATURES = "same features, no catalog"
DEFAULTS = "Delta's defaults"

TABLE_GET = "GET of the table (loadTable, Delta's getCommits)"
REFRESH = "GET of the table before the commit (snapshot refresh)"
COMMIT = "POST of the table with add-commit (the commit)"
PUBLISH = "GET of the table after the commit (publication)"
TABLE_POST = "POST of the table without add-commit"
CREDENTIALS = "credentials"
OTHER = "anything else"
KINDS = (REFRESH, COMMIT, PUBLISH, TABLE_GET, TABLE_POST, CREDENTIALS, OTHER)
"""Every kind a request is counted as, in the order they are shown."""


def p99(values: Sequence[float]) -> float:
    """The 99th percentile, linear between the two nearest ranks (numpy's default): with 100
    commits, between the slowest and the one before it."""
    if len(values) < 2:
        return float(values[0])
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def mean_counts(windows: list[dict[str, int]]) -> dict[str, float]:
    """Kind -> requests per window on average, over ``windows``."""
    total = sum((Counter(window) for window in windows), Counter())
    return {kind: total[kind] / len(windows) for kind in KINDS if total[kind]}


@dataclass
class CommitCost:
    """What :func:`measure` found, with what it was measured on."""

    seconds: dict[str, list[float]]
    """Table kind -> each timed commit, in seconds, in the order made (after one untimed each)."""
    commit_requests: list[dict[str, int]]
    """Each counted commit to the catalog-managed table: its requests by kind
    (:func:`helpers.catalog.cost.commit_window`)."""
    commit_versions: list[int]
    """The table version each counted commit made."""
    read_requests: list[dict[str, int]]
    """Each read by name (a count) of the catalog-managed table: its requests by kind."""
    start_requests: dict[str, int]
    """The job's start, naming every table and one commit to each: its requests by kind."""
    reference_requests: int
    """Requests the catalog got while the other tables were committed to and read (counted phase)."""
    timed_phase_requests: int
    """Requests through the gate while commits were timed (0: the timed job asked the server itself)."""
    rows_read: dict[str, int]
    """Table kind -> rows the last read by name saw."""
    last_versions: dict[str, int]
    """Table kind -> its last published version at the end."""
    testing_flag: str | None
    """What the job's JVM had of Spark's testing flag (:func:`helpers.catalog.writer.testing_flag`)."""
    machine: dict
    """As the benchmark records it (``helpers.bench.run.machine``): cores, memory, system, Python."""
    load: list[float] = field(default_factory=list)
    """The machine's 1-minute load average as the job started and as it ended."""
    versions: dict[str, str] = field(default_factory=dict)
    """Delta Spark, Spark and the catalog server."""
    date: str = ""
    """When the job started (UTC, ISO 8601)."""

    def median(self, kind: str) -> float:
        return statistics.median(self.seconds[kind])

    def ratio(self, kind: str = CATALOG_MANAGED, to: str = SAME_FEATURES) -> float:
        """The median commit of ``kind`` over that of ``to``, both from this run."""
        return self.median(kind) / self.median(to)

    def table(self) -> list[dict]:
        """One row per table kind: commits timed, the median and the p99 commit, and the median
        over that of the same table without the catalog."""
        return [
            {
                "table": kind,
                "commits timed": len(values),
                "median (s)": round(self.median(kind), 3),
                "p99 (s)": round(p99(values), 3),
                "median / no catalog's": round(self.ratio(kind), 2),
            }
            for kind, values in self.seconds.items()
        ]

    def requests_table(self) -> list[dict]:
        """One row per kind of request: per commit on average, the fewest and the most in one
        commit, and per read by name on average."""
        commit, read = mean_counts(self.commit_requests), mean_counts(self.read_requests)
        return [
            {
                "request": kind,
                "per commit": round(commit.get(kind, 0.0), 2),
                "fewest, most in a commit": "{}, {}".format(
                    *(f([w.get(kind, 0) for w in self.commit_requests]) for f in (min, max))
                ),
                "per read": round(read.get(kind, 0.0), 2),
            }
            for kind in KINDS
            if kind in commit or kind in read
        ]

    def problems(self) -> list[str]:
        """What makes the figures unfit to read; empty when nothing does."""
        from helpers.catalog.writer import ROWS_PER_BATCH

        rows = {
            ROWS_PER_BATCH * (1 + len(self.commit_requests))
        }  # the first commit's and the counted
        posts = [w.get(COMMIT, 0) for w in self.commit_requests]
        timed = {kind: len(values) for kind, values in self.seconds.items()}
        found = [
            (set(posts) != {1}, f"commit POSTs per counted commit: {posts}"),
            (self.reference_requests, f"{self.reference_requests} requests for the other tables"),
            (self.timed_phase_requests, f"{self.timed_phase_requests} requests while timed"),
            (len(set(timed.values())) != 1, f"commits timed per table: {timed}"),
            (len(set(self.last_versions.values())) != 1, f"last versions: {self.last_versions}"),
            (set(self.rows_read.values()) != rows, f"rows read per table: {self.rows_read}"),
            (self.testing_flag is not None, f"the job's testing flag: {self.testing_flag}"),
        ]
        return [problem for wrong, problem in found if wrong]

    def summary(self) -> str:
        """The run in a few lines: where and on what, what was counted, what was timed."""
        commit, read = mean_counts(self.commit_requests), mean_counts(self.read_requests)
        totals = Counter(sum(window.values()) for window in self.commit_requests)
        timed = "; ".join(
            f"{row['table']} median {row['median (s)']:.3f} s, p99 {row['p99 (s)']:.3f} s"
            for row in self.table()
        )
        return "\n".join(
            [
                f"{self.date}, {self.machine.get('cpus')} cores, {self.machine.get('memory_gib')} "
                f"GiB, load {' to '.join(f'{v:.1f}' for v in self.load)}; "
                + ", ".join(f"{k} {v}" for k, v in self.versions.items())
                + f"; the job's testing flag: {self.testing_flag}",
                f"{len(self.commit_requests)} commits counted, {sum(commit.values()):.2f} requests "
                "each to the catalog ("
                + ", ".join(f"{r} requests in {n}" for r, n in sorted(totals.items()))
                + "): "
                + ", ".join(f"{kind} {count:.2f}" for kind, count in commit.items()),
                f"{len(self.read_requests)} reads by name counted, {sum(read.values()):.2f} "
                "requests each: "
                + ", ".join(f"{kind} {count:.2f}" for kind, count in read.items()),
                (
                    f"{len(next(iter(self.seconds.values())))} commits timed per table, in turn: "
                    f"{timed}; catalog-managed over no catalog, medians: {self.ratio():.2f}"
                ),
                "No problems."
                if not self.problems()
                else "Problems: " + "; ".join(self.problems()),
            ]
        )

    def to_dict(self) -> dict:
        """The record as JSON can hold it (:meth:`from_dict` reads it back)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict) -> CommitCost:
        return cls(**record)
