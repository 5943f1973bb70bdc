"""The one-page answer to "is it safe to write to this Delta table from two jobs at once?", as data.

Each :class:`Row` (engine, releases, store, setting) has one cell per race (:data:`COLUMNS`): a
verdict, the releases measured, the notebook section that shows it, and its evidence: pairs of the
conflict matrix (:class:`MatrixCells`, ``data/conflict_matrix.csv``; for Delta Spark and deltalake through
one lock table, the mixed run's ``data/conflict_matrix_mixed_dynamodb.csv``) whose classes decide the verdict
by :data:`RULE`, engines absent from the CSV skipped (so "not measured" until the matrix runs them);
or one check of a notebook's Checks cell (:class:`Check`); or nothing (:class:`Unmeasured`). A row
whose commit protocol loses appends loses data in every cell, on one evidence (:attr:`Row.loses`).
Versions come from :mod:`helpers.page.boundaries` and :mod:`helpers.ground.eras` only. :func:`grid_of` resolves
every cell from the rows and the CSV (:class:`helpers.page.answer_matrix.Results`, with the verdicts and
their rule); each cell also names the words of its section that state its verdict (``claim``,
:data:`MATRIX_CLAIMS`). :mod:`helpers.page.answer_page` renders them as ``docs/answer.md``
(``python -m helpers.page.answer_page``); this module imports nothing of it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field

from helpers.ground import config, eras
from helpers.matrix import operations as matrix_ops
from helpers.page import answer_matrix
from helpers.page import boundaries as b
from helpers.page.answer_matrix import (  # noqa: F401  (the page and the tests use them from here)
    BY_DESIGN,
    DUPLICATES,
    LOSES,
    LOSING_KINDS,
    MATRIX_CSV,
    MISREPORTS,
    NOT_MEASURED,
    REFUSED,
    RULE,
    SAFE,
    UNDECIDED,
    VERDICTS,
    WRONG,
    short_version,
    verdict_of,
)

MIXED_CSV = config.DATA_DIR / "conflict_matrix_mixed_dynamodb.csv"
"""The mixed run (``make matrix-mixed``): Delta Spark's DynamoDB log store and deltalake's DynamoDB lock on
one S3 table through one lock table, every pair in both orders."""
MIXED_RUN = "the mixed run on S3 (`make matrix-mixed`)"
MIXED_LINK = "[data/conflict_matrix_mixed_dynamodb.csv](../data/conflict_matrix_mixed_dynamodb.csv)"
"""How a cell of the mixed run was decided, and its evidence, as the page says them."""


class Results(answer_matrix.Results):
    """The conflict matrix's rows and the mixed run's (``MIXED_CSV``), by engine and pair."""

    @classmethod
    def load(cls, path=MATRIX_CSV, mixed=MIXED_CSV) -> Results:
        rows = []
        for one in (path, mixed) if mixed else (path,):
            with open(one, newline="", encoding="utf-8") as handle:
                rows += list(csv.DictReader(handle))
        return cls(rows)


def v(era_name: str) -> str:
    """The deltalake version of an era (:mod:`helpers.ground.eras`)."""
    return eras.era(era_name).deltalake_version


SEEDS, INTEROP, CURRENT = v(eras.SEEDS), v(eras.DYNAMODB_INTEROP), v(eras.CURRENT)
LAST_REFUSING, OLD_LOCK, SPARK = (
    v(eras.LAST_REFUSING_DOUBLE_OPTIMIZE),
    v(eras.OLD_LOCK),
    b.DELTA_SPARK.version,
)
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
        return (
            f"{self.notebook[:2]} {self.number}"
            if self.appendix
            else f"{self.notebook[:2]} §{self.number}"
        )

    @property
    def heading(self) -> str:
        """The heading's text, after its hashes: ``2. Title`` or ``Appendix C · Title``."""
        return (
            f"Appendix {self.appendix} · {self.title}"
            if self.appendix
            else f"{self.number}. {self.title}"
        )

    @property
    def anchor(self) -> str:
        """The id the section's heading carries (``<a id="section-2"></a>``, ``<a id="appendix-c"></a>``)."""
        return f"appendix-{self.appendix.lower()}" if self.appendix else f"section-{self.number}"

    @property
    def target(self) -> str:
        """The notebook at the section, from ``docs/``, in the learner's edition (``student/``)."""
        return f"../student/{self.notebook}#{self.anchor}"

    @property
    def solutions_target(self) -> str:
        """The same section in the solutions edition (``notebooks/``: the exercises' answers in it)."""
        return f"../notebooks/{self.notebook}#{self.anchor}"

    @property
    def link(self) -> str:
        """A link from ``docs/`` to the section in the learner's edition (``student/``), then to the same
        section in the solutions edition (``notebooks/``), each at the heading's anchor."""
        return f"[{self.label}]({self.target}) ([{SOLUTIONS_EDITION}]({self.solutions_target}))"


