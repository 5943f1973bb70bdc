"""The rows of the one-page answer (:mod:`helpers.page.answer`), its decision table as data: a
:class:`~helpers.page.answer_evidence.Row` per engine, releases, store and setting (:data:`ROWS`), each
cell's evidence given or left to the conflict matrix's engines; and the words and fixes the rows share.
"""

from __future__ import annotations

from helpers.page import boundaries as b
from helpers.page.answer_columns import COLUMNS, SHARED_PAIRS, VACUUM_PAIRS
from helpers.page.answer_engines import (
    CURRENT,
    INTEROP,
    LAST_REFUSING,
    MIXED_LOCK_ENGINES,
    OLD_LOCK,
    SEEDS,
    SPARK,
)
from helpers.page.answer_evidence import Check, MatrixCells, Row, Unmeasured
from helpers.page.answer_matrix import BY_DESIGN, LOSES, MISREPORTS, SAFE
from helpers.page.answer_sections import (
    S03_3,
    S05_2,
    S06_5,
    S07_1,
    S08_3,
    S09_2,
    S09_3,
    S09_4,
    S09_5,
    S09_6,
    S12_7,
    S12_C,
    S15_5,
    S15_8,
    S15_9,
)


def _rs(*versions: str, s3: bool = True) -> tuple[str, ...]:
    names = [f"deltalake-{x}" for x in versions]
    return tuple(names + [f"{n}@s3" for n in names] if s3 else names)


SPARK_ENGINES = ("delta-spark-4.4", "delta-spark-4.4@s3")
MIXED_ENGINES = ("spark-then-deltalake-*", "deltalake-*-then-spark")
"""The conflict matrix's mixed pairs on local disk (each engine's own put-if-absent commit)."""
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
WITH_VACUUM = "when one engine's zero-retention VACUUM runs beside the other's writes"


def shared_with_the_other(note: str) -> MatrixCells:
    """A single engine's "other" cell: the mixed run's pairs, and VACUUM's beside them where they differ."""
    return MatrixCells(
        MIXED_LOCK_ENGINES, SHARED_PAIRS, note=note, also=(WITH_VACUUM, VACUUM_PAIRS)
    )


