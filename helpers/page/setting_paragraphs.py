"""The answer's settings: a paragraph per setting a reader may have (what to configure, which races may
run at once, which fail loudly, which to keep apart, the findings that apply), read from the cells of
:mod:`helpers.page.decision`; the retry advice from notebook 11's committed run. :mod:`helpers.page.markdown_page`
and :mod:`helpers.page.html_page` render them."""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.catalog import server_build
from helpers.page import boundaries as b
from helpers.page import findings, lost_answer_cells
from helpers.page.columns import COLUMNS
from helpers.page.decision import Cell, Results, link_of, remedy
from helpers.page.engine_names import CURRENT, MIXED_LINK, MIXED_RUN, mixed_run
from helpers.page.evidence import Check
from helpers.page.findings import finding_text, may_have_landed
from helpers.page.matrix_verdicts import (
    BY_DESIGN,
    DUPLICATES,
    LOSES,
    MISREPORTS,
    NOT_MEASURED,
    OP_WORDS,
    REFUSED,
    SAFE,
    WRONG,
)
from helpers.page.retry_advice import retries
from helpers.page.table_rows import ROWS
from helpers.spark.sessions import (
    DELTA_DYNAMODB_LOG_STORE,
    DYNAMODB_LOG_STORE_PREFIX,
    WORKBOOK_DYNAMODB_LOG_STORE,
)

GLOSSARY = "glossary.md"


def term(words: str, anchor: str) -> str:
    """``words`` linked to the glossary's entry (its anchor: the term's name, lowercase, hyphens)."""
    return f"[{words}]({GLOSSARY}#{anchor})"


RACE_WORDS = {
    "append": "two appends",
    "rewrite": "a DELETE with a predicate, UPDATE or MERGE beside an append",
    "delete_all_append": "a DELETE of every row beside an append",
    "overwrite": "an overwrite or a replaceWhere beside an append",
    "optimize": "two OPTIMIZEs or Z-orders",
    "optimize_append": "an OPTIMIZE beside an append",
    "optimize_delete": "an OPTIMIZE or Z-order beside a DELETE with a predicate or a replaceWhere",
    "optimize_rewrite": "an OPTIMIZE or Z-order beside a DELETE of every row or a full overwrite",
    "vacuum": "a zero-retention VACUUM beside an append, a DELETE with a predicate, an UPDATE, a MERGE or a "
    "replaceWhere",
    "vacuum_rewrite": "a zero-retention VACUUM beside a full overwrite or a DELETE of every row",
    "vacuum_retained": "a VACUUM keeping the default 7 days beside any write",
    "backfill": "the same operation from two jobs, each on a partition of its own named in its condition",
    "retry": "a rerun append",
    "other": "the other engine on the same table",
}
"""Each column's race, as a sentence says it."""
WHY = {
    LOSES: "rows are lost",
    DUPLICATES: "rows end up twice",
    WRONG: "the table holds rows no serial order gives",
    MISREPORTS: "a job can be told it failed for a write that is in the table",
}


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

    @property
    def findings(self) -> tuple[str, ...]:
        """The findings that apply to some release of the row (``findings/versions.csv``), each in words."""
        row = next(r for r in ROWS if r.key == self.row)
        return tuple(finding_text(f.folder) for f in findings.within(row, *row.span()))


