"""Where a committer's commit goes, step by step, beside one plain append's; and a commit's cost
against the queue's length. :func:`run_profile` stages the tables and starts one process of its own
(:mod:`helpers.producers.commit_steps`) that sends the requests, one at a time; on Azure and S3
each passes the benchmark's request meter (:class:`helpers.bench.meter.RequestMeter`), held here,
which counts the requests that started within each step.

* steps: ``commits`` commits of ``files`` staged files each, by the committer as it is, by the
  committer as it was, and ``commits`` plain appends: seconds and requests per commit, for each step.
* queue length: the same committer commits with 100, 1,000 and 10,000 markers waiting: seconds,
  requests and markers listed per commit, as it is and as it was; and plain appends to the same
  table beside the same markers, so that what the store's own requests cost with that many objects
  in it (Azurite's grows) is told apart from what the queue costs the committer.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from helpers.producers.run import RUN_TIMEOUT_S, Table

VARIANTS = {
    "committer": "the committer (a bounded listing, markers taken off)",
    "committer, before": "the committer as it was (the whole queue listed each commit)",
    "plain append": "one writer appending alone (update_incremental, write_deltalake)",
}
PROFILE_COMMITS = 100
"""Commits of each variant in the step profile: a whole checkpoint interval (deltalake writes a
checkpoint each 100 commits), since a commit's cost grows with the commits since the last one."""
SINCE_CHECKPOINT = (slice(0, 20), slice(79, 99))
"""The profile's first 20 commits and its commits 80 to 99: the fewest and the most commits since
the table was created, with no checkpoint yet (the first is written at version 99)."""
QUEUE_LENGTHS = (100, 1000, 10000)
QUEUE_COMMITS = 10
"""Commits of each variant at each queue length (5 left a median at the mercy of one slow request)."""


def _summary(store: str, records: list[dict], meter) -> list[dict]:
    """Median seconds and requests per commit of each step, and of the whole commit, per (variant,
    waiting); and the median seconds over the first and the last 20 commits before the first
    checkpoint (:data:`SINCE_CHECKPOINT`), where a run has them."""

    def requests(window) -> int:
        return (
            sum(1 for r in meter.requests if window[0] <= r.t_start <= window[0] + window[1])
            if meter is not None
            else 0
        )

    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["variant"], r["waiting"]), []).append(r)
    rows = []
    for (variant, waiting), found in groups.items():
        found = sorted(found, key=lambda r: r["batch"])
        early, late = SINCE_CHECKPOINT
        names = list(found[0]["steps"])
        for step in (*names, "whole commit"):
            chosen = names if step == "whole commit" else [step]
            seconds = [sum(r["steps"][s][1] for s in chosen) for r in found]
            counts = [sum(requests(r["steps"][s]) for s in chosen) for r in found]
            rows.append(
                {
                    "backend": store,
                    "variant": variant,
                    "waiting": waiting,
                    "step": step,
                    "commits": len(found),
                    "seconds_median": statistics.median(seconds),
                    "seconds_mean": statistics.fmean(seconds),
                    "requests_median": statistics.median(counts),
                    "requests_max": max(counts),
                    "markers_listed_median": statistics.median(r["markers_listed"] for r in found),
                    "seconds_median_early": statistics.median(seconds[early])
                    if len(seconds) >= early.stop
                    else float("nan"),
                    "seconds_median_late": statistics.median(seconds[late])
                    if len(seconds) >= late.stop
                    else float("nan"),
                }
            )
    return rows


def _fresh(backend: str, name: str, meter) -> tuple[Table, dict]:
    table = Table.fresh(backend, name)
    return table, {
        "uri": table.uri,
        "options": table.options,
        "routed": table.route(meter) if meter is not None else table.options,
    }


def _remove(table: Table, tries: int = 3) -> None:
    """Remove a measurement's table, trying again after a failure: moto answers a ``ListObjectVersions``
    page after the first (10,000 markers and their deletions are several pages) with a 500 now and then."""
    for attempt in range(1, tries + 1):
        try:
            table.remove()
            return
        except Exception as error:  # noqa: BLE001  (the last failure is said, not raised: the figures stand)
            if attempt == tries:
                print(
                    f"profile: could not remove {table.uri} after {tries} tries: {type(error).__name__}: {error}",
                    file=sys.stderr,
                )
            time.sleep(2.0)


def run_profile(
    store: str,
    backend: str,
    name: str,
    meter,
    *,
    commits: int = PROFILE_COMMITS,
    files: int = 10,
    lengths=QUEUE_LENGTHS,
    queue_commits: int = QUEUE_COMMITS,
) -> tuple[list[dict], list[dict]]:
    """On one store: each step of a commit (the committer as it is, as it was, a plain append), and
    a commit's cost with each of ``lengths`` markers waiting. Returns (steps rows, queue rows)."""
    tables, runs = [], []
    for variant in VARIANTS:
        table, where = _fresh(
            backend, f"{name}/{variant.replace(', ', '-').replace(' ', '-')}", meter
        )
        tables.append(table)
        runs.append(
            {
                **where,
                "variants": [[variant, 1]],
                "stage": 0 if variant == "plain append" else commits * files,
                "waiting": 0,
                "commits": commits,
                "files": files,
            }
        )
    for waiting in (
        lengths or ()
    ):  # the committer as it is takes the first files; then plain appends to the same table, beside
        # the same markers (what the store's own requests cost with that many objects); as it was, the next files
        table, where = _fresh(backend, f"{name}/queue-{waiting}", meter)
        tables.append(table)
        runs.append(
            {
                **where,
                "variants": [
                    ["committer", 1],
                    ["plain append", 0],
                    ["committer, before", queue_commits + 1],
                ],
                "stage": 2 * queue_commits * files,
                "waiting": waiting,
                "commits": queue_commits,
                "files": files,
            }
        )
    run_dir = tables[0].run_dir
    spec_path, result_path = run_dir / "profile.json", run_dir / "profile.result.json"
    spec_path.write_text(
        json.dumps(
            {
                "backend": backend,
                "rows": tables[0].rows,
                "run_dir": str(run_dir),
                "runs": runs,
                "result_path": str(result_path),
            },
            indent=1,
        )
    )
    if meter is not None:
        meter.reset()
    subprocess.run(
        [sys.executable, "-m", "helpers.producers.commit_steps", str(spec_path)],
        check=True,
        timeout=RUN_TIMEOUT_S,
    )
    records = json.loads(result_path.read_text())["records"]
    rows = _summary(store, records, meter)
    for table in tables:
        _remove(table)
    profile_rows = [r for r in rows if r["waiting"] == 0]
    queue_rows = [r for r in rows if r["waiting"] > 0]
    return profile_rows, queue_rows
