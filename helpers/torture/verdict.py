"""One verdict for a torture run, read from its saved results (:func:`helpers.torture.run.load`):
what notebook 12 asserts of its run, and what ``make torture`` (``python -m helpers.torture``)
exits on. Both call :func:`check_run`, so the command line cannot pass a run the notebook would fail::

    check = checks.Checklist()
    verdict.check_run(check, run.load("full"), min_commits=plan.FULL_RUN_MIN_COMMITS)
    assert check.passed, check.report()
"""

from __future__ import annotations

from helpers.torture import plan


def check_run(check, results, *, min_commits: int) -> None:
    """Record in ``check`` (a :class:`helpers.ground.checks.Checklist`) every promise of a run, per protocol:

    * every protocol: the operations planned (writers x operations per writer, from the run's
      ``meta.json``) were all made; the operations left without an answer are those of the
      writers the gate killed (a writer that died otherwise leaves one more); no operation is in
      two commits; every tagged commit is an operation a writer journaled, and every commit after
      version 0 is tagged;
    * a safe protocol: no acknowledged operation lost; at least ``min_commits`` commits;
      commits = acknowledged + landed unacknowledged; no problem the checker found; some deletes
      committed; no orphan after VACUUM; no DynamoDB item incomplete, nor complete without its
      commit file; the planned kill points hit, no killed operation in two commits; the planned
      restarts made;
    * an unsafe protocol: the checker finds the acknowledged operations it lost.
    """
    meta = results.meta
    rows = results.protocols.set_index("protocol")
    check.equal("protocols run", sorted(rows.index), sorted(meta["protocols"]))
    for name in meta["protocols"]:
        if name not in rows.index:
            continue
        proto, row = plan.PROTOCOLS[name], rows.loc[name]
        kills = results.kills[results.kills.protocol == name]
        _check_every_protocol(check, name, proto, row, kills, int(meta["per_writer"][name]))
        if not proto.safe:
            check.holds(
                f"{name}: the checker finds the acknowledged operations the unsafe protocol lost",
                int(row["lost"]) > 0,
                expected="> 0",
                found=int(row["lost"]),
            )
            continue
        _check_safe_protocol(check, name, proto, row, kills, results, min_commits=min_commits)


def _check_every_protocol(
    check, name: str, proto: plan.Protocol, row, kills, per_writer: int
) -> None:
    """The promises of every protocol, safe or not (see :func:`check_run`): ``row`` is its row of
    ``protocols.csv``, ``kills`` its kills made."""
    check.equal(
        f"{name}: operations made",
        int(row["operations"]),
        proto.writers * per_writer,
    )
    # a killed Spark driver takes each of its writer threads' operations with it
    threads = proto.groups[0].threads
    killed = int(row["killed_in_flight"])
    check.holds(
        f"{name}: operations left without an answer (only the killed writers')",
        len(kills) <= killed <= len(kills) * threads,
        expected=f"{len(kills)} kill(s) x 1 to {threads} writer(s)",
        found=killed,
    )
    check.equal(f"{name}: operations in more than one commit", int(row["duplicated"]), 0)
    check.equal(f"{name}: tagged commits no writer journaled", int(row["unjournaled_commits"]), 0)
    check.equal(
        f"{name}: commits after version 0 = operations found in the log",
        int(row["versions"]),
        int(row["commits_tagged"]),
    )


def _check_safe_protocol(
    check, name: str, proto: plan.Protocol, row, kills, results, *, min_commits: int
) -> None:
    """The promises of a safe protocol (see :func:`check_run`)."""
    ops = results.operations[results.operations.protocol == name]
    check.equal(f"{name}: acknowledged operations lost", int(row["lost"]), 0)
    check.holds(
        f"{name}: commits made under contention",
        int(row["versions"]) >= min_commits,
        expected=f">= {min_commits}",
        found=int(row["versions"]),
    )
    check.equal(
        f"{name}: commits = acknowledged + landed unacknowledged",
        int(row["versions"]),
        int(row["acknowledged"] + row["landed_unacknowledged"]),
    )
    check.equal(
        f"{name}: problems the checker found (rows, readers, integrity)",
        row["problems"] if isinstance(row["problems"], str) else "",
        "",
    )
    check.holds(
        f"{name}: some deletes committed",
        int(row["deletes"]) > 0,
        expected="> 0",
        found=int(row["deletes"]),
    )
    check.equal(f"{name}: orphaned files left after VACUUM", int(row["orphans_after_vacuum"]), 0)
    if proto.dynamodb:
        check.equal(f"{name}: DynamoDB items left incomplete", int(row["incomplete_lock_items"]), 0)
        # runs saved before 2026-11-28 did not count them
        if "complete_items_without_commit" in row.index:
            check.equal(
                f"{name}: DynamoDB items complete without their commit file",
                int(row["complete_items_without_commit"]),
                0,
            )
    if proto.kill_points:
        check.equal(
            f"{name}: kill points hit",
            sorted(kills["point"]),
            sorted(plan.kill_schedule(proto, int(results.meta["kills"]))),
        )
        check.equal(
            f"{name}: killed operations found in two commits",
            int((ops.loc[ops.outcome == "killed", "verdict"] == "duplicated").sum()),
            0,
        )
    if proto.restarts:
        made = results.restarts[results.restarts.protocol == name]
        check.equal(f"{name}: service restarts", len(made), int(results.meta["restarts"]))
