"""What notebook 14 runs: the committer surviving its faults, the counter-example, and a throughput run.

* :func:`survive_faults`: producers and the committer run; one producer is SIGKILLed after a data
  file and before its marker, the committer is SIGKILLed after the store accepted its first commit
  and before it heard; both start again, the restarted committer's next commit answer is lost;
  then clean-up, and the verdict from storage.
* :func:`counter_example`: the same producers, a committer without the transaction id and the
  check, one lost answer: the batch is committed twice, and the verdict says so.
* :func:`throughput`: N producers through one committer, no faults: rows/s and commits/s.
* :func:`at_the_limit`: the files staged first, then the committer alone, back to back, in turns with
  one writer appending alone: each one's commits/s, in the same minutes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from helpers.ground import config
from helpers.producers import check, faults
from helpers.producers.run import RUN_TIMEOUT_S, Phase, ProducersError, Table


@dataclass
class Survival:
    """What happened in :func:`survive_faults`, as the processes and gates saw it."""

    files: dict[int, int]
    killed_producer_exit: int | None
    killed_committer_exit: int | None
    killed_at: dict | None
    """The kill gate's record: the point, the request (``_delta_log/N.json``) the store had accepted."""
    restarted_after_batch: int
    """The last batch the restarted committer found in the table (the one its killed run committed)."""
    lost_answers: list[str]
    commits: list[dict] = field(default_factory=list)
    """The restarted committer's records (batch, files, rows, outcome, attempts, errors)."""
    before_cleanup: check.Verdict | None = None
    cleaned: dict[str, int] = field(default_factory=dict)
    after_cleanup: check.Verdict | None = None


def _one_result(phase: Phase, name: str) -> dict:
    proc = next(p for p in phase.procs if p.name == name)
    result = proc.result()
    if result is None or result["error"]:
        raise ProducersError(
            f"{name} failed: {result['error'] if result else 'no result'} (see {config.shown(phase.dir)})"
        )
    return result


def survive_faults(table: Table, *, producers: int = 3, files: int = 4) -> Survival:
    """The committer killed mid-commit and restarted, a producer killed mid-file and restarted, a lost answer."""
    if producers < 1 or files < 2:
        raise ProducersError(
            "survive_faults needs at least 1 producer with 2 files (producer 1 dies after its 2nd)."
        )
    counts = {p: files for p in range(1, producers + 1)}
    with table.gate(faults.KillGate) as kill_gate, table.gate(faults.LostAnswerGate) as lost_gate:
        kill_gate.arm("claimed")
        first = Phase(table, "phase-1")
        for p in counts:
            first.producer(p, files, die_after_data=2 if p == 1 else None)
        killed_committer = first.committer(table.route(kill_gate))
        first.start(kill_gate)
        first.finish()
        problems = first.failed(expected_kills=("p1", "committer"))
        if problems:
            raise ProducersError("; ".join(problems))
        lost_gate.drop_next(1)
        second = Phase(table, "phase-2")
        second.producer(1, files, resume=True)
        second.committer(table.route(lost_gate))
        second.start()
        second.finish()
        restarted = _one_result(second, "committer")
        killed_producer = next(p for p in first.procs if p.name == "p1")
        found = Survival(
            files=counts,
            killed_producer_exit=killed_producer.exit_code,
            killed_committer_exit=killed_committer.exit_code,
            killed_at=kill_gate.killed,
            restarted_after_batch=restarted["started_after_batch"],
            lost_answers=list(lost_gate.dropped),
            commits=restarted["commits"],
        )
    _one_result(second, "p1")
    found.before_cleanup = table.verdict(counts)
    found.cleaned = table.clean_up(orphans_older_than_s=0.0)
    found.after_cleanup = table.verdict(counts)
    return found


def counter_example(table: Table, *, producers: int = 2, files: int = 2) -> check.Verdict:
    """A committer without the transaction id and the check, one lost answer: the verdict of its table."""
    counts = {p: files for p in range(1, producers + 1)}
    with table.gate(faults.LostAnswerGate) as lost_gate:
        lost_gate.drop_next(1)
        phase = Phase(table, "blind")
        for p in counts:
            phase.producer(p, files)
        phase.committer(table.route(lost_gate), idempotent=False)
        phase.start()
        phase.finish()
        if not lost_gate.dropped:
            raise ProducersError("The lost answer never happened: no commit claim passed the gate.")
    problems = phase.failed()
    if problems:
        raise ProducersError("; ".join(problems))
    table.clean_up(orphans_older_than_s=0.0)
    return table.verdict(counts)


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) CPU time of the whole machine so far, from ``/proc/stat`` ((0, 0) where there is none)."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except OSError:
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and iowait
    return sum(fields) - idle, sum(fields)


def _percentile(values: list[float], q: float) -> float:
    from helpers.bench.stats import percentile

    return percentile(values, q) if values else float("nan")