HAZARD_CLAIM = "rows are gone: commit 1 holds"
FULL_RUN_CLAIM = "mixed-spark-and-deltalake-1.6 lost"
CB, GONE, REPAIR = b.CONDITIONAL_PUT_DEFAULT, b.DYNAMODB_LOG_STORE_REMOVED, b.STUCK_REPAIR
OPT_IN, APPENDS = b.CONDITIONAL_PUT_OPT_IN, b.APPEND_READS_TABLE
LIVE_REPAIR = (
    f"up to {REPAIR.last_before} a job that repairs a commit its writer is still making copies it plainly, and the "
    f"writer is told it committed ({S12_C.label}; findings/deltalake-dynamodb-repair-of-a-live-commit)"
)
AZURE_MEASURED = (
    "the conflict matrix races these releases on local disk, whose commit is a put-if-absent as Azure's is; "
    f"notebook 03 races appends on Azurite with {CURRENT}"
)
ROWS = (
    Row(
        "rs-unsafe",
        "deltalake",
        f"up to {CB.last_before}",
        "S3",
        "`AWS_S3_ALLOW_UNSAFE_RENAME=true`, no lock",
        f"deltalake up to {CB.last_before} with the unsafe rename",
        paths=("s3-unsafe-rename",),
        loses=Check(
            S05_2,
            "rows lost (reported as committed, absent from the table)",
            LOSES,
            SEEDS,
            claim="reported as committed, the table holds",
        ),
    ),
    Row(
        "rs-lease",
        "deltalake",
        f"up to {b.DYNAMODB_LOG_STORE.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (the dynamodb_lock crate's lease)",
        f"deltalake up to {b.DYNAMODB_LOG_STORE.last_before} with its DynamoDB lease",
        paths=("s3-dynamodb-lease",),
        cells={
            c.key: Unmeasured(
                f"no race of deltalake up to {b.DYNAMODB_LOG_STORE.last_before} with its lease is measured here; "
                f"notebook 06 shows its lock table ({S06_5.label}: beside {SEEDS}'s log store, on one table, "
                "appends are lost)"
            )
            for c in COLUMNS
        },
    ),
    Row(
        "rs-lock-seeds",
        "deltalake",
        f"{b.DYNAMODB_LOG_STORE.version}–{CB.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store)",
        f"deltalake {SEEDS} with the DynamoDB lock",
        paths=("s3-dynamodb-lock",),
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
        f"{CB.version}–{APPENDS.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store beside conditional put)",
        f"deltalake {CB.version}–{APPENDS.last_before} with the DynamoDB lock",
        paths=("s3-dynamodb-lock",),
        engines=_rs(APPENDS.last_before, s3=False),
        **RS_FIX,
        cells={
            "other": Unmeasured(
                f"Spark is not raced beside deltalake {CB.version}–{APPENDS.last_before} here"
            )
        },
        measured_as=f"the conflict matrix races {APPENDS.last_before}'s conflict checks on local disk; {LIVE_REPAIR}",
    ),
    Row(
        "rs-lock-middle",
        "deltalake",
        f"{APPENDS.version}–{REPAIR.last_before}",
        "S3 + DynamoDB",
        "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store beside conditional put)",
        f"deltalake {APPENDS.version}–{REPAIR.last_before} with the DynamoDB lock",
        paths=("s3-dynamodb-lock",),
        cells={
            c.key: Unmeasured(
                f"no release from {APPENDS.version} to {REPAIR.last_before} is raced here; {LIVE_REPAIR}"
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
        paths=("s3-dynamodb-lock",),
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
        "rs-put-opt-in",
        "deltalake",
        f"{OPT_IN.version}–{CB.last_before}",
        "S3",
        "conditional put when asked (`conditional_put=etag`), no lock",
        f"deltalake {OPT_IN.version}–{CB.last_before} by conditional put (opt-in)",
        paths=("s3-conditional-put",),
        engines=_rs(SEEDS, s3=False),
        **RS_FIX,
        cells={
            "other": Unmeasured(
                f"Spark is not raced beside deltalake {OPT_IN.version}–{CB.last_before} here"
            )
        },
        measured_as=f"the conflict matrix races {SEEDS}'s conflict checks on local disk, whose commit is "
        "a put-if-absent as conditional put's is; no race of these releases on S3 with "
        "`conditional_put=etag` is measured here",
    ),
    Row(
        "rs-put-early",
        "deltalake",
        f"{CB.version}–{APPENDS.last_before}",
        "S3",
        "conditional put, no lock",
        f"deltalake {CB.version}–{APPENDS.last_before} by conditional put",
        paths=("s3-conditional-put",),
        engines=_rs(APPENDS.last_before),
        **RS_FIX,
        cells={
            "other": Unmeasured(
                f"Spark is not raced beside deltalake {CB.version}–{APPENDS.last_before} here"
            )
        },
        measured_as=f"{APPENDS.version} changes what a blind append beside a DELETE, UPDATE, MERGE or "
        f"overwrite does, so the conflict matrix races {APPENDS.last_before} for these releases, not a later "
        "one",
    ),
    Row(
        "rs-put",
        "deltalake",
        f"{APPENDS.version}–{b.DOUBLE_OPTIMIZE.last_before}",
        "S3",
        "conditional put, no lock",
        f"deltalake {APPENDS.version}–{b.DOUBLE_OPTIMIZE.last_before} by conditional put",
        paths=("s3-conditional-put",),
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
        paths=("s3-conditional-put",),
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
    *(
        Row(
            key,
            "deltalake",
            versions,
            "Azure Blob",
            "put-if-absent (the only commit there)",
            f"deltalake {versions} on Azure",
            paths=("azure-put-if-absent",),
            engines=_rs(*measured, s3=False),
            **RS_FIX,
            cells={"other": Unmeasured("Spark and delta-rs are not raced on Azure here")},
            measured_as=AZURE_MEASURED,
        )
        for key, versions, measured in (
            ("rs-azure-early", f"up to {APPENDS.last_before}", (SEEDS, APPENDS.last_before)),
            (
                "rs-azure-mid",
                f"{APPENDS.version}–{b.DOUBLE_OPTIMIZE.last_before}",
                (INTEROP, LAST_REFUSING),
            ),
        )
    ),
    Row(
        "rs-azure",
        "deltalake",
        f"{b.DOUBLE_OPTIMIZE.version}–{CURRENT}",
        "Azure Blob",
        "put-if-absent (the only commit there)",
        f"deltalake {b.DOUBLE_OPTIMIZE.version}–{CURRENT} on Azure",
        paths=("azure-put-if-absent",),
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
        paths=("spark-s3-single-driver",),
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
        paths=("spark-s3-single-driver",),
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
        paths=("spark-s3-dynamodb",),
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
                "workbook's patched build of the server) lost nothing either",
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
    Row(
        "mixed-lock",
        "Delta Spark + deltalake",
        f"{SPARK} + {REPAIR.version}–{GONE.last_before}",
        "S3 + DynamoDB",
        "one lock table (both DynamoDB log stores), `s3a://` URIs",
        f"Delta Spark {SPARK} and deltalake {INTEROP} through one lock table",
        paths=("spark-s3-dynamodb", "s3-dynamodb-lock"),
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
