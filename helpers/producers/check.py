"""Exactly once, from storage: every produced row in the table once, none lost, none twice, and
nothing staged left behind.

A reader's view is not enough: deltalake 1.x reads a data file that two commits add once, so a
batch committed twice (a lost answer, notebook 12 appendix B) leaves the table's row count right.
The log says it: :func:`exactly_once` reads every commit file (:func:`helpers.delta.integrity.check_table`)
and counts, for each data file, the commits that add it, and for each batch of each committer,
the commits that carry it; then the rows a reader gets, by id, against the ids the producers made;
then what is left under ``produced/`` and ``_queue/`` that the table does not hold.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from helpers.delta import integrity
from helpers.ground.checks import Checklist
from helpers.producers import layout
from helpers.runs import audit
from helpers.stores import storage


@dataclass
class Verdict:
    """What storage says of one table (every list empty and every count equal: exactly once)."""

    table_uri: str
    rows_expected: int
    rows_read: int
    rows_the_log_adds: int
    """Rows summed over every add action of every commit (a file added twice counts twice)."""
    missing_ids: int
    extra_ids: int
    duplicate_ids: int
    files_added_twice: dict[str, list[int]] = field(default_factory=dict)
    """Data file -> the versions that add it, for files added by more than one commit."""
    batches_twice: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    """(committer, batch) -> its versions, for batches in more than one commit."""
    staged_left: list[str] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)
    """What :mod:`helpers.delta.integrity` found that stops a reader."""

    def record(self, check: Checklist, label: str = "") -> None:
        """Every exactly-once condition as one check each (``label`` prefixes their names)."""
        at = f"{label}: " if label else ""
        check.equal(f"{at}damage in the log", self.damage, [])
        check.equal(f"{at}data files added by more than one commit", self.files_added_twice, {})
        check.equal(f"{at}batches in more than one commit", self.batches_twice, {})
        check.equal(
            f"{at}rows the log adds (every add action)", self.rows_the_log_adds, self.rows_expected
        )
        check.equal(f"{at}rows read, against rows produced", self.rows_read, self.rows_expected)
        check.equal(f"{at}produced ids missing from the table", self.missing_ids, 0)
        check.equal(f"{at}ids read twice", self.duplicate_ids, 0)
        check.equal(f"{at}ids no producer made", self.extra_ids, 0)

    @property
    def exactly_once(self) -> bool:
        check = Checklist()
        self.record(check)
        return check.passed


def exactly_once(
    table_uri: str, storage_options: dict[str, str], expected_ids: set[int]
) -> Verdict:
    """Read the table from storage and say whether it holds every id in ``expected_ids`` exactly once."""
    from deltalake import DeltaTable

    state = integrity.check_table(table_uri)
    adders: dict[str, list[int]] = collections.defaultdict(list)
    batches: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
    gross = 0
    for version, body in sorted(state.commit_bodies.items()):
        commit = audit.parse_commit(version, body)
        for path in commit.added:
            adders[path].append(version)
        gross += commit.rows_added or 0
        if commit.writer_id is not None and commit.batch is not None:
            batches[(commit.writer_id, commit.batch)].append(version)
    ids = (
        DeltaTable(table_uri, storage_options=dict(storage_options))
        .to_pyarrow_table(columns=["id"])
        .column("id")
        .to_pylist()
    )
    counted = collections.Counter(ids)
    return Verdict(
        table_uri=str(table_uri),
        rows_expected=len(expected_ids),
        rows_read=len(ids),
        rows_the_log_adds=gross,
        missing_ids=len(expected_ids - counted.keys()),
        extra_ids=len(counted.keys() - expected_ids),
        duplicate_ids=sum(n - 1 for n in counted.values() if n > 1),
        files_added_twice={p: v for p, v in adders.items() if len(v) > 1},
        batches_twice={b: v for b, v in batches.items() if len(v) > 1},
        staged_left=staged_left(table_uri, set(state.live_files)),
        damage=[str(p) for p in state.blocking],
    )


def staged_left(table_uri: str, live: set[str]) -> list[str]:
    """Files under ``_queue/`` and ``produced/`` files the table does not hold."""
    return [
        p
        for p in storage.list_table(table_uri)
        if p.startswith("_queue/") or (p.startswith(layout.PRODUCED_DIR + "/") and p not in live)
    ]
