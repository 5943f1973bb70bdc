"""The version boundaries the workbook relies on: the one home of "from which release on".

Each :class:`Boundary` is one change in one library: the first release that behaves the new way,
the last release before it, what changed, and how the workbook knows it (measured in a notebook,
or traced to the library's sources and release tags). The eras the workbook installs are in
:mod:`helpers.ground.eras`; this module says where their behaviours begin and end, so that a page such as
``docs/answer.md`` (:mod:`helpers.page.decision`) names no version that is not in one of the two.

Standard library only, data only: nothing here runs or imports a library.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Boundary:
    library: str
    """``deltalake`` (delta-rs's Python package), ``Daft`` or ``Delta Spark``."""
    version: str
    """The first release that behaves the new way."""
    last_before: str
    """The last release before it (``""`` when the workbook does not know it)."""
    change: str
    """What changed, in one sentence."""
    known_from: str
    """How the workbook knows: ``measured: ...`` (a notebook, the conflict matrix, a finding) and/or
    ``traced: ...`` (the library's sources, commits and release tags)."""

    @property
    def versions(self) -> tuple[str, ...]:
        """The versions this boundary names as fields (``version`` and ``last_before``)."""
        return tuple(v for v in (self.version, self.last_before) if v)


DYNAMODB_LOG_STORE = Boundary(
    "deltalake",
    "0.15.0",
    "0.14.0",
    "the S3 lock moves from the dynamodb_lock crate's lease (one item keyed by `key`) to the DynamoDB log "
    "store Delta Spark's S3DynamoDBLogStore uses (`tablePath` + `fileName`, one item per commit)",
    "measured: notebook 06, appendices A and B (0.14.0 and 0.22.3, each refused at the other's lock table); traced: "
    "delta-rs commits f239a3a64 and f87afceb6, first in tag python-v0.15.0",
)
CONDITIONAL_PUT_OPT_IN = Boundary(
    "deltalake",
    "0.19.2",
    "0.19.1",
    "S3 commits may use conditional put when asked (`conditional_put=etag`); without that option S3 "
    "still commits by copy + delete, with a lock or the unsafe rename",
    'traced: delta-rs commit 7f4dcc4b4 ("feat: conditional put"), first in tag python-v0.19.2; '
    "python-v0.22.3 still selects conditional put only when the option is set",
)
CONDITIONAL_PUT_DEFAULT = Boundary(
    "deltalake",
    "0.23.0",
    "0.22.3",
    "conditional put (`If-None-Match: *`) becomes the S3 default: no lock client needed, and "
    "AWS_S3_ALLOW_UNSAFE_RENAME no longer loses commits",
    "measured: notebook 08 §5 (0.22.3 cannot create a table without an option; 1.5.1 and 1.6.6 commit "
    "by conditional put whatever the option); traced: delta-rs commits dae29bc22 and 64c1b1ab4, first in "
    "tag python-v0.23.0",
)
TABLE_PATH_SLASH = Boundary(
    "deltalake",
    "1.3.0",
    "1.2.1",
    "the DynamoDB log store normalizes `tablePath` (trailing slash) as Delta Spark writes it, so Spark and "
    "delta-rs writers of one `s3a://` table claim the same lock items",
    "traced: delta-rs commits 2dec25b41 and 27485854f, first in tag python-v1.3.0; measured from the "
    "other side: notebook 09 §5 (Spark with 1.5.1 through one lock table loses nothing)",
)
APPEND_READS_TABLE = Boundary(
    "deltalake",
    "1.2.0",
    "1.1.4",
    "a blind append made from a snapshot older than a concurrent DELETE, UPDATE, MERGE or overwrite is "
    "refused (`ConcurrentDeleteRead`: delta-rs counts an append as a read of the whole table), where Delta's "
    "documentation lets it commit under WriteSerializable; it fails loudly and a retry commits",
    "measured: the conflict matrix (0.22.3 commits, 1.5.1, 1.6.3 and 1.6.6 refuse); a DELETE, then an append "
    "from a handle opened before it, outside the workbook (1.0.2, 1.1.0 and 1.1.4 commit; 1.2.0, 1.2.1, "
    "1.4.2, 1.5.0 and 1.5.1 refuse); upstream: delta-io/delta-rs#2700, #3890",
)
VACUUM_FULL_MODE = Boundary(
    "deltalake",
    "1.0.0",
    "0.25.5",
    "VACUUM gains a full mode (`full=True`), which also deletes the files the log does not name; up to 1.1.4 "
    "it deletes them whatever their age, so a concurrent writer's data file, written but not yet committed, "
    "is deleted even with the default 7-day retention, and that writer's commit then leaves the table "
    "unreadable",
    "measured: the conflict matrix (a VACUUM keeping 7 days beside an append whose data file is written "
    "first: 1.1.4 leaves a commit whose data file is gone, 0.25.5 has no full mode, 1.5.0, 1.5.1, 1.6.3 and "
    "1.6.6 keep the file), findings/deltalake-vacuum-full-deletes-files-within-retention (1.0.0 to 1.1.4 "
    "delete the file)",
)
VACUUM_FULL_KEEPS_NEW_FILES = Boundary(
    "deltalake",
    "1.2.0",
    "1.1.4",
    "VACUUM's full mode keeps the files the log does not name that are younger than the retention, so a "
    "concurrent writer's data file survives a VACUUM that keeps the default 7 days",
    "measured: findings/deltalake-vacuum-full-deletes-files-within-retention (1.1.4 deletes the file; 1.2.0 "
    "and later keep it); traced: delta-io/delta-rs#3835, first in 1.2.0",
)
VACUUM_FULL_RETENTION = Boundary(
    "deltalake",
    "1.5.1",
    "1.5.0",
    "VACUUM's full mode keeps a file a commit removed for the retention from that commit, not from the "
    "file's own writing: up to 1.5.0 a file written more than 7 days ago that an OPTIMIZE, DELETE or "
    "overwrite removed seconds ago is deleted, so a job still reading an older snapshot finds it gone, as "
    "with zero retention",
    "measured: findings/deltalake-vacuum-full-deletes-files-within-retention (1.2.0 to 1.5.0 delete such a "
    "file; 1.5.1 and later keep it); traced: delta-io/delta-rs#4300 (closes #4290), first in 1.5.1",
)
STUCK_REPAIR = Boundary(
    "deltalake",
    "1.5.1",
    "1.5.0",
    "the DynamoDB log store's repair copies a staged commit onto `N.json` conditionally, so a commit whose "
    "writer died between that copy and its clean-up wedges the table: every open and write fails with "
    '"version N already exists" until the staged file is deleted (1.6.0 too; nothing is lost); and a '
    "reader that repairs a commit its writer is still making gets there first, so the writer's own copy is "
    'refused and it reports "version N already exists" for an append that is in the log; when that copy is '
    "refused four times, the writer claims the next version with its staged file, already moved, and marks that "
    "item complete without a commit file (every later write through the log store fails), or, on a store that "
    "still copies a deleted object, commits the append twice",
    "measured: notebook 12's appendices A (0.22.3 repairs, 1.5.1 is stuck) and C (1.5.1 tells a writer whose commit "
    "a reader repaired that it failed), findings/deltalake-dynamodb-repair-already-exists "
    "(0.22.3, 1.0.2, 1.2.1, 1.4.2 and 1.5.0 repair; 1.5.1 and 1.6.0 are stuck), "
    "findings/deltalake-dynamodb-repair-of-a-live-commit (1.5.0 reports the append committed; 1.5.1 and 1.6.0 "
    "report it failed), findings/deltalake-dynamodb-reclaim-after-a-refused-copy (1.5.0 commits once; 1.5.1 and "
    "1.6.0 leave the item without its commit file, or commit twice on versitygw), the torture subset on versitygw "
    "(73 of 96 operations failed so, 1 append committed twice)",
)
DYNAMODB_LOG_STORE_REMOVED = Boundary(
    "deltalake",
    "1.6.1",
    "1.6.0",
    "the DynamoDB log store is removed: `AWS_S3_LOCKING_PROVIDER=dynamodb` is ignored and S3 commits "
    "by conditional put only, so delta-rs no longer coordinates with Spark's S3DynamoDBLogStore",
    'traced: delta-rs commit 3c51516ce ("remove the S3DynamoDbLogStore from deltalake-aws"), first in tag '
    "python-v1.6.1, absent from python-v1.6.0; measured: notebook 08 §5 (1.6.6 writes no DynamoDB item)",
)
DOUBLE_OPTIMIZE = Boundary(
    "deltalake",
    "1.6.4",
    "1.6.3",
    "the second of two OPTIMIZEs made from one snapshot commits instead of being refused, and every "
    "compacted row is then in the table twice; an overwrite made beside an OPTIMIZE commits too and keeps "
    "the rows it replaced (1.6.4 and 1.6.5 are yanked; 1.6.6 still does both)",
    "measured: the conflict matrix (1.6.3 refuses, 1.6.6 commits), notebook 12 §6 (0.22.3 and 1.5.1 "
    "refuse, 1.6.6 commits), findings/deltalake-two-optimizes-both-commit (a second OPTIMIZE, a Z-order, an "
    "overwrite and a DELETE after an OPTIMIZE: 1.5.1 and 1.6.3 refuse all four, 0.22.3 the second OPTIMIZE, "
    "1.6.0 and 1.6.1 the OPTIMIZE and the overwrite; 1.6.4, 1.6.5 and 1.6.6 commit all four)",
)
DAFT_SEEDS = Boundary(
    "Daft",
    "0.7.10",
    "0.7.9",
    "Daft's `deltalake` extra moves from `deltalake<1.3.0` to `>=1.5.0,<1.6.0`: 0.7.9 is the last Daft "
    "over deltalake 0.22.3, whose `write_deltalake` without `dynamo_table_name` falls back to the unsafe "
    "rename when it creates a table",
    "measured: notebook 08, appendix A (Daft 0.7.9 over 0.22.3: concurrent first writes lose rows); traced: the "
    "two releases' package metadata",
)
DAFT_TODAY = Boundary(
    "Daft",
    "0.7.26",
    "",
    "the Daft of today's era requires `deltalake>=1.6.0,<1.7.0` and commits by conditional put whatever its locking "
    "parameters (`dynamo_table_name`, `allow_unsafe_rename`)",
    "measured: notebook 08 §4 and appendix B (concurrent Daft writers lose nothing; every parameter commits)",
)
CATALOG_MANAGED = Boundary(
    "Delta Spark",
    "4.1.0",
    "4.0.1",
    "catalog-managed tables: Delta's 4.1.0 release notes introduce creating, reading and writing tables whose "
    "commits a catalog such as Unity Catalog ratifies (table feature `catalogManaged`), so writers need neither "
    "put-if-absent nor a lock table; 4.0.x carried the feature as a preview (`catalogOwned-preview` in 4.0.0)",
    "measured: notebook 15 (Delta Spark 4.4.0 through a Unity Catalog server: several drivers, nothing lost); traced: "
    "Delta's 4.1.0 release notes and its post on catalog-managed tables (delta.io, 2026-02-02: \"With Delta Lake "
    '4.1.0, Delta introduces catalog-managed tables")',
)
DELTA_SPARK = Boundary(
    "Delta Spark",
    "4.4.0",
    "",
    "still no S3 log store that commits by conditional put: the default S3SingleDriverLogStore checks, "
    "then PUTs, under a lock of one JVM, and several clusters need the DynamoDB log store",
    "measured: notebook 09 §2–§4 (one driver loses nothing, several drivers lose commits, the DynamoDB "
    "log store loses nothing; each section races appends only)",
)
CATALOG_MANAGED_MAINTENANCE = Boundary(
    "Delta Spark",
    "4.4.1",
    "4.4.0",
    "on a catalog-managed table, where the catalog controls maintenance, Delta rejects before changing the "
    "table a rearrange-only write (`dataChange=false`, which 4.4.0 commits), a direct clean-up of the "
    "transaction log and column-mapping removal, and skips automatic compaction after a write and automatic "
    "log clean-up after a checkpoint, so the write itself completes. Not measured: 4.4.1 is not obtainable "
    "here (its jars cannot be downloaded)",
    "traced: Delta's 4.4.1 release notes (github.com/delta-io/delta/releases/tag/v4.4.1, \"Safer "
    'maintenance for catalog-managed tables", delta-io/delta#7603); measured on the 4.4.0 side: notebook '
    "15 §8 (OPTIMIZE, Z-order, REORG and VACUUM refused; a `dataChange=false` rewrite commits)",
)

BOUNDARIES: tuple[Boundary, ...] = (
    DYNAMODB_LOG_STORE,
    CONDITIONAL_PUT_OPT_IN,
    CONDITIONAL_PUT_DEFAULT,
    VACUUM_FULL_MODE,
    APPEND_READS_TABLE,
    VACUUM_FULL_KEEPS_NEW_FILES,
    TABLE_PATH_SLASH,
    STUCK_REPAIR,
    VACUUM_FULL_RETENTION,
    DYNAMODB_LOG_STORE_REMOVED,
    DOUBLE_OPTIMIZE,
    DAFT_SEEDS,
    DAFT_TODAY,
    CATALOG_MANAGED,
    DELTA_SPARK,
    CATALOG_MANAGED_MAINTENANCE,
)
"""Every boundary, libraries in turn, each library's in release order."""


def for_library(library: str) -> list[Boundary]:
    """The boundaries of one library, in release order."""
    return [b for b in BOUNDARIES if b.library == library]
