"""``python -m helpers.matrix.mixed``: Delta Spark and deltalake 1.5.1 on one S3 table, one lock table.

    python -m helpers.matrix.mixed                       # make matrix-mixed: default_pairs()
    python -m helpers.matrix.mixed --ops append,optimize

The setting of notebook 09 §5: Delta Spark's DynamoDB log store and deltalake 1.5.1's
(``AWS_S3_LOCKING_PROVIDER=dynamodb``) on one table of the S3 emulator, through one lock table, the
table named ``s3a://`` by both. Pairs of the conflict matrix's operations (:func:`default_pairs`) are
raced in both orders, with the matrix's pair runner (:class:`helpers.matrix.pairs.Runner`), oracle and classes
(:mod:`helpers.matrix.classify`) and Delta's documented table (:mod:`helpers.matrix.documented`):

* ``spark-first``: Delta Spark (A) commits; deltalake 1.5.1 (B) then commits from the snapshot it
  loaded before, in its own process (:mod:`helpers.matrix.remote`); B writes its data files after
  A's commit (``b-files-after``);
* ``deltalake-first``: Delta Spark (B) reads the table, writes its files and its staged commit and is
  held at its claim in the lock table (:mod:`helpers.matrix.ddb_hold`); deltalake 1.5.1 (A) commits;
  B goes on (``b-files-first``).

The serial orders run on copies, by the same two engines, through the same lock table. Beside each
race's verdict, the lock table's items of its table (:func:`helpers.matrix.mixed_engines.lock_evidence`):
who staged each commit, whether each commit has its complete item, how many ``tablePath`` values.
Results: ``build/matrix/mixed-dynamodb/matrix.csv``, ``meta.json``, ``summary.txt``; they stay there until
``make publish RUN=build/matrix/mixed-dynamodb`` copies the CSV and meta to ``data/`` (:func:`publish`).
The tables are removed (with their lock items) unless ``--keep``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import sys
import time
from collections import Counter
from pathlib import Path

from helpers.ground import config
from helpers.matrix import classify, engines, layouts, outputs, tidy, worker
from helpers.matrix import mixed_engines as me
from helpers.matrix import operations as ops
from helpers.matrix.ddb_hold import ClaimHold
from helpers.matrix.pairs import Runner
from helpers.stores import storage

DEFAULT_OPS = ("append", "overwrite", "delete", "update", "merge", "optimize")
"""Every ordered pair of these is raced by ``make matrix-mixed``: a team's everyday writes and
compaction (36 pairs: 361 s for both orders on a shared 2-core machine). Every pair of the twelve
operations (144) would take four times as long."""
PAGE_PAIRS = (
    *(("append", b) for b in ("delete_all", "replace_where", "vacuum")),
    *((a, "append") for a in ("delete_all", "replace_where", "vacuum")),
    *(
        (a, "vacuum")
        for a in ("delete", "delete_all", "merge", "overwrite", "replace_where", "update")
    ),
    *(
        ("vacuum", b)
        for b in ("delete", "delete_all", "merge", "overwrite", "replace_where", "update")
    ),
    *(
        (a, "zorder")
        for a in ("delete", "delete_all", "optimize", "overwrite", "replace_where", "zorder")
    ),
    *(("zorder", b) for b in ("delete", "delete_all", "optimize", "overwrite", "replace_where")),
    ("delete_all", "optimize"),
    ("optimize", "delete_all"),
    ("optimize", "replace_where"),
    ("replace_where", "optimize"),
)
"""And the other pairs the answer page's columns name (replaceWhere, a DELETE of every row, Z-order and
VACUUM against the writes): 33 more. With them, 138 races took 1,402 s on the same machine, loaded."""


def default_pairs() -> list[tuple[str, str]]:
    """What ``make matrix-mixed`` races in each order: :data:`DEFAULT_OPS`' pairs, then :data:`PAGE_PAIRS`."""
    return ops.pairs(DEFAULT_OPS) + list(PAGE_PAIRS)


ORDERS = {"spark-first": "b-files-after", "deltalake-first": "b-files-first"}
"""The two orders, and the interleaving each races (whether B's data files come after A's commit)."""


