"""The operation catalogue: every write the conflict matrix races, engine-neutral.

Each :class:`Operation` says what it does to the base table in words and in data (the rows it
writes, its predicate), so that every engine (delta-rs in each era, Delta Spark later) runs the
same operation and their results can be compared row by row.

The base table (:data:`BASE_BATCHES`, then :data:`BASE_DELETE`) is small and of known content:
ids 1-11 in three data files, each row's ``value`` ten times its id, and one tombstone (the file
the earlier DELETE rewrote), so a VACUUM has something to delete. The predicates below are
chosen so that every operation that reads rows reads **every** file (a modulo cannot be pruned
by file statistics): wherever the documentation says two operations "can conflict" because they
may touch the same files, here they do. The other tables (a partitioned one, one whose files'
statistics separate the operations) and each operation's rows and predicates on them are in
:mod:`helpers.matrix.layouts`.

Standard library only: this module runs in every era's Python.
"""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("id", "value")
"""The base table's columns in the shared-files layout: ``id`` (int64) and ``value`` (int64)."""

BASE_BATCHES = ((1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12))
"""Three appends (versions 0, 1, 2), one data file each; a row's value is ten times its id."""
BASE_DELETE = "id = 12"
"""Version 3: the DELETE that rewrites the third file, leaving its old file as a tombstone."""

APPEND_ROWS = ((101, 1010), (102, 1020), (103, 1030), (104, 1040))
OVERWRITE_ROWS = ((201, 2010), (202, 2020), (203, 2030))
REPLACE_PREDICATE = "id <= 4"
REPLACE_ROWS = ((1, 15), (2, 25), (3, 35), (4, 45))
DELETE_PREDICATE = "id % 4 = 2"
UPDATE_PREDICATE = "id % 4 = 3"
UPDATE_SET = {"value": "value + 1"}
MERGE_SOURCE = ((1, -1), (5, -5), (9, -9), (101, -101), (301, -301))
"""Upsert source: ids 1, 5 and 9 match one row of each base file, 101 matches an appended row
if the append ran first, 301 is new."""
MERGE_CONDITION = "t.id = s.id"
ZORDER_COLUMNS = ("id", "value")
VACUUM_RETENTION_HOURS = 0
"""``vacuum``'s retention; ``vacuum_retained`` keeps the table's default (7 days)."""
ADDED_COLUMN = ("note", "string")
PROPERTY = ("delta.logRetentionDuration", "interval 30 days")
APP_ID = "landing-lambda"
"""The idempotent-write identifier of the retried append (delta-rs ``Transaction(app_id, version)``,
Delta Spark ``txnAppId``/``txnVersion``)."""
APP_VERSION = 1

INSERT = "INSERT"
UDM = "UPDATE, DELETE, MERGE INTO"
COMPACTION = "COMPACTION"
METADATA = "METADATA CHANGE"
CATEGORIES = (INSERT, UDM, COMPACTION, METADATA)
"""The documentation's categories (:mod:`helpers.matrix.documented`): the three of its write
conflict table, and the metadata changes its MetadataChangedException names."""


@dataclass(frozen=True)
class Operation:
    name: str
    label: str
    """Short, for the grid's axes."""
    what: str
    """One sentence: what it does to the base table."""
    category: str | None
    """Its category in the documentation's write-conflict table, or None if the table has none."""
    category_note: str = ""
    """Why it has that category (or none)."""
    original: str | None = None
    """For a retry: the operation whose commit landed first (the same write, not acknowledged)."""
    writes_data: bool = True
    """It writes data files before its commit (so a race can fall before or after them:
    :data:`INTERLEAVINGS`). A metadata change writes none; a DELETE of every row only removes files;
    a checked retry may write nothing (it skips when its version landed)."""
    apart_of: str | None = None
    """For a second job on a part of its own: the operation it repeats on another part of the table
    (:attr:`helpers.matrix.layouts.Layout.apart`), raced after that operation only (:data:`APART_OPS`)."""

    @property
    def is_retry(self) -> bool:
        return self.original is not None


