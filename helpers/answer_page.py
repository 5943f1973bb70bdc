"""The one-page answer rendered: ``docs/answer.md``, in Markdown, from the decision table of
:mod:`helpers.answer`.

:func:`render` writes the page from :data:`helpers.answer.ROWS` and :data:`~helpers.answer.COLUMNS`
(each cell resolved by :func:`helpers.answer.grid_of`), the conflict matrix's CSV
(:class:`helpers.answer.Results`) and the matrix run's facts (``data/conflict_matrix_meta.json``,
:func:`load_meta`): the table with its notes, the rule, what to do, the version boundaries
(:mod:`helpers.boundaries`), the sources and where the engines disagree with Delta's documentation.
The same inputs give the same text. :func:`main` is the command (``make matrix`` runs it)::

    python -m helpers.answer_page           # writes docs/answer.md
    python -m helpers.answer_page --check   # exit 1 if docs/answer.md differs from a fresh render
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import re
import sys
from pathlib import Path

from dataclasses import dataclass

from helpers import boundaries as b
from helpers import config, full_runs
from helpers.catalog import server as uc_server
from helpers.answer_matrix import CONDITIONS, UNNAMED_MERGE
from helpers.answer import (
    COLUMNS, DUPLICATES, LOSES, MISREPORTS, NOT_MEASURED, REFUSED, ROWS, RULE, SAFE, WRONG, Cell, Check, MatrixCells, Results,
    CURRENT, Section, grid_of, remedy,
)
from helpers.sessions import DELTA_DYNAMODB_LOG_STORE, DYNAMODB_LOG_STORE_PREFIX, WORKBOOK_DYNAMODB_LOG_STORE

MATRIX_META = config.DATA_DIR / "conflict_matrix_meta.json"
PAGE = config.ROOT / "docs" / "answer.md"


def load_meta(path: Path = MATRIX_META) -> dict:
    """The matrix run's facts kept beside the CSV: its date, engines, pairs per engine, the docs read."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


GLOSSARY = "glossary.md"


def term(words: str, anchor: str) -> str:
    """``words`` linked to the glossary's entry (its anchor: the term's name, lowercase, hyphens)."""
    return f"[{words}]({GLOSSARY}#{anchor})"


INTRO = (
    "Each row is an engine, its releases (from the version boundaries below), a store and a setting; each column is "
    "a race between two jobs on one table, the later one working from an older " + term("snapshot", "snapshot") + ". "
    "A cell gives the verdict, the releases measured and the notebook section that shows it. **safe**: both commit "
    "and the table equals a " + term("serial order", "serial-order") + "; **refused (retry)**: the later job fails "
    "with an error (a conflict, or a file VACUUM deleted) and commits nothing: rerun it; **loses data**, "
    "**duplicates data**, **wrong result**: the jobs report success and the table is not what any serial order "
    "gives; **fails though committed**: a job is told its write failed although it is in the table, so rerunning "
    "it duplicates data; **not measured**: nothing here measures it. `m` marks a cell decided by the conflict "
    "matrix (`m+S3`: on S3 too). A matrix cell's first verdict is for two jobs that touch the same files, the later "
    "one writing its data files when its engine does by itself (deltalake after the other's commit, Delta Spark before "
    "it); where a partition of each job's own, rows that file statistics keep apart, or the other moment for the data "
    "files gives another verdict, the cell adds it with that condition. A row whose commit protocol loses appends says so once, in its first cell, and "
    "loses data in every cell. A cell names its section (`13 §5`: notebook 13, section 5); the sections are linked "
    "once, below the table, each in the learner's edition (`student/`) and in the edition with the solutions.")