SOLUTIONS_EDITION = "solutions edition"
"""What a link to ``notebooks/`` says: the edition with the exercises' answers in it."""


N09 = "09_spark_multi_cluster_s3.ipynb"
S03_3 = Section("03_concurrent_writers_azure.ipynb", "3", "The same writers, retries on")
S05_2 = Section(
    "05_unsafe_rename_data_loss.ipynb", "2", "The auditor: rows, commits, object versions, orphans"
)
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
S12_C = Section(
    "12_torture.ipynb", "appendix C", "A reader's repair fails a live commit: a finding"
)
S15_5 = Section("15_catalog_managed_tables.ipynb", "5", "Several drivers at once")
S15_8 = Section("15_catalog_managed_tables.ipynb", "8", "Maintenance: the catalog's job")
S15_9 = Section("15_catalog_managed_tables.ipynb", "9", "A second engine through the same catalog")
N13 = "13_conflict_matrix.ipynb"
S13_4 = Section(N13, "4", "The retried append")
S13_5 = Section(N13, "5", "The full matrix: every engine, every pair")
S13_6 = Section(N13, "6", "Parallel backfills: one operation, partitions of their own")


@dataclass(frozen=True)
class Column:
    """A race: the matrix pairs that answer it (first commits, second from a stale snapshot), and the
    section a matrix cell of it links."""

    key: str
    title: str
    pairs: tuple[tuple[str, str], ...]
    section: Section | None
    layout: str = ""
    """Set for a race the matrix runs on another layout only: the engines' ``<engine>+<layout>`` rows
    answer it (the same operation from two jobs on parts of their own, :data:`APART`)."""


def _both(ops: tuple[str, ...], other: str) -> tuple[tuple[str, str], ...]:
    return tuple(p for op in ops for p in ((op, other), (other, op)))


WRITERS = ("append", "overwrite", "replace_where", "delete", "delete_all", "update", "merge")
COMPACTIONS = ("optimize", "zorder")
REWRITES = ("overwrite", "delete_all")
"""The writes that remove every file they read (no predicate): apart from the others where a verdict differs."""
APART = tuple(
    (matrix_ops.OPERATIONS[x].apart_of, x) for x in matrix_ops.APART_OPS if x != "merge_on_id_apart"
)
"""The same operation from two jobs, each on a partition of its own named in its condition (the matrix's
pairs of :data:`helpers.matrix.operations.APART_OPS`; the MERGE whose condition does not name the
partition is a condition of the cell: :data:`helpers.page.answer_matrix.UNNAMED_MERGE`)."""
COLUMNS = (
    Column("append", "append ‖ append", (("append", "append"),), S13_5),
    Column(
        "rewrite",
        "delete/update/merge ‖ append",
        _both(("delete", "update", "merge"), "append"),
        S13_5,
    ),
    Column(
        "delete_all_append", "DELETE of every row ‖ append", _both(("delete_all",), "append"), S13_5
    ),
    Column(
        "overwrite",
        "overwrite or replaceWhere ‖ append",
        _both(("overwrite", "replace_where"), "append"),
        S13_5,
    ),
    Column(
        "optimize",
        "OPTIMIZE ‖ OPTIMIZE (Z-order too)",
        tuple((x, y) for x in COMPACTIONS for y in COMPACTIONS),
        S13_5,
    ),
    Column("optimize_append", "OPTIMIZE ‖ append", _both(("optimize",), "append"), S13_5),
    Column(
        "optimize_delete",
        "OPTIMIZE ‖ DELETE with a predicate or replaceWhere",
        tuple(p for op in COMPACTIONS for p in _both(("delete", "replace_where"), op)),
        S13_5,
    ),
    Column(
        "optimize_rewrite",
        "OPTIMIZE ‖ DELETE of every row or full overwrite",
        tuple(p for op in COMPACTIONS for p in _both(("delete_all", "overwrite"), op)),
        S13_5,
    ),
    Column(
        "vacuum",
        "VACUUM ‖ append, DELETE with a predicate, UPDATE, MERGE or replaceWhere",
        _both(tuple(w for w in WRITERS if w not in REWRITES), "vacuum"),
        S13_5,
    ),
    Column(
        "vacuum_rewrite",
        "VACUUM ‖ DELETE of every row or full overwrite",
        _both(REWRITES, "vacuum"),
        S13_5,
    ),
    Column(
        "backfill",
        "one operation ‖ itself, each job's condition naming a partition of its own (backfills)",
        APART,
        S13_6,
        layout="partitions",
    ),
    Column("retry", "retried append", (("append", "retry"), ("append_txn", "retry_txn")), S13_4),
    Column("other", "sharing the table with the other engine", (), S13_5),
)


