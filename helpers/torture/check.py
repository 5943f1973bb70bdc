"""What a torture run proves, read from storage alone: the log, the data files, the DynamoDB
items, and the rows as two readers see them. What the writers journaled only says which
operations they were told succeeded (acknowledged); whether each is in the table is decided here.

For one table, :func:`account` matches every planned operation with the commits whose tags name
it and classifies it:

* acknowledged and in exactly one commit: ``kept``; in none: ``lost``; in several: ``duplicated``;
* not acknowledged (the library raised, or the writer was killed) and in no commit: ``absent``;
  in exactly one: ``landed`` (a commit is one file: it is whole or it is not there); in several:
  ``duplicated``.

The rows the table must hold follow from the commits alone: every batch an append in the log
added, minus every batch a delete in the log removed, ten rows each (:func:`expected_batches`).
Orphans are data files in storage that no commit ever added (a writer died or lost before its
commit); VACUUM must remove them and nothing the table still needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from helpers.delta import delta_log, integrity, landing
from helpers.delta.delta_log import BATCH_TAG, WRITER_TAG, commit_tags
from helpers.stores import storage
from helpers.torture.worker import APPEND, DELETE, OP_TAG, TARGET_TAG

KEPT, LOST, DUPLICATED, ABSENT, LANDED = "kept", "lost", "duplicated", "absent", "landed"
ACKNOWLEDGED = "acknowledged"


@dataclass(frozen=True)
class LoggedOperation:
    version: int
    writer: str
    op: int
    kind: str
    target: int | None


def logged_operations(check: integrity.Check) -> list[LoggedOperation]:
    """Every commit that carries torture tags, in version order."""
    found = []
    for version, body in sorted(check.commit_bodies.items()):
        tags = commit_tags(delta_log.read_commit(body)[0])
        if WRITER_TAG in tags and BATCH_TAG in tags:
            target = tags.get(TARGET_TAG)
            found.append(
                LoggedOperation(
                    version,
                    tags[WRITER_TAG],
                    int(tags[BATCH_TAG]),
                    tags.get(OP_TAG, APPEND),
                    int(target) if target not in (None, "None") else None,
                )
            )
    return found


def classify(acknowledged: bool, in_log: int) -> str:
    if in_log > 1:
        return DUPLICATED
    if acknowledged:
        return KEPT if in_log == 1 else LOST
    return LANDED if in_log == 1 else ABSENT


def account(operations: list[dict], logged: list[LoggedOperation]) -> list[dict]:
    """Each journaled operation (``writer``, ``op``, ``outcome``, ...) with ``in_log`` (how many
    commits carry its tags), ``versions`` and ``verdict`` (:func:`classify`)."""
    versions: dict[int, list[int]] = {}
    for entry in logged:
        versions.setdefault(entry.op, []).append(entry.version)
    rows = []
    for op in operations:
        found = versions.get(op["op"], [])
        rows.append(
            {
                **op,
                "in_log": len(found),
                "versions": found,
                "verdict": classify(op["outcome"] == ACKNOWLEDGED, len(found)),
            }
        )
    return rows


def expected_batches(logged: list[LoggedOperation]) -> set[int]:
    """The batches the table must hold: appended by a commit in the log, not deleted by one."""
    appended = {e.op for e in logged if e.kind == APPEND}
    deleted = {e.target for e in logged if e.kind == DELETE and e.target is not None}
    return appended - deleted


def rows_match(rows_by_batch: dict, expected: set[int]) -> list[str]:
    """What differs between the rows a reader saw (``{batch: rows}``) and the expected batches; [] if nothing."""
    seen = {int(b): int(n) for b, n in rows_by_batch.items()}
    problems = []
    missing, extra = sorted(expected - set(seen)), sorted(set(seen) - expected)
    if missing:
        problems.append(f"{len(missing)} batch(es) missing (e.g. {missing[:5]})")
    if extra:
        problems.append(f"{len(extra)} batch(es) that should not be there (e.g. {extra[:5]})")
    wrong = {b: n for b, n in seen.items() if b in expected and n != landing.ROWS_PER_BATCH}
    if wrong:
        problems.append(
            f"{len(wrong)} batch(es) without exactly {landing.ROWS_PER_BATCH} rows (e.g. {dict(list(wrong.items())[:5])})"
        )
    return problems


def orphans(table_uri: str, check: integrity.Check) -> list[str]:
    """Data files in storage that no commit ever added."""
    added = set()
    for body in check.commit_bodies.values():
        added.update(unquote(a["path"]) for a in delta_log.read_commit(body)[1])
    return sorted(
        f for f in storage.list_table(table_uri) if delta_log.is_data_file(f) and f not in added
    )


def lock_items(table_uris: list[str]) -> list[dict]:
    """The DynamoDB log-store items of the tables (:func:`helpers.stores.storage.lock_entries`)."""
    return [item for uri in table_uris for item in storage.lock_entries(uri)]


def incomplete_lock_items(items: list[dict]) -> list[str]:
    """The items (:func:`lock_items`) not marked complete (the item's file name each)."""
    return sorted(
        item["fileName"] for item in items if str(item.get("complete", "")).lower() != "true"
    )


def complete_items_without_commit(items: list[dict], commit_versions) -> list[str]:
    """The items (:func:`lock_items`) marked complete whose ``N.json`` is not in the log: a log
    store that reads the lock table fails every later commit on them ("Invalid table version: N";
    ``findings/deltalake-dynamodb-reclaim-after-a-refused-copy``)."""
    return sorted(
        item["fileName"]
        for item in items
        if str(item.get("complete", "")).lower() == "true"
        and delta_log.commit_version(delta_log.LOG_DIR + item["fileName"]) not in commit_versions
    )
