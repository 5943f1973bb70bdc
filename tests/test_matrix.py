"""helpers.matrix: the oracle's verdicts on crafted tables, the documented conflict table, bad names
refused by name, and one small real run (deltalake 1.6.3 and 1.6.6, a few pairs each)."""

from __future__ import annotations

import csv
import json

import pytest

from helpers.matrix import __main__ as cli
from helpers.matrix import classify, documented, engines, layouts, operations, run, tidy

BASE = {"columns": ["id", "value"], "properties": {}, "rows": [[1, 10], [2, 20], [3, 30]]}


def state(rows, columns=("id", "value"), properties=None) -> dict:
    return {
        "columns": list(columns),
        "properties": dict(properties or {}),
        "rows": [list(r) for r in rows],
    }


def record(
    first, second, race_rows, *, ab, ba, alone, b_error=None, problems=(), race_state=None
) -> dict:
    """A pair record as the worker writes it, around crafted tables."""
    return {
        "first": first,
        "second": second,
        "status": "ran",
        "alone_a": alone,
        "race": {
            "a_error": None,
            "error": b_error,
            "note": None,
            "problems": list(problems),
            "state": race_state or state(race_rows),
        },
        "serial_ab": {"state": ab, "error": None, "problems": []},
        "serial_ba": {"state": ba, "error": None, "problems": []},
    }


CONFLICT = {
    "class": "CommitFailedError",
    "message": "Failed to commit transaction: Commit failed: a concurrent transaction deleted data this operation read.",
}


def test_refused_when_b_raised_and_the_table_is_a_alone():
    alone = state([(1, 10), (3, 30)])
    verdict = classify.classify(
        record(
            "delete",
            "append",
            [(1, 10), (3, 30)],
            ab=alone,
            ba=alone,
            alone=alone,
            b_error=CONFLICT,
        ),
        BASE,
    )
    assert (verdict.outcome, verdict.error_class, verdict.conflict) == (
        "refused",
        "CommitFailedError",
        "ConcurrentDeleteRead",
    )


def test_serializable_names_the_serial_order_it_equals():
    ab, ba = state([(1, 10), (3, 30)]), state([(1, 10), (3, 30), (4, 40)])
    verdict = classify.classify(
        record("append", "delete", [(1, 10), (3, 30), (4, 40)], ab=ab, ba=ba, alone=ab), BASE
    )
    assert (verdict.outcome, verdict.matched) == ("serializable", "B→A")
    same = classify.classify(
        record(
            "append",
            "append",
            [(1, 10), (1, 10)],
            ab=state([(1, 10), (1, 10)]),
            ba=state([(1, 10), (1, 10)]),
            alone=state([(1, 10)]),
        ),
        BASE,
    )
    assert (same.outcome, same.matched) == ("serializable", "A→B = B→A")


def test_two_compactions_from_one_snapshot_are_duplicated_rows_and_a_file_removed_twice():
    base = BASE["rows"]
    problem = {"kind": "removed twice", "file": "part-0.parquet", "version": 5, "detail": "..."}
    verdict = classify.classify(
        record(
            "optimize", "optimize", base + base, ab=BASE, ba=BASE, alone=BASE, problems=[problem]
        ),
        BASE,
    )
    assert verdict.outcome == "anomaly"
    assert verdict.kinds == ("duplicated rows", "removed twice")
    assert "ids 1, 2, 3" in verdict.detail


def test_a_table_equal_to_neither_serial_order_is_an_anomaly_even_with_a_clean_log():
    # B committed and every serial order says id 2 is gone and id 3 is 31: the race kept 2, and 3 is 30
    ab = ba = state([(1, 10), (3, 31)])
    verdict = classify.classify(
        record("update", "delete", [(1, 10), (2, 20), (3, 30)], ab=ab, ba=ba, alone=ab), BASE
    )
    assert verdict.outcome == "anomaly"
    assert verdict.kinds == ("lost update", "resurrected rows")


def test_rows_every_serial_order_keeps_missing_are_a_lost_update():
    ab = ba = state([(1, 10), (2, 20), (3, 30), (7, 70)])
    verdict = classify.classify(
        record("append", "overwrite", [(1, 10), (2, 20), (3, 30)], ab=ab, ba=ba, alone=ab), BASE
    )
    assert verdict.kinds == ("lost update",) and "rows of id 7 missing" in verdict.detail


