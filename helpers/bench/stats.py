"""The benchmark's arithmetic: percentiles, a run's figures, ratios to the serial limit, and
lost commits counted from storage. Plain Python on plain records, so each rule is unit-tested
on crafted inputs (``tests/test_bench_stats.py``).

A *commit record* is what a writer saw of one append: ``writer``, ``batch``, ``outcome``
(``committed`` / ``failed``), ``t_first_try``, ``t_done``. The *log* is what storage holds:
``{(writer, batch): [versions]}`` read from the table's commit files, and the attempts each
commit took, as the store recorded them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping, Sequence

from helpers.writers.protocol import COMMITTED


class BenchError(RuntimeError):
    """A benchmark run is unusable or broke a rule (e.g. a safe protocol lost a commit)."""


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between closest ranks (NumPy's
    default): p50 of [1, 2, 3, 4] is 2.5. Raises ValueError on no values or q outside 0-100."""
    if not 0 <= q <= 100:
        raise ValueError(f"q must be between 0 and 100, not {q!r}")
    ordered = sorted(float(v) for v in values)
    if not ordered:
        raise ValueError("percentile of no values")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


@dataclass(frozen=True)
class Losses:
    """Acknowledged commits checked against the log (storage)."""

    acknowledged: int
    """Commits a writer reported as committed."""
    found: int
    """Of those, how many the log holds (once or more)."""
    lost: int
    """Acknowledged, yet in no commit file of the table."""
    duplicated: int
    """Acknowledged and in more than one commit file (a retry that committed twice)."""
    unacknowledged_in_log: int
    """Reported as failed, yet the log holds it (the library gave up after its commit landed)."""
    lost_keys: tuple = ()
    in_log_without_record: tuple = ()
    """(writer, batch) tags of commits in the log that no writer sent a record of: uncounted."""
    planned_without_record: tuple = ()
    """(writer, batch) appends the run planned that no writer sent a record of: uncounted."""


def count_losses(
    commits: Iterable[Mapping],
    log: Mapping[tuple[str, int], Sequence[int]],
    planned: Iterable[tuple[str, int]] = (),
) -> Losses:
    """Check every commit record against ``log`` ({(writer, batch): [versions holding it]}), and
    the records against the log and the ``planned`` (writer, batch) appends: a commit or a planned
    append with no record would escape the count (:attr:`Losses.in_log_without_record`,
    :attr:`Losses.planned_without_record`)."""
    acknowledged = found = duplicated = unacknowledged = 0
    lost = []
    commits = list(commits)
    recorded = {(str(r["writer"]), int(r["batch"])) for r in commits}
    for record in commits:
        key = (str(record["writer"]), int(record["batch"]))
        versions = log.get(key, ())
        if record["outcome"] == COMMITTED:
            acknowledged += 1
            if versions:
                found += 1
                duplicated += len(versions) > 1
            else:
                lost.append(key)
        elif versions:
            unacknowledged += 1
    return Losses(
        acknowledged,
        found,
        len(lost),
        duplicated,
        unacknowledged,
        tuple(sorted(lost)),
        tuple(sorted(set(log) - recorded)),
        tuple(sorted(set(planned) - recorded)),
    )


@dataclass(frozen=True)
class RunFigures:
    """One run (a protocol, N writers, M appends each), in the tidy results' columns."""

    commits: int
    committed: int
    failed: int
    lost: int
    duplicated: int
    window_s: float
    commits_per_s: float
    latency_mean_s: float
    latency_p50_s: float
    latency_p95_s: float
    latency_p99_s: float
    attempts_mean: float
    attempts_max: int
    setup_s_mean: float

    def as_dict(self) -> dict:
        return asdict(self)


def run_figures(
    commits: Sequence[Mapping], losses: Losses, *, t_go: float, setup_s: Sequence[float]
) -> RunFigures:
    """A run's figures. The window runs from the barrier's opening (``t_go``) to the last commit's
    end, so setup (process start, imports, data) stays out; throughput counts commits the log
    holds (acknowledged and found), so a lost commit never counts as work done. Latency is from a
    commit's first try to its success, over committed records; attempts come from each record's
    ``attempts`` (what storage recorded), over committed records that have one."""
    if not commits:
        raise BenchError(
            "A run without commit records has no figures; did every writer fail before the barrier?"
        )
    done = [r for r in commits if r["outcome"] == COMMITTED]
    window = max(r["t_done"] for r in commits) - t_go
    if window <= 0:
        raise BenchError(
            f"The run's window is {window:.3f} s: the records end before the barrier opened."
        )
    latencies = [r["t_done"] - r["t_first_try"] for r in done]
    attempts = [int(r["attempts"]) for r in done if r.get("attempts") is not None]

    def pct(q: float) -> float:
        return percentile(latencies, q) if latencies else math.nan

    return RunFigures(
        commits=len(commits),
        committed=len(done),
        failed=len(commits) - len(done),
        lost=losses.lost,
        duplicated=losses.duplicated,
        window_s=window,
        commits_per_s=losses.found / window,
        latency_mean_s=sum(latencies) / len(latencies) if latencies else math.nan,
        latency_p50_s=pct(50),
        latency_p95_s=pct(95),
        latency_p99_s=pct(99),
        attempts_mean=sum(attempts) / len(attempts) if attempts else math.nan,
        attempts_max=max(attempts) if attempts else 0,
        setup_s_mean=sum(setup_s) / len(setup_s) if setup_s else math.nan,
    )