_OPS = (
    Operation("append", "append", "blind append of ids 101-104", INSERT),
    Operation(
        "overwrite",
        "overwrite",
        "replace every row with ids 201-203 (mode overwrite)",
        UDM,
        "an overwrite removes every file it read, as a DELETE of all rows does, then inserts",
    ),
    Operation(
        "replace_where",
        "replaceWhere",
        f"overwrite the rows where {REPLACE_PREDICATE} with new values "
        "(delta-rs predicate=, Spark replaceWhere)",
        UDM,
        "it deletes the rows its predicate selects, then inserts",
    ),
    Operation("delete", "DELETE", f"DELETE WHERE {DELETE_PREDICATE}", UDM),
    Operation(
        "delete_all",
        "DELETE all",
        "DELETE with no predicate: every row",
        UDM,
        "it deletes every row: every file it read is removed",
        writes_data=False,
    ),
    Operation("update", "UPDATE", f"UPDATE SET value = value + 1 WHERE {UPDATE_PREDICATE}", UDM),
    Operation(
        "merge",
        "MERGE",
        f"MERGE (upsert) of ids {', '.join(str(r[0]) for r in MERGE_SOURCE)} ON {MERGE_CONDITION}",
        UDM,
    ),
    Operation(
        "optimize",
        "OPTIMIZE",
        "OPTIMIZE: compact the small files into one",
        COMPACTION,
        "a rewrite with dataChange=false",
    ),
    Operation(
        "zorder",
        "Z-ORDER",
        f"OPTIMIZE ZORDER BY ({', '.join(ZORDER_COLUMNS)})",
        COMPACTION,
        "a rewrite with dataChange=false",
    ),
    Operation(
        "vacuum",
        "OPTIMIZE+VACUUM 0h",
        "OPTIMIZE, then VACUUM RETAIN 0 HOURS: the files the other writer's "
        "snapshot still names are deleted from storage, and so is every file the log does not name (a "
        "writer's files not committed yet): Delta Spark's VACUUM, delta-rs 1.x's with full=True (its "
        "default, lite, deletes only files the log removed; 0.22.3 has one mode)",
        None,
        "VACUUM is no write of the table; the docs' VACUUM section warns that a retention under 7 days can "
        "delete files a concurrent writer still uses",
    ),
    Operation(
        "vacuum_retained",
        "OPTIMIZE+VACUUM 7d",
        "OPTIMIZE, then VACUUM with the default retention (7 days: no RETAIN clause; delta-rs's "
        "retention_hours unset, its retention check on, full=True in 1.x): it deletes only files older "
        "than 7 days, so none of this table's",
        None,
        "VACUUM is no write of the table; the docs' VACUUM section advises the default retention",
    ),
    Operation(
        "add_column",
        "add column",
        f"add a nullable column {ADDED_COLUMN[0]} ({ADDED_COLUMN[1]})",
        METADATA,
        "a schema change: a metadata update",
        writes_data=False,
    ),
    Operation(
        "set_property",
        "set property",
        f"set the table property {PROPERTY[0]} = {PROPERTY[1]!r}",
        METADATA,
        "a table property: a metadata update",
        writes_data=False,
    ),
    Operation(
        "append_txn",
        "append (app txn)",
        f"blind append of ids 101-104 carrying the idempotent-write "
        f"identifier ({APP_ID!r}, version {APP_VERSION})",
        INSERT,
    ),
    Operation(
        "retry",
        "retry, no id",
        "the same append retried after its commit landed unacknowledged, with no identifier",
        None,
        "a retry is the same write again: the docs' table has no cell for it",
        original="append",
    ),
    Operation(
        "retry_txn",
        "retry, app txn",
        "the same append retried with the same idempotent-write identifier",
        None,
        "a retry is the same write again: the docs' table has no cell for it",
        original="append_txn",
    ),
    Operation(
        "retry_checked",
        "retry, checked",
        "the retry first reloads the table and asks which version of "
        f"{APP_ID!r} it holds (transaction_version); it appends only if that is below its own",
        None,
        "a retry is the same write again: the docs' table has no cell for it",
        original="append_txn",
        writes_data=False,
    ),
    Operation(
        "retry_checked_stale",
        "retry, checked stale",
        "the same check, asked of the retry's stale snapshot instead of the latest table",
        None,
        "a retry is the same write again: the docs' table has no cell for it",
        original="append_txn",
        writes_data=False,
    ),
    Operation(
        "merge_on_id",
        "MERGE on id",
        "MERGE (upsert) whose condition names the id only (t.id = s.id): its "
        "part of the table is only in the source's rows",
        UDM,
        "a MERGE whose condition does not name the part reads every file of the table",
    ),
    *(
        Operation(
            f"{name}_on_id",
            f"{label} by id",
            f"{label} whose predicate names ids only, rows of its own part: the part is not named",
            UDM,
            f"a {label} whose predicate does not name the part reads every file of the table",
        )
        for name, label in (("delete", "DELETE"), ("update", "UPDATE"))
    ),
    *(
        Operation(
            f"{name}_apart",
            f"{label},\nother part",
            f"the same {label} by a second job, on a part of the table "
            "of its own (another partition, or another range of ids)",
            category,
            apart_of=name,
        )
        for name, label, category in (
            ("append", "append", INSERT),
            ("replace_where", "replaceWhere", UDM),
            ("delete", "DELETE", UDM),
            ("update", "UPDATE", UDM),
            ("merge", "MERGE", UDM),
            ("merge_on_id", "MERGE on id", UDM),
            ("delete_on_id", "DELETE by id", UDM),
            ("update_on_id", "UPDATE by id", UDM),
        )
    ),
)

