"""The conflict matrix's side of the one-page answer (:mod:`helpers.page.decision`): the verdicts, the rule
from a pair's classes to a verdict (:func:`verdict_of`), and the matrix's rows by engine and pair
(:class:`Results`, ``data/conflict_matrix.csv``)."""

from __future__ import annotations

import csv
import fnmatch
import re
from pathlib import Path

from helpers.ground import config

MATRIX_CSV = config.DATA_DIR / "conflict_matrix.csv"

SAFE, REFUSED, LOSES, DUPLICATES, WRONG, MISREPORTS, BY_DESIGN, NOT_MEASURED = (
    "safe",
    "refused (retry)",
    "loses data",
    "duplicates data",
    "wrong result",
    "fails though committed",
    "refused by design",
    "not measured",
)
VERDICTS = (SAFE, REFUSED, LOSES, DUPLICATES, WRONG, MISREPORTS, BY_DESIGN, NOT_MEASURED)
"""Every verdict a cell may have. :data:`BY_DESIGN` is no outcome of a race: the setting never allows the
operation, whatever runs beside it (it fails before writing anything, and a rerun is refused again); a
notebook's check gives it, never the matrix's rule."""
LOSING_KINDS = ("lost update", "broken log")
"""Kinds that lose data (a committed write's rows, values or columns gone; the table unreadable).
``duplicated rows`` duplicates data; the others (``resurrected rows``, ``removed twice``) are a wrong
result: nothing acknowledged is missing, yet the table holds what no serial order gives."""
UNDECIDED = ("not available", "error")
RULE = (
    f"a cited pair missing, not available or in error → {NOT_MEASURED}",
    f"any anomaly with a lost update or a broken log → {LOSES}",
    f"else any anomaly with duplicated rows → {DUPLICATES}",
    f"else any anomaly (resurrected rows, a file removed twice) → {WRONG}",
    f"else any refused → {REFUSED}",
    f"else (every pair serializable) → {SAFE}",
)
"""The rule from matrix classes to a verdict. A retry's classes include its run after reloading."""


CONFIRMATION = "@s3"
INTERLEAVINGS = ("b-files-first", "b-files-after")
"""Where the later job writes its data files (:data:`helpers.matrix.operations.INTERLEAVINGS`): before the
other job commits, or after. A job cannot choose it, so a cell stands under the worst of both."""
"""The suffix of an engine that confirms another's cells on the S3 emulator."""
CONDITIONS = (
    ("partitions", "when each job keeps to a partition of its own"),
    (
        "file-stats",
        "when file statistics keep the two jobs' rows in different files (no partitions)",
    ),
    ("b-files-first", "when the later job wrote its data files before the other committed"),
    ("b-files-after", "when the later job writes its data files only after the other committed"),
)
"""The matrix's variants of an engine (``<engine>+<suffix>``, :mod:`helpers.matrix.engines`) and the
condition each stands for. A cell's own verdict is the engine's: jobs that touch the same files, the
later one writing its data files when the engine does by itself (delta-rs after the other's commit,
Delta Spark before it)."""

UNNAMED_MERGE = (
    "when a MERGE's condition does not name the partition, only the source's rows do",
    ("merge_on_id", "merge_on_id_apart"),
)
"""For the same operation from two jobs on partitions of their own: the MERGE whose condition names only
the key, its words and its matrix pair (the documentation warns that it can conflict)."""


OP_WORDS = {
    "append": "append",
    "overwrite": "overwrite",
    "replace_where": "replaceWhere",
    "delete": "DELETE",
    "delete_all": "DELETE of every row",
    "update": "UPDATE",
    "merge": "MERGE",
    "optimize": "OPTIMIZE",
    "zorder": "Z-order",
    "vacuum": "VACUUM",
    "merge_on_id": "MERGE",
}
"""The matrix's operations as a sentence names them."""


def met(first: str, second: str, matched: str) -> str:
    """What two jobs that both commit leave, for the later job ``second`` working from a snapshot
    older than ``first``'s commit: the serial order the table equals, in a person's words."""
    later = OP_WORDS.get(
        second.removesuffix("_apart"), second
    )  # a second job of the same operation
    if matched.strip() == "B→A":
        kept = (
            f", and the {OP_WORDS.get(first, first)}ed rows survive the {later}"
            if second in ("overwrite", "replace_where", "delete_all") and first == "append"
            else ""
        )
        return f"both commit{kept}, as if the {later} had run first"
    return f"both commit, as if the {later} had run after it"


