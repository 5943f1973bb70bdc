"""An independent reader of the answer page's cells: what each cell of ``docs/answer.html`` must show,
computed from the committed data alone.

It reads ``data/*.csv`` (the conflict matrix and the mixed run), the version boundaries
(:mod:`helpers.page.boundaries`, data only) and the findings' version table (``findings/versions.csv``),
with code of its own: nothing of the page's code is imported, so a rule the page gets wrong is not
repeated here. ``tests/test_answer_cells.py`` drives the page in a browser and compares.

What it restates, in its own words:

- the verdict rule (the same as the page promises): any row missing, not available or in error → not
  measured; else any anomaly with a lost update or a broken log → loses data; else duplicated rows →
  duplicates data; else any other anomaly → wrong result; else any refusal → refused (retry); else
  safe. A rerun's classes include its run after reloading;
- a cell stands under the worst of its release: every measured variant of the engines that stand for
  the release (both interleavings, and the S3 confirmation on S3);
- which engines stand for a release: a commit protocol (:data:`PROTOCOLS`, recognised by the row's
  visible store and setting) names its matrix engines, and a measured version stands for a release
  only if no boundary that changes that protocol lies between them;
- which findings apply: those whose affected releases contain the row's release (of the finding's
  library) and whose commit paths include one of the row's (:attr:`Protocol.paths`).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from helpers.page import boundaries

ROOT = Path(__file__).resolve().parent.parent
CSVS = (ROOT / "data" / "conflict_matrix.csv", ROOT / "data" / "conflict_matrix_mixed_dynamodb.csv")
FINDINGS_TABLE = ROOT / "findings" / "versions.csv"

SAFE, REFUSED, LOSES, DUPLICATES, WRONG = (
    "safe",
    "refused (retry)",
    "loses data",
    "duplicates data",
    "wrong result",
)
MISREPORTS, BY_DESIGN, NOT_MEASURED = "fails though committed", "refused by design", "not measured"
SEVERITY = (SAFE, REFUSED, BY_DESIGN, MISREPORTS, NOT_MEASURED, WRONG, DUPLICATES, LOSES)
"""From the mildest verdict to the worst, for a cell a notebook's check decides: the page may show a
verdict at least as grave as the matrix's, never a milder one ("not measured" is milder than a
measured anomaly: a page must not hide one)."""
KIND_WORDS = {
    "lost update": r"\blost\b",
    "broken log": r"can no longer be read",
    "duplicated rows": r"twice",
    "resurrected rows": r"come back",
    "removed twice": r"twice",
}
"""What a sentence must say for each kind of anomaly (a regular expression)."""
VERDICT_WORDS = {
    SAFE: r"both commit|appends nothing|nothing is lost|\bsafe\b",
    REFUSED: r"\bfail|\brefus",
    LOSES: r"\blost\b|can no longer be read",
    DUPLICATES: r"twice",
    WRONG: r"come back|twice",
    MISREPORTS: r"\bfail",
    BY_DESIGN: r"\brefus",
    NOT_MEASURED: r"\w",
}
"""What a sentence must say for a verdict (a check's cell, or a milder interleaving it names)."""
CONDITION_WORDS = r"\bwhen\b[^.;]*\bfiles?\b"
"""A cell whose interleavings differ names the milder one with its condition: when ... files ..."""


def verdict_of(rows: list[dict | None]) -> str:
    """The verdict of matrix rows (none, or one missing: not measured)."""
    if not rows or None in rows:
        return NOT_MEASURED
    outcomes = {r[k] for r in rows for k in ("outcome", "retry_after_reload") if r[k]}
    if outcomes & {"not available", "error"}:
        return NOT_MEASURED
    kinds = kinds_of(rows)
    if "anomaly" in outcomes:
        if kinds & {"lost update", "broken log"}:
            return LOSES
        return DUPLICATES if "duplicated rows" in kinds else WRONG
    return REFUSED if "refused" in outcomes else SAFE


def kinds_of(rows: list[dict]) -> set[str]:
    return {
        kind
        for r in rows
        for text in (r["anomaly_kind"], r["retry_after_reload_kind"])
        for kind in text.split(" + ")
        if kind
    }


def release_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@dataclass(frozen=True)
class Protocol:
    """A commit protocol a row of the page stands for, recognised by the row's engine, store and
    setting; its matrix engines (``{v}``: the measured version), the boundaries (names in
    :mod:`helpers.page.boundaries`) that change it, the releases it exists in (``from_``/``to``:
    ``"NAME.version"`` or ``"NAME.last_before"``), and whether its rows lose data whatever runs."""

    key: str
    engine: str
    store: str
    setting: str
    engines: tuple[str, ...] = ()
    changes: tuple[str, ...] = ()
    from_: str = ""
    to: str = ""
    loses: bool = False
    required: bool = True
    """Every release it exists in must offer a row of it."""
    paths: tuple[str, ...] = ()
    """Its commit paths as the findings' version table names them (a mixed row: each engine's)."""

    @property
    def side(self) -> str:
        """Which library's release the page's release chooses: Delta Spark's, or deltalake's."""
        return "delta" if self.engine == "Delta Spark" else "deltalake"


CHECKER = (
    "APPEND_READS_TABLE",
    "DOUBLE_OPTIMIZE",
    "VACUUM_FULL_MODE",
    "VACUUM_FULL_KEEPS_NEW_FILES",
    "VACUUM_FULL_RETENTION",
)
"""delta-rs's conflict checker and its VACUUM: what every deltalake protocol shares, whatever the store."""
PUT = ("CONDITIONAL_PUT_DEFAULT",)
"""S3's commit by conditional put: an opt-in until 0.23.0, the default from it (another path to the
same request: a release on one side does not stand for one on the other)."""
LOCK = (
    "DYNAMODB_LOG_STORE",
    "CONDITIONAL_PUT_DEFAULT",
    "STUCK_REPAIR",
    "DYNAMODB_LOG_STORE_REMOVED",
)
"""The DynamoDB lock's changes: the lease becomes the log store (0.15.0), the log store beside
conditional put (0.23.0), the repair that copies conditionally (1.5.1), no lock at all (1.6.1: a
later release measured without a lock stands for none with it)."""
RS, RS_SPARK = ("deltalake-{v}",), ("spark-then-deltalake-{v}", "deltalake-{v}-then-spark")
LOCK_PATH, PUT_PATH, SPARK_LOCK_PATH = "s3-dynamodb-lock", "s3-conditional-put", "spark-s3-dynamodb"
PROTOCOLS = (
    Protocol("rs-unsafe", "deltalake", r"^S3$", r"UNSAFE_RENAME", loses=True,
             to="CONDITIONAL_PUT_DEFAULT.last_before", paths=("s3-unsafe-rename",)),
    Protocol("rs-two-locks", "deltalake", r"DynamoDB", r"own lock", loses=True, required=False,
             from_="DYNAMODB_LOG_STORE.version", to="DYNAMODB_LOG_STORE_REMOVED.last_before",
             paths=(LOCK_PATH,)),
    Protocol("rs-lock", "deltalake", r"^S3 \+ DynamoDB$", r"LOCKING_PROVIDER=dynamodb", RS,
             CHECKER + LOCK, to="DYNAMODB_LOG_STORE_REMOVED.last_before", paths=(LOCK_PATH,)),
    Protocol("rs-put", "deltalake", r"^S3$", r"conditional put", RS, CHECKER + PUT,
             from_="CONDITIONAL_PUT_OPT_IN.version", paths=(PUT_PATH,)),
    Protocol("rs-azure", "deltalake", r"^Azure", r"", RS, CHECKER, paths=("azure-put-if-absent",)),
    Protocol("spark-one", "Delta Spark", r"^S3$", r"one driver", ("delta-spark-{v}",),
             paths=("spark-s3-single-driver",)),
    Protocol("spark-several", "Delta Spark", r"^S3$", r"several drivers", loses=True,
             paths=("spark-s3-single-driver",)),
    Protocol("spark-dynamodb", "Delta Spark", r"DynamoDB", r"S3DynamoDBLogStore",
             ("delta-spark-{v}",), paths=(SPARK_LOCK_PATH,)),
    Protocol("spark-catalog", "Delta Spark", r"Unity Catalog", r"catalog",
             changes=("CATALOG_MANAGED_MAINTENANCE",), from_="CATALOG_MANAGED.version",
             paths=("spark-catalog",)),
    Protocol("mixed-lock", "both", r"DynamoDB", r"one lock table",
             ("spark{s}-dynamodb-then-deltalake-{v}", "deltalake-{v}-then-spark{s}-dynamodb"),
             CHECKER + LOCK, from_="TABLE_PATH_SLASH.version",
             to="DYNAMODB_LOG_STORE_REMOVED.last_before", required=False,
             paths=(SPARK_LOCK_PATH, LOCK_PATH)),
    Protocol("mixed-put", "both", r"DynamoDB", r"conditional put", loses=True, required=False,
             from_="DYNAMODB_LOG_STORE_REMOVED.version", paths=(SPARK_LOCK_PATH, PUT_PATH)),
    Protocol("mixed-local", "both", r"^local disk$", r"", RS_SPARK, CHECKER, required=False,
             paths=("local-put-if-absent",)),
)  # fmt: skip
"""Every commit protocol the reader knows. A Delta Spark release stands only for itself: no boundary
read from Delta's release notes or source ties one release's races to another's, so a release the
matrix did not measure has no rows (the page says it was not measured); the catalog's maintenance
changes at 4.4.1. A mixed row's Delta Spark release is the one its setting names (``Delta Spark
3.3.2``), else Delta Spark's boundary release. A row the reader cannot place is a problem of its own
(the reader must learn the new setting first)."""

LAYOUT_SUFFIX = {"shared": "", "partitions": "+partitions", "file-stats": "+file-stats"}
"""The page's layouts and the matrix's variants that race on them."""
INTERLEAVINGS = ("+b-files-first", "+b-files-after")
RETRIES = {
    "retry": "append",
    "retry_txn": "append_txn",
    "retry_checked": "append_txn",
    "retry_checked_stale": "append_txn",
}
"""A later job that reruns the first job's append: the matrix's pair (first, rerun)."""
KEYED = ("merge", "delete", "update")
PLAIN_IDS = {"file-stats": ("delete", "update")}
"""Layouts with no partition: their DELETE and UPDATE predicates name ids (a range of ids) already, so a
predicate on the key only is the operation itself (helpers/matrix/layouts.py races no by-key form there)."""
"""Operations whose condition a team may give on the key only (``condition="key"``)."""


@dataclass(frozen=True)
class Expected:
    verdict: str
    rows: tuple[dict, ...] = ()
    check: bool = False
    """A whole-row loss: a notebook's check, not the matrix, decides every cell."""

    def interleavings(self) -> dict[str, str]:
        """Each interleaving's verdict, where the rows hold more than one (``""``: the engine's own)."""
        groups: dict[str, list[dict]] = {}
        for r in self.rows:
            suffix = next((s for s in INTERLEAVINGS if s in r["engine"]), "")
            groups.setdefault(suffix, []).append(r)
        return {suffix: verdict_of(rows) for suffix, rows in groups.items()}


class Reader:
    """The matrix's rows, the boundaries and the findings, and what each cell must show."""

    def __init__(self, csvs=CSVS, bounds: dict | None = None, findings=FINDINGS_TABLE):
        self.rows = [r for path in csvs for r in read_csv(Path(path))]
        self.by_pair = {(r["engine"], r["first"], r["second"]): r for r in self.rows}
        self.versions = {r["engine"]: measured_versions(r["engine_version"]) for r in self.rows}
        self.bounds = bounds or {
            name: value
            for name, value in vars(boundaries).items()
            if isinstance(value, boundaries.Boundary)
        }
        self.findings = read_csv(Path(findings))
        """The findings' version table: a finding's folder, library, first and last release affected,
        and the commit paths (space-separated) where it applies; a finding may have a row per path."""
        self.apart = {r["second"] for r in self.rows if r["second"].endswith("_apart")}
        self.spark_measured = {v["delta"] for v in self.versions.values() if "delta" in v}
        """The Delta Spark releases the matrix raced: the only ones a Delta Spark row stands for."""
        self.firsts = {r["second"]: r["first"] for r in self.rows}
        self.standing: dict[tuple[str, str], list[str]] = {}

    def bound(self, reference: str) -> str:
        name, _, field = reference.partition(".")
        return getattr(self.bounds[name], field) if reference else ""

    def exists(self, protocol: Protocol, release: str) -> bool:
        if protocol.side == "delta" and release not in self.spark_measured:
            return False  # not measured: the page offers no row of it
        low, high = self.bound(protocol.from_), self.bound(protocol.to)
        key = release_key(release)
        return (not low or release_key(low) <= key) and (not high or key <= release_key(high))

    def stands_for(self, protocol: Protocol, measured: str, release: str) -> bool:
        """A measured version stands for a release if no boundary that changes the protocol lies
        between them (its first release after the lower and at most the higher of the two)."""
        if protocol.side == "delta":
            return measured == release
        low, high = sorted((release_key(measured), release_key(release)))
        return not any(
            low < release_key(self.bounds[name].version) <= high for name in protocol.changes
        )

    def representatives(self, protocol: Protocol, release: str, spark: str = "") -> list[str]:
        """The matrix's base engines (no variant) of the protocol whose measured version stands for
        the release; a mixed row's only those that ran its Delta Spark release (``spark``)."""
        if (protocol.key, release, spark) not in self.standing:
            pattern = "|".join(
                re.escape(e).replace(r"\{v\}", r"[\d.]+").replace(r"\{s\}", r"(?:-[\d.]+)?")
                for e in protocol.engines
            )
            self.standing[protocol.key, release, spark] = [
                engine
                for engine, versions in self.versions.items()
                if pattern
                and re.fullmatch(pattern, engine)
                and protocol.side in versions
                and self.stands_for(protocol, versions[protocol.side], release)
                and (protocol.side == "delta" or not spark or versions.get("delta", spark) == spark)
            ]
        return self.standing[protocol.key, release, spark]

    def pair(self, first: str, second: str, layout: str, choices: dict) -> tuple[str, str]:
        """The matrix's pair for the page's (first, later) on a layout, with the choices made: the
        same operation from two jobs on parts of their own is its ``_apart`` pair; a condition on the
        key only is each DELETE, UPDATE or MERGE's ``_on_id`` form; the default retention is VACUUM's
        ``vacuum_retained``."""
        if second in RETRIES:
            return RETRIES[second], second
        keyed = layout != "shared" and choices.get("condition") == "key"
        keys = [op for op in KEYED if op not in PLAIN_IDS.get(layout, ())]
        if layout != "shared" and first == second and f"{first}_apart" in self.apart:
            if keyed and first in keys:
                later = f"{first}_on_id_apart"
                return self.firsts.get(later, f"{first}_on_id"), later
            return first, f"{first}_apart"
        forms = {"vacuum": "vacuum_retained"} if choices.get("retention") == "default" else {}
        forms.update({op: f"{op}_on_id" for op in keys} if keyed else {})
        return forms.get(first, first), forms.get(second, second)

    def expected(
        self, protocol, store, release, layout, first, second, choices, spark=""
    ) -> Expected:
        """What the page must show for a cell of a row of this protocol and store (``spark``: a
        mixed row's Delta Spark release)."""
        if protocol.loses:
            return Expected(LOSES, check=True)
        pair = self.pair(first, second, layout, choices)
        bases = self.representatives(protocol, release, spark)
        if not bases or layout not in LAYOUT_SUFFIX:
            return Expected(NOT_MEASURED)
        rows: list[dict | None] = []
        for base in bases:
            own = base + LAYOUT_SUFFIX[layout]
            rows.append(self.by_pair.get((own, *pair)))  # the engine's own: missing = not measured
            others = [own + s for s in INTERLEAVINGS]
            if store.startswith("S3") and layout == "shared":
                others += [base + "@s3" + s for s in ("", *INTERLEAVINGS)]
            rows += [r for e in others if (r := self.by_pair.get((e, *pair)))]
        found = tuple(r for r in rows if r is not None)
        return Expected(verdict_of(rows), found)

    def findings_for(self, protocol: Protocol, release: str, spark: str = "") -> set[str]:
        """The folders of the findings the page must link for a row of this protocol at a release: the
        finding's library is the row's (deltalake, or Delta Spark's JVM side), its release in range
        (a mixed row's Delta Spark release: ``spark``, else Delta Spark's boundary release)."""
        releases = {protocol.side: release}
        if protocol.engine == "both":
            releases["delta"] = spark or self.bounds["DELTA_SPARK"].version
        found = set()
        for finding in self.findings:
            chosen = releases.get("deltalake" if finding["library"] == "deltalake" else "delta")
            if not chosen or not set(finding["paths"].split()) & set(protocol.paths):
                continue
            first, last = (release_key(finding[k]) for k in ("first_affected", "last_affected"))
            if first <= release_key(chosen) <= last:
                found.add(finding["finding"])
        return found


def measured_versions(engine_version: str) -> dict[str, str]:
    """The releases a matrix engine ran: ``Apache-Spark/4.2.0 Delta-Lake/4.4.0 / deltalake 1.5.1``
    gives Delta Spark's 4.4.0 and deltalake's 1.5.1."""
    found = {}
    for part in engine_version.split(" / "):
        spark = re.search(r"Delta-Lake/([\d.]+)", part)
        if spark:
            found["delta"] = spark.group(1)
        elif plain := re.fullmatch(r"(?:deltalake )?([\d.]+)", part.strip()):
            found["deltalake"] = plain.group(1)
    return found


NOT_A_SETTING = {
    "object-store-resends-a-conditional-put-already-sent": "deltalake's dependency: its consequence "
    "is the lost-commit-answer finding",
    "moto-conditional-writes-not-atomic": "the S3 emulator's",
    "versitygw-copies-a-deleted-object": "an S3 server's the workbook runs",
    "olai-uc-server-s3-vending-only-through-aws-sts": "the stand-in catalog server's",
    "deltalake-dynamodb-repair-already-exists": "in the DynamoDB log store advisory",
    "deltalake-dynamodb-repair-of-a-live-commit": "in the DynamoDB log store advisory",
    "deltalake-dynamodb-reclaim-after-a-refused-copy": "in the DynamoDB log store advisory",
}
"""Findings with no row in the version table, each with the reason: no setting of the page chooses
their library, or another finding (its folder in the table) stands for them."""


def read_csv(path: Path) -> list[dict]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def protocol_of(engine: str, store: str, setting: str) -> Protocol | None:
    """The protocol of a row as the page shows it (its engine, store and setting), if the reader knows
    it."""
    return next(
        (
            p
            for p in PROTOCOLS
            if p.engine == engine and re.search(p.store, store) and re.search(p.setting, setting)
        ),
        None,
    )


def spark_release(engine: str, release: str, setting: str, default: str) -> str:
    """The Delta Spark release of a row as the page shows it: a Delta Spark row's chosen release, a
    mixed row's as its setting names it (else ``default``), none for deltalake alone."""
    if engine == "Delta Spark":
        return release
    if engine != "both":
        return ""
    named = re.search(r"Delta Spark (\d+\.\d+\.\d+)", setting)
    return named.group(1) if named else default
