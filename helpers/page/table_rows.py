"""The rows of the one-page answer (:mod:`helpers.page.decision`), its decision table as data: a
:class:`~helpers.page.evidence.Row` per engine, releases, store and setting (:data:`ROWS`), each
cell's evidence given or left to the conflict matrix's engines: deltalake's
(:data:`helpers.page.deltalake_rows.DELTALAKE_ROWS`), then Delta Spark's and the two engines' together.
"""

from __future__ import annotations

from helpers.page import boundaries as b
from helpers.page import catalog_notes
from helpers.page.columns import COLUMNS
from helpers.page.deltalake_rows import (
    DELTALAKE_ROWS,
    GONE,
    HAZARD,
    HAZARD_CLAIM,
    MIXED_TOLD,
    REPAIR,
    shared_with_the_other,
)
from helpers.page.engine_names import (
    CURRENT,
    INTEROP,
    MIXED_LOCK_ENGINES,
    MIXED_LOCK_ENGINES_3,
    OLD_LOCK,
    SEEDS,
    SPARK,
    SPARK_3,
)
from helpers.page.evidence import Check, Row, Unmeasured
from helpers.page.matrix_verdicts import BY_DESIGN, LOSES, MISREPORTS, SAFE
from helpers.page.notebook_sections import (
    S06_5,
    S09_2,
    S09_3,
    S09_4,
    S09_5,
    S09_6,
    S12_7,
    S15_5,
    S15_8,
    S15_9,
)

SPARK_ENGINES = ("delta-spark-4.4", "delta-spark-4.4@s3")
SPARK_3_ENGINES = ("delta-spark-3.3", "delta-spark-3.3@s3")
MIXED_ENGINES = ("spark-then-deltalake-*", "deltalake-*-then-spark")
"""The conflict matrix's mixed pairs on local disk (each engine's own put-if-absent commit)."""
SPARK_FIX = {
    "remedy": (("append_txn", "retry_txn"),),
    "remedy_how": "`txnAppId` + `txnVersion` on the write",
}
MIXED_RACE = "mixed race: rows lost, silent losses, distinct commits per file"
UNSAFE_FULL_RUN = "full run: the unsafe protocols lost acknowledged operations"
MIXED_CLAIM = "another may say it failed although its commit is in the log"
FULL_RUN_CLAIM = "mixed-spark-and-deltalake-1.6 lost"
GLUE_MEASURED = (
    f"measured with Delta Spark {SPARK_3} on Spark 3.5: notebook 09 run with "
    f'`spark_era="delta-spark-{SPARK_3}"` (every check held), and `make test-heavy` races its several '
    "drivers with and without the DynamoDB log store on every run (tests/test_spark_era.py)"
)
"""How a notebook-09 cell of a Delta Spark 3.3.2 row was measured: the notebook's committed outputs
are 4.4.0's; its Spark era parameter runs the same sections with 3.3.2."""


def _one_driver(release: str, engines: tuple[str, ...], suffix: str, note: str) -> Row:
    """Delta Spark ``release`` from one driver on S3 (arguments as :func:`_spark_rows`)."""
    return Row(
        f"spark-one{suffix}",
        "Delta Spark",
        release,
        "S3",
        "default S3 log store, one driver (its jobs in one JVM)",
        f"Delta Spark {release} from one driver",
        paths=("spark-s3-single-driver",),
        engines=engines,
        **SPARK_FIX,
        cells={
            "append": Check(
                S09_2,
                "rows in the one-driver table",
                SAFE,
                release,
                claim="Why nothing is lost.",
                note=note,
            ),
            "other": Check(
                S09_6,
                HAZARD,
                LOSES,
                f"{release} + deltalake {CURRENT}",
                claim=HAZARD_CLAIM,
                note=note,
            ),
        },
    )