DDB = DYNAMODB_LOG_STORE_PREFIX
SPARK_LOCK_CONF = (
    f"`spark.delta.logStore.s3a.impl={DELTA_DYNAMODB_LOG_STORE}`, `{DDB}.ddb.tableName` and "
    f"`{DDB}.ddb.region`, with the `io.delta:delta-storage-s3-dynamodb` package and `s3a://` table URIs"
)
RS_LOCK_OPTIONS = "`AWS_S3_LOCKING_PROVIDER=dynamodb` and `DELTA_DYNAMO_TABLE_NAME`"
SPARK_LOG_STORE_MEASURED = (
    f"Delta Spark's side was measured with the workbook's own `{WORKBOOK_DYNAMODB_LOG_STORE}` against the emulators: "
    f"Delta's `{DELTA_DYNAMODB_LOG_STORE}` has no DynamoDB endpoint setting, so it runs only against a real account "
    "(`WORKBOOK_PROFILE=cloud`). The two share the protocol, the lock items and the `ddb.*` settings, and differ only "
    "where a commit cannot be finished: Delta's 4.4.0 class tells a writer whose claim won, but whose copy to `N.json` "
    "S3 refused, that its append failed although it is in the log, and keeps writers claiming one version without end "
    "against an item whose staged file is gone ([the report](../findings/delta-s3-dynamodb-log-store-unfinished-commit/REPORT.md)); "
    "the workbook's class retries the copy and fails the other case with an error naming the item. With Delta's class, "
    "look for a failed append in the table before running it again"
)
RERUN_HEADINGS = (
    "One of the two fails loudly and commits nothing; rerun it",
    "One of the two fails loudly; a rerun from a fresh snapshot commits, but look in the table before "
    "rerunning a job that failed otherwise than by a conflict (a lost commit answer, measured below, or a "
    "finding says such a failure may have committed)",
)
"""The heading of the races refused (retry) in a setting's paragraph: plain, and where a finding says a
failed write may have committed (:func:`may_have_landed`)."""
SETTINGS = (
    Setting(
        f"deltalake {b.DOUBLE_OPTIMIZE.version}–{CURRENT} on S3",
        "rs-put-today",
        "no lock: `write_deltalake` commits by "
        + term("conditional put", "conditional-put")
        + " (`If-None-Match: "
        "*`); `storage_options` needs only the store's keys (`AWS_REGION`, and `AWS_ENDPOINT_URL` for a store that "
        f"is not AWS); {RS_LOCK_OPTIONS} are ignored since {b.DYNAMODB_LOG_STORE_REMOVED.version}; "
        "{retries:s3-conditional-put}",
    ),
    Setting(
        f"deltalake {b.DOUBLE_OPTIMIZE.version}–{CURRENT} on Azure Blob",
        "rs-azure",
        "nothing for concurrency: a commit is a blob created only if absent, a "
        + term("conditional put", "conditional-put")
        + "; `storage_options` holds `account_name` and `account_key` (or credentials from `AZURE_CLIENT_*` or "
        "`az login`); {retries:azure}. Measured: the Blob API, through Azurite; an ADLS Gen2 account's "
        "hierarchical namespace (its `dfs` endpoint) is not measured, as no emulator here serves it",
    ),
    Setting(
        f"deltalake {b.STUCK_REPAIR.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before} with the DynamoDB lock",
        "rs-lock-interop",
        f"{RS_LOCK_OPTIONS} (the lock table) in `storage_options`: the DynamoDB "
        + term("log store", "log-store")
        + f", which {b.DYNAMODB_LOG_STORE_REMOVED.version} removes; with Spark writing too, name the table Spark's "
        f"`{DDB}.ddb.tableName` names and use `s3a://` URIs on both sides; {{retries:s3-dynamodb-lock}}",
    ),
    Setting(
        f"Delta Spark {b.DELTA_SPARK.version} from one driver",
        "spark-one",
        "nothing beyond the `spark.hadoop.fs.s3a.*` keys of your store: the default S3 log store "
        "(no `spark.delta.logStore.s3a.impl`) orders the commits of one driver's jobs under a lock of its JVM, so "
        "every job that writes the table must run in that one driver",
        avoid=("spark-several",),
    ),
    Setting(
        f"Delta Spark {b.DELTA_SPARK.version} from several clusters",
        "spark-dynamodb",
        f"in every cluster's Spark conf {SPARK_LOCK_CONF}: the DynamoDB "
        + term("log store", "log-store")
        + "; without it, the default S3 log store cannot see the other drivers' commits",
        avoid=("spark-several", "mixed-put"),
        measured_with=SPARK_LOG_STORE_MEASURED,
    ),
    Setting(
        f"Delta Spark {b.DELTA_SPARK.version} on a catalog-managed table",
        "spark-catalog",
        f"a catalog that ratifies commits (Unity Catalog's REST API; here {server_build.CRATE}, a server that speaks "
        "it, on local disk); the "
        "table created through it with `delta.feature.catalogManaged=supported` ("
        + term("catalog-managed table", "catalog-managed-table")
        + ", Delta "
        + b.CATALOG_MANAGED.version
        + " and later); every writer through that "
        "catalog, by the table's name (Unity Catalog's Spark connector, or a "
        + term("commit coordinator", "commit-coordinator")
        + " registered for the session catalog, as notebook 15 does; Java Delta Kernel with its Unity "
        "Catalog committer, "
        "`delta-kernel-unitycatalog`); no log store setting and no lock table. A writer that goes around "
        "the catalog cannot write it: Delta Spark refuses an append by path, and deltalake "
        + CURRENT
        + " neither reads nor writes such a table",
    ),
    Setting(
        f"Delta Spark {b.DELTA_SPARK.version} and deltalake {b.STUCK_REPAIR.version}–"
        f"{b.DYNAMODB_LOG_STORE_REMOVED.last_before} on one table",
        "mixed-lock",
        f"on S3, deltalake {b.TABLE_PATH_SLASH.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before} with "
        f"{RS_LOCK_OPTIONS} naming the table Spark's `{DDB}.ddb.tableName` names, and `s3a://` URIs on both sides. "
        f"deltalake {b.DYNAMODB_LOG_STORE_REMOVED.version} and later cannot take part in Spark's lock, so on S3 they "
        "must not write a table Spark writes",
        avoid=("mixed-put",),
        measured_with=SPARK_LOG_STORE_MEASURED,
    ),
)
"""The settings the page opens with, each rendered from its row's cells."""


