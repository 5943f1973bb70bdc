"""The one-page answer to "is it safe to write to this Delta table from two jobs at once?", as data.

Each :class:`Row` (engine, releases, store, setting) has one cell per race (:data:`COLUMNS`): a
verdict, the releases measured, the notebook section that shows it, and its evidence: pairs of the
conflict matrix (:class:`MatrixCells`, ``data/conflict_matrix.csv``) whose classes decide the verdict
by :data:`RULE`, engines absent from the CSV skipped (so "not measured" until the matrix runs them);
or one check of a notebook's Checks cell (:class:`Check`); or nothing (:class:`Unmeasured`). A row
whose commit protocol loses appends loses data in every cell, on one evidence (:attr:`Row.loses`).
Versions come from :mod:`helpers.boundaries` and :mod:`helpers.eras` only. :func:`grid_of` resolves
every cell from the rows and the CSV (:class:`Results`); :mod:`helpers.answer_page` renders them as
``docs/answer.md``, and this module's :func:`main` runs it::

    python -m helpers.answer           # writes docs/answer.md
    python -m helpers.answer --check   # exit 1 if docs/answer.md differs from a fresh render
"""

from __future__ import annotations

import csv
import re
import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path

from helpers import boundaries as b
from helpers import config, eras

MATRIX_CSV = config.DATA_DIR / "conflict_matrix.csv"

SAFE, REFUSED, LOSES, DUPLICATES, WRONG, MISREPORTS, NOT_MEASURED = (
    "safe", "refused (retry)", "loses data", "duplicates data", "wrong result", "fails though committed", "not measured")
VERDICTS = (SAFE, REFUSED, LOSES, DUPLICATES, WRONG, MISREPORTS, NOT_MEASURED)
LOSING_KINDS = ("lost update", "broken log")
"""Kinds that lose data (a committed write's rows, values or columns gone; the table unreadable).
``duplicated rows`` duplicates data; the others (``resurrected rows``, ``removed twice``) are a wrong
result: nothing acknowledged is missing, yet the table holds what no serial order gives."""
UNDECIDED = ("not available", "error")
RULE = (
    f"a cited pair missing, not available or in error → {NOT_MEASURED}",
    f"any anomaly with a lost update or a broken log → {LOSES}",
    f"else any anomaly with duplicated rows → {DUPLICATES}",
    f"else any anomaly (resurrected rows, a file removed twice) → {WRONG}",
    f"else any refused → {REFUSED}",
    f"else (every pair serializable) → {SAFE}",
)
"""The rule from matrix classes to a verdict. A retry's classes include its run after reloading."""


def v(era_name: str) -> str:
    """The deltalake version of an era (:mod:`helpers.eras`)."""
    return eras.era(era_name).deltalake_version


SEEDS, INTEROP, CURRENT = v(eras.SEEDS), v(eras.DYNAMODB_INTEROP), v(eras.CURRENT)
LAST_REFUSING, OLD_LOCK, SPARK = v(eras.LAST_REFUSING_DOUBLE_OPTIMIZE), v(eras.OLD_LOCK), b.DELTA_SPARK.version
LOG_STORE = f"{b.TABLE_PATH_SLASH.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before}"
"""The releases whose DynamoDB log store shares a lock table with Delta Spark's."""


@dataclass(frozen=True)
class Section:
    """A notebook section: the file in ``notebooks/``, its heading's number (``"2"``, or an appendix's
    letter: ``"appendix C"``) and the text after it."""

    notebook: str
    number: str
    title: str

    @property
    def appendix(self) -> str:
        return self.number.removeprefix("appendix ") if self.number.startswith("appendix ") else ""

    @property
    def label(self) -> str:
        return f"{self.notebook[:2]} {self.number}" if self.appendix else f"{self.notebook[:2]} §{self.number}"

    @property
    def heading(self) -> str:
        """The heading's text, after its hashes: ``2. Title`` or ``Appendix C · Title``."""
        return f"Appendix {self.appendix} · {self.title}" if self.appendix else f"{self.number}. {self.title}"

    @property
    def link(self) -> str:
        """A link from ``docs/`` to the notebook: GitHub's anchors into notebooks are unreliable."""
        return f"[{self.label}](../notebooks/{self.notebook})"