def _spark_rows(
    release: str, engines: tuple[str, ...], mixed: tuple[str, ...], suffix: str, note: str
) -> tuple[Row, ...]:
    """Delta Spark ``release``'s rows on S3: one driver, several drivers, the DynamoDB log store;
    ``engines`` the matrix engines measured with it, ``mixed`` its mixed run's, ``suffix`` its keys'
    ending (``""`` for 4.4.0), ``note`` how its notebook-09 cells were measured (``""``: the
    committed outputs)."""
    return (
        _one_driver(release, engines, suffix, note),
        Row(
            f"spark-several{suffix}",
            "Delta Spark",
            release,
            "S3",
            "default S3 log store, several drivers (clusters)",
            f"Delta Spark {release}'s default S3 log store from several drivers",
            paths=("spark-s3-single-driver",),
            loses=Check(
                S09_3,
                "rows lost by several drivers",
                LOSES,
                release,
                claim="several drivers on one `s3a://` table still lose commits, and none of them notices",
                note=note,
            ),
        ),
        Row(
            f"spark-dynamodb{suffix}",
            "Delta Spark",
            release,
            "S3 + DynamoDB",
            "S3DynamoDBLogStore",
            f"Delta Spark {release} with the DynamoDB log store",
            paths=("spark-s3-dynamodb",),
            engines=engines,
            **SPARK_FIX,
            cells={
                "append": Check(
                    S09_4,
                    "rows lost with the DynamoDB log store",
                    SAFE,
                    release,
                    claim="a commit that won DynamoDB is never lost",
                    note=note,
                ),
                "other": shared_with_the_other(
                    f"deltalake {INTEROP} through the same lock table and `s3a://` URIs (the mixed-lock row); "
                    f"{MIXED_TOLD}; deltalake {GONE.version} and later cannot take part in the lock and lose appends "
                    "beside it (the mixed-put row)",
                    mixed,
                ),
            },
        ),
    )


def _mixed_lock(release: str, mixed: tuple[str, ...], suffix: str, note: str) -> Row:
    """Delta Spark ``release`` and deltalake beside it through one lock table (the mixed run's
    ``mixed`` engines; ``suffix`` and ``note`` as :func:`_spark_rows`)."""
    return Row(
        f"mixed-lock{suffix}",
        "Delta Spark + deltalake",
        f"{release} + {REPAIR.version}–{GONE.last_before}",
        "S3 + DynamoDB",
        "one lock table (both DynamoDB log stores), `s3a://` URIs"
        + (f", Delta Spark {release}" if suffix else ""),
        f"Delta Spark {release} and deltalake {INTEROP} through one lock table",
        paths=("spark-s3-dynamodb", "s3-dynamodb-lock"),
        engines=mixed,
        other_from_matrix=True,
        cells={
            "append": Check(
                S09_5,
                MIXED_RACE,
                MISREPORTS,
                f"{release} + {INTEROP}",
                claim=MIXED_CLAIM,
                note=MIXED_TOLD + (f"; {note}" if note else ""),
            ),
            "backfill": Unmeasured(
                "the mixed run races the two engines on one unpartitioned table, not on partitions of their own"
            ),
            "vacuum_retained": Unmeasured("the mixed run races a zero-retention VACUUM only"),
            "retry": Unmeasured(
                "the mixed run reruns no append; a writer told its append failed may have committed it "
                f"({S09_5.label}): give every append an idempotent-write id"
            ),
        },
    )