def configure(setting: Setting) -> str:
    """What to configure for a setting, its retry advice read from notebook 11's committed run."""
    return re.sub(r"\{retries:([\w-]+)\}", lambda m: retries(m.group(1)), setting.configure)


def race_words(column_key: str, row=None, cell: Cell | None = None) -> str:
    """A column's race as a sentence says it; "the other engine" named for the row's engine (and, from
    its cell, the releases measured), or as the row names the engine its cell measured beside it."""
    if column_key == "other" and row is not None and row.other_engine:
        return f"{row.other_engine} writing the same table"
    if column_key == "other" and row is not None and row.engine in ("deltalake", "Delta Spark"):
        other = "Delta Spark" if row.engine == "deltalake" else "deltalake"
        versions = (
            cell.versions.split(" + ")[-1].removeprefix("deltalake ")
            if cell is not None and cell.verdict != NOT_MEASURED
            else ""
        )
        return f"{other}{' ' + versions if versions and other == 'deltalake' else ''} writing the same table"
    return RACE_WORDS[column_key]


def _races(grid: dict, row, verdicts: tuple[str, ...], *, skip: tuple[str, ...] = ()) -> list[str]:
    return [
        race_words(c.key, row, grid[row.key, c.key])
        for c in COLUMNS
        if c.key not in skip and grid[row.key, c.key].verdict in verdicts
    ]


def _with_conditions(cell: Cell, words: str) -> str:
    """A race with what else its cell says: why it is bad, and its verdict under each milder interleaving,
    each other layout and each order (the cell's own verdict is the worst of what its release did)."""
    more = [WHY[cell.verdict]] if cell.verdict in WHY else []
    more += [f"{verdict} {condition}" for condition, verdict in cell.conditions + cell.orders]
    if cell.note and words.endswith("writing the same table"):
        more.append(cell.note)
    return f"{words} ({'; '.join(more)})" if more else words


ENGINE_WORDS = {"delta-spark": "Delta Spark", "deltalake": "deltalake"}
KIND_WORDS = {
    "broken log": "it commits, and the table can no longer be read",
    "lost update": "it commits, and a committed write's rows are lost",
    "duplicated rows": "it commits, and rows end up in the table twice",
}


NEVER_OPS = {**OP_WORDS, "vacuum": "zero-retention VACUUM"}


def _engine_words(engine: str) -> str:
    return next((w for k, w in ENGINE_WORDS.items() if engine.startswith(k)), engine)


def never(row, results: Results) -> list[str]:
    """For a row decided by the mixed run: each race of its two engines that came out an anomaly, as what
    never to do (the mixed run's rows, in the order they raced)."""
    if not row.engines or not mixed_run(tuple(results.engines(row.engines))):
        return []
    found = [r for r in results.rows if r["engine"] in row.engines and r["outcome"] == "anomaly"]
    return [
        f"**Never** run {_engine_words(r['engine_first'])}'s {NEVER_OPS.get(r['first'], r['first'])} while "
        f"{_engine_words(r['engine_second'])}'s {NEVER_OPS.get(r['second'], r['second'])}, from a snapshot "
        f"older than it, is still to commit: "
        + "; ".join(
            dict.fromkeys(
                KIND_WORDS.get(k, f"it commits: {k}") for k in r["anomaly_kind"].split(" + ")
            )
        )
        + f" ({MIXED_RUN}: {r['order']}, {r['first']} → {r['second']}; {MIXED_LINK})."
        for r in found
    ]