@dataclass(frozen=True)
class MatrixCells:
    """Matrix pairs of some engines (names or fnmatch patterns; those absent from the CSV skipped)."""

    engines: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...]
    note: str = ""
    also: tuple[str, tuple[tuple[str, str], ...]] = ()
    """``(condition, pairs)``: more pairs the cell states apart, under that condition, where their verdict
    differs from the cell's."""


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
    claim: str = ""
    """Words of the section (its prose or committed output) that state what the cell says; a test
    checks they are there and that they say the cell's verdict."""
    refuses: tuple[str, ...] = ()
    """For a verdict of :data:`BY_DESIGN`: the operations the setting never allows, as a sentence names
    them (the matrix's operations by their words in :data:`helpers.page.answer_matrix.OP_WORDS`)."""


@dataclass(frozen=True)
class Unmeasured:
    note: str = ""


@dataclass(frozen=True)
class Row:
    """``versions``: the releases the setting stands for (cells name those measured); ``name``: short,
    for "what to do"; ``engines``: the matrix engines of every column ``cells`` (column key -> Check or
    Unmeasured) does not give; ``loses``: the commit protocol loses appends, so every cell loses data on
    that one evidence; ``remedy``: matrix pairs of the retried append made safe by ``remedy_how``;
    ``other_from_matrix``: each pair is one engine against the other, so sharing is the worst of all;
    ``other_engine``: the engine its "other" cell measured beside it, where that is not the other of
    Delta Spark and deltalake."""

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
    other_engine: str = ""


def _rs(*versions: str, s3: bool = True) -> tuple[str, ...]:
    names = [f"deltalake-{x}" for x in versions]
    return tuple(names + [f"{n}@s3" for n in names] if s3 else names)


SPARK_ENGINES = ("delta-spark-4.4", "delta-spark-4.4@s3")
MIXED_ENGINES = ("spark-then-deltalake-*", "deltalake-*-then-spark")
"""The conflict matrix's mixed pairs on local disk (each engine's own put-if-absent commit)."""
MIXED_LOCK_ENGINES = (
    f"spark-dynamodb-then-deltalake-{INTEROP}",
    f"deltalake-{INTEROP}-then-spark-dynamodb",
)
"""The mixed run's engines (``MIXED_CSV``): Delta Spark first, then deltalake, and the other order."""
MIXED_ORDERS = dict(
    zip(
        MIXED_LOCK_ENGINES,
        ("when Delta Spark's job commits first", "when deltalake's job commits first"),
    )
)
"""Each of the mixed run's engines as the order of the two jobs, in a condition's words."""
RS_FIX = {
    "remedy": (("append_txn", "retry_checked"),),
    "remedy_how": "an idempotent-write id "
    "(`Transaction(app_id, version)`) checked with `transaction_version` after reloading",
}
SPARK_FIX = {
    "remedy": (("append_txn", "retry_txn"),),
    "remedy_how": "`txnAppId` + `txnVersion` on the write",
}
MIXED_RACE = "mixed race: rows lost, silent losses, distinct commits per file"
HAZARD = "conditional first: rows lost, distinct commits in commit 1"
UNSAFE_FULL_RUN = "full run: the unsafe protocols lost acknowledged operations"
MIXED_CLAIM = "another may say it failed although its commit is in the log"
MIXED_TOLD = (
    f"deltalake {INTEROP} can be told its append failed although it is in the log, and a job that trusts that "
    f"error and runs again appends its rows twice ({S09_5.label}): never rerun an append on that error; give "
    f"it {RS_FIX['remedy_how']}, as deltalake alone measures it"
)
SHARED_PAIRS = tuple(
    p
    for c in COLUMNS
    if not c.layout and c.key not in ("retry", "other") and not c.key.startswith("vacuum")
    for p in c.pairs
)
"""Every pair the matrix races on one table but VACUUM's: what one engine meets beside the other."""
VACUUM_PAIRS = tuple(p for c in COLUMNS if c.key.startswith("vacuum") for p in c.pairs)
WITH_VACUUM = "when one engine's zero-retention VACUUM runs beside the other's writes"


