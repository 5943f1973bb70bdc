"""Delta's documented write conflicts, as data, and each measured pair set against them.

``data/delta_write_conflicts.csv`` holds, one row per (first, second, isolation level), what the
documentation says of two concurrent writes of these categories, with the page, its section and
the date it was read. ``first`` is the write that commits first (A), ``second`` the one that
commits after it from an older snapshot (B). Two pages:

* docs.delta.io, "Concurrency control": one table (INSERT, UPDATE/DELETE/MERGE INTO, COMPACTION),
  with no isolation levels, and the MetadataChangedException a concurrent metadata update causes;
* docs.databricks.com, "Concurrency control" (Delta Lake on Databricks): the same table split by
  isolation level, WriteSerializable (Delta's default) and Serializable, and "metadata changes
  cause all concurrent write operations to fail".

Both tables are symmetric; the CSV lists each pair in both orders. A pair the pages do not cover
(VACUUM, a retried write, a write after a metadata change's loser) is "not covered".

"Can conflict" means: if the two touch the same files. On the matrix's shared-files layout every
operation touches every file of the base table (:mod:`helpers.matrix.operations`), so there "can
conflict" reads "conflicts". On the partitions and file-stats layouts two different operations touch
different files (a partition, or a range of ids, of their own), so there it reads "cannot conflict"
(the docs' own advice: partition, and use disjoint conditions); an operation raced against itself
still touches the same files. A second job of the same operation on a part of its own
(:data:`helpers.matrix.operations.APART_OPS`) touches other files, so there too "can conflict" reads
"cannot conflict", but for a second job whose condition does not name the part (``merge_on_id``,
``delete_on_id``, ``update_on_id``: :data:`helpers.matrix.operations.BY_KEY`): it reads every file, and
the docs warn that it can conflict although the jobs write different partitions.
:func:`compare` sets a verdict against WriteSerializable, the level a table has unless it sets
``delta.isolationLevel``, and names Serializable's answer beside it.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache

from helpers.ground import config
from helpers.matrix import classify
from helpers.matrix import layouts
from helpers.matrix import operations as ops

CONFLICTS_CSV = config.DATA_DIR / "delta_write_conflicts.csv"
LEVELS = ("unstated", "WriteSerializable", "Serializable")
CAN, CANNOT, NOT_COVERED = "can conflict", "cannot conflict", "not covered"


@dataclass(frozen=True)
class Expectation:
    delta_io: str
    write_serializable: str
    serializable: str
    why: str = ""
    """Where it comes from: the categories, or why the docs do not cover the pair."""


@lru_cache(maxsize=None)
def table() -> dict[tuple[str, str, str], dict]:
    """The CSV as ``{(first, second, isolation_level): row}``."""
    with CONFLICTS_CSV.open(newline="", encoding="utf-8") as handle:
        return {
            (row["first"], row["second"], row["isolation_level"]): row
            for row in csv.DictReader(handle)
        }


def sources() -> list[tuple[str, str]]:
    """The pages the table was read from, with the date each was read."""
    return sorted({(row["page"], row["read_on"]) for row in table().values()})


def expectation(first: str, second: str, layout: str = layouts.SHARED_FILES.name) -> Expectation:
    """What the documentation says of operation ``second`` committing after ``first`` from an
    older snapshot (operation names from :data:`helpers.matrix.operations.OPERATIONS`), on this
    layout (:data:`helpers.matrix.layouts.LAYOUTS`: see the module's text)."""
    a, b = ops.OPERATIONS[first], ops.OPERATIONS[second]
    if b.apart_of:  # the same operation from a second job on a part of its own
        said = expectation(first, b.apart_of)
        if b.apart_of in ops.BY_KEY:  # its condition names the key only
            return Expectation(
                *(said.delta_io, said.write_serializable, said.serializable),
                f"{said.why}: {ops.OPERATIONS[b.apart_of].category_note}, so it can conflict "
                "although the two jobs write different parts",
            )
        apart = tuple(
            CANNOT if says == CAN else says
            for says in (said.delta_io, said.write_serializable, said.serializable)
        )
        return Expectation(
            *apart,
            f"{said.why}, each job's condition naming a part of its own ({layout}: \"can "
            'conflict" only if they touch the same files)',
        )
    if layout != layouts.SHARED_FILES.name and first != second:
        said = expectation(first, second)
        if CAN in (said.write_serializable, said.serializable, said.delta_io):
            apart = tuple(
                CANNOT if says == CAN else says
                for says in (said.delta_io, said.write_serializable, said.serializable)
            )
            return Expectation(
                *apart,
                f'{said.why}, on different files ({layout}: "can conflict" only if '
                "they touch the same files)",
            )
        return said
    if a.category is None or b.category is None:
        note = (a if a.category is None else b).category_note
        return Expectation(NOT_COVERED, NOT_COVERED, NOT_COVERED, note)
    says = [
        table().get((a.category, b.category, level), {}).get("says", NOT_COVERED)
        for level in LEVELS
    ]
    if says == [NOT_COVERED] * 3:
        return Expectation(
            *says, f"the docs name no conflict for a {b.category} after a {a.category}"
        )
    return Expectation(*says, f"{a.category} then {b.category}")


def compare(verdict: classify.Verdict, expected: Expectation) -> tuple[str, str]:
    """``("yes" | "no" | "", disagreement)``: does the measured outcome agree with WriteSerializable's
    answer? A refusal where the docs say the two cannot conflict is a needless failure; a commit
    where they conflict, or any anomaly, is a disagreement too. ``""`` when the docs do not cover
    the pair or the pair did not run."""
    if (
        verdict.outcome in (classify.NOT_AVAILABLE, classify.ERROR)
        or expected.write_serializable == NOT_COVERED
    ):
        return "", ""
    docs = expected.write_serializable
    also = "" if expected.serializable == docs else f" (Serializable: {expected.serializable})"
    if verdict.outcome == classify.REFUSED:
        if docs == CANNOT:
            return (
                "no",
                f"needless failure: refused ({verdict.conflict or verdict.error_class}) where WriteSerializable says these cannot conflict{also}",
            )
        return "yes", ""
    if verdict.outcome == classify.ANOMALY:
        return "no", f"anomaly ({verdict.kind}) where WriteSerializable says these {docs}{also}"
    if docs == CAN:
        return (
            "no",
            f"committed where WriteSerializable says these conflict{also}; the result equals {verdict.matched}",
        )
    return "yes", ""