def test_a_property_lost_to_a_stale_metadata_commit_is_a_lost_update():
    both = state(
        BASE["rows"], ("id", "value", "note"), {"delta.logRetentionDuration": "interval 30 days"}
    )
    race = state([r + [None] for r in BASE["rows"]], ("id", "value", "note"))
    rec = record("set_property", "add_column", [], ab=both, ba=both, alone=both, race_state=race)
    rec["serial_ab"]["state"]["rows"] = rec["serial_ba"]["state"]["rows"] = [
        r + [None] for r in BASE["rows"]
    ]
    verdict = classify.classify(rec, BASE)
    assert verdict.kinds == ("lost update",) and "delta.logRetentionDuration" in verdict.detail


def test_an_unreadable_table_is_a_broken_log():
    unreadable = {
        "unreadable": {
            "class": "DeltaError",
            "message": "Object at location <table>/part-1.parquet not found",
        }
    }
    verdict = classify.classify(
        record("vacuum", "append", [], ab=BASE, ba=BASE, alone=BASE, race_state=unreadable), BASE
    )
    assert (verdict.outcome, verdict.kinds) == ("anomaly", ("broken log",))


def test_a_refusal_that_changed_the_table_is_an_anomaly():
    alone = state([(1, 10)])
    verdict = classify.classify(
        record(
            "optimize",
            "vacuum",
            [(1, 10), (1, 10)],
            ab=alone,
            ba=alone,
            alone=alone,
            b_error=CONFLICT,
        ),
        BASE,
    )
    assert verdict.outcome == "anomaly" and verdict.kinds == ("duplicated rows",)


def test_a_retry_is_judged_against_the_append_alone_from_its_snapshot_and_after_reloading():
    alone = state([(1, 10), (101, 1010)])
    twice = state([(1, 10), (101, 1010), (101, 1010)])
    rec = record(
        "append_txn",
        "retry_txn",
        [(1, 10), (101, 1010)],
        ab=twice,
        ba=None,
        alone=alone,
        b_error={
            "class": "CommitFailedError",
            "message": "Failed to commit transaction: Concurrent transaction failed.",
        },
    )
    del rec["serial_ba"]
    assert classify.classify(rec, BASE).conflict == "ConcurrentTransaction"
    reloaded = classify.retry_after_reload(rec, BASE)
    assert (reloaded.outcome, reloaded.kinds) == ("anomaly", ("duplicated rows",))


def test_not_available_and_harness_errors_are_their_own_outcomes():
    assert (
        classify.classify(
            {
                "first": "append",
                "second": "retry_checked",
                "status": "not available",
                "reason": "transaction_version is missing",
            },
            BASE,
        ).outcome
        == "not available"
    )
    assert (
        classify.classify(
            {"first": "a", "second": "b", "status": "error", "reason": "x"}, BASE
        ).outcome
        == "error"
    )


def test_the_documented_table_loads_with_its_pages_and_date():
    table = documented.table()
    assert len(table) == 39
    assert table[("COMPACTION", "INSERT", "WriteSerializable")]["says"] == "cannot conflict"
    assert (
        table[("UPDATE, DELETE, MERGE INTO", "INSERT", "WriteSerializable")]["says"]
        == "cannot conflict"
    )
    assert table[("UPDATE, DELETE, MERGE INTO", "INSERT", "Serializable")]["says"] == "can conflict"
    pages = dict(documented.sources())
    assert "https://docs.delta.io/concurrency-control" in pages and all(pages.values())
    with documented.CONFLICTS_CSV.open(newline="") as handle:
        assert {row["first"] for row in csv.DictReader(handle)} == set(operations.CATEGORIES)


def test_the_docs_comparison_names_needless_failures_and_commits_where_they_conflict():
    needless = documented.compare(
        classify.Verdict("refused", conflict="ConcurrentDeleteRead"),
        documented.expectation("optimize", "append"),
    )
    assert needless[0] == "no" and needless[1].startswith("needless failure")
    committed = documented.compare(
        classify.Verdict("anomaly", ("duplicated rows",)),
        documented.expectation("optimize", "optimize"),
    )
    assert committed[0] == "no" and "can conflict" in committed[1]
    assert documented.compare(
        classify.Verdict("refused"), documented.expectation("add_column", "append")
    ) == ("yes", "")
    assert documented.expectation("vacuum", "append").write_serializable == "not covered"
    assert documented.compare(
        classify.Verdict("serializable"), documented.expectation("append", "retry")
    ) == ("", "")


