"""The deltalake rows of the one-page answer (:data:`DELTALAKE_ROWS`; :mod:`helpers.page.table_rows` holds
them all), each a release range of one commit path on S3 or Azure, split where a boundary
(:mod:`helpers.page.boundaries`) changes a cell; and the words and fixes the rows share.
"""

from __future__ import annotations

from helpers.page import boundaries as b
from helpers.page.columns import COLUMNS, SHARED_PAIRS, VACUUM_PAIRS
from helpers.page.engine_names import (
    CURRENT,
    INTEROP,
    LAST_REFUSING,
    MIXED_LOCK_ENGINES,
    SEEDS,
    SPARK,
)
from helpers.page.evidence import Check, MatrixCells, Row, Unmeasured
from helpers.page.matrix_verdicts import LOSES, MISREPORTS, SAFE
from helpers.page.notebook_sections import (
    S03_3,
    S05_2,
    S06_5,
    S07_1,
    S08_3,
    S09_5,
    S09_6,
    S12_C,
)


def _rs(*versions: str, s3: bool = True) -> tuple[str, ...]:
    names = [f"deltalake-{x}" for x in versions]
    return tuple(names + [f"{n}@s3" for n in names] if s3 else names)


RS_FIX = {
    "remedy": (("append_txn", "retry_checked"),),
    "remedy_how": "an idempotent-write id "
    "(`Transaction(app_id, version)`) checked with `transaction_version` after reloading",
}
HAZARD = "conditional first: rows lost, distinct commits in commit 1"
MIXED_TOLD = (
    f"deltalake {INTEROP} can be told its append failed although it is in the log, and a job that trusts that "
    f"error and runs again appends its rows twice ({S09_5.label}): never rerun an append on that error; give "
    f"it {RS_FIX['remedy_how']}, as deltalake alone measures it"
)
WITH_VACUUM = "when one engine's zero-retention VACUUM runs beside the other's writes"


def shared_with_the_other(note: str, engines: tuple[str, ...] = MIXED_LOCK_ENGINES) -> MatrixCells:
    """A single engine's "other" cell: the mixed run's pairs (``engines``, Delta Spark 4.4.0's by
    default), and VACUUM's beside them where they differ."""
    return MatrixCells(engines, SHARED_PAIRS, note=note, also=(WITH_VACUUM, VACUUM_PAIRS))


HAZARD_CLAIM = "rows are gone: commit 1 holds"
CB, GONE, REPAIR = b.CONDITIONAL_PUT_DEFAULT, b.DYNAMODB_LOG_STORE_REMOVED, b.STUCK_REPAIR
OPT_IN, APPENDS = b.CONDITIONAL_PUT_OPT_IN, b.APPEND_READS_TABLE
FULL, KEEPS = b.VACUUM_FULL_MODE, b.VACUUM_FULL_RETENTION
SPANS = (
    (CB.version, FULL.last_before, FULL.last_before),
    (FULL.version, APPENDS.last_before, APPENDS.last_before),
    (APPENDS.version, KEEPS.last_before, KEEPS.last_before),
)
"""From conditional put as S3's default to the release before 1.5.1: ``(first, last, measured)``, each span cut
where a boundary changes a race (VACUUM's full mode at 1.0.0, the append's read of the table and the full mode's
fix at 1.2.0, the full mode's retention at 1.5.1), each measured by its last release (an era of its own)."""


def _key(prefix: str, first: str) -> str:
    """A row's key from its family and first release: ``rs-put-1-2-0``."""
    return f"{prefix}-{first.replace('.', '-')}"


def _measured_as(release: str) -> str:
    return (
        f"{release} is the last release of the range, raced by the conflict matrix on local disk, whose commit is "
        "a put-if-absent as S3's conditional put and Azure's are"
    )


LIVE_REPAIR = (
    f"up to {REPAIR.last_before} a job that repairs a commit its writer is still making copies it plainly, and the "
    f"writer is told it committed ({S12_C.label}; findings/deltalake-dynamodb-repair-of-a-live-commit)"
)
AZURE_MEASURED = (
    "the conflict matrix races these releases on local disk, whose commit is a put-if-absent as Azure's is; "
    f"notebook 03 races appends on Azurite with {CURRENT}"
)
DELTALAKE_ROWS = (
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
    *(
        Row(
            _key("rs-lock", first),
            "deltalake",
            f"{first}–{last}",
            "S3 + DynamoDB",
            "`AWS_S3_LOCKING_PROVIDER=dynamodb` (DynamoDB log store beside conditional put)",
            f"deltalake {first}–{last} with the DynamoDB lock",
            paths=("s3-dynamodb-lock",),
            engines=_rs(measured, s3=False),
            **RS_FIX,
            cells={"other": Unmeasured(f"Spark is not raced beside deltalake {first}–{last} here")},
            measured_as=f"{_measured_as(measured)}; {LIVE_REPAIR}",
        )
        for first, last, measured in SPANS
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
    *(
        Row(
            _key("rs-put", first),
            "deltalake",
            f"{first}–{last}",
            "S3",
            "conditional put, no lock",
            f"deltalake {first}–{last} by conditional put",
            paths=("s3-conditional-put",),
            engines=_rs(measured),
            **RS_FIX,
            cells={"other": Unmeasured(f"Spark is not raced beside deltalake {first}–{last} here")},
            measured_as=_measured_as(measured),
        )
        for first, last, measured in SPANS
    ),
    Row(
        "rs-put",
        "deltalake",
        f"{KEEPS.version}–{b.DOUBLE_OPTIMIZE.last_before}",
        "S3",
        "conditional put, no lock",
        f"deltalake {KEEPS.version}–{b.DOUBLE_OPTIMIZE.last_before} by conditional put",
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
            (_key("rs-azure", "0"), f"up to {FULL.last_before}", (SEEDS, FULL.last_before)),
            *(
                (_key("rs-azure", first), f"{first}–{last}", (measured,))
                for first, last, measured in SPANS[1:]
            ),
            (
                _key("rs-azure", KEEPS.version),
                f"{KEEPS.version}–{b.DOUBLE_OPTIMIZE.last_before}",
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
)
