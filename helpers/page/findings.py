"""Which finding applies to which setting and release, and what it says: the findings' version table,
``findings/versions.csv`` (one line per finding and the commit paths it was measured on), and each finding in
words with what to do about it (:data:`FINDING_TEXTS`).

A finding applies to a row of the answer (:class:`helpers.page.evidence.Row`) when one of the row's
commit paths (:data:`helpers.page.evidence.PATHS`) is one of the finding's, and the release chosen lies
from the first to the last release measured affected (a release between two affected ones is taken as
affected; a release outside that range is not known to be). deltalake's release is the one a reader chooses;
Delta Spark's and Delta Kernel's is the one the workbook measures (``boundaries.DELTA_SPARK``).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from helpers.ground import config
from helpers.page import boundaries as b
from helpers.page.engine_names import CURRENT

TABLE = config.ROOT / "findings" / "versions.csv"
JVM_LIBRARIES = ("Delta Spark", "Delta Kernel")
"""Libraries whose one release here is Delta Spark's (:data:`helpers.page.boundaries.DELTA_SPARK`)."""


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@dataclass(frozen=True)
class Finding:
    """One line of the findings' version table."""

    folder: str
    library: str
    first: str
    last: str
    paths: tuple[str, ...]
    affected: tuple[str, ...]
    not_affected: tuple[str, ...]

    def covers(self, release: str) -> bool:
        """Whether ``release`` (of :attr:`library`) lies from the first to the last release affected."""
        return version_key(self.first) <= version_key(release) <= version_key(self.last)


def load(path=TABLE) -> list[Finding]:
    """Every line of the table, in its order."""
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            Finding(
                line["finding"],
                line["library"],
                line["first_affected"],
                line["last_affected"],
                tuple(line["paths"].split()),
                tuple(line["affected_measured"].split()),
                tuple(line["not_affected_measured"].split()),
            )
            for line in csv.DictReader(handle)
        ]


def within(row, low: str, high: str, table: list[Finding] | None = None) -> list[Finding]:
    """The findings that apply to ``row`` at some release from ``low`` to ``high`` (deltalake's; ``""``: no
    bound), each folder once: what a paragraph on the whole row names."""
    found = {}
    for finding in load() if table is None else table:
        if not set(finding.paths) & set(row.paths):
            continue
        if finding.library in JVM_LIBRARIES:
            hit = finding.covers(b.DELTA_SPARK.version)
        else:
            hit = (not low or version_key(finding.last) >= version_key(low)) and (
                not high or version_key(finding.first) <= version_key(high)
            )
        if hit:
            found.setdefault(finding.folder, finding)
    return list(found.values())


def applying(row, release: str, table: list[Finding] | None = None) -> list[Finding]:
    """The findings that apply to ``row`` at deltalake release ``release``."""
    return within(row, release, release, table)