def shared_with_the_other(note: str) -> MatrixCells:
    """A single engine's "other" cell: the mixed run's pairs, and VACUUM's beside them where they differ."""
    return MatrixCells(
        MIXED_LOCK_ENGINES, SHARED_PAIRS, note=note, also=(WITH_VACUUM, VACUUM_PAIRS)
    )


HAZARD_CLAIM = "rows are gone: commit 1 holds"
FULL_RUN_CLAIM = "mixed-spark-and-deltalake-1.6 lost"
CB, GONE, REPAIR = b.CONDITIONAL_PUT_DEFAULT, b.DYNAMODB_LOG_STORE_REMOVED, b.STUCK_REPAIR
ROWS = (
    Row(
        "rs-unsafe",
        "deltalake",
        f"up to {CB.last_before}",
        "S3",
        "`AWS_S3_ALLOW_UNSAFE_RENAME=true`, no lock",
        f"deltalake up to {CB.last_before} with the unsafe rename",
        loses=Check(
            S05_2,
            "rows lost (reported as committed, absent from the table)",
            LOSES,
            SEEDS,
            claim="reported as committed, the table holds",
        ),
    ),
    Row(
        "rs-lock-seeds",
        "deltalake",
        f"{b.DYNAMODB_LOG_STORE.version}–{CB.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store)",
        f"deltalake {SEEDS} with the DynamoDB lock",
        engines=_rs(SEEDS),
        **RS_FIX,
        cells={
            "append": Check(S07_1, "rows lost", SAFE, SEEDS, claim="lost 0"),
            "other": Unmeasured(
                "its `tablePath` can differ from Spark's (a trailing slash) before "
                f"{b.TABLE_PATH_SLASH.version}"
            ),
        },
    ),
    Row(
        "rs-lock-early",
        "deltalake",
        f"{CB.version}–{REPAIR.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store beside conditional put)",
        f"deltalake {CB.version}–{REPAIR.last_before} with the DynamoDB lock",
        cells={
            c.key: Unmeasured(
                f"no release from {CB.version} to {REPAIR.last_before} is raced here; in those releases a job that "
                "repairs a commit its writer is still making copies it plainly, and the writer is told "
                f"it committed ({S12_C.label}; findings/deltalake-dynamodb-repair-of-a-live-commit)"
            )
            for c in COLUMNS
        },
    ),
    Row(
        "rs-lock-interop",
        "deltalake",
        f"{REPAIR.version}–{GONE.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store beside conditional put)",
        f"deltalake {INTEROP} with the DynamoDB lock",
        engines=_rs(INTEROP),
        **RS_FIX,
        cells={
            "append": Check(
                S12_C,
                "live repair: the writer's own copy was refused and it was told its append failed",
                MISREPORTS,
                INTEROP,
                claim='reports "version N already exists" for an append that is in the log',
                note=f"deltalake {REPAIR.version}–{GONE.last_before}: a job loading the table repairs a commit "
                'its writer is still making, and the writer is told "version N already exists"; if the '
                "repair holds the staged file through the writer's four tries, the writer claims the next "
                "version and leaves it without a commit file, and no write through the log store succeeds "
                "after it (findings/deltalake-dynamodb-reclaim-after-a-refused-copy); in the conflict "
                "matrix's race, where each job loads the table before the other claims a version, both "
                "appends commit",
            ),
            "other": shared_with_the_other(
                f"through one lock table and `s3a://` URIs (the mixed-lock row); {MIXED_TOLD}"
            ),
        },
    ),
    Row(
        "rs-put",
        "deltalake",
        f"{CB.version}–{b.DOUBLE_OPTIMIZE.last_before}",
        "S3",
        "conditional put, no lock",
        f"deltalake {CB.version}–{b.DOUBLE_OPTIMIZE.last_before} by conditional put",
        engines=_rs(INTEROP, LAST_REFUSING),
        **RS_FIX,
        cells={
            "other": Unmeasured(
                f"Spark's plain PUT replaces a conditional one, as measured with {CURRENT} "
                "(next row)"
            )
        },
    ),
    Row(
        "rs-put-today",
        "deltalake",
        f"{b.DOUBLE_OPTIMIZE.version}–{CURRENT}",
        "S3",
        "conditional put, no lock",
        f"deltalake {b.DOUBLE_OPTIMIZE.version}–{CURRENT} on S3",
        engines=_rs(CURRENT),
        **RS_FIX,
        cells={
            "append": Check(
                S08_3,
                "rows lost, retries on",
                SAFE,
                CURRENT,
                claim="Every commit file written once, no row lost.",
            ),
            "other": Check(
                S09_6, HAZARD, LOSES, f"{CURRENT} + Delta Spark {SPARK}", claim=HAZARD_CLAIM
            ),
        },
    ),
    Row(
        "rs-azure",
        "deltalake",
        CURRENT,
        "Azure Blob",
        "put-if-absent (the only commit there)",
        f"deltalake {CURRENT} on Azure",
        engines=_rs(CURRENT, s3=False),
        **RS_FIX,
        cells={
            "append": Check(
                S03_3, "rows lost, retries on", SAFE, CURRENT, claim="rows added, 0 lost"
            ),
            "other": Unmeasured("Spark and delta-rs are not raced on Azure here"),
        },
    ),
    Row(
        "spark-one",
        "Delta Spark",
        SPARK,
        "S3",
        "default S3 log store, one driver (its jobs in one JVM)",
        f"Delta Spark {SPARK} from one driver",
        engines=SPARK_ENGINES,
        **SPARK_FIX,
        cells={
            "append": Check(
                S09_2, "rows in the one-driver table", SAFE, SPARK, claim="Why nothing is lost."
            ),
            "other": Check(
                S09_6, HAZARD, LOSES, f"{SPARK} + deltalake {CURRENT}", claim=HAZARD_CLAIM
            ),
        },
    ),
    Row(
        "spark-several",
        "Delta Spark",
        SPARK,
        "S3",
        "default S3 log store, several drivers (clusters)",
        f"Delta Spark {SPARK}'s default S3 log store from several drivers",
        loses=Check(
            S09_3,
            "rows lost by several drivers",
            LOSES,
            SPARK,
            claim="several drivers on one `s3a://` table still lose commits, and none of them notices",
        ),
    ),
    Row(
        "spark-dynamodb",
        "Delta Spark",
        SPARK,
        "S3 + DynamoDB",
        "S3DynamoDBLogStore",
        f"Delta Spark {SPARK} with the DynamoDB log store",
        engines=SPARK_ENGINES,
        **SPARK_FIX,
        cells={
            "append": Check(
                S09_4,
                "rows lost with the DynamoDB log store",
                SAFE,
                SPARK,
                claim="a commit that won DynamoDB is never lost",
            ),
            "other": shared_with_the_other(
                f"deltalake {INTEROP} through the same lock table and `s3a://` URIs (the mixed-lock row); "
                f"{MIXED_TOLD}; deltalake {GONE.version} and later cannot take part in the lock and lose appends "
                "beside it (the mixed-put row)"
            ),
        },
    ),
    Row(
        "spark-catalog",
        "Delta Spark",
        SPARK,
        "local disk + Unity Catalog",
        "catalog-managed table (`catalogManaged`): the catalog ratifies each commit. A user's setting "
        "is Unity Catalog's Spark connector (`UCSingleCatalog`), not obtainable here; the workbook's "
        "session extension stands in for the commit coordinator it builds",
        f"Delta Spark {SPARK} on a catalog-managed table",
        cells={
            "append": Check(
                S15_5,
                "race: problems found reading storage and the catalog",
                SAFE,
                SPARK,
                claim="each driver's every batch is in the table once",
                note="one race per run of notebook 15 (3 drivers, 2 appends each: 6 commits through "
                "the catalog, drivers without Spark's testing flag); the verdict rests on that run",
            ),
            **{
                key: Check(
                    S15_8,
                    "maintenance: OPTIMIZE, Z-order and REORG refused, nothing written under "
                    "_delta_log/",
                    BY_DESIGN,
                    SPARK,
                    claim="OPTIMIZE (Z-order too) and REORG are refused",
                    refuses=("OPTIMIZE", "Z-order", "REORG"),
                    note=f"whatever runs beside them, Delta Spark {SPARK} refuses OPTIMIZE, Z-order "
                    "and REORG on a catalog-managed table with DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION before "
                    "writing anything, and a rerun is refused again: the catalog compacts the table. "
                    f"{SPARK} still commits a rewrite marked dataChange=false, which Delta "
                    f"{b.CATALOG_MANAGED_MAINTENANCE.version} refuses (15 §8; "
                    f"{b.CATALOG_MANAGED_MAINTENANCE.version} is not obtainable here): write fewer, "
                    "larger files instead",
                )
                for key in ("optimize", "optimize_append", "optimize_delete", "optimize_rewrite")
            },
            **{
                key: Check(
                    S15_8,
                    "maintenance: VACUUM refused, nothing written under _delta_log/",
                    BY_DESIGN,
                    SPARK,
                    claim="VACUUM is refused too",
                    refuses=("VACUUM",),
                    note=f"whatever runs beside it, Delta Spark {SPARK} refuses VACUUM on a "
                    "catalog-managed table before deleting or writing anything, and a rerun is refused "
                    "again: the catalog cleans the table. Here its error is an assertion that the "
                    "table is MANAGED in Spark's catalog (the workbook names it as external); with "
                    "Unity Catalog's connector it is DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION "
                    "(read in Delta's code)",
                )
                for key in ("vacuum", "vacuum_rewrite")
            },
            "other": Check(
                S15_9,
                "kernel race: problems found reading storage and the catalog",
                SAFE,
                f"{SPARK} + Delta Kernel {SPARK}",
                claim="Every batch of both engines is in the table once",
                note=f"Kernel commits through the catalog with its own Unity Catalog committer "
                f"(`io.delta:delta-kernel-unitycatalog:{SPARK}`) beside Delta Spark {SPARK} drivers, "
                "all at one barrier as in 15 §5, checked the same way from storage and the catalog; "
                "one race per run of notebook 15 (1 Kernel writer and 2 Delta Spark drivers, 2 "
                "appends each: 6 commits through the catalog), and the verdict rests on that run. "
                f"deltalake {CURRENT} neither reads nor writes a catalog-managed table (15 §6)",
            ),
        },
        other_engine=f"Java Delta Kernel {SPARK}",
    ),
    Row(
        "mixed-lock",
        "Delta Spark + deltalake",
        f"{SPARK} + {LOG_STORE}",
        "S3 + DynamoDB",
        "one lock table (both DynamoDB log stores), `s3a://` URIs",
        f"Delta Spark {SPARK} and deltalake {INTEROP} through one lock table",
        engines=MIXED_LOCK_ENGINES,
        other_from_matrix=True,
        cells={
            "append": Check(
                S09_5,
                MIXED_RACE,
                MISREPORTS,
                f"{SPARK} + {INTEROP}",
                claim=MIXED_CLAIM,
                note=MIXED_TOLD,
            ),
            "backfill": Unmeasured(
                "the mixed run races the two engines on one unpartitioned table, not on partitions of their own"
            ),
            "retry": Unmeasured(
                "the mixed run reruns no append; a writer told its append failed may have committed it "
                f"({S09_5.label}): give every append an idempotent-write id"
            ),
        },
    ),
    Row(
        "mixed-put",
        "Delta Spark + deltalake",
        f"{SPARK} + {GONE.version}–{CURRENT}",
        "S3 + DynamoDB",
        "Spark through the DynamoDB log store, deltalake by conditional put",
        f"Delta Spark with the DynamoDB log store beside deltalake {GONE.version} or later",
        loses=Check(
            S12_7,
            UNSAFE_FULL_RUN,
            LOSES,
            f"{SPARK} + {CURRENT}",
            every_run=False,
            claim=FULL_RUN_CLAIM,
        ),
    ),
    Row(
        "mixed-local",
        "Delta Spark + deltalake",
        f"{SPARK} + {CURRENT}",
        "local disk",
        "each engine's own put-if-absent commit (the matrix's mixed pairs)",
        f"Delta Spark {SPARK} and deltalake {CURRENT} on one local table",
        engines=MIXED_ENGINES,
        other_from_matrix=True,
    ),
    Row(
        "two-locks",
        "deltalake + deltalake",
        f"{OLD_LOCK} + {SEEDS}",
        "S3 + DynamoDB",
        "each writer its own lock (the seeds' lease, the log store)",
        "two lock mechanisms on one table",
        loses=Check(
            S06_5,
            "two-lock race: rows lost",
            LOSES,
            f"{OLD_LOCK} + {SEEDS}",
            claim="the later one replaced the other",
        ),
    ),
)