def ratios_to_serial(
    rows: Sequence[Mapping], *, value: str = "commits_per_s", serial_writers: int = 1
) -> list[float]:
    """For each row (a dict with ``protocol``, ``writers`` and ``value``), its value divided by
    the same protocol's value at ``serial_writers`` (the serial limit measured in the same run).
    Raises BenchError if a protocol has no serial row or a serial value of 0."""
    serial = {r["protocol"]: r[value] for r in rows if r["writers"] == serial_writers}
    out = []
    for row in rows:
        base = serial.get(row["protocol"])
        if base is None:
            raise BenchError(
                f"{row['protocol']} has no run with {serial_writers} writer: the serial limit must be measured in the same run."
            )
        if not base > 0:
            raise BenchError(f"{row['protocol']}'s serial limit is {base!r}: nothing to divide by.")
        out.append(row[value] / base)
    return out


def check_safe(protocol: str, losses: Losses, safe: bool) -> None:
    """A run whose records do not cover its log and its plan fails, whatever the protocol (what
    was not recorded cannot be counted); a safe protocol that lost or duplicated an acknowledged
    commit fails too. BenchError names them."""
    if losses.in_log_without_record or losses.planned_without_record:
        raise BenchError(
            f"{protocol}: the writers' records do not cover the run: {len(losses.in_log_without_record)} commit(s) in the log "
            f"without a record (e.g. {list(losses.in_log_without_record)[:5]}), {len(losses.planned_without_record)} planned "
            f"append(s) without a record (e.g. {list(losses.planned_without_record)[:5]})."
        )
    if safe and (losses.lost or losses.duplicated):
        raise BenchError(
            f"{protocol} is a safe protocol, yet storage holds {losses.found} of {losses.acknowledged} acknowledged commits "
            f"({losses.lost} lost: {list(losses.lost_keys)[:5]}; {losses.duplicated} in more than one commit file)."
        )


def outside_requests_per_commit(
    latencies: Sequence[float], request_seconds: float, committed: int
) -> float:
    """Seconds per committed commit that the writers spent outside requests (their CPU, backoff,
    waiting for a core): every commit's latency, failed ones included (their requests are in
    ``request_seconds`` too), minus the requests' seconds, over the commits that landed."""
    if committed < 1:
        return math.nan
    return (sum(latencies) - request_seconds) / committed


def contended_verdicts(
    runs: Sequence[Mapping], parts: Mapping[str, str], *, writers: int = 8, target: float = 0.5
) -> list[dict]:
    """For each protocol (rows of ``runs.csv`` as dicts): its run at ``writers`` (or its largest
    count below that) against its serial limit: the ratio, whether it reaches ``target``, and
    which part of a commit's time (``parts``: name -> column of seconds per commit) grew most."""
    by_protocol: dict[str, dict[int, Mapping]] = {}
    for row in runs:
        by_protocol.setdefault(row["protocol"], {})[int(row["writers"])] = row
    verdicts = []
    for name, at in by_protocol.items():
        if 1 not in at:
            raise BenchError(
                f"{name} has no run with 1 writer: the serial limit must be measured in the same run."
            )
        n = writers if writers in at else max(k for k in at if k <= writers)
        row, serial = at[n], at[1]
        growth = {part: row[col] - serial[col] for part, col in parts.items()}
        grew = max(growth, key=growth.get)
        verdicts.append(
            {
                "protocol": name,
                "writers": n,
                "commits_per_s": row["commits_per_s"],
                "serial_commits_per_s": serial["commits_per_s"],
                "ratio": row["commits_per_s"] / serial["commits_per_s"],
                "meets": row["commits_per_s"] >= target * serial["commits_per_s"],
                "attempts_mean": row["attempts_mean"],
                "attempts_max": row["attempts_max"],
                "latency_p95_s": row["latency_p95_s"],
                "grew_most": grew,
                "grew_by_s": growth[grew],
                "alone_s": serial[parts[grew]],
            }
        )
    return verdicts