ADVICE = {
    ("optimize", DUPLICATES): ("Run OPTIMIZE and Z-order from one job at a time",
                               "two made from one snapshot both commit, and every compacted row is then in the table twice"),
    ("optimize_rewrite", WRONG): ("Run OPTIMIZE and Z-order only while no job deletes every row or overwrites",
                                  "a DELETE of every row or a full overwrite made from a snapshot older than the "
                                  "compaction commits, reports the rows it removed, and the table still holds them all (a "
                                  "DELETE with a predicate or a replaceWhere is refused instead: rerun it)"),
    ("vacuum_rewrite", WRONG): ("Run OPTIMIZE + VACUUM only while no job overwrites or deletes every row",
                        "a full overwrite or a DELETE of every row made from a snapshot older than the compaction commits "
                        "and brings removed rows back (a replaceWhere or a DELETE with a predicate is refused instead: "
                        "rerun it)"),
    ("vacuum", LOSES): ("Keep VACUUM's default retention (7 days) while any job may be writing",
                        "a zero-retention VACUUM deletes the data file of an append still in flight, the append then "
                        "commits, and the table can no longer be read"),
    ("retry", DUPLICATES): ("Never rerun an append blindly", "if its commit landed but the job never heard so, a rerun "
                            "adds the rows again; an app id alone does not stop it"),
    ("append", MISREPORTS): ("Before rerunning a failed append, look for it in the table",
                             "a job that loads the table while the append is being committed can finish that commit for "
                             "it, and the writer is then told \"version N already exists\" for an append that is in the "
                             "table"),
    ("other", MISREPORTS): ("When Spark and deltalake share one lock table, look for a failed append in the table before "
                            "rerunning it", "nothing is lost, but either writer can be told its append failed although "
                            "it is in the log"),
    ("other", LOSES): ("Never let writers that commit differently share a table", "one writer's commit file replaces "
                       "the other's, and its rows are gone"),
    ("other", DUPLICATES): ("Run OPTIMIZE from one engine at a time",
                            "the other engine's OPTIMIZE from the same snapshot commits too, and compacted rows end up twice"),
}
"""(what to do, why) for a bad verdict in a column, in a person's words; any other gets a plain sentence."""
RACE_WORDS = {"append": "two appends", "rewrite": "a DELETE with a predicate, UPDATE or MERGE beside an append",
              "delete_all_append": "a DELETE of every row beside an append",
              "overwrite": "an overwrite or a replaceWhere beside an append", "optimize": "two OPTIMIZEs or Z-orders",
              "optimize_append": "an OPTIMIZE beside an append",
              "optimize_delete": "an OPTIMIZE or Z-order beside a DELETE with a predicate or a replaceWhere",
              "optimize_rewrite": "an OPTIMIZE or Z-order beside a DELETE of every row or a full overwrite",
              "vacuum": "a zero-retention VACUUM beside an append, a DELETE with a predicate, an UPDATE, a MERGE or a "
                        "replaceWhere",
              "vacuum_rewrite": "a zero-retention VACUUM beside a full overwrite or a DELETE of every row",
              "backfill": "the same operation from two jobs, each on a partition of its own named in its condition",
              "retry": "a rerun append", "other": "the other engine on the same table"}
"""Each column's race, as a sentence says it."""
WHY = {LOSES: "rows are lost", DUPLICATES: "rows end up twice", WRONG: "the table holds rows no serial order gives",
       MISREPORTS: "a job can be told it failed for a write that is in the table"}
DISAGREEMENTS = {"needless failure": "refused where the docs say the two cannot conflict",
                 "anomaly": "anomalies where the docs say the two conflict",
                 "committed": "committed where the docs say the two conflict"}


def _note_mark(note: str, notes: list[str]) -> str:
    if not note:
        return ""
    if note not in notes:
        notes.append(note)
    return f" [{notes.index(note) + 1}]"


def cell_text(cell: Cell, notes: list[str], *, repeat: bool = False) -> str:
    """**verdict** · versions · section link (· m: decided by the matrix), and a note's mark."""
    if repeat:
        return f"**{cell.verdict}**"
    if cell.verdict == NOT_MEASURED and not cell.engines:
        return NOT_MEASURED + _note_mark(cell.note, notes)
    parts = [f"**{cell.verdict}**", cell.versions, cell.section.label if cell.section else ""]
    if isinstance(cell.evidence, MatrixCells):
        parts.append("m+S3" if any(e.endswith("@s3") for e in cell.engines) else "m")
    varied = "".join(f"; **{verdict}** {condition}" for condition, verdict in cell.conditions + cell.orders)
    return " · ".join(p for p in parts if p) + varied + _note_mark(cell.note, notes)


