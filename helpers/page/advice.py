"""The "What to do" of ``docs/answer.md`` (:mod:`helpers.page.markdown_page`), from the cells: what to do
about each bad verdict, in a person's words (:data:`ADVICE`), each item naming the settings whose cells call
for it; the races refused and nothing lost (and where a finding says a failed write may have landed); the
operations a setting refuses by design; parallel backfills; and how to rerun an append safely.
"""

from __future__ import annotations

from helpers.page.columns import COLUMNS
from helpers.page.decision import Results, link_of, remedy
from helpers.page.evidence import Check
from helpers.page.findings import may_have_landed
from helpers.page.matrix_verdicts import (
    BY_DESIGN,
    CONDITIONS,
    DUPLICATES,
    LOSES,
    MISREPORTS,
    NOT_MEASURED,
    REFUSED,
    SAFE,
    UNNAMED_MERGE,
    WRONG,
)
from helpers.page.setting_paragraphs import NOT_ALLOWED, WHY, race_words
from helpers.page.table_rows import ROWS

ADVICE = {
    ("optimize", DUPLICATES): (
        "Run OPTIMIZE and Z-order from one job at a time",
        "two made from one snapshot both commit, and every compacted row is then in the table twice",
    ),
    ("optimize_rewrite", WRONG): (
        "Run OPTIMIZE and Z-order only while no job deletes every row or overwrites",
        "a DELETE of every row or a full overwrite made from a snapshot older than the "
        "compaction commits, reports the rows it removed, and the table still holds them all (a "
        "DELETE with a predicate or a replaceWhere is refused instead: rerun it)",
    ),
    ("vacuum_rewrite", WRONG): (
        "Run OPTIMIZE + zero-retention VACUUM only while no job overwrites or deletes every row",
        "a full overwrite or a DELETE of every row made from a snapshot older than the compaction commits "
        "and brings removed rows back (a replaceWhere or a DELETE with a predicate is refused instead: "
        "rerun it)",
    ),
    ("vacuum", LOSES): (
        "Keep VACUUM's default retention (7 days), never zero, while any job may be writing",
        "a zero-retention VACUUM deletes the data file of an append still in flight, the append then "
        "commits, and the table can no longer be read",
    ),
    ("vacuum_rewrite", LOSES): (
        "Run OPTIMIZE + zero-retention VACUUM only while no job overwrites or deletes every row",
        "a full overwrite or a DELETE of every row made from a snapshot older than the compaction commits; "
        "when it wrote its data files before the VACUUM committed, the log removes a file twice and the table "
        "can no longer be read, and otherwise removed rows come back",
    ),
    ("vacuum_retained", LOSES): (
        "Run VACUUM only while no job writes, whatever its retention",
        "a VACUUM (`full=True`) that keeps the default 7 days still deletes the data file of an append in "
        "flight, the append then commits, and the table can no longer be read",
    ),
    ("vacuum_retained", WRONG): (
        "Run OPTIMIZE + VACUUM only while no job overwrites or deletes every row, whatever the retention",
        "the OPTIMIZE before the VACUUM lets a full overwrite or a DELETE of every row made from an older "
        "snapshot commit, and the rows it removed come back",
    ),
    ("retry", DUPLICATES): (
        "Never rerun an append blindly",
        "if its commit landed but the job never heard so, a rerun "
        "adds the rows again; an app id alone does not stop it",
    ),
    ("append", MISREPORTS): (
        "Before rerunning a failed append, look for it in the table",
        "a job that loads the table while the append is being committed can finish that commit for "
        'it, and the writer is then told "version N already exists" for an append that is in the '
        "table",
    ),
    ("other", MISREPORTS): (
        "When Spark and deltalake share one lock table, look for a failed append in the table before "
        "rerunning it",
        "nothing is lost, but either writer can be told its append failed although "
        "it is in the log",
    ),
    ("other", LOSES): (
        "Never let writers that commit differently share a table",
        "one writer's commit file replaces the other's, and its rows are gone",
    ),
    ("other", DUPLICATES): (
        "Run OPTIMIZE from one engine at a time",
        "the other engine's OPTIMIZE from the same snapshot commits too, and compacted rows end up twice",
    ),
}
"""(what to do, why) for a bad verdict in a column, in a person's words; any other gets a plain sentence."""


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def what_to_do(grid: dict, results: Results) -> list[str]:
    """The advice, from the cells: each item names the settings whose cells call for it."""
    kept = [r for r in ROWS if not r.loses]
    losing = [f"{r.name} ({r.loses.section.link})" for r in ROWS if r.loses]
    items = [
        f"Never let two jobs commit at once with {_listed(losing)}: these commit protocols lose appends, "
        "whatever the jobs do."
    ]
    items.append(refused_advice(grid, kept))
    items += by_design(grid, kept)
    for column in COLUMNS:
        for verdict in (LOSES, DUPLICATES, WRONG, MISREPORTS):
            rows = [r for r in kept if grid[r.key, column.key].verdict == verdict]
            if rows:
                do, why = ADVICE.get(
                    (column.key, verdict), (f"Keep {race_words(column.key)} apart", WHY[verdict])
                )
                links = ", ".join(dict.fromkeys(link_of(grid[r.key, column.key]) for r in rows))
                if column.key.startswith("vacuum"):
                    why += retention(results)
                items.append(f"{do} ({_listed([r.name for r in rows])}): {why} ({links}).")
    for condition in dict.fromkeys(
        w
        for r in kept
        for c in COLUMNS
        for w, v in grid[r.key, c.key].conditions
        if v == SAFE and w not in INTERLEAVINGS
    ):
        pairs = [
            (r, c)
            for r in kept
            for c in COLUMNS
            if (condition, SAFE) in grid[r.key, c.key].conditions
        ]
        races = _listed(list(dict.fromkeys(race_words(c.key) for _, c in pairs)))
        links = ", ".join(dict.fromkeys(link_of(grid[r.key, c.key]) for r, c in pairs))
        items.append(
            f"To let jobs run at once, lay the table out so that they touch different files: both jobs of "
            f"{races} commit {condition} ({_listed(list(dict.fromkeys(r.name for r, _ in pairs)))}; {links})."
        )
    items += backfills(grid, kept)
    fixes = [(r, *remedy(r, results)) for r in ROWS if r.remedy]
    for how in dict.fromkeys(r.remedy_how for r, _, _ in fixes):
        safe = [
            f"{r.name} (measured {versions})"
            for r, verdict, versions in fixes
            if r.remedy_how == how and verdict == SAFE
        ]
        if safe:
            items.append(
                f"To rerun an append safely, give it {how}: it then commits once ({_listed(safe)})."
            )
    return [f"- {item}" for item in items]