def engine_name(order: str, rs: str = me.RS, spark: str = engines.SPARK) -> str:
    """The CSV's ``engine`` of an order: ``spark-dynamodb-then-deltalake-1.5.1`` or the other way,
    for Delta Spark 4.4.0; ``spark-3.3-dynamodb-then-...`` for another Delta Spark engine's run."""
    tag = "spark" if spark == engines.SPARK else spark.removeprefix("delta-")
    return f"{tag}-dynamodb-then-{rs}" if order == "spark-first" else f"{rs}-then-{tag}-dynamodb"


def run_engines(meta: dict) -> set[str]:
    """The engines a run's meta names."""
    return set(meta["engines"])


LOCAL_PAIRS = {
    "spark-first": "spark-then-deltalake-1.6.6",
    "deltalake-first": "deltalake-1.6.6-then-spark",
}
"""The conflict matrix's mixed pairs on local disk (Delta Spark beside deltalake 1.6.6), compared."""
OUT = config.BUILD_DIR / "matrix" / "mixed-dynamodb"
DATA_CSV = config.DATA_DIR / "conflict_matrix_mixed_dynamodb.csv"
DATA_META = config.DATA_DIR / "conflict_matrix_mixed_dynamodb_meta.json"
LOCK_COLUMNS = ("lock_commits", "lock_table_paths", "lock_problems")
CSV_COLUMNS = ("order", "engine_first", "engine_second", *tidy.CSV_COLUMNS, *LOCK_COLUMNS)


def row_of(record: dict, order: str, base: dict, version: str, rs: str = me.RS) -> dict:
    """One CSV row: the matrix's (:func:`helpers.matrix.tidy.tidy_row`) with the lock table's evidence."""
    row = tidy.tidy_row(
        {**record, "engine": engine_name(order, rs, engines.spark_here())}, base, version
    )
    row.update(
        order=order,
        engine_first=record.get("engine_first", ""),
        engine_second=record.get("engine_second", ""),
        layout=layouts.SHARED_FILES.name,
        interleaving=ORDERS[order],
    )
    race = record.get("race")
    if record.get("status") == "ran" and race:
        row.update(me.lock_evidence(record["folder"] + "/race", race["base_version"]))
    return row


def run_mixed(
    pairs: list[tuple[str, str]],
    folder: Path = OUT,
    *,
    keep: bool = False,
    orders=tuple(ORDERS),
    echo=print,
    rs_python: str | None = None,
) -> list[dict]:
    """Race each pair of ``pairs`` in each order; write the results into ``folder``.
    ``rs_python``: a Python with another deltalake than 1.5.1 (a release this workbook does not pin),
    named after the release it imports."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    me.prepare_s3()
    hold = ClaimHold(config.aws_endpoint("dynamodb"))
    rs = me.remote_rs(rs_python)
    rs_name = f"deltalake-{rs.version}"
    rows: list[dict] = []
    roots: list[str] = []
    version = ""
    try:
        spark = me.DynamoSpark(hold)
        echo(f"Delta Spark up after {time.perf_counter() - started:.0f} s; deltalake {rs.version}")
        runner = None
        for order in orders:
            root = worker.s3_root(str(folder), engine_name(order, rs_name, spark.name))
            roots.append(root)
            first, second = (spark, rs) if order == "spark-first" else (rs, spark)
            runner = Runner(first, second, root=root, shares=runner)
            base = runner.prepare()
            version = f"{spark.version} / deltalake {rs.version}"
            for done, (a, b) in enumerate(pairs, 1):
                began = time.perf_counter()
                record = worker.run_pair_or_error(runner, a, b)
                record["seconds"] = round(time.perf_counter() - began, 3)
                row = row_of(record, order, base, version, rs_name)
                rows.append(row)
                lock = f" | lock: {row.get('lock_commits', '')}" + (
                    f" PROBLEMS {row['lock_problems']}" if row.get("lock_problems") else ""
                )
                echo(tidy.progress_line(row, done, len(pairs)) + lock)
            write(folder, rows, pairs, time.perf_counter() - started, version, rs_name)
    finally:
        rs.close()
        hold.close()
        if not keep:
            for root in roots:
                from helpers.matrix import stores

                stores.for_location(root).remove(root)
                storage.delete_lock_entries(me.for_delta_rs(root), under=True)
    seconds = time.perf_counter() - started
    write(folder, rows, pairs, seconds, version, rs_name)
    return rows


def write(
    folder: Path, rows: list[dict], pairs, seconds: float, versions: str, rs: str = me.RS
) -> None:
    with (folder / "matrix.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=CSV_COLUMNS, lineterminator="\n", extrasaction="ignore"
        )
        writer.writeheader()
        writer.writerows(rows)
    meta = {
        "engines": {engine_name(order, rs, engines.spark_here()): versions for order in ORDERS},
        "setting": "one S3 table (s3a:// for both), one DynamoDB lock table: Delta Spark's DynamoDB "
        "log store and deltalake's AWS_S3_LOCKING_PROVIDER=dynamodb",
        "operations": [name for name in ops.MATRIX_OPS if any(name in pair for pair in pairs)],
        "pairs_per_order": len(pairs),
        "pairs": {order: sum(1 for r in rows if r["order"] == order) for order in ORDERS},
        "interleavings": dict(ORDERS),
        "wall_seconds": round(seconds, 1),
        "run_on": time.strftime("%Y-%m-%d"),
    }
    (folder / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    (folder / "summary.txt").write_text(summary(rows, seconds) + "\n")


def local_cells() -> dict[tuple[str, str, str], str]:
    """The conflict matrix's committed outcomes of its local mixed pairs, by (order, first, second)."""
    path = outputs.DATA_CSV
    if not path.is_file():
        return {}
    wanted = {engine: order for order, engine in LOCAL_PAIRS.items()}
    with path.open(newline="", encoding="utf-8") as handle:
        return {
            (wanted[r["engine"]], r["first"], r["second"]): r["outcome"]
            for r in csv.DictReader(handle)
            if r["engine"] in wanted
        }