def _busy_commits_per_s(commits: list[dict]) -> float:
    """Commits/s from the committer's first commit to its last (from its first commit on, it
    always had files waiting); NaN with fewer than two commits apart in time."""
    done = sorted(c["t_done"] for c in commits)
    return (
        (len(done) - 1) / (done[-1] - done[0])
        if len(done) > 1 and done[-1] > done[0]
        else float("nan")
    )


def _marker_waits(phase: Phase, commits: list[dict]) -> list[float]:
    """For each file a commit took: from its producer's handing it over (the marker) to the end of
    that commit."""
    handed = {
        (int(p.name[1:]), f["seq"]): f["t_done"]
        for p in phase.procs
        if p.name != "committer"
        for f in p.result()["files"]
    }
    return [
        c["t_done"] - handed[(p, seq)]
        for c in commits
        for p, seq in c["staged"]
        if (p, seq) in handed
    ]


def _machine_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the whole machine's CPU time busy between two :func:`_cpu_jiffies`."""
    return (after[0] - before[0]) / (after[1] - before[1]) if after[1] > before[1] else float("nan")


def throughput(
    table: Table,
    *,
    producers: int,
    files: int,
    committer_options: dict[str, str] | None = None,
    max_files: int = 1000,
) -> dict:
    """N producers, ``files`` each, through one committer; the run's figures (the window runs from
    the barrier to the committer's last commit; ``busy_commits_per_s`` from its first commit to its
    last, when it commits back to back), the latency from each file's marker to the end of its
    commit, the CPU the producers, the committer and the whole machine used over the window, and
    whether storage holds every row exactly once."""
    import os

    counts = {p: files for p in range(1, producers + 1)}
    phase = Phase(table, f"n{producers}")
    for p in counts:
        phase.producer(p, files)
    phase.committer(committer_options, max_files=max_files)
    busy_before = _cpu_jiffies()
    t_go = phase.start()
    phase.finish()
    busy_after = _cpu_jiffies()
    problems = phase.failed()
    if problems:
        raise ProducersError("; ".join(problems))
    result = _one_result(phase, "committer")
    commits = [c for c in result["commits"] if c["outcome"] == "committed"]
    window = max(c["t_done"] for c in commits) - t_go
    latencies = sorted(c["t_done"] - c["t_start"] for c in commits)
    busy = _busy_commits_per_s(commits)
    waited = _marker_waits(phase, commits)
    cores = os.cpu_count() or 1
    producer_cpu = sum(p.result().get("cpu_s", 0.0) for p in phase.procs if p.name != "committer")
    machine = _machine_share(busy_before, busy_after)
    verdict = table.verdict(counts)
    rows = sum(c["rows"] for c in commits)
    return {
        "backend": table.backend,
        "producers": producers,
        "files_per_producer": files,
        "rows_per_file": table.rows,
        "commits": len(commits),
        "rows": rows,
        "window_s": window,
        "commits_per_s": len(commits) / window,
        "busy_commits_per_s": busy,
        "rows_per_s": rows / window,
        "files_per_commit_mean": rows / table.rows / len(commits),
        "commit_latency_p50_s": latencies[len(latencies) // 2],
        "marker_to_commit_p50_s": _percentile(waited, 50),
        "marker_to_commit_p99_s": _percentile(waited, 99),
        "producers_cpu_share": producer_cpu / (window * cores),
        "committer_cpu_share": result.get("cpu_s", 0.0) / (window * cores),
        "machine_cpu_share": machine,
        "markers_listed": result.get("markers_listed"),
        "listings": result.get("listings"),
        "exactly_once": verdict.exactly_once,
        "attempts_max": max(c["attempts"] for c in commits),
    }


LIMIT_ROUNDS = 10
"""The turns :func:`at_the_limit` takes by default (a block of the committer's and one of plain appends each)."""
LIMIT_BLOCK = 30
"""Commits of each kind per block in the full run: 300 of each in all, so that the table's first
checkpoints (one each 100 commits) fall inside the measurement. With 4 blocks of 7 (the files 8
producers x 40 held), a block lasted about 50 ms on local disk and the ratio moved from 0.87 to
1.04 between runs of the same code; 100 commits read 0.795 to 0.897 on local disk in the runs of
2026-12-06."""


def limit_files_per_producer(
    producers: int, max_files: int, rounds: int = LIMIT_ROUNDS, block: int = LIMIT_BLOCK
) -> int:
    """The files each of ``producers`` stages for :func:`at_the_limit` to measure ``rounds``
    blocks of ``block`` commits of ``max_files`` files, after one warm-up commit."""
    return -(-(1 + rounds * block) * max_files // producers)


def limit_files_needed(max_files: int, rounds: int = LIMIT_ROUNDS) -> int:
    """The staged files :func:`at_the_limit` needs at least: one warm-up commit and ``rounds``
    blocks of at least one commit, each commit of ``max_files`` files."""
    return (1 + rounds) * max_files


def limit_block(staged: int, max_files: int, rounds: int = LIMIT_ROUNDS) -> int:
    """The committer's commits per block in :func:`at_the_limit` with ``staged`` files: as many
    whole commits of ``max_files`` as the files allow after one warm-up, shared out over
    ``rounds`` blocks. Raises ProducersError when the files cannot fill one commit per block
    (the committer would wait for files nobody stages)."""
    needed = limit_files_needed(max_files, rounds)
    if staged < needed:
        raise ProducersError(
            f"The committer at the limit needs at least {needed} staged files (a warm-up commit "
            f"and {rounds} blocks, {max_files} files each), not {staged}: stage more files."
        )
    return (staged // max_files - 1) // rounds


def at_the_limit(
    table: Table,
    appended: Table,
    *,
    producers: int,
    files: int,
    max_files: int,
    rounds: int = LIMIT_ROUNDS,
    committer: dict | None = None,
    deltalake_from: str | None = None,
) -> dict:
    """The files staged first (``producers`` producers, ``files`` each, none running after), then,
    in one process, the committer alone (``max_files`` files per commit, back to back) and one
    writer appending alone to ``appended`` (a table of its own on the same store), in ``rounds`` turns of equal
    blocks (:func:`helpers.producers.commit_steps.alternate`): each one's commits/s over its own blocks,
    their ratio, and whether storage holds every row exactly once. Fewer than
    :func:`limit_files_needed` files are refused (ProducersError) before anything starts.
    ``committer``: the committer's ``refresh`` and ``checkpoint_every``
    (:class:`helpers.producers.committer.Committer`); ``deltalake_from``: a folder whose
    ``deltalake`` that process imports instead of the environment's (a build of the fix). Each
    commit's refresh and checkpoint are timed; the row gives their median and p99 in ms."""
    block = limit_block(producers * files, max_files, rounds)  # before anything is staged
    counts = {p: files for p in range(1, producers + 1)}
    staging = Phase(table, "staged")
    for p in counts:
        staging.producer(p, files)
    staging.start()
    staging.finish()
    problems = staging.failed()
    if problems:
        raise ProducersError("; ".join(problems))
    found = _alternate_in_a_process(
        table, appended, max_files, rounds, block, committer or {}, deltalake_from
    )
    from helpers.producers.commit_steps import rates

    rate = rates(found["blocks"])
    verdict = table.verdict(counts)
    return {
        "backend": table.backend,
        "producers": producers,
        "files_per_producer": files,
        "max_files": max_files,
        "rounds": rounds,
        "commits": sum(len(b["t_done"]) for b in found["blocks"] if b["kind"] == "committer"),
        "rows": sum(len(b["t_done"]) for b in found["blocks"] if b["kind"] == "committer")
        * max_files
        * table.rows,
        "busy_commits_per_s": rate["committer"],
        "serial_commits_per_s": rate["plain append"],
        "ratio_to_serial": rate["committer"] / rate["plain append"],
        "exactly_once": verdict.exactly_once,
        "deltalake": found["deltalake"],
        "errors": len(found["errors"]),
        "first_error": found["errors"][0] if found["errors"] else "",
        **_step_figures(found["steps"]),
    }


def _alternate_in_a_process(
    table: Table,
    appended: Table,
    max_files: int,
    rounds: int,
    block: int,
    committer: dict,
    deltalake_from: str | None,
) -> dict:
    """:func:`helpers.producers.commit_steps.alternate` in a process of its own (with the
    ``deltalake`` of ``deltalake_from`` first on its path, when given); returns what it found."""
    import json
    import os
    import subprocess
    import sys

    spec_path, result_path = table.run_dir / "limit.json", table.run_dir / "limit.result.json"
    spec_path.write_text(
        json.dumps(
            {
                "mode": "limit",
                "uri": table.uri,
                "options": table.options,
                "append_uri": appended.uri,
                "append_options": appended.options,
                "files": max_files,
                "rows": table.rows,
                "rounds": rounds,
                "block": block,
                "run_dir": str(table.run_dir),
                "result_path": str(result_path),
                **committer,
            },
            indent=1,
        )
    )
    env = None
    if deltalake_from:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([deltalake_from, str(config.ROOT)])}
    subprocess.run(
        [sys.executable, "-m", "helpers.producers.commit_steps", str(spec_path)],
        check=True,
        timeout=RUN_TIMEOUT_S,
        env=env,
    )
    found = json.loads(result_path.read_text())
    return found


def _step_figures(steps: dict[str, list[float]]) -> dict:
    """The committer's refresh (median and p99, ms; over its commits after the warm-up) and its
    checkpoints (how many, median ms)."""
    import statistics

    def p99(values: list[float]) -> float:
        return sorted(values)[min(len(values) - 1, int(0.99 * len(values)))]

    refresh, checkpoint = steps.get("refresh", []), steps.get("checkpoint", [])
    nan = float("nan")
    return {
        "refreshes": len(refresh),
        "refresh_p50_ms": statistics.median(refresh) * 1000 if refresh else nan,
        "refresh_p99_ms": p99(refresh) * 1000 if refresh else nan,
        "checkpoints": len(checkpoint),
        "checkpoint_p50_ms": statistics.median(checkpoint) * 1000 if checkpoint else nan,
    }