def table(grid: dict, notes: list[str]) -> list[str]:
    head = ["engine", "versions", "store", "setting", *(c.title for c in COLUMNS)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for row in ROWS:
        cells = [cell_text(grid[row.key, c.key], notes, repeat=bool(row.loses) and i > 0) for i, c in enumerate(COLUMNS)]
        lines.append("| " + " | ".join([row.engine, row.versions, row.store, row.setting, *cells]) + " |")
    return lines


def sections_linked(grid: dict) -> str:
    """The sections the table's cells name, each linked once."""
    found = sorted({c.section for c in grid.values() if c.section and c.verdict != NOT_MEASURED},
                   key=lambda x: (x.notebook, x.number))
    return "The sections the cells name: " + "; ".join(x.link for x in found) + "."


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


@dataclass(frozen=True)
class Setting:
    """A setting a reader may have: a paragraph above the table. ``row``: its row of the table, whose
    engine and versions the title names; ``avoid``: rows of near settings that lose data, named as what
    not to do; ``findings``: the library bugs that apply, each with what to do about it."""

    title: str
    row: str
    configure: str
    avoid: tuple[str, ...] = ()
    measured_with: str = ""
    """Which implementation the row's measurements ran, where it is not the one a reader deploys."""
    findings: tuple[str, ...] = ()


DDB = DYNAMODB_LOG_STORE_PREFIX
SPARK_LOCK_CONF = (f"`spark.delta.logStore.s3a.impl={DELTA_DYNAMODB_LOG_STORE}`, `{DDB}.ddb.tableName` and "
                   f"`{DDB}.ddb.region`, with the `io.delta:delta-storage-s3-dynamodb` package and `s3a://` table URIs")
RS_LOCK_OPTIONS = "`AWS_S3_LOCKING_PROVIDER=dynamodb` and `DELTA_DYNAMO_TABLE_NAME`"
SPARK_LOG_STORE_MEASURED = (
    f"Delta Spark's side was measured with the workbook's own `{WORKBOOK_DYNAMODB_LOG_STORE}` against the emulators: "
    f"Delta's `{DELTA_DYNAMODB_LOG_STORE}` has no DynamoDB endpoint setting, so it runs only against a real account "
    "(`WORKBOOK_PROFILE=cloud`). The two share the protocol, the lock items and the `ddb.*` settings, and differ only "
    "where a commit cannot be finished: Delta's 4.4.0 class tells a writer whose claim won, but whose copy to `N.json` "
    "S3 refused, that its append failed although it is in the log, and keeps writers claiming one version without end "
    "against an item whose staged file is gone ([the report](../findings/delta-s3-dynamodb-log-store-unfinished-commit/REPORT.md)); "
    "the workbook's class retries the copy and fails the other case with an error naming the item. With Delta's class, "
    "look for a failed append in the table before running it again")
FINDINGS = "../findings"
LOST_ANSWER = (
    f"[a lost commit answer]({FINDINGS}/deltalake-lost-commit-response-commits-twice/REPORT.md) (measured on S3 by "
    f"conditional put and on Azure, up to {CURRENT}): when the answer to the write of a commit file is lost and the "
    "library's resend is refused, it takes its own commit for another writer's, so an append is committed twice (and "
    "reported once) and a DELETE is reported failed although it committed. Give every append an idempotent-write id, "
    "and look in the table before rerunning a failed DELETE")
DOUBLE_OPTIMIZE = (
    f"[the {b.DOUBLE_OPTIMIZE.version} conflict-checker change]({FINDINGS}/deltalake-two-optimizes-both-commit/REPORT.md): "
    f"from {b.DOUBLE_OPTIMIZE.version}, a second OPTIMIZE or Z-order, an overwrite or a DELETE of every row made from a "
    "snapshot older than a concurrent OPTIMIZE commits. Compact from one job at a time, never "
    f"beside a DELETE of every row or an overwrite, or stay on {b.DOUBLE_OPTIMIZE.last_before} until a release fixes it")
DYNAMODB_ADVISORY = (
    f"[the DynamoDB log store advisory]({FINDINGS}/deltalake-dynamodb-log-store-advisory/ADVISORY.md): in "
    f"{b.STUCK_REPAIR.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before} a commit whose writer died at the wrong moment "
    "wedges the table until its staged file is deleted, and a job that loads the table can finish a writer's commit "
    "before the writer does (the writer is then told it failed)")
DELTA_LOG_STORE_REPORT = (
    f"[Delta's DynamoDB log store]({FINDINGS}/delta-s3-dynamodb-log-store-unfinished-commit/REPORT.md) "
    f"({b.DELTA_SPARK.version}): a writer whose claim won but whose copy to `N.json` S3 refused is told its append "
    "failed although it is in the log; look in the table before rerunning a failed append")
SETTINGS = (
    Setting(f"deltalake {b.DOUBLE_OPTIMIZE.version}–{CURRENT} on S3", "rs-put-today",
            "no lock: `write_deltalake` commits by " + term("conditional put", "conditional-put") + " (`If-None-Match: "
            "*`); `storage_options` needs only the store's keys (`AWS_REGION`, and `AWS_ENDPOINT_URL` for a store that "
            f"is not AWS); {RS_LOCK_OPTIONS} are ignored since {b.DYNAMODB_LOG_STORE_REMOVED.version}; "
            "{retries:s3-conditional-put}", findings=(DOUBLE_OPTIMIZE, LOST_ANSWER)),
    Setting(f"deltalake {CURRENT} on Azure Blob or ADLS Gen2", "rs-azure",
            "nothing for concurrency: a commit is a blob created only if absent, a " + term("conditional put", "conditional-put")
            + "; `storage_options` holds `account_name` and `account_key` (or credentials from `AZURE_CLIENT_*` or "
            "`az login`); {retries:azure}", findings=(DOUBLE_OPTIMIZE, LOST_ANSWER)),
    Setting(f"deltalake {b.STUCK_REPAIR.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before} with the DynamoDB lock",
            "rs-lock-interop",
            f"{RS_LOCK_OPTIONS} (the lock table) in `storage_options`: the DynamoDB " + term("log store", "log-store")
            + f", which {b.DYNAMODB_LOG_STORE_REMOVED.version} removes; with Spark writing too, name the table Spark's "
            f"`{DDB}.ddb.tableName` names and use `s3a://` URIs on both sides", findings=(DYNAMODB_ADVISORY,)),
    Setting(f"Delta Spark {b.DELTA_SPARK.version} from one driver", "spark-one",
            "nothing beyond the `spark.hadoop.fs.s3a.*` keys of your store: the default S3 log store "
            "(no `spark.delta.logStore.s3a.impl`) orders the commits of one driver's jobs under a lock of its JVM, so "
            "every job that writes the table must run in that one driver", avoid=("spark-several",)),
    Setting(f"Delta Spark {b.DELTA_SPARK.version} from several clusters", "spark-dynamodb",
            f"in every cluster's Spark conf {SPARK_LOCK_CONF}: the DynamoDB " + term("log store", "log-store")
            + "; without it, the default S3 log store cannot see the other drivers' commits", avoid=("spark-several",),
            measured_with=SPARK_LOG_STORE_MEASURED, findings=(DELTA_LOG_STORE_REPORT,)),
    Setting(f"Delta Spark {b.DELTA_SPARK.version} on a catalog-managed table", "spark-catalog",
            f"a catalog that ratifies commits (Unity Catalog's REST API; here {uc_server.CRATE}, a server that speaks "
            "it, on local disk); the "
            "table created through it with `delta.feature.catalogManaged=supported` (" + term("catalog-managed table",
            "catalog-managed-table") + ", Delta " + b.CATALOG_MANAGED.version + " and later); every writer through that "
            "catalog, by the table's name (Unity Catalog's Spark connector, or a commit coordinator registered for the "
            "session catalog, as notebook 15 does); no log store setting and no lock table. A writer that goes around "
            "the catalog cannot write it: Delta Spark refuses an append by path, and deltalake " + CURRENT
            + " neither reads nor writes such a table"),
    Setting(f"Delta Spark {b.DELTA_SPARK.version} and deltalake {b.TABLE_PATH_SLASH.version}–"
            f"{b.DYNAMODB_LOG_STORE_REMOVED.last_before} on one table", "mixed-lock",
            f"on S3, deltalake {b.TABLE_PATH_SLASH.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before} with "
            f"{RS_LOCK_OPTIONS} naming the table Spark's `{DDB}.ddb.tableName` names, and `s3a://` URIs on both sides. "
            f"deltalake {b.DYNAMODB_LOG_STORE_REMOVED.version} and later cannot take part in Spark's lock, so on S3 they "
            "must not write a table Spark writes", avoid=("mixed-put",), measured_with=SPARK_LOG_STORE_MEASURED,
            findings=(DYNAMODB_ADVISORY, DELTA_LOG_STORE_REPORT)),
)
"""The settings the page opens with, each rendered from its row's cells."""


S11_3 = Section("11_commit_throughput.ipynb", "3", "The full run: every protocol, 1 to 16 writers")
BENCH_COMMITS = config.DATA_DIR / "full_runs" / "bench" / "commits.csv.gz"


def retries(protocol: str) -> str:
    """The retry advice, from notebook 11's committed full run: the fewest writers at which the library's
    default retries gave up on some appends of this protocol."""
    with gzip.open(BENCH_COMMITS, "rt", newline="", encoding="utf-8") as handle:
        rows = [r for r in csv.DictReader(handle) if r["protocol"] == protocol]
    runs: dict[int, list[dict]] = {}
    for r in rows:
        runs.setdefault(int(r["writers"]), []).append(r)
    failing = [(n, sum(r["outcome"] != "committed" for r in rs), len(rs)) for n, rs in sorted(runs.items())
               if any(r["outcome"] != "committed" for r in rs)]
    if not failing:
        return "keep the library's default retries"
    writers, failed, appends = failing[0]
    return (f"keep retries on, and raise `CommitProperties(max_commit_retries=...)` above the library's default (15) "
            f"when {writers} or more jobs commit at once: with the default, {failed} of {appends} appends by {writers} "
            f"writers at once gave up (`CommitFailedError`: loudly, nothing committed, rerun them; {S11_3.link})")


def configure(setting: Setting) -> str:
    """What to configure for a setting, its retry advice read from notebook 11's committed run."""
    return re.sub(r"\{retries:([\w-]+)\}", lambda m: retries(m.group(1)), setting.configure)


def race_words(column_key: str, row=None, cell: Cell | None = None) -> str:
    """A column's race as a sentence says it; "the other engine" named for the row's engine (and, from
    its cell, the releases measured)."""
    if column_key == "other" and row is not None and row.engine in ("deltalake", "Delta Spark"):
        other = "Delta Spark" if row.engine == "deltalake" else "deltalake"
        versions = (cell.versions.split(" + ")[-1].removeprefix("deltalake ")
                    if cell is not None and cell.verdict != NOT_MEASURED else "")
        return f"{other}{' ' + versions if versions and other == 'deltalake' else ''} writing the same table"
    return RACE_WORDS[column_key]


def _races(grid: dict, row, verdicts: tuple[str, ...], *, skip: tuple[str, ...] = ()) -> list[str]:
    return [race_words(c.key, row, grid[row.key, c.key]) for c in COLUMNS
            if c.key not in skip and grid[row.key, c.key].verdict in verdicts]


SEVERITY = (LOSES, DUPLICATES, WRONG, MISREPORTS, REFUSED, SAFE)
INTERLEAVINGS = tuple(words for key, words in CONDITIONS if key.startswith("b-files"))
"""Conditions a job cannot choose (when the engine writes its data files): a race stands under the
worst of its verdict and theirs."""


def heading_verdict(cell: Cell) -> str:
    """The verdict a race stands under in a setting: its cell's, or worse where an interleaving a job
    cannot choose gives worse."""
    found = [cell.verdict] + [v for words, v in cell.conditions if words in INTERLEAVINGS]
    return min(found, key=lambda v: SEVERITY.index(v) if v in SEVERITY else len(SEVERITY))


def _with_conditions(cell: Cell, words: str) -> str:
    """A race with what else its cell says: why it is bad, and its verdict under each condition and order."""
    worst = heading_verdict(cell)
    first = [f"{worst} {w}" for w, v in cell.conditions if w in INTERLEAVINGS and v == worst and worst != cell.verdict]
    more = first + ([f"{cell.verdict} otherwise"] if first else [WHY[worst]] if worst in WHY else [])
    more += [f"{verdict} {condition}" for condition, verdict in cell.conditions + cell.orders
             if not (condition in INTERLEAVINGS and verdict == worst and worst != cell.verdict)]
    if cell.note and words.endswith("writing the same table"):
        more.append(cell.note)
    return f"{words} ({'; '.join(more)})" if more else words


def setting_paragraph(setting: Setting, grid: dict, results: Results) -> str:
    """One setting in plain words: what to configure, what may run at once, what fails loudly, what to
    keep apart (and why), how to rerun, the findings that apply; all but the configuration and the
    findings read from the row's cells. Each race stands under one heading, its cell's verdict, with its
    conditions beside it."""
    row = next(r for r in ROWS if r.key == setting.row)
    cells = [grid[row.key, c.key] for c in COLUMNS]
    links = ", ".join(dict.fromkeys(c.section.link for c in cells if c.section and c.verdict != NOT_MEASURED))
    parts = [f"**{setting.title}** ({row.store}). **Configure:** {configure(setting)}."]

    def under(verdicts: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[str]:
        return [_with_conditions(grid[row.key, c.key], race_words(c.key, row, grid[row.key, c.key]))
                for c in COLUMNS if c.key not in skip and heading_verdict(grid[row.key, c.key]) in verdicts]

    if safe := under((SAFE,)):
        parts.append(f"**May run at once:** {'; '.join(safe)}.")
    if refused := under((REFUSED,)):
        parts.append(f"**One of the two fails loudly and commits nothing; rerun it:** {'; '.join(refused)}.")
    if apart := under((LOSES, DUPLICATES, WRONG), skip=("retry",)):
        parts.append(f"**Keep apart:** {'; '.join(apart)}.")
    if told := _races(grid, row, (MISREPORTS,)):
        parts.append(f"**Look in the table before rerunning a failed append** ({'; '.join(told)}): {WHY[MISREPORTS]}.")
    if grid[row.key, "retry"].verdict in WHY:
        verdict, versions = remedy(row, results)
        how = (f"only with {row.remedy_how} (measured {versions})" if verdict == SAFE else
               f"only with {row.remedy_how} (measured {versions}: a rerun from an older snapshot fails loudly, one "
               "from a fresh snapshot is skipped)" if verdict == REFUSED else "only after looking for it in the table")
        parts.append(f"**Rerun an append whose job died {how}:** it may have committed, and a blind rerun adds "
                     "its rows twice.")
    for key in setting.avoid:
        avoided = next(r for r in ROWS if r.key == key)
        parts.append(f"**Never** {avoided.name}: those commits lose appends ({avoided.loses.section.link}).")
    if unmeasured := _races(grid, row, (NOT_MEASURED,)):
        parts.append(f"Not measured here: {'; '.join(unmeasured)}.")
    for finding in setting.findings:
        parts.append(f"**Finding:** {finding}.")
    if setting.measured_with:
        parts.append(f"**Which class:** {setting.measured_with}.")
    return " ".join(parts) + f" Shown in {links}."


def what_to_do(grid: dict, results: Results) -> list[str]:
    """The advice, from the cells: each item names the settings whose cells call for it."""
    kept = [r for r in ROWS if not r.loses]
    losing = [f"{r.name} ({r.loses.section.link})" for r in ROWS if r.loses]
    items = [f"Never let two jobs commit at once with {_listed(losing)}: these commit protocols lose appends, "
             "whatever the jobs do."]
    refused = [race_words(c.key) for c in COLUMNS if any(grid[r.key, c.key].verdict == REFUSED for r in kept)]
    items.append(f"When one job of a race fails with a conflict ({'; '.join(refused)}), nothing is lost: it committed "
                 "nothing, and you can rerun it; it starts from a fresh snapshot.")
    for column in COLUMNS:
        for verdict in (LOSES, DUPLICATES, WRONG, MISREPORTS):
            rows = [r for r in kept if grid[r.key, column.key].verdict == verdict]
            if rows:
                do, why = ADVICE.get((column.key, verdict), (f"Keep {race_words(column.key)} apart", WHY[verdict]))
                links = ", ".join(dict.fromkeys(grid[r.key, column.key].section.link for r in rows))
                items.append(f"{do} ({_listed([r.name for r in rows])}): {why} ({links}).")
    for condition in dict.fromkeys(w for r in kept for c in COLUMNS for w, v in grid[r.key, c.key].conditions if v == SAFE):
        pairs = [(r, c) for r in kept for c in COLUMNS if (condition, SAFE) in grid[r.key, c.key].conditions]
        races = _listed(list(dict.fromkeys(race_words(c.key) for _, c in pairs)))
        links = ", ".join(dict.fromkeys(grid[r.key, c.key].section.link for r, c in pairs))
        items.append(f"To let jobs run at once, lay the table out so that they touch different files: both jobs of "
                     f"{races} commit {condition} ({_listed(list(dict.fromkeys(r.name for r, _ in pairs)))}; {links}).")
    items += backfills(grid, kept)
    fixes = [(r, *remedy(r, results)) for r in ROWS if r.remedy]
    for how in dict.fromkeys(r.remedy_how for r, _, _ in fixes):
        safe = [f"{r.name} (measured {versions})" for r, verdict, versions in fixes if r.remedy_how == how and verdict == SAFE]
        if safe:
            items.append(f"To rerun an append safely, give it {how}: it then commits once ({_listed(safe)}).")
    return [f"- {item}" for item in items]


def backfills(grid: dict, kept: list) -> list[str]:
    """The advice for parallel backfills, from the cells of the same operation from two jobs on partitions
    of their own: the settings where both commit, and each condition that gives another verdict (the MERGE
    whose condition does not name the partition, the other interleaving, file statistics instead of partitions)."""
    cells = [(r, grid[r.key, "backfill"]) for r in kept if grid[r.key, "backfill"].verdict != NOT_MEASURED]
    if not cells:
        return []
    links = ", ".join(dict.fromkeys(c.section.link for _, c in cells if c.section))
    by_verdict: dict[str, list[str]] = {}
    for row, cell in cells:
        by_verdict.setdefault(cell.verdict, []).append(row.name)
    said = "; ".join(f"{BACKFILL_WORDS.get(v, v)} ({_listed(names)})" for v, names in by_verdict.items())
    conditions: dict[tuple[str, str], list[str]] = {}
    for row, cell in cells:
        for condition, verdict in cell.conditions:
            conditions.setdefault((condition, verdict), []).append(row.name)
    more = []
    for (condition, verdict), names in conditions.items():
        if condition == UNNAMED_MERGE[0]:
            more.append(f"A MERGE whose condition does not name the partition, only the source's rows do, "
                        f"{UNNAMED_VERBS.get(verdict, 'is ' + verdict)} although the partitions differ "
                        f"({_listed(names)}): name the partition in its `ON` clause.")
        else:
            more.append(f"The backfills are {verdict} {condition} ({_listed(names)}).")
    return [f"To backfill in parallel, give each job a partition of its own and name that partition in the job's "
            f"condition (the replaceWhere predicate, the DELETE's or UPDATE's predicate, the MERGE's `ON` clause): two "
            f"replaceWheres, DELETEs, UPDATEs, MERGEs or appends on partitions of their own then {said}. "
            + " ".join(more) + f" Shown in {links}."]


BACKFILL_WORDS = {SAFE: "both commit, and the table equals a serial order",
                  REFUSED: "race: the later job fails loudly and commits nothing; rerun it"}
UNNAMED_VERBS = {REFUSED: "is refused (retry): the later job fails loudly and commits nothing",
                 SAFE: "commits too"}


def boundaries_table() -> list[str]:
    lines = ["| library | from | last before | what changed | how the workbook knows |", "| --- | --- | --- | --- | --- |"]
    return lines + [f"| {x.library} | {x.version} | {x.last_before or '-'} | {x.change} | {x.known_from} |" for x in b.BOUNDARIES]


def sources(grid: dict, results: Results, meta: dict) -> list[str]:
    engines = ", ".join(f"{name} ({results.versions([name])})" for name in results.engine_names)
    docs = "; ".join(f"{d['page']} (read on {d['read_on']})" for d in meta["documentation"])
    lines = [f"- **The conflict matrix** (`make matrix`), run on {meta['run_on']}: {meta['pairs_per_engine']} pairs per "
             f"engine, engines {engines}. Each pair is raced from a stale snapshot on local disk (engines named `…@s3`: "
             "on S3) and classed against the two serial orders; the cells marked `m` are decided by its rows in "
             "[data/conflict_matrix.csv](../data/conflict_matrix.csv), and link the notebook section about that race. "
             "An engine named `…+<layout>` races the operations with a predicate of their own on another table "
             + "; ".join(f"(`{name}`: {what})" for name, what in meta.get("layouts", {}).items() if name != "shared-files")
             + ", and on it each such operation against a second job of the same operation on a part of its own "
             "(another partition, or another range of ids; a MERGE also with a condition that names only the key)"
             + "; one named `…+b-files-first` or `…+b-files-after` races the pairs whose later job writes data files "
             "with the other moment for them (" + "; ".join(f"`{k}`: {v}" for k, v in meta.get("interleavings", {}).items())
             + "), and one named `…+<layout>+b-files-…`, with that other moment, only the pairs of an operation against "
             "a second job on a part of its own.",
             f"- **Delta's documentation**, set against every pair: {docs}.",
             "- **Notebook checks**, each asserted by its notebook's Checks cell whenever the notebook runs (`make test`):"]
    checks = {(c.evidence.section, c.evidence.check): c.evidence for c in grid.values() if isinstance(c.evidence, Check)}
    for check in checks.values():
        when = "" if check.every_run else " (asserted when a `make torture` full run is present)"
        lines.append(f"  - {check.section.link} {check.section.title}: `{check.check}`{when}")
    return lines


def disagreements(results: Results) -> list[str]:
    """Per engine, the pairs whose measured outcome differs from WriteSerializable's documented answer."""
    lines = []
    for engine in results.engine_names:
        mine = [r for r in results.rows if r["engine"] == engine]
        off, groups = [r for r in mine if r["agrees_with_docs"] == "no"], {}
        for r in off:
            kind = next((k for k in DISAGREEMENTS if r["disagreement"].startswith(k)), "other")
            groups.setdefault(DISAGREEMENTS.get(kind, kind), []).append(
                f"{r['first']} → {r['second']} ({r['conflict'] or r['anomaly_kind'] or r['matched']})")
        told = "; ".join(f"{kind}: {', '.join(pairs)}" for kind, pairs in groups.items()) or "none"
        lines.append(f"- **{engine}** ({results.versions([engine])}): {len(off)} of "
                     f"{sum(1 for r in mine if r['agrees_with_docs'])} documented pairs disagree. {told}.")
    return lines


def render(results: Results | None = None, meta: dict | None = None) -> str:
    """The page, from the rows, the matrix's CSV and the run's facts; the same inputs give the same text."""
    results, meta = results or Results.load(), meta or load_meta()
    grid, notes = grid_of(results), []
    rows = table(grid, notes)
    out = ["# Is it safe to write to this Delta table from two jobs at once? The answer, on one page", "",
           "<!-- Written by `python -m helpers.answer_page` from data/: change helpers/answer.py, not this file. -->", "",
           "To find your own setting, choose it in [answer.html](answer.html): the same answer as a page you query (open "
           "it in a browser). Below, a paragraph per setting, then every cell with its evidence.", "",
           "## Your setting", "", "Find yours; the table below has every cell, with the evidence.", "",
           *[p for setting in SETTINGS for p in (setting_paragraph(setting, grid, results), "")],
           "## Every setting, every race", "", INTRO, "", *rows, "", sections_linked(grid), ""]
    out += [f"[{i}] {note}" + ("  " if i < len(notes) else "") for i, note in enumerate(notes, 1)] + [""]
    out += ["A matrix cell's verdict, from the classes of the pairs it cites:", ""]
    out += [f"{i}. {step}" for i, step in enumerate(RULE, 1)] + [""]
    out += ["## What to do", "", *what_to_do(grid, results), ""]
    from helpers.producers import answer as producers_answer
    from helpers.producers import results as producers_results

    committed = producers_results.load(full_runs.PUBLISHED_DIR / producers_results.KIND)  # never a run of this machine's
    out += [producers_answer.what_to_build(committed), ""]
    out += ["## Version boundaries", "", "From `helpers/boundaries.py`, the one home of these releases:", "",
            *boundaries_table(), ""]
    out += ["## Where each figure comes from", "", *sources(grid, results, meta), ""]
    out += ["## Where the engines disagree with Delta's documentation", "",
            "Against the WriteSerializable answer of Delta's write-conflict table (`data/delta_write_conflicts.csv`), "
            "from the conflict matrix:", "", *disagreements(results)]
    return "\n".join(out) + "\n"


def page_command(argv: list[str] | None, *, module: str, page: Path, render_page) -> int:
    """The command of a generated page: write it, or with ``--check`` exit 1 if it differs from a fresh
    render (``module``: the command's name, ``render_page``: a function that returns the page's text)."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=f"Write {page.name} from the measurements.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the page differs from a fresh render")
    parser.add_argument("--page", type=Path, default=page, help=f"the page (default docs/{page.name})")
    args = parser.parse_args(argv)
    fresh, shown = render_page(), config.shown(args.page)
    if args.check:
        if not args.page.exists() or args.page.read_text(encoding="utf-8") != fresh:
            print(f"{shown} is not what `python -m {module}` writes now: run it and commit the page.", file=sys.stderr)
            return 1
        print(f"{shown} is current")
        return 0
    args.page.write_text(fresh, encoding="utf-8")
    print(f"wrote {shown} ({len(fresh.encode()) // 1024} KB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    return page_command(argv, module="helpers.answer_page", page=PAGE, render_page=render)


if __name__ == "__main__":
    sys.exit(main())