def summary(rows: list[dict], seconds: float) -> str:
    lines = [f"wall time {seconds:.0f} s, {len(rows)} races"]
    for order in ORDERS:
        counted = Counter(r["outcome"] for r in rows if r["order"] == order)
        lines.append(
            f"{order}: " + ", ".join(f"{counted[o]} {o}" for o in classify.OUTCOMES if counted[o])
        )
    counted = Counter(r["outcome"] for r in rows)
    lines.append(
        "both orders: " + ", ".join(f"{counted[o]} {o}" for o in classify.OUTCOMES if counted[o])
    )
    lock = [r for r in rows if r.get("lock_problems")]
    paths = Counter(str(r.get("lock_table_paths", "")) for r in rows)
    lines.append(
        f"lock table: {len(lock)} race(s) with a problem; tablePath values per table: {dict(paths)}"
    )
    lines += [f"- {r['order']}: {r['first']} → {r['second']}: {r['lock_problems']}" for r in lock]
    anomalies = [r for r in rows if r["outcome"] in (classify.ANOMALY, classify.ERROR)]
    lines.append(f"{len(anomalies)} anomal(ies) or error(s):")
    lines += [
        f"- {r['order']}: {r['first']} → {r['second']}: {r['outcome']} {r['anomaly_kind']} ({r['detail']})"
        for r in anomalies
    ]
    docs = [r for r in rows if r["agrees_with_docs"] == "no"]
    lines.append(f"{len(docs)} disagreement(s) with the documentation:")
    lines += [f"- {r['order']}: {r['first']} → {r['second']}: {r['disagreement']}" for r in docs]
    local = local_cells()
    differ = [
        (r, local[key])
        for r in rows
        if (key := (r["order"], r["first"], r["second"])) in local and local[key] != r["outcome"]
    ]
    lines.append(
        f"{len(differ)} cell(s) differ from the matrix's local mixed pairs (deltalake 1.6.6):"
    )
    lines += [
        f"- {r['order']}: {r['first']} → {r['second']}: {r['outcome']} here, {was} there"
        for r, was in differ
    ]
    return "\n".join(lines)


