"""One trial of a lost commit answer, and what it did, judged from storage.

A trial is one table: created (version 0) through the gate unharmed, then one append whose commit
answer the gate drops (:mod:`helpers.lost_answer.gate`), done the way a team does it: with no
remedy, or with one of its engine's (:data:`REMEDIES`), whose procedure may check and rerun. The
writer's word is ``told`` (what the whole procedure concluded) and ``steps`` (each call and its
answer); what happened is read afterwards from the table's log in storage (:func:`commits_of`):
how many commits add data, and their rows. :func:`outcome_of` puts the two together:

* ``committed once``: one commit holds the append, and the job was told it committed;
* ``committed twice``: two commits hold it (a history, a change data feed or a stream sees its
  rows twice; a snapshot may count a file added twice once);
* ``told failed although committed``: one commit holds it, the job was told it failed (a rerun
  without a check would commit it again);
* ``later writes refused``: whatever the append did, the next append to the table (a plain one,
  :data:`LATER_ROWS` rows, made after the job's procedure) does not commit: the table is stuck
  (deltalake's DynamoDB log store marks a claim complete whose ``N.json`` was never written);
* ``refused, nothing committed``: no commit holds it, and the job was told so;
* ``told committed, nothing committed``: a loss.

The committed results are ``data/lost_answer.csv`` (one row per trial, :data:`COLUMNS`) and
``data/lost_answer_meta.json``; a run writes them under ``build/lost_answer/<name>/``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from helpers.delta import delta_log
from helpers.ground import config

ONCE = "committed once"
TWICE = "committed twice"
TOLD_FAILED = "told failed although committed"
REFUSED = "refused, nothing committed"
STUCK = "later writes refused"
LOST = "told committed, nothing committed"
OUTCOMES = (ONCE, REFUSED, TOLD_FAILED, STUCK, TWICE, LOST)
"""From best to worst: a cell shows the worst outcome of its trials."""
NO_REMEDY = "none"
REMEDIES = {
    NO_REMEDY: "the append as written, the library's retries at their defaults",
    "app-transaction": (
        "the append carries an app transaction, Transaction(app_id, version); on an error the job "
        "reloads the table and asks transaction_version(app_id): the version there means it landed, "
        "otherwise it reruns once"
    ),
    "app-transaction-no-retries": (
        "the same with max_commit_retries=0: a commit that meets another version fails at once, "
        "and the check decides"
    ),
    "idempotency-check": (
        "spark.databricks.delta.commit.idempotencyCheck.enabled=true: Delta takes a winning commit "
        "that carries its own txnId as its own"
    ),
    "txn-app-id": (
        "the write carries txnAppId and txnVersion; on an error the job reruns it once, and Delta "
        "skips a txnVersion the table already holds"
    ),
}
APPENDED_ROWS = 3
"""The rows of the append whose answer is lost (the table is created with one)."""
LATER_ROWS = 2
"""The rows of the plain append made after the job's procedure: does the table still take a write?"""
TRIALS = 20
"""Trials per path, release and remedy: "once" in twenty is not luck."""
CSV_NAME = "lost_answer.csv"
META_NAME = "lost_answer_meta.json"
COMMITTED_CSV = config.ROOT / "data" / CSV_NAME


@dataclass
class Trial:
    """One row of ``lost_answer.csv``."""

    path: str
    """The commit path (:data:`helpers.lost_answer.run.PATHS`)."""
    engine: str
    release: str
    store: str
    fault: str
    """The request whose answer was dropped (:data:`helpers.lost_answer.gate.KINDS`)."""
    remedy: str
    trial: int
    dropped: bool
    """Whether the gate dropped an answer for this trial's table (a trial without is no trial)."""
    told: str
    """``success`` or ``failed``: what the job's whole procedure concluded."""
    steps: str
    """Each call of the procedure and its answer, ``; ``-separated."""
    commits: int
    """Commits after version 0 that add data, read from storage."""
    rows: int
    """The rows those commits add (their ``numRecords``, a file added twice counted twice)."""
    later: bool
    """Whether the later plain append (:data:`LATER_ROWS` rows) committed, read from storage."""
    outcome: str = ""

    def __post_init__(self) -> None:
        if not self.outcome:
            self.outcome = outcome_of(self.told == "success", self.commits, self.later)


COLUMNS = tuple(f.name for f in fields(Trial))


def outcome_of(told_success: bool, commits: int, later: bool = True) -> str:
    if commits >= 2:
        return TWICE
    if not later:
        return STUCK
    if commits == 1:
        return ONCE if told_success else TOLD_FAILED
    return LOST if told_success else REFUSED


def commits_of(commit_files: Iterable[tuple[int, bytes]]) -> tuple[int, int, bool]:
    """(commits after version 0 that add the append's data, rows they add, whether a commit adds
    the later append's :data:`LATER_ROWS` rows) from a table's commit files."""
    commits = rows = 0
    later = False
    for version, body in commit_files:
        _, added, _ = delta_log.read_commit(body)
        if version < 1 or not added:
            continue
        count = sum(int(delta_log.add_stats(a).get("numRecords", 0)) for a in added)
        if count == LATER_ROWS:
            later = True
        else:
            commits, rows = commits + 1, rows + count
    return commits, rows, later


def stored_commits(table_uri: str) -> tuple[int, int, bool]:
    """:func:`commits_of` the table at ``table_uri`` (S3, Azure or local), read from the store."""
    from helpers.stores import storage

    return commits_of(delta_log.commit_files(storage.table_store(table_uri)))


def judged(table_uri: str, **said) -> Trial:
    """A trial's record: what the job and the gate said (``said``, every field of :class:`Trial`
    but the ones storage gives), and what storage holds of the table at ``table_uri``."""
    commits, rows, later = stored_commits(table_uri)
    return Trial(**said, commits=commits, rows=rows, later=later)


def worst(outcomes: Iterable[str]) -> str:
    """The worst of some trials' outcomes (:data:`OUTCOMES` order)."""
    return max(outcomes, key=OUTCOMES.index)


def write_csv(trials: Iterable[Trial], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        out = csv.DictWriter(handle, fieldnames=COLUMNS, lineterminator="\n")
        out.writeheader()
        for trial in trials:
            out.writerow(asdict(trial))
    return path


def read_csv(path: Path = COMMITTED_CSV) -> list[Trial]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [
            Trial(
                **{
                    **row,
                    "trial": int(row["trial"]),
                    "dropped": row["dropped"] == "True",
                    "commits": int(row["commits"]),
                    "rows": int(row["rows"]),
                    "later": row["later"] == "True",
                }
            )
            for row in csv.DictReader(handle)
        ]
