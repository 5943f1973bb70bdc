"""helpers.matrix with Delta Spark: the register of Spark, mixed and S3 engines, the order of the
engines in their shared process, the S3 sample and its comparison.

Delta Spark's real races are notebook 13's: every pair of its four operations and Delta Spark's
anomalies of the full matrix, each checked against the full matrix's cell, with the hold of
every race (B held at the commit after its snapshot, and committed from that snapshot). The
mixed pairs (Delta Spark and deltalake 1.6.6 on one table) run in `make matrix`, whose committed
results notebook 13 and the answer page show.

Every outcome of the full matrix was first measured by it and then checked by hand outside it:
B held before its commit in one driver while A ran in a second driver with Delta's own log store
and commit lock (so neither the shared JVM nor the session's settings decide a cell), and the mixed
OPTIMIZE pair with a stale deltalake handle and no hold at all."""

from __future__ import annotations

from helpers.matrix import engines, operations, run, worker

SPARK, MIXED = "delta-spark-4.4", "spark-then-deltalake-1.6.6"


def test_spark_mixed_and_s3_engines_are_registered_and_share_two_drivers():
    assert {SPARK, MIXED, "deltalake-1.6.6-then-spark", f"{SPARK}@s3", "deltalake-1.6.6@s3"} <= set(
        engines.DEFAULT_ENGINES
    )
    assert engines.ENGINES[MIXED].parts == (SPARK, "deltalake-1.6.6")
    assert engines.ENGINES["deltalake-1.6.6-then-spark"].after() == (MIXED,)
    assert engines.ENGINES[f"{SPARK}@s3"].after() == (SPARK,)
    assert engines.ENGINES[f"{SPARK}+b-files-after"].after() == (
        SPARK,
    )  # it shares Spark's serial results
    groups = [(era, set(names)) for era, names in engines.processes(list(engines.DEFAULT_ENGINES))]
    spark_3 = engines.SPARK_3
    # each release's two drivers start before any delta-rs era (the larger groups first): one with
    # Delta Spark alone, its S3 sample and its other interleaving, which need its results; the other
    # with its layouts (and for 4.4.0, in the kernel's environment, the mixed pairs)
    assert groups[:4] == [
        (
            "deltalake-1.6.6",
            {
                MIXED,
                "deltalake-1.6.6-then-spark",
                f"{SPARK}+partitions",
                f"{SPARK}+file-stats",
                f"{SPARK}+partitions+b-files-after",
                f"{SPARK}+file-stats+b-files-after",
            },
        ),
        (
            "delta-spark-3.3.2",
            {f"{spark_3}{v}" for v in ("+partitions", "+file-stats")}
            | {f"{spark_3}{v}+b-files-after" for v in ("+partitions", "+file-stats")},
        ),
        ("deltalake-1.6.6", {SPARK, f"{SPARK}@s3", f"{SPARK}+b-files-after"}),
        ("delta-spark-3.3.2", {spark_3, f"{spark_3}@s3", f"{spark_3}+b-files-after"}),
    ]
    assert all(not any(engines.ENGINES[n].threads > 1 for n in names) for _, names in groups[4:])


def _record(first, second, outcome):
    """A worker record whose verdict is ``outcome`` (refused / serializable) on a one-row base."""
    base = {"columns": ["id"], "properties": {}, "rows": [[1]]}
    state = {"columns": ["id"], "properties": {}, "rows": [[1]]}
    error = {"class": "ConcurrentAppendException", "message": "x"} if outcome == "refused" else None
    return {
        "first": first,
        "second": second,
        "status": "ran",
        "alone_a": state,
        "race": {"a_error": None, "error": error, "note": None, "problems": [], "state": state},
        "serial_ab": {"state": state, "error": None, "problems": []},
        "serial_ba": {"state": state, "error": None, "problems": []},
    }, base


def test_a_sampling_confirmation_reruns_every_pair_not_refused_every_retry_and_every_kth_refused_one():
    outcomes = [
        "refused",
        "serializable",
        "refused",
        "refused",
        "refused",
        "serializable",
        "refused",
    ]
    firsts = operations.MATRIX_OPS[: len(outcomes)]
    records, base = [], None
    for first, outcome in zip(firsts, outcomes):
        record, base = _record(first, "append", outcome)
        records.append(record)
    retried, base = _record("append_txn", "retry_txn", "refused")
    chosen = worker.confirmation_pairs([*records, retried], base, every=2)
    assert chosen == [(firsts[i], "append") for i in (0, 1, 3, 5, 6)] + [
        ("append_txn", "retry_txn")
    ]


def test_a_process_runs_each_engine_once_what_it_needs_has_finished():
    names = [SPARK, MIXED, "deltalake-1.6.6-then-spark", f"{SPARK}@s3"]
    schedule = worker.Schedule(names)
    assert [schedule.next(), schedule.next()] == [SPARK, MIXED]  # the other two wait for these
    schedule.finish(MIXED)
    assert schedule.next() == "deltalake-1.6.6-then-spark"
    schedule.finish(SPARK)
    assert schedule.next() == f"{SPARK}@s3"
    assert schedule.next() is None


def test_the_summary_names_every_cell_the_store_changed():
    def row(engine, first, outcome, conflict=""):
        return {
            "engine": engine,
            "first": first,
            "second": "append",
            "outcome": outcome,
            "conflict": conflict,
            "anomaly_kind": "",
            "matched": "",
            "rows_race": 15,
            "retry_after_reload": "",
            "retry_after_reload_kind": "",
        }

    rows = [
        row(SPARK, "delete", "serializable"),
        row(SPARK, "optimize", "refused", "ConcurrentAppend"),
        row(f"{SPARK}@s3", "delete", "serializable"),
        row(f"{SPARK}@s3", "optimize", "serializable"),
    ]
    lines = run.confirmations(rows)
    assert lines[0].strip() == f"{SPARK}@s3 against {SPARK}: 2 cells compared, 1 differ:"
    assert (
        lines[1]
        == "- optimize → append: outcome: 'refused' → 'serializable'; conflict: 'ConcurrentAppend' → ''"
    )