ROWS = (
    *DELTALAKE_ROWS,
    *_spark_rows(SPARK, SPARK_ENGINES, MIXED_LOCK_ENGINES, "", ""),
    *_spark_rows(SPARK_3, SPARK_3_ENGINES, MIXED_LOCK_ENGINES_3, "-3-3-2", GLUE_MEASURED),
    Row(
        "spark-catalog",
        "Delta Spark",
        SPARK,
        "local disk + Unity Catalog",
        "catalog-managed table (`catalogManaged`): the catalog ratifies each commit. A user's setting "
        "is Unity Catalog's Spark connector (`UCSingleCatalog`), not obtainable here; the workbook's "
        "session extension stands in for the commit coordinator it builds",
        f"Delta Spark {SPARK} on a catalog-managed table",
        paths=("spark-catalog",),
        cells={
            "append": Check(
                S15_5,
                "race: problems found reading storage and the catalog",
                SAFE,
                SPARK,
                claim="each driver's every batch is in the table once",
                note="one race per run of notebook 15 (3 drivers, 2 appends each: 6 commits through "
                "the catalog, drivers without Spark's testing flag); the verdict rests on that run. "
                "The same race on Azurite and on S3 (2 drivers each, 15 appendix C; S3 through the "
                "workbook's patched build of the server), each driver with only the credential the "
                "catalog vends, lost nothing either; on both emulators that credential also wrote "
                "outside the table's folder, which a real account refuses. With "
                + catalog_notes.outage()
                + ". Cost: "
                + catalog_notes.cost(),
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
                    "writing anything, and a rerun is refused again. "
                    f"{SPARK} still commits a rewrite marked dataChange=false and runs auto compaction, "
                    f"which Delta {b.CATALOG_MANAGED_MAINTENANCE.version} refuses and skips (15 §8; "
                    f"{b.CATALOG_MANAGED_MAINTENANCE.version} is not obtainable here): write fewer, "
                    "larger files instead. " + catalog_notes.upkeep(),
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
                    "again: DELTA_UNSUPPORTED_CATALOG_MANAGED_TABLE_OPERATION on a table named MANAGED in "
                    "Spark's catalog, as Unity Catalog's connector names it (15 §8, the committed run); "
                    "named external, as §8's own probe names it, its error is an assertion. "
                    + catalog_notes.upkeep(),
                )
                for key in ("vacuum", "vacuum_rewrite", "vacuum_retained")
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
                "appends each: 6 commits through the catalog), and "
                + catalog_notes.kernel()
                + "; the verdict rests on all of them. "
                f"deltalake {CURRENT} neither reads nor writes a catalog-managed table (15 §6)",
            ),
        },
        other_engine=f"Java Delta Kernel {SPARK}",
    ),
    Row(
        "mixed-lock-early",
        "Delta Spark + deltalake",
        f"{SPARK} + {b.TABLE_PATH_SLASH.version}–{REPAIR.last_before}",
        "S3 + DynamoDB",
        "one lock table (both DynamoDB log stores), `s3a://` URIs",
        f"Delta Spark {SPARK} and deltalake {b.TABLE_PATH_SLASH.version}–{REPAIR.last_before} through one lock table",
        paths=("spark-s3-dynamodb", "s3-dynamodb-lock"),
        cells={
            c.key: Unmeasured(
                f"the mixed run races deltalake {INTEROP} beside Delta Spark; {REPAIR.version} changed the log "
                f"store's repair, so {b.TABLE_PATH_SLASH.version}–{REPAIR.last_before} are not raced here"
            )
            for c in COLUMNS
        },
    ),
    _mixed_lock(SPARK, MIXED_LOCK_ENGINES, "", ""),
    _mixed_lock(SPARK_3, MIXED_LOCK_ENGINES_3, "-3-3-2", GLUE_MEASURED),
    Row(
        "mixed-put",
        "Delta Spark + deltalake",
        f"{SPARK} + {GONE.version}–{CURRENT}",
        "S3 + DynamoDB",
        "Spark through the DynamoDB log store, deltalake by conditional put",
        f"Delta Spark with the DynamoDB log store beside deltalake {GONE.version} or later",
        paths=("spark-s3-dynamodb", "s3-conditional-put"),
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
        paths=("local-put-if-absent",),
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
        paths=("s3-dynamodb-lease", "s3-dynamodb-lock"),
        loses=Check(
            S06_5,
            "two-lock race: rows lost",
            LOSES,
            f"{OLD_LOCK} + {SEEDS}",
            claim="the later one replaced the other",
        ),
    ),
)
