"""The oracle's verdict on one raced pair: refused, serializable or anomaly, and which anomaly.

The verdict compares what the race left with what running the two operations one after the
other leaves (:mod:`helpers.matrix.pairs`), never with a table of expected answers:

* **refused**: B raised, and the table equals A's result alone (its error class and Delta's name
  for the conflict are kept);
* **serializable**: B committed and the table equals a serial order: A→B, or B→A (what Delta's
  WriteSerializable allows when a stale DELETE/UPDATE/MERGE commits after an INSERT);
* **anomaly**: anything else. Its kinds: ``duplicated rows`` (an id more often than any serial
  order has it), ``resurrected rows`` (an id every serial order removed), ``lost update`` (a row,
  value, column or property that every serial order has, missing), ``removed twice`` (the log
  removes a file already removed), ``broken log`` (the table cannot be read, or its log is damaged).

A retry (the same append again after its commit landed) is judged against A alone: a retry must
leave the table as one append left it. It is judged twice: from the snapshot the writer had before
the commit landed (the race), and after reloading the table (:func:`retry_after_reload`, a new
invocation, as a Lambda retried after a timeout is).

Everything here is pure: states in, :class:`Verdict` out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from helpers.matrix import operations as ops

REFUSED, SERIALIZABLE, ANOMALY = "refused", "serializable", "anomaly"
NOT_AVAILABLE, ERROR = "not available", "error"
OUTCOMES = (REFUSED, SERIALIZABLE, ANOMALY, NOT_AVAILABLE, ERROR)
KINDS = ("duplicated rows", "lost update", "resurrected rows", "removed twice", "broken log")

CONFLICT_NAMES = (
    ("concurrent transactions added new data", "ConcurrentAppend"),
    ("deleted the same data your transaction deletes", "ConcurrentDeleteDelete"),
    ("deleted data this operation read", "ConcurrentDeleteRead"),
    ("metadata changed", "MetadataChanged"),
    ("concurrent transaction failed", "ConcurrentTransaction"),
    ("protocol changed", "ProtocolChanged"),
    ("failed to fetch metadata for file", "missing data file"),
    ("object at location", "missing data file"),
)
"""delta-rs's conflict messages and Delta's exception for each (Delta Spark names its own); and
the refusal that is no conflict check at all: a data file of the stale snapshot is gone (vacuumed;
Delta Spark's ``FileNotFoundException`` too)."""


@dataclass(frozen=True)
class Verdict:
    outcome: str
    kinds: tuple[str, ...] = ()
    matched: str = ""
    """Which serial result the table equals: ``A→B``, ``B→A``, ``A→B = B→A`` or ``A alone``."""
    error_class: str = ""
    conflict: str = ""
    """Delta's name for the refusal (``ConcurrentDeleteRead``...), ``missing data file``, or ``""``."""
    detail: str = ""

    @property
    def kind(self) -> str:
        return " + ".join(self.kinds)


def conflict_name(error: dict | None) -> str:
    """Delta's exception name for an error record (``{"class", "message"}``), or ``""``."""
    if not error:
        return ""
    if (
        error["class"] == "FileNotFoundException"
    ):  # Delta Spark reading a data file a VACUUM deleted
        return "missing data file"
    if error["class"].startswith("Concurrent") or error["class"].endswith("ChangedException"):
        return error["class"].removesuffix("Exception")  # Delta Spark's own exceptions
    text = error["message"].lower()
    return next((name for phrase, name in CONFLICT_NAMES if phrase in text), "")


def _columns(states: list[dict]) -> list[str]:
    return sorted({c for s in states for c in s.get("columns", [])})


def _rows(state: dict, columns: list[str]) -> Counter:
    """The state's rows as a multiset of tuples over ``columns`` (None where the state lacks one)."""
    index = {c: i for i, c in enumerate(state.get("columns", []))}
    return Counter(
        tuple(row[index[c]] if c in index else None for c in columns)
        for row in state.get("rows", [])
    )


def same(left: dict, right: dict) -> bool:
    """Equal contents: the same columns, table properties and rows (as multisets)."""
    if "unreadable" in left or "unreadable" in right:
        return False
    columns = _columns([left, right])
    return (
        set(left["columns"]) == set(right["columns"])
        and left.get("properties", {}) == right.get("properties", {})
        and _rows(left, columns) == _rows(right, columns)
    )


def _ids(rows: Counter) -> Counter:
    ids: Counter = Counter()
    for row, count in rows.items():
        ids[row[0]] += count
    return ids


def _shown(ids) -> str:
    """``"ids 1, 2, 3"``, or ``"11 ids (1, 2, ..., 11)"`` when there are many."""
    ids = sorted(ids)
    if len(ids) <= 6:
        return f"id{'s' if len(ids) > 1 else ''} {', '.join(str(i) for i in ids)}"
    return f"{len(ids)} ids ({', '.join(str(i) for i in ids[:4])}, ..., {ids[-1]})"


def anomaly_kinds(
    race: dict, candidates: list[dict], base: dict, problems: list[dict]
) -> tuple[tuple[str, ...], str]:
    """What is wrong with ``race`` against every serial result in ``candidates``: the kinds (in
    :data:`KINDS` order) and a sentence naming the ids, columns, properties or files."""
    found: dict[str, str] = {}
    problem_kinds = {p["kind"] for p in problems}
    if "unreadable" in race:
        found["broken log"] = (
            f"the table cannot be read: {race['unreadable']['class']}: {race['unreadable']['message']}"
        )
    elif problem_kinds - {"removed twice", "stray file"}:
        found["broken log"] = "; ".join(
            f"{p['kind']}: {p['file']}" for p in problems if p["kind"] != "removed twice"
        )[:300]
    if "removed twice" in problem_kinds:
        files = [p for p in problems if p["kind"] == "removed twice"]
        found["removed twice"] = (
            f"{len(files)} file(s) removed again at version {files[0]['version']}"
        )
    if "unreadable" not in race:
        columns = _columns([race, *candidates, base])
        rows = _rows(race, columns)
        ids, serial = _ids(rows), [_ids(_rows(c, columns)) for c in candidates]
        serial_rows = [_rows(c, columns) for c in candidates]
        base_ids = _ids(_rows(base, columns))
        every = set.intersection(*(set(s) for s in serial)) if serial else set()
        twice = [i for i in ids if ids[i] > 1 and ids[i] > max(s[i] for s in serial)]
        back = [i for i in ids if all(s[i] == 0 for s in serial) and base_ids[i] > 0]
        lost = [i for i in every if ids[i] < min(s[i] for s in serial)]
        stale = [
            i
            for i in every
            if ids[i]
            and i not in lost
            and not any(any(r[0] == i and r in rows for r in s) for s in serial_rows)
        ]
        if twice:
            found["duplicated rows"] = f"{_shown(twice)} more often than in any serial result"
        lost_parts = []
        if lost:
            lost_parts.append(f"rows of {_shown(lost)} missing")
        if stale:
            lost_parts.append(f"{_shown(stale)} with values no serial order gives")
        missing_columns = set.intersection(*(set(c["columns"]) for c in candidates)) - set(
            race["columns"]
        )
        if missing_columns:
            lost_parts.append(f"column(s) {', '.join(sorted(missing_columns))} missing")
        missing_properties = [
            k
            for k, v in candidates[0].get("properties", {}).items()
            if all(c.get("properties", {}).get(k) == v for c in candidates)
            and race.get("properties", {}).get(k) != v
        ]
        if missing_properties:
            lost_parts.append(
                f"table propert{'y' if len(missing_properties) == 1 else 'ies'} "
                f"{', '.join(missing_properties)} missing"
            )
        if lost_parts:
            found["lost update"] = "; ".join(lost_parts)
        if back:
            found["resurrected rows"] = (
                f"{_shown(back)}, removed by every serial order, back in the table"
            )
    kinds = tuple(k for k in KINDS if k in found)
    if not kinds:
        return ("other",), "the table differs from every serial order"
    return kinds, "; ".join(found[k] for k in kinds)


def _serial_candidates(record: dict) -> list[tuple[str, dict]]:
    if ops.OPERATIONS[record["second"]].is_retry:
        return [("A alone", record["alone_a"])]
    ab, ba = record["serial_ab"]["state"], record["serial_ba"]["state"]
    return [("A→B", ab), ("B→A", ba)]


def judge(
    state: dict,
    problems: list[dict],
    b_error: dict | None,
    candidates: list[tuple[str, dict]],
    alone_a: dict,
    base: dict,
) -> Verdict:
    """The verdict on a table left by A then B: refused if B raised and the table is A's alone,
    serializable if B committed and it equals a candidate, else anomaly (with its kinds)."""
    clean = not [p for p in problems if p["kind"] != "stray file"]
    if b_error:
        if clean and same(state, alone_a):
            return Verdict(
                REFUSED,
                matched="A alone",
                error_class=b_error["class"],
                conflict=conflict_name(b_error),
                detail=b_error["message"],
            )
        kinds, detail = anomaly_kinds(state, [alone_a], base, problems)
        return Verdict(
            ANOMALY,
            kinds,
            error_class=b_error["class"],
            conflict=conflict_name(b_error),
            detail=f"B raised, yet the table is not A's alone: {detail}",
        )
    matched = [label for label, candidate in candidates if same(state, candidate)]
    if matched and clean:
        label = " = ".join(matched)
        note = "equals B→A only: the history lists A first" if matched == ["B→A"] else ""
        return Verdict(SERIALIZABLE, matched=label, detail=note)
    kinds, detail = anomaly_kinds(state, [c for _, c in candidates], base, problems)
    return Verdict(ANOMALY, kinds, detail=detail)


def classify(record: dict, base: dict) -> Verdict:
    """The verdict on a pair record from :meth:`helpers.matrix.pairs.Runner.run_pair` (the race)."""
    if record["status"] == "not available":
        return Verdict(NOT_AVAILABLE, detail=record["reason"])
    if record["status"] != "ran":
        return Verdict(ERROR, detail=record["reason"])
    race = record["race"]
    if race["a_error"]:
        return Verdict(
            ERROR,
            detail=f"A failed in the race: {race['a_error']['class']}: {race['a_error']['message']}",
        )
    return judge(
        race["state"],
        race["problems"],
        race["error"],
        _serial_candidates(record),
        record["alone_a"],
        base,
    )


def retry_after_reload(record: dict, base: dict) -> Verdict | None:
    """For a retry: the verdict on the retry run after reloading the table (serial A→B), against A
    alone; None for any other pair."""
    if record.get("status") != "ran" or not ops.OPERATIONS[record["second"]].is_retry:
        return None
    serial = record["serial_ab"]
    return judge(
        serial["state"],
        serial["problems"],
        serial["error"],
        [("A alone", record["alone_a"])],
        record["alone_a"],
        base,
    )