def check_runs(check, runs, appends: int) -> None:
    """Record in ``check`` (a :class:`helpers.ground.checks.Checklist`) what every run of a benchmark must
    show, from its ``runs`` table (one row per protocol and writer count): every planned append
    recorded, none lost or doubled, versions = commits that landed, and, where the store was
    metered, every claim attributed, one accepted claim per commit, and no retry by a single
    writer. Notebook 11 and ``python -m helpers.bench`` (``make bench``) both judge a run by it."""
    for row in runs.to_dict("records"):
        name = f"{row['protocol']} N={row['writers']}"
        check.equal(f"{name}: commits recorded", int(row["commits"]), int(row["writers"]) * appends)
        check.equal(
            f"{name}: acknowledged commits lost (from the commit files)", int(row["lost"]), 0
        )
        check.equal(
            f"{name}: acknowledged commits in more than one commit file", int(row["duplicated"]), 0
        )
        check.equal(
            f"{name}: versions in the log = commits that landed",
            int(row["versions"]),
            int(row["committed"]) + int(row["unacknowledged_in_log"]),
        )
        if not row.get("metered"):
            continue
        check.equal(
            f"{name}: claims the meter could not attribute", int(row["unattributed_claims"]), 0
        )
        check.equal(f"{name}: accepted claims per commit", float(row["n_claim_accepted"]), 1.0)
        check.holds(
            f"{name}: every commit took at least one attempt",
            bool(row["attempts_mean"] >= 1),
            expected=">= 1",
            found=row["attempts_mean"],
        )
        if int(row["writers"]) == 1:
            check.equal(
                f"{row['protocol']}: a single writer never retries",
                float(row["attempts_mean"]),
                1.0,
            )


@dataclass(frozen=True)
class RetriesNeeded:
    """One run (a protocol at a writer count) read for the ``max_commit_retries`` a job should set.

    A retry happens only when the version a commit tried was taken, and the next attempt tries a
    later version, so every retry of a commit is a version another writer's commit took: a commit
    never needs more retries than the commits the other writers make meanwhile, at most
    :attr:`bound`. What the run measured is the retries of the commits that landed (each one's
    attempts less one); a commit that gave up needed more than the run allowed, how many more it
    cannot say."""

    protocol: str
    writers: int
    appends: int
    """Appends per writer, back to back."""
    commits: int
    gave_up: int
    """Commits that failed after the library's retries (``CommitFailedError``)."""
    most: int
    """The most retries a commit that landed took."""
    allowed: int | None
    """The retries the run allowed (a commit that gave up took that many), None if none gave up."""

    @property
    def needed(self) -> int | None:
        """The smallest ``max_commit_retries`` at which no append of this run gave up: the most any
        commit took, when none gave up; None when some did (the run cannot say)."""
        return None if self.gave_up else self.most

    @property
    def bound(self) -> int:
        """Retries that cannot run out: every other writer's appends, ``(writers - 1) x appends``."""
        return (self.writers - 1) * self.appends

    @property
    def advised(self) -> int:
        """What to set for this many writers: the measured need where the run shows it, else the bound."""
        return self.bound if self.needed is None else self.needed


def retries_needed(commits: Iterable[Mapping]) -> list[RetriesNeeded]:
    """One :class:`RetriesNeeded` per (protocol, writers) of a benchmark's commit records (each with
    ``protocol``, ``writers``, ``writer``, ``outcome`` and ``attempts`` counted at the store's door),
    sorted by protocol and writers."""
    runs: dict[tuple[str, int], list[Mapping]] = {}
    for record in commits:
        runs.setdefault((str(record["protocol"]), int(record["writers"])), []).append(record)
    found = []
    for (protocol, writers), records in sorted(runs.items()):
        landed = [int(r["attempts"]) - 1 for r in records if r["outcome"] == COMMITTED]
        failed = [int(r["attempts"]) - 1 for r in records if r["outcome"] != COMMITTED]
        found.append(
            RetriesNeeded(
                protocol,
                writers,
                len(records) // len({r["writer"] for r in records}),
                len(records),
                len(failed),
                max(landed, default=0),
                max(failed) if failed else None,
            )
        )
    return found


def _and(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else "".join(items)


def retry_words(runs: Sequence[RetriesNeeded]) -> str:
    """One protocol's runs in words: the most retries an append needed at each writer count where none
    gave up, and how many gave up where some did."""
    enough = [r for r in runs if r.needed is not None]
    short = [r for r in runs if r.needed is None]
    text = "the most retries an append needed was " + _and(
        [f"{r.needed} with {r.writers} writer{'s' * (r.writers > 1)}" for r in enough]
    )
    if short:
        first, *rest = short
        gave_up = [f"{first.gave_up} of {first.commits} appends by {first.writers} writers"]
        gave_up += [f"{r.gave_up} of {r.commits} by {r.writers}" for r in rest]
        text += f"; {_and(gave_up)} gave up after {first.allowed}"
    return text