N09 = "09_spark_multi_cluster_s3.ipynb"
S03_3 = Section("03_concurrent_writers_azure.ipynb", "3", "The same writers, retries on")
S05_2 = Section("05_unsafe_rename_data_loss.ipynb", "2", "The auditor: rows, commits, object versions, orphans")
S06_5 = Section("06_dynamodb_lock.ipynb", "5", "Two lock mechanisms on one Delta table")
S07_1 = Section("07_transaction_retries.ipynb", "1", "Concurrent writers, the lock, retries on")
S07_2 = Section("07_transaction_retries.ipynb", "2", "Where retries must not save you")
S08_3 = Section("08_s3_conditional_writes_today.ipynb", "3", "Retries on")
S09_2 = Section(N09, "2", "One driver, several jobs, Delta Spark's default S3 log store")
S09_3 = Section(N09, "3", "Several drivers, Delta Spark's default S3 log store")
S09_4 = Section(N09, "4", "Several drivers, the DynamoDB log store")
S09_5 = Section(N09, "5", "Spark and delta-rs through one lock table")
S09_6 = Section(N09, "6", "The hazard: writers that coordinate differently")
S12_6 = Section("12_torture.ipynb", "6", "Two OPTIMIZEs at once: a finding")
S12_7 = Section("12_torture.ipynb", "7", "The full run: `make torture`")
S12_C = Section("12_torture.ipynb", "appendix C", "A reader's repair fails a live commit: a finding")
N13 = "13_conflict_matrix.ipynb"
S13_4 = Section(N13, "4", "The retried append")
S13_5 = Section(N13, "5", "The full matrix: every engine, every pair")


@dataclass(frozen=True)
class Column:
    """A race: the matrix pairs that answer it (first commits, second from a stale snapshot), and the
    section a matrix cell of it links."""

    key: str
    title: str
    pairs: tuple[tuple[str, str], ...]
    section: Section | None


def _both(ops: tuple[str, ...], other: str) -> tuple[tuple[str, str], ...]:
    return tuple(p for op in ops for p in ((op, other), (other, op)))


WRITERS = ("append", "overwrite", "replace_where", "delete", "update", "merge")
COMPACTIONS = ("optimize", "zorder")
COLUMNS = (
    Column("append", "append ‖ append", (("append", "append"),), S13_5),
    Column("rewrite", "delete/update/merge ‖ append", _both(("delete", "update", "merge"), "append"), S13_5),
    Column("overwrite", "overwrite ‖ append", _both(("overwrite",), "append"), S13_5),
    Column("optimize", "OPTIMIZE ‖ OPTIMIZE (Z-order too)", tuple((x, y) for x in COMPACTIONS for y in COMPACTIONS), S13_5),
    Column("optimize_append", "OPTIMIZE ‖ append", _both(("optimize",), "append"), S13_5),
    Column("vacuum", "VACUUM ‖ writer", _both(WRITERS, "vacuum"), S13_5),
    Column("retry", "retried append", (("append", "retry"), ("append_txn", "retry_txn")), S13_4),
    Column("other", "sharing the table with the other engine", (), S13_5),
)


@dataclass(frozen=True)
class MatrixCells:
    """Matrix pairs of some engines (names or fnmatch patterns; those absent from the CSV skipped)."""

    engines: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Check:
    """A check's name as the notebook's Checks code spells it (an f-string's literal text), and what it
    shows; ``every_run=False``: asserted only when a full run (``make torture``) is present."""

    section: Section
    check: str
    verdict: str
    versions: str
    note: str = ""
    every_run: bool = True


@dataclass(frozen=True)
class Unmeasured:
    note: str = ""


@dataclass(frozen=True)
class Row:
    """``versions``: the releases the setting stands for (cells name those measured); ``name``: short,
    for "what to do"; ``engines``: the matrix engines of every column ``cells`` (column key -> Check or
    Unmeasured) does not give; ``loses``: the commit protocol loses appends, so every cell loses data on
    that one evidence; ``remedy``: matrix pairs of the retried append made safe by ``remedy_how``;
    ``other_from_matrix``: each pair is one engine against the other, so sharing is the worst of all."""

    key: str
    engine: str
    versions: str
    store: str
    setting: str
    name: str
    engines: tuple[str, ...] = ()
    cells: dict = field(default_factory=dict)
    loses: Check | None = None
    remedy: tuple[tuple[str, str], ...] = ()
    remedy_how: str = ""
    other_from_matrix: bool = False