def evidence(row: Row, column: Column) -> Check | MatrixCells | Unmeasured:
    """What decides one cell, without reading any data: the row's loss, its check or note, or matrix pairs."""
    if row.loses:
        return row.loses
    if column.key in row.cells:
        return row.cells[column.key]
    if (
        column.key == "other" and row.other_from_matrix
    ):  # every race but VACUUM's, which its own column shows
        return MatrixCells(
            row.engines,
            tuple(
                p
                for c in COLUMNS
                if not c.key.startswith("vacuum")
                and not c.layout
                and not isinstance(row.cells.get(c.key), Unmeasured)
                for p in c.pairs
            ),
        )
    if (
        column.layout and row.engines and column.key not in row.cells
    ):  # the engines' own variant on that layout (not the S3 confirmations)
        single = tuple(
            f"{e}+{column.layout}" for e in row.engines if "*" not in e and not e.endswith("@s3")
        )
        return (
            MatrixCells(single, column.pairs)
            if single
            else Unmeasured(
                "the conflict matrix races two jobs on parts of their own with one engine at a time"
            )
        )
    return MatrixCells(row.engines, column.pairs) if row.engines and column.pairs else Unmeasured()


MATRIX_CLAIMS = {
    (
        "append",
        SAFE,
    ): "Two appends from one snapshot both commit, in every engine and every mixed pair, each at a "
    "version of its own: nothing lost.",
    (
        "rewrite",
        REFUSED,
    ): "They are loud failures either way: the later job commits nothing, and a rerun from a fresh "
    "snapshot commits.",
    (
        "overwrite",
        REFUSED,
    ): "They are loud failures either way: the later job commits nothing, and a rerun from a fresh "
    "snapshot commits.",
    (
        "overwrite",
        SAFE,
    ): "deltalake 0.22.3 (before 1.2.0) lets an append and an overwrite from one snapshot both commit, "
    "as the documentation allows, and the table equals a serial order: nothing lost.",
    ("optimize", DUPLICATES): "every compacted row is then in the table twice",
    (
        "optimize",
        REFUSED,
    ): "deltalake 0.22.3, 1.5.1 and 1.6.3 and Delta Spark refuse all eight: the later job fails "
    "loudly and commits nothing.",
    (
        "optimize_delete",
        REFUSED,
    ): "deltalake 0.22.3, 1.5.1 and 1.6.3 and Delta Spark refuse all eight: the later job "
    "fails loudly and commits nothing.",
    (
        "optimize_rewrite",
        REFUSED,
    ): "deltalake 0.22.3, 1.5.1 and 1.6.3 and Delta Spark refuse all eight: the later job "
    "fails loudly and commits nothing.",
    (
        "optimize_rewrite",
        WRONG,
    ): "reports the rows it deleted, and the table still holds all of them: the delete deletes "
    "nothing.",
    (
        "optimize_append",
        SAFE,
    ): "An OPTIMIZE and an append from one snapshot both commit, in either order and in every "
    "engine: nothing lost, since a compaction changes no row.",
    ("vacuum", REFUSED): "a later overwrite fails with a conflict: loudly, nothing lost.",
    (
        "vacuum",
        WRONG,
    ): "an overwrite from a snapshot older than that OPTIMIZE commits, and the rows it replaced come back.",
    ("vacuum_rewrite", REFUSED): "a later overwrite fails with a conflict: loudly, nothing lost.",
    (
        "vacuum_rewrite",
        WRONG,
    ): "an overwrite from a snapshot older than that OPTIMIZE commits, and the rows it replaced come "
    "back.",
    (
        "vacuum",
        LOSES,
    ): "the append then commits a version whose data file is gone, and the table can no longer be read: "
    "its rows are lost and every read fails.",
    (
        "delete_all_append",
        REFUSED,
    ): "one order is refused, the later job failing loudly and committing nothing",
    (
        "backfill",
        SAFE,
    ): "two appends, replaceWheres, DELETEs, UPDATEs and MERGEs whose condition names the partition "
    "both commit, and the table equals a serial order",
    ("retry", DUPLICATES): "ids 7 and 8 are in the table twice",
    (
        "other",
        DUPLICATES,
    ): "with Delta Spark first and deltalake 1.6.6 second, every compacted row is in the table twice",
}
"""For a matrix cell, keyed by (column, verdict): the words of the section it links (13 §5, or §4 for the
retried append) that state that verdict; a test checks they are there and say it."""