def test_pairs_are_every_ordered_pair_then_each_retry_after_its_original():
    pairs = operations.pairs()
    assert len(pairs) == len(operations.MATRIX_OPS) ** 2 + len(operations.RETRY_OPS) + len(
        operations.APART_OPS
    ) + len(operations.APART_AFTER)
    assert pairs[0] == ("append", "append") and ("append_txn", "retry_checked") in pairs
    # each second job on a part of its own after the same operation's first job, the MERGE in two forms;
    # a DELETE and an UPDATE by id after the first job's naming its partition, and after one by id
    assert pairs[-6:] == [
        ("merge", "merge_apart"),
        ("merge_on_id", "merge_on_id_apart"),
        ("delete", "delete_on_id_apart"),
        ("delete_on_id", "delete_on_id_apart"),
        ("update", "update_on_id_apart"),
        ("update_on_id", "update_on_id_apart"),
    ]
    assert operations.pairs(["optimize", "append"]) == [
        ("append", "append"),
        ("append", "optimize"),
        ("optimize", "append"),
        ("optimize", "optimize"),
    ]


def test_unknown_names_are_refused_by_name_with_the_valid_choices(capsys):
    with pytest.raises(
        operations.UnknownName,
        match=r"unknown operation 'upsert'; choose from append, .*retry_checked",
    ):
        operations.pairs(["append", "upsert"])
    assert cli.main(["--ops", "append,upsert"]) == 2
    assert cli.main(["--engines", "deltalake-0.6.0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0] == (
        "python -m helpers.matrix: unknown operation 'upsert'; choose from "
        + ", ".join(operations.CHOICES)
    )
    assert lines[1].startswith(
        "python -m helpers.matrix: unknown engine 'deltalake-0.6.0'; choose from deltalake-0.22.3"
    )
    assert len(lines) == 2


def test_every_default_engine_is_an_installed_era():
    from helpers.ground import eras

    specs = [engines.ENGINES[name] for name in engines.DEFAULT_ENGINES]
    delta_rs = {
        s.name
        for s in specs
        if s.module == "helpers.matrix.deltars" and s.store == "local" and not s.variant_of
    }
    assert delta_rs == {
        "deltalake-0.22.3",
        "deltalake-0.25.5",
        "deltalake-1.1.4",
        "deltalake-1.5.0",
        "deltalake-1.5.1",
        "deltalake-1.6.3",
        "deltalake-1.6.6",
    }
    assert all(
        eras.spark_era(spec.era) if spec.era in eras.SPARK_ERAS else eras.era(spec.era)
        for spec in engines.ENGINES.values()
    )
    spark = {
        s.name: s.era for s in specs if s.module == "helpers.matrix.spark" and not s.variant_of
    }
    assert spark == {
        "delta-spark-4.4": eras.CURRENT,
        "delta-spark-4.4@s3": eras.CURRENT,
        "delta-spark-3.3": eras.GLUE_SPARK,
        "delta-spark-3.3@s3": eras.GLUE_SPARK,
    }


def test_a_small_real_run_brackets_the_double_optimize_regression(tmp_path):
    newer = [
        ("append", "append"),
        ("optimize", "optimize"),
        ("append_txn", "retry_txn"),
        ("append_txn", "retry_checked"),
    ]
    # 1.6.6 its own pairs; `also` adds 1.6.3 for one pair, and to 1.6.6 a pair of an operation not named
    # (a pair it has already is raced once)
    also = {
        "deltalake-1.6.3": [("optimize", "optimize")],
        "deltalake-1.6.6": [("optimize", "optimize"), ("append", "retry")],
    }
    rows = run.run(
        ["deltalake-1.6.6"],
        ["append", "optimize", "retry_txn", "retry_checked"],
        tmp_path / "small",
        echo=lambda line: None,
        only={"deltalake-1.6.6": newer},
        also=also,
    )
    cell = {(r["engine"], r["first"], r["second"]): r for r in rows}
    assert sorted(cell) == sorted(
        [
            ("deltalake-1.6.3", "optimize", "optimize"),
            ("deltalake-1.6.6", "append", "retry"),
            *(("deltalake-1.6.6", *pair) for pair in newer),
        ]
    )
    assert len(rows) == len(cell)
    blind = cell[("deltalake-1.6.6", "append", "retry")]
    assert (blind["outcome"], blind["anomaly_kind"]) == ("anomaly", "duplicated rows")
    old, new = (
        cell[("deltalake-1.6.3", "optimize", "optimize")],
        cell[("deltalake-1.6.6", "optimize", "optimize")],
    )
    assert (old["outcome"], old["conflict"]) == ("refused", "ConcurrentDeleteDelete")
    assert (new["outcome"], new["anomaly_kind"]) == ("anomaly", "duplicated rows + removed twice")
    assert new["agrees_with_docs"] == "no" and old["agrees_with_docs"] == "yes"
    assert (new["rows_race"], new["rows_serial_ab"], new["rows_serial_ba"]) == (22, 11, 11)
    appends = cell[("deltalake-1.6.6", "append", "append")]
    assert (appends["outcome"], appends["rows_race"], appends["agrees_with_docs"]) == (
        "serializable",
        19,
        "yes",
    )
    retried = cell[("deltalake-1.6.6", "append_txn", "retry_txn")]
    assert (retried["retry_after_reload"], retried["retry_after_reload_kind"]) == (
        "anomaly",
        "duplicated rows",
    )
    checked = cell[("deltalake-1.6.6", "append_txn", "retry_checked")]
    assert (checked["outcome"], checked["retry_after_reload"], checked["rows_race"]) == (
        "serializable",
        "serializable",
        15,
    )
    assert checked["b_note"].startswith("skipped")
    written = sorted(p.name for p in (tmp_path / "small").iterdir())
    assert {
        "matrix.csv",
        "grid-deltalake-1.6.3.png",
        "grid-deltalake-1.6.6.png",
        "meta.json",
        "pairs.jsonl",
    } <= set(written)


def test_a_grid_of_retries_alone_draws_their_strip():
    # an engine raced only for its retries' anomalies (notebook 13's `also`) has no square grid above the strip
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    from helpers.matrix import plots

    def row(second, outcome, reloaded):
        return {
            "engine": "deltalake-0.22.3",
            "engine_version": "0.22.3",
            "first": "append_txn" if second == "retry_txn" else "append",
            "second": second,
            "outcome": outcome,
            "conflict": "ConcurrentTransaction" if outcome == "refused" else "",
            "error_class": "",
            "anomaly_kind": "duplicated rows" if outcome == "anomaly" else "",
            "matched": "",
            "agrees_with_docs": "",
            "retry_after_reload": reloaded,
            "retry_after_reload_kind": "duplicated rows",
        }

    with warnings.catch_warnings():
        warnings.simplefilter(
            "error"
        )  # matplotlib warned of a zero-width axis and a layout it could not fit
        figure = plots.grid(
            [row("retry", "anomaly", "anomaly"), row("retry_txn", "refused", "anomaly")],
            "deltalake-0.22.3",
        )
    axes = figure.axes[0]
    assert axes.get_xlim() == (0.0, 2.0)
    assert sorted((p.get_x(), p.get_y(), p.get_width()) for p in axes.patches) == [
        (0.0, 1.6, 1.0),
        (0.0, 2.6, 1.0),
        (1.0, 1.6, 1.0),
        (1.0, 2.6, 1.0),
    ]


def test_each_engine_races_the_other_interleaving_and_the_other_layouts_as_variants():
    spark, rs = engines.ENGINES["delta-spark-4.4"], engines.ENGINES["deltalake-1.6.6"]
    assert (spark.interleaving, rs.interleaving) == ("b-files-first", "b-files-after")
    assert (
        engines.ENGINES["spark-then-deltalake-1.6.6"].interleaving == "b-files-after"
    )  # B is delta-rs
    held_rs, held_spark = (
        engines.ENGINES["deltalake-1.6.6+b-files-first"],
        engines.ENGINES["delta-spark-4.4+b-files-after"],
    )
    assert (held_rs.interleaving, held_spark.interleaving) == ("b-files-first", "b-files-after")
    assert (held_rs.base_of, held_rs.variant_of, held_rs.process_key) == ("deltalake-1.6.6",) * 3
    every = operations.pairs()
    # the other interleaving: only pairs whose B writes data files (no metadata change, no DELETE of every row)
    assert ("vacuum", "append") in held_rs.chosen(every) and (
        "append",
        "delete_all",
    ) not in held_rs.chosen(every)
    assert not [
        b for _, b in held_rs.chosen(every) if b in ("add_column", "set_property", "retry_checked")
    ]
    # another layout: only the operations with a predicate or rows of their own there
    partitions = engines.ENGINES["deltalake-1.6.6+partitions"]
    apart = operations.pairs(operations.APART_OPS)
    assert (
        partitions.chosen(every)
        == [(a, b) for a in operations.LAYOUT_OPS for b in operations.LAYOUT_OPS] + apart
    )
    # on file-stats every predicate names ids already: no DELETE or UPDATE by id of its own
    by_id = [p for p in apart if p[1] in operations.APART_AFTER]
    stats = engines.ENGINES["deltalake-1.6.6+file-stats"].chosen(every)
    assert len(by_id) == 4 and not set(by_id) & set(stats) and set(apart) - set(by_id) <= set(stats)
    assert rs.chosen(every) == every[: -len(apart)] and not set(apart) & set(held_rs.chosen(every))
    # the same operation from two jobs on parts of their own, in the other interleaving too, sharing the layout's base
    for name in (
        "deltalake-1.6.6+partitions+b-files-first",
        "delta-spark-4.4+file-stats+b-files-after",
    ):
        spec = engines.ENGINES[name]
        expected = apart if "partitions" in name else [p for p in apart if p not in by_id]
        assert (
            spec.chosen(every) == expected
            and spec.base_of == spec.variant_of == name.rsplit("+", 1)[0]
        )
        assert spec.process_key == engines.ENGINES[spec.base_of].process_key


def test_on_disjoint_files_the_docs_can_conflict_reads_cannot_except_an_operation_against_itself():
    shared = documented.expectation("delete", "update")
    assert shared.write_serializable == documented.CAN
    apart = documented.expectation("delete", "update", "partitions")
    assert (apart.delta_io, apart.write_serializable, apart.serializable) == (
        documented.CANNOT,
    ) * 3
    assert "different files" in apart.why
    assert (
        documented.expectation("delete", "delete", "file-stats").write_serializable
        == documented.CAN
    )
    assert documented.expectation("append", "append", "partitions") == documented.expectation(
        "append", "append"
    )
    # two jobs of one operation on parts of their own: apart when each condition names its part; a MERGE
    # whose condition does not name it reads every file and can conflict (the docs' warning), and so
    # does a DELETE or an UPDATE whose predicate names ids only, whatever the first job's names
    for first, second in operations.pairs(operations.APART_OPS):
        said = documented.expectation(first, second, "partitions").write_serializable
        by_key = operations.OPERATIONS[second].apart_of in operations.BY_KEY
        assert said == (documented.CAN if by_key else documented.CANNOT), (first, second)


def test_a_second_job_on_a_part_of_its_own_keeps_off_the_first_jobs_part():
    for layout in (layouts.PARTITIONS, layouts.FILE_STATS):
        other = layout.apart
        assert other is not None and other.base == layout.base and other.columns == layout.columns
        assert {
            len(row) for row in (*other.append_rows, *other.replace_rows, *other.merge_source)
        } == {len(layout.columns)}
        for field in (
            "append_rows",
            "replace_predicate",
            "replace_rows",
            "delete_predicate",
            "update_predicate",
            "merge_source",
            "merge_condition",
        ):
            assert getattr(other, field) != getattr(layout, field), (layout.name, field)
        assert layout.for_op("delete_apart") == (other, "delete")
        merged, op = layout.for_op("merge_on_id_apart")
        assert (
            op == "merge"
            and merged.merge_condition == "t.id = s.id"
            and merged.merge_source == other.merge_source
        )
        assert "part" not in layout.by_key["merge"] and "<=" not in layout.by_key["merge"]
    parts = layouts.PARTITIONS
    assert [r[2] for r in parts.apart.merge_source] == [
        "a",
        "a",
    ] and parts.apart.replace_predicate == "part = 'b'"
    with pytest.raises(ValueError, match="parts of their own"):
        layouts.SHARED_FILES.for_op("delete_apart")


def test_each_layout_gives_every_operation_its_rows_and_predicate():
    for layout in layouts.LAYOUTS.values():
        width = len(layout.columns)
        rows = [
            *layout.append_rows,
            *layout.overwrite_rows,
            *layout.replace_rows,
            *layout.merge_source,
            *(row for batch in layout.base for row in batch),
        ]
        assert {len(row) for row in rows} == {width}, layout.name
        assert set(layout.partition_by) <= set(layout.columns)
    parts = layouts.PARTITIONS
    # each operation keeps to a partition of its own: the partitions its rows and predicate name differ
    named = {
        "append": {r[2] for r in parts.append_rows},
        "replace_where": {"a"},
        "delete": {"b"},
        "update": {"c"},
        "merge": {r[2] for r in parts.merge_source},
    }
    assert named["replace_where"] == {r[2] for r in parts.replace_rows}
    assert all(
        f"part = '{p}'" in text
        for p, text in (
            ("a", parts.replace_predicate),
            ("b", parts.delete_predicate),
            ("c", parts.update_predicate),
            ("d", parts.merge_condition),
        )
    )
    assert len(set().union(*named.values())) == sum(map(len, named.values())) == 5


def test_the_other_interleaving_and_layouts_race_for_real(tmp_path):
    # deltalake 1.6.6: B held at its commit's link while A commits (B's files first), and the partitioned layout
    names = ["deltalake-1.6.6", "deltalake-1.6.6+b-files-first", "deltalake-1.6.6+partitions"]
    rows = run.run(
        names,
        ["append", "delete", "delete_all", "optimize", "vacuum"],
        tmp_path / "variants",
        echo=lambda line: None,
    )
    cell = {(r["engine"], r["first"], r["second"]): r for r in rows}
    # the delete that deletes nothing: a DELETE of every row after a concurrent OPTIMIZE commits, every row stays
    nothing = cell[("deltalake-1.6.6", "optimize", "delete_all")]
    assert (nothing["outcome"], nothing["anomaly_kind"], nothing["rows_race"]) == (
        "anomaly",
        "resurrected rows + removed twice",
        11,
    )
    # disjoint partitions: the DELETE after an append commits; on shared files delta-rs refuses it
    assert cell[("deltalake-1.6.6", "append", "delete")]["conflict"] == "ConcurrentAppend"
    assert cell[("deltalake-1.6.6+partitions", "append", "delete")]["outcome"] == "serializable"
    assert cell[("deltalake-1.6.6+partitions", "delete", "delete")]["outcome"] == "refused"
    # a full VACUUM deletes the files of an append in flight: with B's files first the append commits a
    # version whose file is gone; after, it commits whole
    assert cell[("deltalake-1.6.6", "vacuum", "append")]["outcome"] == "serializable"
    in_flight = cell[("deltalake-1.6.6+b-files-first", "vacuum", "append")]
    assert (in_flight["outcome"], in_flight["anomaly_kind"]) == ("anomaly", "broken log")
    races = [json.loads(line) for line in (tmp_path / "variants" / "pairs.jsonl").open()]
    held = [r for r in races if r["engine"] == "deltalake-1.6.6+b-files-first"]
    assert held and all(
        r["race"]["held_at"] == f"{r['race']['base_version'] + 1:020d}.json" for r in held
    )
    assert all(
        ("deltalake-1.6.6+b-files-first", a, "delete_all") not in cell for a in ("append", "delete")
    )


def test_a_short_run_races_its_spark_engines_in_one_driver():
    # notebook 13 adds Delta Spark's partitioned variant for one backfill: a second driver would cost a JVM's start
    names = ["delta-spark-4.4", "delta-spark-4.4+partitions", "deltalake-1.6.6"]
    short = engines.processes(
        names, {"delta-spark-4.4": 20, "delta-spark-4.4+partitions": 1, "deltalake-1.6.6": 30}
    )
    assert [group for _, group in short] == [
        ["delta-spark-4.4", "delta-spark-4.4+partitions"],
        ["deltalake-1.6.6"],
    ]
    full = engines.processes(
        names, {"delta-spark-4.4": 148, "delta-spark-4.4+partitions": 31, "deltalake-1.6.6": 148}
    )
    assert sorted(map(tuple, (group for _, group in full))) == [
        ("delta-spark-4.4",),
        ("delta-spark-4.4+partitions",),
        ("deltalake-1.6.6",),
    ]
    assert len(engines.processes(names)) == 3  # no counts given: every engine in its own process


def test_a_delete_or_update_by_id_keeps_to_its_partition_without_naming_it():
    parts = layouts.PARTITIONS
    for op, plain in (("delete_on_id", "delete"), ("update_on_id", "update")):
        field = f"{plain}_predicate"
        for layout, name in ((parts, op), (parts.apart, f"{op}_apart")):
            by_id, ran = parts.for_op(name)
            assert ran == plain and getattr(by_id, field) == layout.by_key[plain]
            assert "part" not in getattr(by_id, field) and "part" in getattr(layout, field)
            # the one id it names is the one row of the named predicate (id % 4 in that partition)
            (row,) = [
                r
                for r in (r for batch in parts.base for r in batch)
                if f"id = {r[0]}" == getattr(by_id, field)
            ]
            assert f"part = '{row[2]}'" in getattr(layout, field), (name, row)
    assert not layouts.FILE_STATS.races("delete_on_id_apart") and parts.races("update_on_id")
    with pytest.raises(ValueError, match="condition by id"):
        layouts.FILE_STATS.for_op("delete_on_id")


def _race_states(folder) -> dict:
    return {
        (r["engine"], r["first"], r["second"]): r["race"]["state"]
        for r in map(json.loads, (folder / "pairs.jsonl").open())
    }


def test_the_default_retention_spares_a_job_in_flight_and_a_delete_by_id_commits(tmp_path):
    held, parts = "deltalake-1.6.6+b-files-first", "deltalake-1.6.6+partitions"
    names = ["append", "delete", "vacuum", "vacuum_retained", "delete_on_id_apart"]
    rows = run.run(
        [held, parts],
        [*names, "update_on_id_apart"],
        tmp_path / "forms",
        echo=lambda line: None,
        only={
            held: [("vacuum", "append"), ("vacuum_retained", "append")],
            parts: [("delete", "delete_on_id_apart"), ("update_on_id", "update_on_id_apart")],
        },
    )
    cell = {(r["engine"], r["first"], r["second"]): r for r in rows}
    # the append wrote its file before the VACUUM committed: 0 hours deletes it, 7 days keeps it
    zero, kept = cell[(held, "vacuum", "append")], cell[(held, "vacuum_retained", "append")]
    assert (zero["outcome"], zero["anomaly_kind"]) == ("anomaly", "broken log")
    assert (kept["outcome"], kept["rows_race"], kept["agrees_with_docs"]) == (
        "serializable",
        15,
        "",
    )
    alone = tmp_path / "forms" / "tables" / held / "alone"
    on_disk = {
        op: len(list((alone / f"deltalake-1.6.6--{op}").glob("*.parquet")))
        for op in ("vacuum", "vacuum_retained")
    }
    assert on_disk == {"vacuum": 1, "vacuum_retained": 5}  # every file the base and OPTIMIZE wrote
    # DELETE and UPDATE by id on partitions of their own both commit: ids 6 and 10 gone, 11 and 15 updated
    states = _race_states(tmp_path / "forms")
    deleted = states[(parts, "delete", "delete_on_id_apart")]
    assert cell[(parts, "delete", "delete_on_id_apart")]["outcome"] == "serializable"
    assert {r[0] for r in deleted["rows"]} == set(range(1, 17)) - {6, 10, 12}
    updated = {r[0]: r[1] for r in states[(parts, "update_on_id", "update_on_id_apart")]["rows"]}
    assert cell[(parts, "update_on_id", "update_on_id_apart")]["outcome"] == "serializable"
    assert (updated[11], updated[15], updated[7]) == (111, 151, 70)


def _committed(tmp_path):
    """The committed results as they were before ``vacuum_retained`` joined them."""
    from helpers.ground import config

    csv_path, meta_path = tmp_path / "matrix.csv", tmp_path / "meta.json"
    with (config.DATA_DIR / "conflict_matrix.csv").open(newline="", encoding="utf-8") as handle:
        rows = [
            r for r in csv.DictReader(handle) if "vacuum_retained" not in (r["first"], r["second"])
        ]
    csv_path.write_text(tidy.csv_text(rows))
    meta = json.loads((config.DATA_DIR / "conflict_matrix_meta.json").read_text())
    meta["operations"].remove("vacuum_retained")
    meta_path.write_text(json.dumps({**meta, "merged": []}))
    return csv_path, meta_path


def _new_run(folder, rows: list[dict], engines_seen: dict) -> None:
    folder.mkdir()
    (folder / "matrix.csv").write_text(tidy.csv_text(rows))
    meta = {"engines": engines_seen, "run_on": "2026-12-07", "wall_seconds": 1.5}
    (folder / "meta.json").write_text(json.dumps(meta))


def test_a_run_of_new_pairs_merges_in_order_and_every_committed_row_stays(tmp_path):
    csv_path, meta_path = _committed(tmp_path)
    before, meta_before = csv_path.read_text().splitlines(), json.loads(meta_path.read_text())
    rows = list(csv.DictReader(csv_path.open()))
    template = next(r for r in rows if r["engine"] == "deltalake-1.6.6" and r["first"] == "vacuum")
    new = [
        {**template, "first": "vacuum_retained", "second": "append"},
        {**template, "first": "append", "second": "vacuum_retained"},
    ]
    _new_run(tmp_path / "run", new, {"deltalake-1.6.6": template["engine_version"]})
    assert tidy.merge([tmp_path / "run"], csv_path, meta_path) == new
    after = csv_path.read_text().splitlines()
    assert len(after) == len(before) + 2
    assert [line for line in after if line not in tidy.csv_text(new).splitlines()[1:]] == before
    keys = [
        tuple(r[k] for k in ("engine", "first", "second")) for r in csv.DictReader(csv_path.open())
    ]
    # each where the pair order puts it: after its engine's VACUUM of 0 hours, not at the end
    at = keys.index(("deltalake-1.6.6", "append", "vacuum_retained"))
    assert keys[at - 1] == ("deltalake-1.6.6", "append", "vacuum")
    at = keys.index(("deltalake-1.6.6", "vacuum_retained", "append"))
    assert keys[at - 1] == ("deltalake-1.6.6", "vacuum", "set_property")
    meta = json.loads(meta_path.read_text())
    ops = meta["operations"]
    assert (
        ops[ops.index("vacuum") + 1] == "vacuum_retained"
        and meta["run_on"] == meta_before["run_on"]
    )
    assert meta["pairs"]["deltalake-1.6.6"] == sum(k[0] == "deltalake-1.6.6" for k in keys)
    assert meta["merged"] == [{"run_on": "2026-12-07", "wall_seconds": 1.5, "pairs": 2}]
    # the same cells again, or another release under an engine's name: refused, nothing written
    text = csv_path.read_text()
    with pytest.raises(tidy.MergeError, match="measured twice"):
        tidy.merge([tmp_path / "run"], csv_path, meta_path)
    _new_run(tmp_path / "other", [{**new[0], "second": "optimize"}], {"deltalake-1.6.6": "1.6.7"})
    with pytest.raises(tidy.MergeError, match="1.6.7"):
        tidy.merge([tmp_path / "other"], csv_path, meta_path)
    assert csv_path.read_text() == text


def test_a_run_that_races_an_engine_whole_again_replaces_its_rows(tmp_path, monkeypatch):
    """An engine raced anew whole (every committed cell of it, and more) replaces its rows when
    published; every other engine's rows stay byte for byte. A run that races only some of an
    engine's committed cells is refused, nothing written."""
    import shutil

    from helpers.ground import config
    from helpers.matrix import outputs

    data = [tmp_path / "conflict_matrix.csv", tmp_path / "conflict_matrix_meta.json"]
    for name, target in zip(("conflict_matrix.csv", "conflict_matrix_meta.json"), data):
        shutil.copyfile(config.DATA_DIR / name, target)
    monkeypatch.setattr(outputs, "DATA_CSV", data[0])
    monkeypatch.setattr(outputs, "DATA_META", data[1])
    rows = list(csv.DictReader(data[0].open(encoding="utf-8")))
    engine = "delta-spark-4.4@s3"  # a sample of delta-spark-4.4's pairs: one more joins it
    own = [r for r in rows if r["engine"] == engine]
    pairs = {(r["first"], r["second"]) for r in own}
    more = next(
        r
        for r in rows
        if r["engine"] == "delta-spark-4.4" and (r["first"], r["second"]) not in pairs
    )
    others = [line for line in data[0].read_text().splitlines() if f"{engine}," not in line]
    whole = tmp_path / "whole"
    _new_run(whole, [*own, {**more, "engine": engine}], {engine: own[0]["engine_version"]})
    (whole / outputs.SUMMARY).write_text("a run\n")
    assert outputs.replaced_engines(whole) == {engine}
    assert outputs.problems(whole) == []
    outputs.publish(whole)
    after = list(csv.DictReader(data[0].open(encoding="utf-8")))
    assert {(r["first"], r["second"]) for r in after if r["engine"] == engine} == pairs | {
        (more["first"], more["second"])
    }
    assert [line for line in data[0].read_text().splitlines() if f"{engine}," not in line] == others
    assert json.loads(data[1].read_text())["pairs"][engine] == len(pairs) + 1
    partly = tmp_path / "partly"
    _new_run(partly, own[:-1], {engine: own[0]["engine_version"]})
    (partly / outputs.SUMMARY).write_text("a run\n")
    text = data[0].read_text()
    assert "races" in " ".join(outputs.problems(partly))
    assert data[0].read_text() == text