OPERATIONS: dict[str, Operation] = {op.name: op for op in _OPS}
"""Every operation, by name."""
MATRIX_OPS = (
    "append",
    "overwrite",
    "replace_where",
    "delete",
    "delete_all",
    "update",
    "merge",
    "optimize",
    "zorder",
    "vacuum",
    "vacuum_retained",
    "add_column",
    "set_property",
)
"""The operations raced against each other, every ordered pair (rows and columns of the grid)."""
RETRY_OPS = ("retry", "retry_txn", "retry_checked", "retry_checked_stale")
"""The retried-append scenarios: each runs after its own :attr:`Operation.original` only."""
APART_OPS = (
    "append_apart",
    "replace_where_apart",
    "delete_apart",
    "update_apart",
    "merge_apart",
    "merge_on_id_apart",
    "delete_on_id_apart",
    "update_on_id_apart",
)
"""The same operation from two jobs on parts of their own (parallel backfills): each runs after its own
:attr:`Operation.apart_of` only (and those of :data:`APART_AFTER`), on the partitions and file-stats
layouts only. Two MERGEs: one whose condition names the part (``merge``), one whose condition does not
(``merge_on_id``: the part only in the source's rows), as the documentation warns such a MERGE can
conflict although the parts differ; the same for a DELETE and an UPDATE by id (:data:`BY_KEY`)."""
BY_KEY = {"merge_on_id": "merge", "delete_on_id": "delete", "update_on_id": "update"}
"""The forms whose condition names the key only, not the part: each is its operation with the layout's
:attr:`helpers.matrix.layouts.Layout.by_key` condition (a layout without one does not race it)."""
APART_AFTER = {
    "delete_on_id_apart": ("delete", "delete_on_id"),
    "update_on_id_apart": ("update", "update_on_id"),
}
"""The first jobs a second job by id is raced after: one whose predicate names its partition, and
one by id too (every other second job: its :attr:`Operation.apart_of` alone)."""
CHOICES = MATRIX_OPS + RETRY_OPS + APART_OPS
"""What ``--ops`` accepts."""


INTERLEAVINGS = {
    "b-files-after": "B writes its data files after A commits",
    "b-files-first": "B writes its data files before A commits, and commits after",
}
"""Where A's commit falls in B's run. Both read the base version first; what differs is whether B's
data files are already in storage when A commits (and, if A is a VACUUM, whether A can delete them).
delta-rs's B, run from its stale handle after A, writes them after; Delta Spark's, held at its commit
file, before (:mod:`helpers.matrix.spark`). Each engine races the other point too
(:attr:`helpers.matrix.engines.EngineSpec.interleaving`)."""

LAYOUT_OPS = ("append", "replace_where", "delete", "update", "merge")
"""The operations raced on the partitions and file-stats layouts: those with rows or a predicate of
their own there. The others read or rewrite the whole table on every layout."""


class UnknownName(ValueError):
    """An operation or engine name the matrix does not know; the message lists the valid ones."""


def check_names(kind: str, names: list[str], valid: tuple[str, ...] | list[str]) -> list[str]:
    """``names`` if each is in ``valid``; else raises UnknownName naming the unknown and the valid ones."""
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise UnknownName(
            f"unknown {kind} {', '.join(repr(n) for n in unknown)}; choose from {', '.join(valid)}"
        )
    return list(names)


def pairs(names: list[str] | tuple[str, ...] = CHOICES) -> list[tuple[str, str]]:
    """The ordered (first, second) pairs to race for these operation names: every ordered pair of
    the matrix operations among them, then each retry after its original, then each second job on a
    part of its own after the first (:data:`APART_OPS`)."""
    check_names("operation", list(names), CHOICES)
    matrix = [name for name in MATRIX_OPS if name in names]
    retries = [name for name in RETRY_OPS if name in names]
    apart = [name for name in APART_OPS if name in names]
    return (
        [(a, b) for a in matrix for b in matrix]
        + [(OPERATIONS[r].original, r) for r in retries]
        + [(a, x) for x in apart for a in APART_AFTER.get(x, (OPERATIONS[x].apart_of,))]
    )