def verdict_of(rows: list[dict | None]) -> str:
    """The verdict of some matrix rows by :data:`RULE` (no rows, or a missing one: not measured)."""
    if not rows or any(r is None for r in rows):
        return NOT_MEASURED
    outcomes = {r["outcome"] for r in rows} | {
        r["retry_after_reload"] for r in rows if r["retry_after_reload"]
    }
    if outcomes & set(UNDECIDED):
        return NOT_MEASURED
    kinds = {
        k
        for r in rows
        for text in (r["anomaly_kind"], r["retry_after_reload_kind"])
        for k in text.split(" + ")
        if k
    }
    if "anomaly" in outcomes:
        return (
            LOSES
            if kinds & set(LOSING_KINDS)
            else DUPLICATES
            if "duplicated rows" in kinds
            else WRONG
        )
    return REFUSED if "refused" in outcomes else SAFE


class Results:
    """The conflict matrix's rows (``data/conflict_matrix.csv``), by engine and pair."""

    def __init__(self, rows: list[dict]):
        self.rows = rows
        self.by_pair = {(r["engine"], r["first"], r["second"]): r for r in rows}
        self.engine_names = list(dict.fromkeys(r["engine"] for r in rows))
        self.engine_versions: dict[str, set[str]] = {}
        for r in rows:
            self.engine_versions.setdefault(r["engine"], set()).add(
                short_version(r["engine_version"])
            )
        self._selected: dict[tuple[str, ...], list[str]] = {}

    @classmethod
    def load(cls, path: Path = MATRIX_CSV) -> Results:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            return cls(list(csv.DictReader(handle)))

    def engines(self, names: tuple[str, ...]) -> list[str]:
        """The CSV's engines that ``names`` (names or fnmatch patterns) select, in the CSV's order."""
        if names not in self._selected:
            self._selected[names] = [
                e for e in self.engine_names if any(fnmatch.fnmatchcase(e, n) for n in names)
            ]
        return list(self._selected[names])

    def cited(self, cells) -> tuple[list[str], list[dict | None]]:
        """The engines present, and their rows of the pairs of ``cells`` (a
        :class:`helpers.page.evidence.MatrixCells`) in every interleaving (:meth:`raced`)."""
        present = self.engines(cells.engines)
        return present, self.raced(present, cells.pairs)

    def interleaved(self, present: list[str], pairs) -> list[dict]:
        """The rows of these engines' other interleaving (``<engine>+b-files-…``) for these pairs: what the
        same release did when the later job wrote its data files at the other point (a job cannot choose)."""
        return [
            row
            for e in present
            if not e.endswith(CONFIRMATION)
            for suffix in INTERLEAVINGS
            for first, second in pairs
            if (row := self.by_pair.get((f"{e}+{suffix}", first, second))) is not None
        ]

    def conditions(self, present: list[str], pairs, verdict: str) -> tuple[tuple[str, str], ...]:
        """``(condition, verdict)`` where a cell's ``verdict`` (the worst of every interleaving) is not
        what every run gave: each interleaving whose rows gave a milder verdict, and each other layout
        (partitions, file statistics: a team's choice) whose rows of the same pairs give another."""
        found = []
        rows = [r for r in self.raced(present, pairs) if r is not None]
        by_point: dict[str, list[dict]] = {}
        for r in rows:
            by_point.setdefault(r["interleaving"], []).append(r)
        if len(by_point) > 1:
            for point, words in CONDITIONS:
                if point in by_point and (mine := verdict_of(by_point[point])) != verdict:
                    found.append((words, mine))
        engines = [e for e in present if not e.endswith(CONFIRMATION)]
        for suffix, words in CONDITIONS:
            if suffix in INTERLEAVINGS:
                continue
            keys = [
                (e, first, second)
                for e in engines
                for first, second in pairs
                if (f"{e}+{suffix}", first, second) in self.by_pair
            ]
            if not keys:
                continue
            varied = [self.by_pair[(f"{e}+{suffix}", a, b)] for e, a, b in keys]
            varied += self.interleaved(
                [f"{e}+{suffix}" for e, _, _ in keys], [(a, b) for _, a, b in keys]
            )
            own = [self.by_pair[k] for k in keys]
            own += self.interleaved([e for e, _, _ in keys], [(a, b) for _, a, b in keys])
            if (layout := verdict_of(varied)) != verdict_of(own):
                found.append((words, layout))
        return tuple(dict.fromkeys(found))

    def raced(self, present: list[str], pairs) -> list[dict | None]:
        """What these engines did in these pairs, in every interleaving raced: each engine's own row (None
        where missing: a gap, but for a confirmation on S3, which may race a sample of the pairs), then the
        rows of its other interleaving (:meth:`interleaved`). A cell stands under the worst of them."""
        found = [(e, self.by_pair.get((e, a, b))) for e in present for a, b in pairs]
        own = [row for e, row in found if row is not None or not e.endswith(CONFIRMATION)]
        return own + self.interleaved(present, pairs)

    def layout_conditions(
        self, present: list[str], pairs, layout: str, own: str
    ) -> tuple[tuple[str, str], ...]:
        """For a race answered by layout variants (``present``: ``<engine>+<layout>``): ``(condition,
        verdict)`` where the MERGE whose condition does not name the partition, or the other layouts,
        give another verdict than ``own``."""
        found = []
        words, pair = UNNAMED_MERGE
        merged = verdict_of(self.raced(present, [pair]))
        if present and merged != own:
            found.append((words, merged))
        for suffix, words in CONDITIONS:
            if suffix == layout or suffix.startswith("b-files"):
                continue
            others = [e.removesuffix(f"+{layout}") + f"+{suffix}" for e in present]
            varied = verdict_of(self.raced(others, pairs))
            if present and varied != own and varied != NOT_MEASURED:
                found.append((words, varied))
        return tuple(found)

    def orders(self, present: list[str], pairs) -> tuple[tuple[str, str], ...]:
        """``(what the user meets, verdict)`` for the pairs of one order (which job commits first) whose
        verdict differs from the other order's; the words say what both jobs see, in a person's words."""
        engines = [e for e in present if not e.endswith(CONFIRMATION)]
        by_first: dict[str, list[tuple[str, str]]] = {}
        for first, second in pairs:
            by_first.setdefault(first, []).append((first, second))
        verdicts = {
            first: verdict_of(self.raced(engines, group)) for first, group in by_first.items()
        }
        if len(set(verdicts.values())) < 2 or not engines:
            return ()
        seen: dict[str, list[str]] = {}
        for first, group in by_first.items():
            rows = [self.by_pair.get((e, a, b)) for e in engines for a, b in group]
            if verdicts[first] == SAFE and all(r is not None for r in rows):
                words = "; ".join(
                    dict.fromkeys(met(first, r["second"], r["matched"]) for r in rows)
                )
                seen.setdefault(words, []).append(OP_WORDS.get(first, first))
        found = [
            (
                f"when the {', '.join(firsts[:-1]) + ' or ' if firsts[:-1] else ''}{firsts[-1]} commits first: {words}",
                SAFE,
            )
            for words, firsts in seen.items()
        ]
        return tuple(found)

    def versions(self, engines: list[str]) -> str:
        """The versions those engines ran (the CSV's ``engine_version``), ascending, comma-separated."""
        found = {v for e in engines for v in self.engine_versions.get(e, ())}
        return ", ".join(
            sorted(
                found,
                key=lambda x: [
                    (0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.+ /]+", x)
                ],
            )
        )


def short_version(engine_version: str) -> str:
    """A version as the page names it: ``1.6.6``, ``Delta Spark 4.4.0`` for Spark's
    ``Apache-Spark/4.2.0 Delta-Lake/4.4.0``, and ``Delta Spark 4.4.0 + 1.6.6`` for a mixed pair."""
    parts = [part.strip() for part in engine_version.split(" / ")]
    named = [
        f"Delta Spark {m.group(1)}" if (m := re.search(r"Delta-Lake/(\S+)", part)) else part
        for part in parts
    ]
    return " + ".join(named)