def problems(folder: Path) -> list[str]:
    """What keeps ``folder`` from standing as the committed mixed run of its Delta Spark release
    ([] when nothing does): a file missing, an order that did not race every pair, or another
    deltalake than 1.5.1 (a run with ``--deltalake-python``)."""
    if not all((folder / name).is_file() for name in ("matrix.csv", "meta.json")):
        return [f"no matrix.csv and meta.json in {config.shown(folder)}: the run did not finish"]
    meta = json.loads((folder / "meta.json").read_text())
    said = []
    each_run = [
        {engine_name(order, me.RS, spark) for order in ORDERS}
        for spark in engines.SPARK_OF_ERA.values()
    ]
    if run_engines(meta) not in (
        set().union(*chosen) for n in (1, 2) for chosen in itertools.combinations(each_run, n)
    ):
        said.append(
            f"engines {', '.join(meta['engines'])}: only deltalake 1.5.1's run is committed"
        )
    short = [
        f"{order} raced {meta['pairs'].get(order, 0)} of {meta['pairs_per_order']} pairs"
        for order in ORDERS
        if meta["pairs"].get(order, 0) != meta["pairs_per_order"]
    ]
    if short:
        said.append(f"not every pair in both orders ({'; '.join(short)})")
    return said


def publish(folder: Path) -> list[Path]:
    """Make a run the committed mixed run of its Delta Spark release: its rows replace that
    release's in :data:`DATA_CSV` (the other release's stay), and its meta replaces that release's
    in :data:`DATA_META` (``runs``, by engine pair; the top level stays Delta Spark 4.4.0's run).
    Each file is written whole or not at all."""
    import tempfile

    meta = json.loads((folder / "meta.json").read_text())
    ours = run_engines(meta)
    with (folder / "matrix.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    kept, committed = [], {}
    if DATA_CSV.is_file() and DATA_META.is_file():
        with DATA_CSV.open(encoding="utf-8") as handle:
            kept = [row for row in csv.DictReader(handle) if row["engine"] not in ours]
        committed = json.loads(DATA_META.read_text())
    others = committed.get("runs") or ([committed] if committed else [])
    runs = [run for run in others if not run_engines(run) & ours] + [meta]
    runs.sort(key=lambda run: engine_name("spark-first") not in run["engines"])
    merged = runs[0] if len(runs) == 1 else {**runs[0], "runs": runs}
    merged["engines"] = {name: v for run in runs for name, v in run["engines"].items()}
    with tempfile.TemporaryDirectory() as scratch:
        staged = Path(scratch)
        with (staged / "matrix.csv").open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows([*kept, *rows])
        (staged / "meta.json").write_text(json.dumps(merged, indent=2) + "\n")
        return outputs.replace(staged, DATA_CSV, DATA_META)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.matrix.mixed", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--ops",
        help=f"every ordered pair of these, from {', '.join(ops.MATRIX_OPS)} (default: every pair "
        f"of {','.join(DEFAULT_OPS)} and the answer page's other pairs)",
    )
    parser.add_argument(
        "--orders", help=f"comma-separated, from {', '.join(ORDERS)} (default: both)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="results folder (default build/matrix/mixed-dynamodb; Delta Spark 3.3.2's run, in "
        "its era's Python: build/matrix/mixed-dynamodb-3.3)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the tables and their lock items")
    parser.add_argument(
        "--deltalake-python",
        help="a Python whose deltalake replaces 1.5.1 (another release, measured once)",
    )
    args = parser.parse_args(argv)
    try:
        chosen = ops.check_names(
            "operation", args.ops.split(",") if args.ops else [], ops.MATRIX_OPS
        )
        orders = ops.check_names(
            "order", args.orders.split(",") if args.orders else list(ORDERS), tuple(ORDERS)
        )
    except ops.UnknownName as error:
        print(f"{parser.prog}: {error}", file=sys.stderr)
        return 2
    spark = engines.spark_here()
    out = args.out or (
        OUT
        if spark == engines.SPARK
        else OUT.with_name(f"{OUT.name}-{spark.removeprefix('delta-spark-')}")
    )
    rows = run_mixed(
        ops.pairs(chosen) if args.ops else default_pairs(),
        out,
        keep=args.keep,
        orders=tuple(orders),
        rs_python=args.deltalake_python,
    )
    text = (out / "summary.txt").read_text()
    print(f"\n{text}\nResults: {config.shown(out / 'matrix.csv')}")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