@dataclass(frozen=True)
class Cell:
    """One resolved cell; ``engines``: for a matrix cell, those whose rows decided it."""

    verdict: str
    versions: str
    section: Section | None
    evidence: Check | MatrixCells | Unmeasured
    engines: tuple[str, ...] = ()
    note: str = ""
    claim: str = ""
    conditions: tuple[tuple[str, str], ...] = ()
    """For a matrix cell: ``(condition, verdict)`` where a layout or an interleaving changes its verdict."""
    orders: tuple[tuple[str, str], ...] = ()
    """For a matrix cell: ``(what the user meets, verdict)`` where the order of the commits changes it."""


def resolve(row: Row, column: Column, results: Results) -> Cell:
    """One cell: its verdict (the check's, or the matrix's by the rule), versions, section, evidence."""
    found = evidence(row, column)
    if isinstance(found, Check):
        return Cell(
            found.verdict, found.versions, found.section, found, note=found.note, claim=found.claim
        )
    if isinstance(found, Unmeasured):
        return Cell(NOT_MEASURED, "", None, found, note=found.note)
    present, rows = results.cited(found)
    note = (
        found.note
        if present
        else f"no rows for {' / '.join(found.engines)} in the conflict matrix yet"
    )
    verdict = verdict_of(rows)
    conditions = results.conditions(present, found.pairs)
    if column.layout:
        conditions += results.layout_conditions(present, found.pairs, column.layout, verdict)
    if found.also and present:
        words, pairs = found.also
        more = verdict_of(results.cited(MatrixCells(found.engines, pairs))[1])
        if more != verdict:
            conditions += ((words, more),)
    mixed = mixed_run(tuple(present))
    if mixed:  # the order of the two engines, where one order gives another verdict
        for engine in present:
            alone = verdict_of(results.cited(MatrixCells((engine,), found.pairs))[1])
            if alone != verdict:
                conditions += ((MIXED_ORDERS[engine], alone),)
    return Cell(
        verdict,
        results.versions(present),
        None if mixed else column.section,
        found,
        tuple(present),
        note,
        MATRIX_CLAIMS.get((column.key, verdict), ""),
        conditions,
        results.orders(present, found.pairs),
    )


def mixed_run(engines: tuple[str, ...]) -> bool:
    """Whether a matrix cell's engines are the mixed run's (its evidence ``MIXED_CSV``, no notebook section)."""
    return bool(engines) and all(e in MIXED_LOCK_ENGINES for e in engines)


def link_of(cell: Cell) -> str:
    """A cell's evidence as a link: its section's, or the mixed run's CSV."""
    if cell.section:
        return cell.section.link
    return f"{MIXED_RUN}, {MIXED_LINK}" if mixed_run(cell.engines) else ""


def grid_of(results: Results) -> dict[tuple[str, str], Cell]:
    """Every cell, by (row key, column key)."""
    return {(r.key, c.key): resolve(r, c, results) for r in ROWS for c in COLUMNS}


def remedy(row: Row, results: Results) -> tuple[str, str]:
    """The retried append made safe: the verdict of the row's remedy pairs, and the versions measured."""
    present, rows = results.cited(MatrixCells(row.engines, row.remedy))
    return (verdict_of(rows), results.versions(present)) if row.remedy else (NOT_MEASURED, "")