WORSE = (LOSES, DUPLICATES, WRONG, MISREPORTS)
INTERLEAVINGS = tuple(words for key, words in CONDITIONS if key.startswith("b-files"))
"""The conditions a job cannot choose (when the later job writes its data files): never advice on a layout."""


def retention(results: Results) -> str:
    """What the races say of VACUUM's retention: zero only, or the default too (``vacuum_retained``)."""
    raced = any("vacuum_retained" in (r["first"], r["second"]) for r in results.rows)
    return (
        "; the default retention was raced too: its own cells say what it does"
        if raced
        else "; these races ran zero retention, and the default retention was not raced"
    )


def _worse(cell) -> bool:
    """Does the cell, or any of its conditions or orders, lose, duplicate, misreport or give a wrong result?"""
    return any(v in WORSE for v in [cell.verdict] + [v for _, v in cell.conditions + cell.orders])


def refused_advice(grid: dict, kept: list) -> str:
    """What to do when one job of a race fails with a conflict: the races refused at worst (a race that is
    worse in some setting names the settings where it is refused), and where a finding says a failed write
    may have landed, to look in the table before rerunning it."""
    races = []
    for column in COLUMNS:
        cells = [(r.name, grid[r.key, column.key]) for r in kept]
        refused = [name for name, cell in cells if cell.verdict == REFUSED and not _worse(cell)]
        worse = [name for name, cell in cells if _worse(cell)]
        if refused:
            races.append(
                race_words(column.key)
                + (
                    ""
                    if not worse
                    else f" (only with {_listed(refused)})"
                    if len(refused) <= len(worse)
                    else f" (not with {_listed(worse)}: below)"
                )
            )
    names = [r.name for r in kept if may_have_landed(r)]
    return (
        f"When one job of a race fails with a conflict ({'; '.join(races)}), nothing is lost, and a rerun "
        "starts from a fresh snapshot. "
        + (
            f"Rerun it at once except with {_listed(names)}: there a finding ([findings/](../findings/README.md)) "
            "says a job can be told its write failed although it committed, so look for the write in "
            "the table before rerunning it."
            if names
            else "Rerun it."
        )
    )


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def by_design(grid: dict, kept: list) -> list[str]:
    """The advice for the operations a setting refuses by design: not to run them there at all (a rerun
    is refused again), each setting once, with the sections that show it."""
    items = []
    for row in kept:
        cells = [grid[row.key, c.key] for c in COLUMNS if grid[row.key, c.key].verdict == BY_DESIGN]
        if not cells:
            continue
        ops = list(
            dict.fromkeys(
                op
                for cell in cells
                for op in (cell.evidence.refuses if isinstance(cell.evidence, Check) else ())
            )
        )
        links = ", ".join(dict.fromkeys(link_of(cell) for cell in cells if link_of(cell)))
        items.append(
            f"Do not run {_either(ops) if ops else 'them'} with {row.name}: that setting refuses "
            f"{'them' if len(ops) != 1 else 'it'} by design, before anything is written, and a rerun is "
            f"refused again; what to do instead is in its paragraph above, under *{NOT_ALLOWED}* ({links})."
        )
    return items


