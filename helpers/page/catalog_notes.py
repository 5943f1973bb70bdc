"""The answer page's sentences from the catalog's committed long run (``data/catalog_run.json``,
:mod:`helpers.catalog.long_run`): the catalog down for minutes, the Kernel race repeated, what a
commit costs in requests, and what Delta 4.4.0 does to keep such a table in check. Each sentence is
made from the run's figures, so that a new committed run rewrites it."""

from __future__ import annotations

from functools import cache

from helpers.catalog import long_run
from helpers.catalog.cost_record import CommitCost
from helpers.catalog.outage_record import Outage


@cache
def _run() -> dict:
    return long_run.committed()


def outage() -> str:
    """What two writers and a reader met while the catalog was down, both ways it can be down."""
    parts = {
        how: Outage(**_run()[part]["record"])
        for how, part in (("503", "outage"), ("refused", "outage-refused"))
    }
    shown = parts["503"]
    landed = [shown.recovery(w)["landed"] for w in sorted(shown.appends)]
    lost = [p for o in parts.values() for p in o.problems]
    return (
        f"the catalog down {shown.outage_s:.0f} s while 2 writers and a reader ran (15 appendix B, the committed "
        "run; a load balancer's 503, then connections refused): the writers caught committing were told nothing "
        "until it was back, Delta sending each add-commit again on its back-off, and both commits landed "
        f"{min(landed) - shown.down_s:.0f}-{max(landed) - shown.down_s:.0f} s after it; "
        "every read made while it was down failed after a few seconds; "
        + (
            "every batch once, nothing committed twice"
            if not lost
            else f"problems: {'; '.join(lost)}"
        )
        + ". By Delta's source a commit keeps trying for about 458 s (16 attempts), then starts over with a new "
        "staged file up to 10 times"
    )


def kernel() -> str:
    """The Kernel race repeated: runs, commits per engine, Kernel's retries."""
    races = _run()["kernel"]["record"]
    counts = races["retry_counts"]
    return (
        f"the committed run repeats the race {len(races['runs'])} times (1 Kernel writer, 2 Delta Spark jobs): "
        + ", ".join(f"{engine} {n} commits" for engine, n in sorted(races["commits"].items()))
        + f", Kernel retried {sum(counts.values())} times ({counts['kernel']} by itself, {counts['appender']} "
        "through its writer's loop), "
        + ("no run with a problem" if races["passed"] else "runs with problems")
    )


def upkeep() -> str:
    """What keeps a catalog-managed table in check at Delta Spark 4.4.0, as the run measured it."""
    kept = _run()["upkeep"]["record"]
    compactions = sum(len(a["compactions"]) for a in kept["auto_compaction"].values())
    replaced = sum(a["files"]["replaced"] for a in kept["auto_compaction"].values())
    deleted = kept["cleanup"]["deleted"]
    return (
        "Nothing here compacts or cleans the table for you: this server runs no maintenance (Unity Catalog's "
        "spec only says a catalog may). Delta 4.4.0 itself, in a driver without Spark's testing flag (15 §8, the "
        f"committed run): auto compaction runs ({compactions} compactions committed through the catalog), metadata "
        f"cleanup deletes expired log files ({len(deleted['commits'])} commits and {len(deleted['staged commits'])} "
        f"staged commits), and the {replaced} data files compaction replaced stay on storage, since VACUUM is refused"
    )


def cost() -> str:
    """Requests per commit and per read, and the catalog's part of a commit's latency."""
    spent = CommitCost.from_dict(_run()["cost"]["record"])
    per_commit = sorted({sum(c.values()) for c in spent.commit_requests})
    per_read = sorted({sum(r.values()) for r in spent.read_requests})
    return (
        f"each commit sends the catalog {per_commit[0]} requests ({per_commit[-1]} with a checkpoint) and each read by "
        f"name {per_read[0]}, counted at a gate (15 appendix A, the committed run); over "
        f"{len(next(iter(spent.seconds.values())))} commits its median commit took {round((spent.ratio() - 1) * 100)} % "
        "longer than the same table's without the catalog"
    )
