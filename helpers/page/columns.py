"""The races of the one-page answer (:mod:`helpers.page.decision`), its columns: a :class:`Column` per race,
the conflict matrix's pairs that answer it and the section a matrix cell of it links; and the pairs one engine
meets beside the other (:data:`SHARED_PAIRS`, and VACUUM's apart: :data:`VACUUM_PAIRS`).
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.matrix import operations as matrix_ops
from helpers.page.notebook_sections import S13_4, S13_5, S13_6, Section


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
    (matrix_ops.OPERATIONS[x].apart_of, x) for x in matrix_ops.APART_OPS if "_on_id" not in x
)
"""The same operation from two jobs, each on a partition of its own named in its condition (the matrix's
pairs of :data:`helpers.matrix.operations.APART_OPS`; the MERGE whose condition does not name the
partition, and a DELETE's or UPDATE's predicate by key only, are a condition of the cell:
:data:`helpers.page.matrix_verdicts.UNNAMED_MERGE`)."""
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
        "vacuum_retained",
        "VACUUM keeping the default 7 days ‖ any write",
        _both(WRITERS, "vacuum_retained"),
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
SHARED_PAIRS = tuple(
    p
    for c in COLUMNS
    if not c.layout and c.key not in ("retry", "other") and not c.key.startswith("vacuum")
    for p in c.pairs
)
"""Every pair the matrix races on one table but VACUUM's: what one engine meets beside the other."""
VACUUM_PAIRS = tuple(p for c in COLUMNS if c.key in ("vacuum", "vacuum_rewrite") for p in c.pairs)