def _rs(*versions: str, s3: bool = True) -> tuple[str, ...]:
    names = [f"deltalake-{x}" for x in versions]
    return tuple(names + [f"{n}@s3" for n in names] if s3 else names)


SPARK_ENGINES = ("delta-spark-4.4", "delta-spark-4.4@s3")
MIXED_ENGINES = ("*spark*deltalake*", "*deltalake*spark*")
RS_FIX = {"remedy": (("append_txn", "retry_checked"),), "remedy_how": "an idempotent-write id "
          "(`Transaction(app_id, version)`) checked with `transaction_version` after reloading"}
SPARK_FIX = {"remedy": (("append_txn", "retry_txn"),), "remedy_how": "`txnAppId` + `txnVersion` on the write"}
MIXED_RACE = "mixed race: rows lost, silent losses, distinct commits per file"
HAZARD = "conditional first: rows lost, distinct commits in commit 1"
UNSAFE_FULL_RUN = "full run: the unsafe protocols lost acknowledged operations"
CB, GONE, REPAIR = b.CONDITIONAL_PUT_DEFAULT, b.DYNAMODB_LOG_STORE_REMOVED, b.STUCK_REPAIR
ROWS = (
    Row("rs-unsafe", "deltalake", f"up to {CB.last_before}", "S3", "`AWS_S3_ALLOW_UNSAFE_RENAME=true`, no lock",
        f"deltalake up to {CB.last_before} with the unsafe rename",
        loses=Check(S05_2, "rows lost (reported as committed, absent from the table)", LOSES, SEEDS)),
    Row("rs-lock-seeds", "deltalake", f"{b.DYNAMODB_LOG_STORE.version}–{CB.last_before}", "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store)", f"deltalake {SEEDS} with the DynamoDB lock",
        engines=_rs(SEEDS), **RS_FIX,
        cells={"append": Check(S07_1, "rows lost", SAFE, SEEDS),
               "other": Unmeasured("its `tablePath` can differ from Spark's (a trailing slash) before "
                                   f"{b.TABLE_PATH_SLASH.version}")}),
    Row("rs-lock-interop", "deltalake", f"{CB.version}–{GONE.last_before}", "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store beside conditional put)",
        f"deltalake {INTEROP} with the DynamoDB lock", engines=_rs(INTEROP), **RS_FIX,
        cells={"append": Check(S12_C, "live repair: the writer's own copy was refused and it was told its append failed",
                               MISREPORTS, INTEROP,
                               note=f"deltalake {REPAIR.version}–{GONE.last_before}: a job loading the table repairs a commit "
                                    f"its writer is still making, and the writer is told \"version N already exists\"; up to "
                                    f"{REPAIR.last_before} it is told it committed; if the repair holds the staged file through the "
                                    "writer's four tries, the writer claims the next version and leaves it without a commit "
                                    "file, and no write through the log store succeeds after it "
                                    "(findings/deltalake-dynamodb-reclaim-after-a-refused-copy); in the conflict matrix's "
                                    "race, where each job loads the table before the other claims a version, both appends "
                                    "commit"),
               "other": Check(S09_5, MIXED_RACE, SAFE, f"{INTEROP} + Delta Spark {SPARK}",
                              note=f"through one lock table and `s3a://` URIs, deltalake {LOG_STORE}")}),
    Row("rs-put", "deltalake", f"{CB.version}–{b.DOUBLE_OPTIMIZE.last_before}", "S3", "conditional put, no lock",
        f"deltalake {CB.version}–{b.DOUBLE_OPTIMIZE.last_before} by conditional put", engines=_rs(INTEROP, LAST_REFUSING),
        **RS_FIX, cells={"other": Unmeasured(f"Spark's plain PUT replaces a conditional one, as measured with {CURRENT} "
                                             "(next row)")}),
    Row("rs-put-today", "deltalake", f"{b.DOUBLE_OPTIMIZE.version}–{CURRENT}", "S3", "conditional put, no lock",
        f"deltalake {b.DOUBLE_OPTIMIZE.version}–{CURRENT} on S3", engines=_rs(CURRENT), **RS_FIX,
        cells={"append": Check(S08_3, "rows lost, retries on", SAFE, CURRENT),
               "other": Check(S09_6, HAZARD, LOSES, f"{CURRENT} + Delta Spark {SPARK}")}),
    Row("rs-azure", "deltalake", CURRENT, "Azure Blob", "put-if-absent (the only commit there)",
        f"deltalake {CURRENT} on Azure", engines=_rs(CURRENT, s3=False), **RS_FIX,
        cells={"append": Check(S03_3, "rows lost, retries on", SAFE, CURRENT),
               "other": Unmeasured("Spark and delta-rs are not raced on Azure here")}),
    Row("spark-one", "Delta Spark", SPARK, "S3", "default S3 log store, one driver (its jobs in one JVM)",
        f"Delta Spark {SPARK} from one driver", engines=SPARK_ENGINES, **SPARK_FIX,
        cells={"append": Check(S09_2, "rows in the one-driver table", SAFE, SPARK),
               "other": Check(S09_6, HAZARD, LOSES, f"{SPARK} + deltalake {CURRENT}")}),
    Row("spark-several", "Delta Spark", SPARK, "S3", "default S3 log store, several drivers (clusters)",
        f"Delta Spark {SPARK}'s default S3 log store from several drivers",
        loses=Check(S09_3, "rows lost by several drivers", LOSES, SPARK)),
    Row("spark-dynamodb", "Delta Spark", SPARK, "S3 + DynamoDB", "S3DynamoDBLogStore",
        f"Delta Spark {SPARK} with the DynamoDB log store", engines=SPARK_ENGINES, **SPARK_FIX,
        cells={"append": Check(S09_4, "rows lost with the DynamoDB log store", SAFE, SPARK),
               "other": Check(S12_7, UNSAFE_FULL_RUN, LOSES, f"{SPARK} + deltalake {CURRENT}", every_run=False,
                              note=f"with deltalake {LOG_STORE} through the same lock table: safe ({S09_5.label})")}),
    Row("mixed-lock", "Delta Spark + deltalake", f"{SPARK} + {LOG_STORE}", "S3 + DynamoDB",
        "one lock table (both DynamoDB log stores), `s3a://` URIs",
        f"Delta Spark {SPARK} and deltalake {INTEROP} through one lock table",
        cells={**{c.key: Unmeasured(f"the conflict matrix's mixed pairs run deltalake {CURRENT}: see the local-disk row")
                  for c in COLUMNS}, "append": Check(S09_5, MIXED_RACE, SAFE, f"{SPARK} + {INTEROP}")}),
    Row("mixed-put", "Delta Spark + deltalake", f"{SPARK} + {GONE.version}–{CURRENT}", "S3 + DynamoDB",
        "Spark through the DynamoDB log store, deltalake by conditional put",
        f"Delta Spark with the DynamoDB log store beside deltalake {GONE.version} or later",
        loses=Check(S12_7, UNSAFE_FULL_RUN, LOSES, f"{SPARK} + {CURRENT}", every_run=False)),
    Row("mixed-local", "Delta Spark + deltalake", f"{SPARK} + {CURRENT}", "local disk",
        "each engine's own put-if-absent commit (the matrix's mixed pairs)",
        f"Delta Spark {SPARK} and deltalake {CURRENT} on one local table", engines=MIXED_ENGINES, other_from_matrix=True),
    Row("two-locks", "deltalake + deltalake", f"{OLD_LOCK} + {SEEDS}", "S3 + DynamoDB",
        "each writer its own lock (the seeds' lease, the log store)", "two lock mechanisms on one table",
        loses=Check(S06_5, "two-lock race: rows lost", LOSES, f"{OLD_LOCK} + {SEEDS}")),
)