FINDINGS = "../findings"
LOST_ANSWER = (
    f"[a lost commit answer]({FINDINGS}/deltalake-lost-commit-response-commits-twice/REPORT.md) (measured on S3 by "
    f"conditional put and on Azure, up to {CURRENT}): when the answer to the write of a commit file is lost and the "
    "library's resend is refused, it takes its own commit for another writer's, so an append is committed twice (and "
    "reported once) and a DELETE is reported failed although it committed. Give every append an idempotent-write id "
    "(`Transaction(app_id, version)`) and, after an error, reload the table and check `transaction_version` before "
    "rerunning (measured: committed once); look in the table before rerunning a failed DELETE"
)
DYNAMODB_LOST_CLAIM = (
    f"[a lost DynamoDB claim answer]({FINDINGS}/deltalake-dynamodb-lost-claim-answer-reported-failed/REPORT.md): "
    f"up to {b.DYNAMODB_LOG_STORE_REMOVED.last_before}, when the answer to the log store's `PutItem` is lost and its "
    "resend refused, the writer finishes its own commit, then marks the next version's claim complete without its "
    "commit file: every later write to the table fails (`Invalid table version`) until that lock item is deleted "
    f"by hand, and from {b.APPEND_READS_TABLE.version} the committed append is reported failed. An app transaction "
    "with a check of `transaction_version` after an error avoids both (measured: committed once, the table still "
    "writable)"
)
DOUBLE_OPTIMIZE = (
    f"[the {b.DOUBLE_OPTIMIZE.version} conflict-checker change]({FINDINGS}/deltalake-two-optimizes-both-commit/REPORT.md): "
    f"from {b.DOUBLE_OPTIMIZE.version}, a second OPTIMIZE or Z-order, an overwrite or a DELETE of every row made from a "
    "snapshot older than a concurrent OPTIMIZE commits. Compact from one job at a time, never "
    f"beside a DELETE of every row or an overwrite, or stay on {b.DOUBLE_OPTIMIZE.last_before} until a release fixes it"
)
DYNAMODB_ADVISORY = (
    f"[the DynamoDB log store advisory]({FINDINGS}/deltalake-dynamodb-log-store-advisory/ADVISORY.md): in "
    f"{b.STUCK_REPAIR.version}–{b.DYNAMODB_LOG_STORE_REMOVED.last_before} a commit whose writer died at the wrong moment "
    "wedges the table until its staged file is deleted, and a job that loads the table can finish a writer's commit "
    "before the writer does (the writer is then told it failed)"
)
DELTA_LOG_STORE_REPORT = (
    f"[Delta's DynamoDB log store]({FINDINGS}/delta-s3-dynamodb-log-store-unfinished-commit/REPORT.md) "
    f"({b.DELTA_SPARK.version}): a writer whose claim won but whose copy to `N.json` S3 refused is told its append "
    "failed although it is in the log; look in the table before rerunning a failed append"
)
CATALOG_LOST_ANSWER = (
    f"[a lost `add-commit` answer]({FINDINGS}/delta-uc-lost-commit-answer-commits-twice/REPORT.md) "
    f"({b.DELTA_SPARK.version}, 15 appendix B): when the catalog ratified a commit and its answer is lost, Delta "
    "takes its own commit for another writer's and commits the same append again as the next version (the rows "
    "are read once, and the log holds the append twice, with new row ids)"
)
CATALOG_COMMIT_LIMIT = (
    f"[the catalog's commit limit]({FINDINGS}/delta-uc-commit-limit-never-backfills/REPORT.md) "
    f"({b.DELTA_SPARK.version}, 15 appendix B): after ten commits the catalog ratified and nobody published, "
    "Delta retries the catalog's refusal (HTTP 429) without publishing them, and no writer commits until they are "
    "published"
)
KERNEL_REBASE = (
    f"[Kernel's second rebase]({FINDINGS}/delta-kernel-uc-rebase-behind-an-unpublished-commit/REPORT.md) "
    f"(Java Delta Kernel {b.DELTA_SPARK.version}): behind one published and one unpublished commit of another "
    "writer, Kernel's commit stops on its own check (an error that names no conflict); read the table "
    "again and retry. The cause is the one delta-io/delta#5018 names (Kernel lists the winning commits from the "
    "version it read, not from its last attempt); its fix, delta-io/delta#7317, is open"
)
WRITE_TRANSACTION = (
    "[`create_write_transaction` leaves the table behind]"
    f"({FINDINGS}/deltalake-create-write-transaction-leaves-the-table-behind/REPORT.md): after a commit "
    "through `DeltaTable.create_write_transaction`, the `DeltaTable` stays at the version it read, so its next "
    "commit with the same app id is refused as concurrent (1.6.3 and later) or made from a stale snapshot "
    "(1.5.1); a job that commits twice through one `DeltaTable` calls `update()` between the two"
)
VACUUM_FULL = (
    "[VACUUM's full mode within the retention]"
    f"({FINDINGS}/deltalake-vacuum-full-deletes-files-within-retention/REPORT.md): on "
    f"{b.VACUUM_FULL_MODE.version}–{b.VACUUM_FULL_KEEPS_NEW_FILES.last_before}, `vacuum(full=True)` deletes every "
    "file the current version does not name, even with the default 7-day retention: a concurrent job's data "
    "file not yet committed (its commit then lands and the table cannot be read) and files removed minutes ago; "
    f"on {b.VACUUM_FULL_KEEPS_NEW_FILES.version}–{b.VACUUM_FULL_RETENTION.last_before} it still deletes files a "
    "recent OPTIMIZE, DELETE or overwrite removed if they were written more than 7 days ago, so a job or a time "
    f"travel reading an older snapshot finds them gone. Use `full=False` there, or move to "
    f"{b.VACUUM_FULL_RETENTION.version} or later"
)
FINDING_TEXTS = (
    DOUBLE_OPTIMIZE,
    VACUUM_FULL,
    WRITE_TRANSACTION,
    LOST_ANSWER,
    DYNAMODB_LOST_CLAIM,
    DYNAMODB_ADVISORY,
    DELTA_LOG_STORE_REPORT,
    CATALOG_LOST_ANSWER,
    CATALOG_COMMIT_LIMIT,
    KERNEL_REBASE,
)
"""Each finding a setting may meet, in words with what to do about it; each links its report."""


LANDED_THOUGH_FAILED = (LOST_ANSWER, DYNAMODB_LOST_CLAIM, DYNAMODB_ADVISORY, DELTA_LOG_STORE_REPORT)
"""The findings that say a job can be told its write failed although it committed: where one applies, a
failed job is looked for in the table before it is rerun."""


def may_have_landed(row) -> bool:
    """Whether a finding that applies to some release of ``row`` says a failed write may have committed."""
    return any(finding_text(f.folder) in LANDED_THOUGH_FAILED for f in within(row, *row.span()))


def finding_text(folder: str) -> str:
    """The words of the finding whose report is in ``findings/<folder>/`` (a finding of the version table
    with no words here is an error: add them to :data:`FINDING_TEXTS`)."""
    for text in FINDING_TEXTS:
        if f"{FINDINGS}/{folder}/" in text:
            return text
    raise KeyError(f"findings/versions.csv names {folder!r}, which FINDING_TEXTS does not describe")
