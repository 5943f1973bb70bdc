"""helpers.matrix with Delta Spark: the register of Spark, mixed and S3 engines, the S3 sample and its
comparison, and one small real run (Delta Spark alone, and Spark first with deltalake 1.6.6 second).

Every outcome asserted below was first measured by the matrix and then checked by hand outside it:
B held before its commit in one driver while A ran in a second driver with Delta's own log store
and commit lock (so neither the shared JVM nor the session's settings decide a cell), and the mixed
OPTIMIZE pair with a stale deltalake handle and no hold at all."""

from __future__ import annotations

import json

from helpers import answer
from helpers.matrix import engines, operations, run, worker

SPARK, MIXED = "delta-spark-4.4", "spark-then-deltalake-1.6.6"


def test_spark_mixed_and_s3_engines_are_registered_and_share_one_process():
    assert {SPARK, MIXED, "deltalake-1.6.6-then-spark", f"{SPARK}@s3", "deltalake-1.6.6@s3"} <= set(engines.DEFAULT_ENGINES)
    assert engines.ENGINES[MIXED].parts == (SPARK, "deltalake-1.6.6")
    assert engines.ENGINES["deltalake-1.6.6-then-spark"].after() == (MIXED,)
    assert engines.ENGINES[f"{SPARK}@s3"].after() == (SPARK,)
    groups = dict((",".join(names), era) for era, names in engines.processes(list(engines.DEFAULT_ENGINES)))
    spark_group = next(names for names in groups if SPARK in names.split(","))
    assert set(spark_group.split(",")) == {SPARK, MIXED, "deltalake-1.6.6-then-spark", f"{SPARK}@s3"}
    assert groups[spark_group] == "deltalake-1.6.6"  # the kernel's environment: pyspark and deltalake 1.6.6
    assert list(groups)[0] == spark_group  # the longest process starts first


def _record(first, second, outcome):
    """A worker record whose verdict is ``outcome`` (refused / serializable) on a one-row base."""
    base = {"columns": ["id"], "properties": {}, "rows": [[1]]}
    state = {"columns": ["id"], "properties": {}, "rows": [[1]]}
    error = {"class": "ConcurrentAppendException", "message": "x"} if outcome == "refused" else None
    return {"first": first, "second": second, "status": "ran", "alone_a": state,
            "race": {"a_error": None, "error": error, "note": None, "problems": [], "state": state},
            "serial_ab": {"state": state, "error": None, "problems": []},
            "serial_ba": {"state": state, "error": None, "problems": []}}, base


def test_a_sampling_confirmation_reruns_every_pair_not_refused_every_retry_and_every_kth_refused_one():
    outcomes = ["refused", "serializable", "refused", "refused", "refused", "serializable", "refused"]
    firsts = operations.MATRIX_OPS[:len(outcomes)]
    records, base = [], None
    for first, outcome in zip(firsts, outcomes):
        record, base = _record(first, "append", outcome)
        records.append(record)
    retried, base = _record("append_txn", "retry_txn", "refused")
    chosen = worker.confirmation_pairs([*records, retried], base, every=2)
    assert chosen == [(firsts[i], "append") for i in (0, 1, 3, 5, 6)] + [("append_txn", "retry_txn")]


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
        return {"engine": engine, "first": first, "second": "append", "outcome": outcome, "conflict": conflict,
                "anomaly_kind": "", "matched": "", "rows_race": 15, "retry_after_reload": "",
                "retry_after_reload_kind": ""}

    rows = [row(SPARK, "delete", "serializable"), row(SPARK, "optimize", "refused", "ConcurrentAppend"),
            row(f"{SPARK}@s3", "delete", "serializable"), row(f"{SPARK}@s3", "optimize", "serializable")]
    lines = run.confirmations(rows)
    assert lines[0].strip() == f"{SPARK}@s3 against {SPARK}: 2 cells compared, 1 differ:"
    assert lines[1] == "- optimize → append: outcome: 'refused' → 'serializable'; conflict: 'ConcurrentAppend' → ''"


def test_a_small_real_run_of_delta_spark_and_a_mixed_pair(tmp_path):
    # notebook 13 races every pair of four operations on Delta Spark and checks each cell against the
    # full matrix's; here, one of those pairs for the hold's details, Delta Spark's anomalies of the full
    # matrix (notebook 13 races only the delta-rs eras' again, which need no JVM) and two mixed pairs
    spark_anomalies = {(r["first"], r["second"]): r for r in answer.Results.load().rows
                       if r["engine"] == SPARK and run.is_anomaly(r)}
    assert spark_anomalies, "the full matrix should list Delta Spark's anomalies"
    chosen = {SPARK: [("append", "append"), *spark_anomalies],
              MIXED: [("optimize", "optimize"), ("append_txn", "retry_txn")]}
    op_names = [name for name in operations.CHOICES if any(name in pair for pairs in chosen.values() for pair in pairs)]
    rows = run.run([SPARK, MIXED], op_names, tmp_path / "spark", echo=lambda line: None, only=chosen)
    cell = {(r["engine"], r["first"], r["second"]): r for r in rows}
    assert sorted(cell) == sorted((engine, *pair) for engine, pairs in chosen.items() for pair in pairs)

    for pair, recorded in spark_anomalies.items():  # each anomaly of the full matrix comes out the same
        now = cell[(SPARK, *pair)]
        assert [now[field] for field in ("outcome", "anomaly_kind", "retry_after_reload", "retry_after_reload_kind")] == \
            [recorded[field] for field in ("outcome", "anomaly_kind", "retry_after_reload", "retry_after_reload_kind")], pair

    appends = cell[(SPARK, "append", "append")]  # two blind appends: B commits at N+2
    assert (appends["outcome"], appends["matched"], appends["rows_race"], appends["b_read_version"]) == \
        ("serializable", "A→B = B→A", 19, 3)
    assert (appends["docs_write_serializable"], appends["docs_serializable"]) == ("cannot conflict", "cannot conflict")

    mixed = cell[(MIXED, "optimize", "optimize")]  # deltalake 1.6.6's stale OPTIMIZE commits over Spark's
    assert (mixed["outcome"], mixed["anomaly_kind"], mixed["rows_race"]) == ("anomaly", "duplicated rows + removed twice", 22)
    mixed_retry = cell[(MIXED, "append_txn", "retry_txn")]  # deltalake's retry ignores the txn Spark wrote
    assert (mixed_retry["conflict"], mixed_retry["retry_after_reload"], mixed_retry["retry_after_reload_kind"]) == \
        ("ConcurrentTransaction", "anomaly", "duplicated rows")

    records = {(r["engine"], r["first"], r["second"]): r for r in map(json.loads, (tmp_path / "spark" / "pairs.jsonl").open())}
    held = records[(SPARK, "append", "append")]["race"]
    assert (held["held_at"], held["base_version"], held["a_versions"], held["b_versions"]) == \
        ("00000000000000000004.json", 3, [4], [5])
    assert "Delta-Lake/4.4" in cell[(SPARK, "append", "append")]["engine_version"]