def evidence(row: Row, column: Column) -> Check | MatrixCells | Unmeasured:
    """What decides one cell, without reading any data: the row's loss, its check or note, or matrix pairs."""
    if row.loses:
        return row.loses
    if column.key in row.cells:
        return row.cells[column.key]
    if column.key == "other" and row.other_from_matrix:
        return MatrixCells(row.engines, tuple(p for c in COLUMNS for p in c.pairs))
    return MatrixCells(row.engines, column.pairs) if row.engines and column.pairs else Unmeasured()


class Results:
    """The conflict matrix's rows (``data/conflict_matrix.csv``), by engine and pair."""

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self.by_pair = {(r["engine"], r["first"], r["second"]): r for r in rows}
        self.engine_names = list(dict.fromkeys(r["engine"] for r in rows))

    @classmethod
    def load(cls, path: Path = MATRIX_CSV) -> Results:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            return cls(list(csv.DictReader(handle)))

    def engines(self, names: tuple[str, ...]) -> list[str]:
        """The CSV's engines that ``names`` (names or fnmatch patterns) select, in the CSV's order."""
        return [e for e in self.engine_names if any(fnmatch.fnmatchcase(e, n) for n in names)]

    def cited(self, cells: MatrixCells) -> tuple[list[str], list[dict | None]]:
        """The engines present, and for each of them and each pair its row (None where missing)."""
        present = self.engines(cells.engines)
        found = [(e, self.by_pair.get((e, first, second))) for e in present for first, second in cells.pairs]
        # a confirmation on S3 (``<engine>@s3``) may race a sample of the pairs: a pair it skipped is no gap
        return present, [row for e, row in found if row is not None or not e.endswith(CONFIRMATION)]

    def versions(self, engines: list[str]) -> str:
        """The versions those engines ran (the CSV's ``engine_version``), ascending, comma-separated."""
        found = {short_version(r["engine_version"]) for r in self.rows if r["engine"] in engines}
        return ", ".join(sorted(found, key=lambda x: [(0, int(p), "") if p.isdigit() else (1, 0, p)
                                                      for p in re.split(r"[.+ /]+", x)]))


