"""The conflict matrix's layouts: a base table and the rows and predicates each operation uses on it.

The shared-files layout (:data:`SHARED_FILES`) is the matrix's own (:mod:`helpers.matrix.operations`'s
base table and values); :data:`PARTITIONS` and :data:`FILE_STATS` give each operation a part of the
table of its own. Every engine races :data:`helpers.matrix.operations.LAYOUT_OPS` and the second jobs
of :data:`helpers.matrix.operations.APART_OPS` on them (``<engine>+<layout>``).

Standard library only: this module runs in every era's Python.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from helpers.matrix.operations import (
    APPEND_ROWS,
    BASE_BATCHES,
    BASE_DELETE,
    BY_KEY,
    COLUMNS,
    DELETE_PREDICATE,
    MERGE_CONDITION,
    MERGE_SOURCE,
    OPERATIONS,
    OVERWRITE_ROWS,
    REPLACE_PREDICATE,
    REPLACE_ROWS,
    UPDATE_PREDICATE,
)


@dataclass(frozen=True)
class Layout:
    """A base table and the rows and predicates each operation uses on it.

    The shared-files layout (:data:`SHARED_FILES`) is the matrix's own: every predicate reads every
    file, so wherever the documentation says two operations "can conflict" because they may touch the
    same files, they do. The other two give each operation a part of the table of its own, as teams
    lay tables out to let writers run at once: a partition (:data:`PARTITIONS`), or a range of ids
    that file statistics (each file's min and max) separate (:data:`FILE_STATS`). Only the operations
    with a predicate or rows of their own (:data:`helpers.matrix.operations.LAYOUT_OPS`) are raced on them."""

    name: str
    """Its key: ``shared-files``, ``partitions``, ``file-stats``."""
    what: str
    """One sentence, for the page."""
    columns: tuple[str, ...]
    partition_by: tuple[str, ...]
    base: tuple[tuple[tuple, ...], ...]
    """The base table's appends, one data file each (rows over :attr:`columns`)."""
    base_delete: str
    append_rows: tuple[tuple, ...]
    overwrite_rows: tuple[tuple, ...]
    replace_predicate: str
    replace_rows: tuple[tuple, ...]
    delete_predicate: str
    update_predicate: str
    merge_source: tuple[tuple, ...]
    merge_condition: str
    words: dict[str, str]
    """What an operation does on this layout, where it differs from :attr:`Operation.what`."""
    by_key: dict[str, str] | None = None
    """The condition of each :data:`~helpers.matrix.operations.BY_KEY` form that names ids only, not the part (``merge``: its
    MERGE condition; ``delete``, ``update``: their predicates), by its operation."""
    apart: Layout | None = None
    """The same layout with the rows and predicates of a second job on parts of its own
    (:data:`~helpers.matrix.operations.APART_OPS`): each operation on another partition, or another range of ids, than its own."""

    def what_of(self, op: str) -> str:
        return self.words.get(op, OPERATIONS[op].what)

    def for_op(self, op: str) -> tuple[Layout, str]:
        """``(layout, operation)`` an engine runs for ``op``: a second job's operation (:data:`~helpers.matrix.operations.APART_OPS`)
        is its :attr:`~helpers.matrix.operations.Operation.apart_of` on :attr:`apart`; a :data:`~helpers.matrix.operations.BY_KEY` form is its operation
        with the condition of :attr:`by_key`."""
        layout = self
        apart_of = OPERATIONS[op].apart_of
        if apart_of:
            if self.apart is None:
                raise ValueError(f"{op} needs a layout with parts of their own, not {self.name}")
            layout, op = self.apart, apart_of
        plain = BY_KEY.get(op)
        if plain:
            if plain not in (layout.by_key or {}):
                raise ValueError(f"{op} needs a layout with a condition by id, not {self.name}")
            field = "merge_condition" if plain == "merge" else f"{plain}_predicate"
            layout, op = replace(layout, **{field: layout.by_key[plain]}), plain
        return layout, op

    def races(self, op: str) -> bool:
        """Whether this layout has ``op`` (a :data:`~helpers.matrix.operations.BY_KEY` form, or a second job of one, only where
        :attr:`by_key` gives its condition)."""
        plain = BY_KEY.get(OPERATIONS[op].apart_of or op)
        return plain is None or plain in (self.by_key or {})


def _rows(ids, part: str | None = None) -> tuple[tuple, ...]:
    return tuple((i, 10 * i) if part is None else (i, 10 * i, part) for i in ids)


SHARED_FILES = Layout(
    "shared-files",
    "every predicate reads every file (ids taken modulo 4), three files",
    COLUMNS,
    (),
    tuple(_rows(batch) for batch in BASE_BATCHES),
    BASE_DELETE,
    APPEND_ROWS,
    OVERWRITE_ROWS,
    REPLACE_PREDICATE,
    REPLACE_ROWS,
    DELETE_PREDICATE,
    UPDATE_PREDICATE,
    MERGE_SOURCE,
    MERGE_CONDITION,
    {},
)
_PARTS = ("a", "b", "c", "d")
_BATCHES4 = ((1, 2, 3, 4), (5, 6, 7, 8), (9, 10, 11, 12), (13, 14, 15, 16))
PARTITIONS = Layout(
    "partitions",
    "partitioned by part (a: ids 1-4, b: 5-8, c: 9-12, d: 13-16); each operation keeps to a "
    "partition of its own, and the append writes a new one (e)",
    COLUMNS + ("part",),
    ("part",),
    tuple(_rows(batch, part) for batch, part in zip(_BATCHES4, _PARTS)),
    BASE_DELETE,
    _rows((101, 102, 103, 104), "e"),
    _rows((201, 202, 203), "f"),
    "part = 'a'",
    ((1, 15, "a"), (2, 25, "a"), (3, 35, "a"), (4, 45, "a")),
    "part = 'b' AND id % 4 = 2",
    "part = 'c' AND id % 4 = 3",
    ((13, -13, "d"), (17, -17, "d")),
    "t.part = 'd' AND t.id = s.id",
    {
        "append": "blind append of ids 101-104 into a new partition e",
        "replace_where": "overwrite partition a (ids 1-4) with new values (delta-rs predicate=, Spark replaceWhere "
        "\"part = 'a'\")",
        "delete": "DELETE WHERE part = 'b' AND id % 4 = 2 (id 6)",
        "update": "UPDATE SET value = value + 1 WHERE part = 'c' AND id % 4 = 3 (id 11)",
        "merge": "MERGE (upsert) of ids 13 and 17 into partition d ON t.part = 'd' AND t.id = s.id",
        "merge_on_id": "MERGE (upsert) of ids 13 and 17 into partition d ON t.id = s.id (the partition only in the "
        "source's rows)",
        "delete_on_id": "DELETE WHERE id = 6 (a row of partition b, not named)",
        "update_on_id": "UPDATE SET value = value + 1 WHERE id = 11 (a row of partition c, not named)",
    },
    {"merge": "t.id = s.id", "delete": "id = 6", "update": "id = 11"},
)
PARTITIONS = replace(
    PARTITIONS,
    apart=replace(
        PARTITIONS,
        append_rows=_rows((111, 112, 113, 114), "g"),
        replace_predicate="part = 'b'",
        replace_rows=((5, 55, "b"), (6, 65, "b"), (7, 75, "b"), (8, 85, "b")),
        delete_predicate="part = 'c' AND id % 4 = 2",
        update_predicate="part = 'd' AND id % 4 = 3",
        merge_source=((1, -1, "a"), (18, -18, "a")),
        merge_condition="t.part = 'a' AND t.id = s.id",
        words={},
        by_key={"merge": "t.id = s.id", "delete": "id = 10", "update": "id = 15"},
    ),
)
FILE_STATS = Layout(
    "file-stats",
    "not partitioned; each operation's predicate names a range of ids that the files' statistics "
    "(min and max per file: 1-4, 5-8, 9-11, 13-16) place in one file, and the appended file (101-104) in none",
    COLUMNS,
    (),
    tuple(_rows(batch) for batch in _BATCHES4),
    BASE_DELETE,
    APPEND_ROWS,
    OVERWRITE_ROWS,
    REPLACE_PREDICATE,
    REPLACE_ROWS,
    "id >= 5 AND id <= 8 AND id % 4 = 2",
    "id >= 9 AND id <= 12 AND id % 4 = 3",
    ((13, -13), (17, -17)),
    "t.id = s.id AND t.id >= 13 AND t.id <= 20",
    {
        "delete": "DELETE WHERE id >= 5 AND id <= 8 AND id % 4 = 2 (id 6)",
        "update": "UPDATE SET value = value + 1 WHERE id >= 9 AND id <= 12 AND id % 4 = 3 (id 11)",
        "merge": "MERGE (upsert) of ids 13 and 17 ON t.id = s.id AND t.id >= 13 AND t.id <= 20",
        "merge_on_id": "MERGE (upsert) of ids 13 and 17 ON t.id = s.id (the range only in the source's rows)",
    },
    {
        "merge": "t.id = s.id"
    },  # a DELETE's or UPDATE's predicate names ids already: the same as theirs
)
FILE_STATS = replace(
    FILE_STATS,
    apart=replace(
        FILE_STATS,
        append_rows=_rows((111, 112, 113, 114)),
        replace_predicate="id >= 5 AND id <= 8",
        replace_rows=((5, 55), (6, 65), (7, 75), (8, 85)),
        delete_predicate="id >= 9 AND id <= 12 AND id % 4 = 2",
        update_predicate="id >= 13 AND id <= 16 AND id % 4 = 3",
        merge_source=((1, -1), (0, 0)),
        merge_condition="t.id = s.id AND t.id >= 0 AND t.id <= 4",
        words={},
    ),
)
APART_WORDS = {
    "partitions": {
        "append_apart": "blind append of ids 111-114 into another new partition, g",
        "replace_where_apart": "overwrite partition b (ids 5-8) with new values (\"part = 'b'\")",
        "delete_apart": "DELETE WHERE part = 'c' AND id % 4 = 2 (id 10)",
        "update_apart": "UPDATE SET value = value + 1 WHERE part = 'd' AND id % 4 = 3 (id 15)",
        "merge_apart": "MERGE (upsert) of ids 1 and 18 into partition a ON t.part = 'a' AND t.id = s.id",
        "merge_on_id_apart": "MERGE (upsert) of ids 1 and 18 into partition a ON t.id = s.id",
        "delete_on_id_apart": "DELETE WHERE id = 10 (a row of partition c, not named)",
        "update_on_id_apart": "UPDATE SET value = value + 1 WHERE id = 15 (a row of partition d, not named)",
    },
    "file-stats": {
        "append_apart": "blind append of ids 111-114 (a file of its own)",
        "replace_where_apart": "overwrite the rows where id >= 5 AND id <= 8 with new values",
        "delete_apart": "DELETE WHERE id >= 9 AND id <= 12 AND id % 4 = 2 (id 10)",
        "update_apart": "UPDATE SET value = value + 1 WHERE id >= 13 AND id <= 16 AND id % 4 = 3 (id 15)",
        "merge_apart": "MERGE (upsert) of ids 1 and 0 ON t.id = s.id AND t.id >= 0 AND t.id <= 4",
        "merge_on_id_apart": "MERGE (upsert) of ids 1 and 0 ON t.id = s.id",
    },
}
"""What the second job of a pair on parts of their own does, per layout."""
PARTITIONS = replace(PARTITIONS, words={**PARTITIONS.words, **APART_WORDS["partitions"]})
FILE_STATS = replace(FILE_STATS, words={**FILE_STATS.words, **APART_WORDS["file-stats"]})
LAYOUTS: dict[str, Layout] = {
    layout.name: layout for layout in (SHARED_FILES, PARTITIONS, FILE_STATS)
}