def backfills(grid: dict, kept: list) -> list[str]:
    """The advice for parallel backfills, from the cells of the same operation from two jobs on partitions
    of their own: the settings where both commit, and each condition that gives another verdict (the MERGE
    whose condition does not name the partition, the other interleaving, file statistics instead of partitions)."""
    cells = [
        (r, grid[r.key, "backfill"])
        for r in kept
        if grid[r.key, "backfill"].verdict != NOT_MEASURED
    ]
    if not cells:
        return []
    links = ", ".join(dict.fromkeys(c.section.link for _, c in cells if c.section))
    by_verdict: dict[str, list[str]] = {}
    for row, cell in cells:
        by_verdict.setdefault(cell.verdict, []).append(row.name)
    said = "; ".join(
        f"{BACKFILL_WORDS.get(v, v)} ({_listed(names)})" for v, names in by_verdict.items()
    )
    conditions: dict[tuple[str, str], list[str]] = {}
    for row, cell in cells:
        for condition, verdict in cell.conditions:
            conditions.setdefault((condition, verdict), []).append(row.name)
    more = []
    for (condition, verdict), names in conditions.items():
        if condition == UNNAMED_MERGE[0]:
            more.append(
                f"A MERGE whose condition does not name the partition, only the source's rows do, "
                f"{UNNAMED_VERBS.get(verdict, 'is ' + verdict)} although the partitions differ "
                f"({_listed(names)}): name the partition in its `ON` clause."
            )
        else:
            more.append(f"The backfills are {verdict} {condition} ({_listed(names)}).")
    return [
        f"To backfill in parallel, give each job a partition of its own and name that partition in the job's "
        f"condition (the replaceWhere predicate, the DELETE's or UPDATE's predicate, the MERGE's `ON` clause): two "
        f"replaceWheres, DELETEs, UPDATEs, MERGEs or appends on partitions of their own then {said}. "
        + " ".join(more)
        + f" Shown in {links}."
    ]


BACKFILL_WORDS = {
    SAFE: "both commit, and the table equals a serial order",
    REFUSED: "race: the later job fails loudly and commits nothing; rerun it",
}
UNNAMED_VERBS = {
    REFUSED: "is refused (retry): the later job fails loudly and commits nothing",
    SAFE: "commits too",
}