def short_version(engine_version: str) -> str:
    """A version as the page names it: ``1.6.6``, ``Delta Spark 4.4.0`` for Spark's
    ``Apache-Spark/4.2.0 Delta-Lake/4.4.0``, and ``Delta Spark 4.4.0 + 1.6.6`` for a mixed pair."""
    parts = [part.strip() for part in engine_version.split(" / ")]
    named = [f"Delta Spark {m.group(1)}" if (m := re.search(r"Delta-Lake/(\S+)", part)) else part for part in parts]
    return " + ".join(named)


CONFIRMATION = "@s3"
"""The suffix of an engine that confirms another's cells on the S3 emulator."""


def verdict_of(rows: list[dict | None]) -> str:
    """The verdict of some matrix rows by :data:`RULE` (no rows, or a missing one: not measured)."""
    if not rows or any(r is None for r in rows):
        return NOT_MEASURED
    outcomes = {r["outcome"] for r in rows} | {r["retry_after_reload"] for r in rows if r["retry_after_reload"]}
    if outcomes & set(UNDECIDED):
        return NOT_MEASURED
    kinds = {k for r in rows for text in (r["anomaly_kind"], r["retry_after_reload_kind"]) for k in text.split(" + ") if k}
    if "anomaly" in outcomes:
        return LOSES if kinds & set(LOSING_KINDS) else DUPLICATES if "duplicated rows" in kinds else WRONG
    return REFUSED if "refused" in outcomes else SAFE


@dataclass(frozen=True)
class Cell:
    """One resolved cell; ``engines``: for a matrix cell, those whose rows decided it."""

    verdict: str
    versions: str
    section: Section | None
    evidence: Check | MatrixCells | Unmeasured
    engines: tuple[str, ...] = ()
    note: str = ""


def resolve(row: Row, column: Column, results: Results) -> Cell:
    """One cell: its verdict (the check's, or the matrix's by the rule), versions, section, evidence."""
    found = evidence(row, column)
    if isinstance(found, Check):
        return Cell(found.verdict, found.versions, found.section, found, note=found.note)
    if isinstance(found, Unmeasured):
        return Cell(NOT_MEASURED, "", None, found, note=found.note)
    present, rows = results.cited(found)
    note = "" if present else f"no rows for {' / '.join(found.engines)} in the conflict matrix yet"
    return Cell(verdict_of(rows), results.versions(present), column.section, found, tuple(present), note)


def grid_of(results: Results) -> dict[tuple[str, str], Cell]:
    """Every cell, by (row key, column key)."""
    return {(r.key, c.key): resolve(r, c, results) for r in ROWS for c in COLUMNS}


def remedy(row: Row, results: Results) -> tuple[str, str]:
    """The retried append made safe: the verdict of the row's remedy pairs, and the versions measured."""
    present, rows = results.cited(MatrixCells(row.engines, row.remedy))
    return (verdict_of(rows), results.versions(present)) if row.remedy else (NOT_MEASURED, "")


def main(argv: list[str] | None = None) -> int:
    """``python -m helpers.answer [--check]``: the page is rendered by :mod:`helpers.answer_page`."""
    from helpers import answer_page  # imported here: it imports this module's data

    return answer_page.main(argv)


if __name__ == "__main__":
    sys.exit(main())