NOT_ALLOWED = "Not allowed on this table"
"""The heading of the operations a setting refuses by design (:data:`helpers.page.decision.BY_DESIGN`): no race,
so never under "rerun it" nor under "May run at once"."""


def _listed(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def not_allowed(grid: dict, row) -> list[str]:
    """What a row's cells refuse by design, each check once (in the columns' order): the operations it
    refuses (a check that names none: its column's race), then its note in brackets."""
    found = dict.fromkeys(
        (_listed(cell.evidence.refuses) if cell.evidence.refuses else race_words(c.key), cell.note)
        for c in COLUMNS
        if (cell := grid[row.key, c.key]).verdict == BY_DESIGN and isinstance(cell.evidence, Check)
    )
    return [what + (f" ({note})" if note else "") for what, note in found]


def setting_paragraph(setting: Setting, grid: dict, results: Results) -> str:
    """One setting in plain words: what to configure, what may run at once, what fails loudly, what to
    keep apart (and why), how to rerun, the findings that apply; all but the configuration and the
    findings read from the row's cells. Each race stands under one heading, its cell's verdict, with its
    conditions beside it."""
    row = next(r for r in ROWS if r.key == setting.row)
    cells = [grid[row.key, c.key] for c in COLUMNS]
    links = ", ".join(
        dict.fromkeys(link_of(c) for c in cells if link_of(c) and c.verdict != NOT_MEASURED)
    )
    parts = [f"**{setting.title}** ({row.store}). **Configure:** {configure(setting)}."]

    def under(verdicts: tuple[str, ...], skip: tuple[str, ...] = ()) -> list[str]:
        return [
            _with_conditions(grid[row.key, c.key], race_words(c.key, row, grid[row.key, c.key]))
            for c in COLUMNS
            if c.key not in skip and grid[row.key, c.key].verdict in verdicts
        ]

    if safe := under((SAFE,)):
        parts.append(f"**May run at once:** {'; '.join(safe)}.")
    if barred := not_allowed(grid, row):
        parts.append(f"**{NOT_ALLOWED}:** {'; '.join(barred)}.")
    if refused := under((REFUSED,)):
        landed = may_have_landed(row) or lost_answer_cells.may_have_landed(row.key)
        parts.append(f"**{RERUN_HEADINGS[landed]}:** {'; '.join(refused)}.")
    if apart := under((LOSES, DUPLICATES, WRONG), skip=("retry",)):
        parts.append(f"**Keep apart:** {'; '.join(apart)}.")
    if told := _races(grid, row, (MISREPORTS,)):
        notes = [  # a row with no rerun of its own measured: what its misreporting cells say to do
            grid[row.key, c.key].note
            for c in COLUMNS
            if not row.remedy
            and grid[row.key, c.key].verdict == MISREPORTS
            and grid[row.key, c.key].note
        ]
        parts.append(
            f"**Look in the table before rerunning a failed append** ({'; '.join(told)}): {WHY[MISREPORTS]}"
            + "".join(f"; {n}" for n in notes)
            + "."
        )
    if grid[row.key, "retry"].verdict in WHY:
        verdict, versions = remedy(row, results)
        how = (
            f"only with {row.remedy_how} (measured {versions})"
            if verdict == SAFE
            else f"only with {row.remedy_how} (measured {versions}: a rerun from an older snapshot fails loudly, one "
            "from a fresh snapshot is skipped)"
            if verdict == REFUSED
            else "only after looking for it in the table"
        )
        parts.append(
            f"**Rerun an append whose job died {how}:** it may have committed, and a blind rerun adds "
            "its rows twice."
        )
    parts += never(row, results)
    parts.append(lost_answer_cells.paragraph(row.key))
    for key in setting.avoid:
        avoided = next(r for r in ROWS if r.key == key)
        parts.append(
            f"**Never** {avoided.name}: those commits lose appends ({avoided.loses.section.link})."
        )
    if unmeasured := _races(grid, row, (NOT_MEASURED,)):
        parts.append(f"Not measured here: {'; '.join(unmeasured)}.")
    for finding in setting.findings:
        parts.append(f"**Finding:** {finding}.")
    if setting.measured_with:
        parts.append(f"**Which class:** {setting.measured_with}.")
    return " ".join(parts) + f" Shown in {links}."
