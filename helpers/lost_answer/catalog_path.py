"""Delta Spark 4.4.0 through a Unity Catalog server when the catalog's answer to ``add-commit`` is
lost: path ``spark-catalog``, fault ``add-commit``, each trial a fresh catalog-managed table
(:func:`run`), every append made by one driver without Spark's testing flag
(:class:`helpers.catalog.driver.Job`; a driver with it creates the tables).

**The fault.** Delta asks the catalog to ratify a staged commit with a POST whose updates hold
``add-commit``. The gate in front of the server (:class:`helpers.catalog.failures.CatalogGate`)
sends the table's first one (version 1, the append) to the server, olai-uc-server 0.0.11
(:mod:`helpers.catalog.server`), which ratifies it, then closes Delta's connection without an
answer (``drop=True``). The trials' rows are that dropped connection. The gate's other way, a 502
in place of the server's 200 (notebook 15's appendix B), gave the same add-commits (version 1
ratified, version 1 again answered 409), the same answers to the job and the same outcome for every
remedy (3 trials each, 2026-12-07). Only who resends differs, as Spark's log shows: after the
dropped connection Delta's coordinator client does (its transient-error retry, "HTTP 0"); after
the 502 Unity Catalog's Java client does (unitycatalog-client 0.6.0 retries any 5xx,
``HttpRetryHandler``), so Delta meets the 409 on its first attempt.

**What each remedy does, as measured** (20 trials each, every answer dropped, every append made by
a driver without Spark's testing flag; 2026-12-07 on a 2-core machine shared with other work: 365.5
s for the 60 trials, the drivers' starts included; the same outcomes as an earlier run whose
appends had the flag). After
the job's procedure each trial appends once more, plainly
(:data:`~helpers.lost_answer.trials.LATER_ROWS` rows): it committed in every trial.

* ``none``: Delta resends the same add-commit, the server answers 409 (version 1 is taken), and
  Delta commits the append again as version 2: *committed twice*, the job told success. Both
  versions add the same data files with the same ``txnId``; a snapshot holds them once, the
  table's history twice (a change data feed or a stream reading each version would meet them
  twice by the log: not run, the feed is off on these tables).
* ``idempotency-check`` (:data:`~helpers.catalog.failures.IDEMPOTENCY_CHECK` ``=true``): the
  same resend and 409, then Delta finds its own ``txnId`` in the catalog's version 1 and reports
  success without a second add-commit: *committed once*, told success. It does stop the double
  commit on the catalog path. What it leaves: version 1 stays ratified and **unpublished** (only in
  ``_delta_log/_staged_commits/``) until the table's next commit publishes it (the later append
  published versions 1 and 2 in every trial); a reader through the catalog sees the append, one
  that lists ``_delta_log/`` does not yet.
* ``txn-app-id`` (``txnAppId``/``txnVersion``, rerun once on an error): the same resend and 409,
  then Delta fails the append with ``DELTA_CONCURRENT_TRANSACTION`` (its message speaks of two
  instances of a streaming query) although the catalog holds it; the rerun finds the app's version
  in the table and skips the write: *committed once*, the procedure told success, and version 1
  unpublished as above. Without the rerun the job is *told failed although committed*.

**Why, in Delta's sources** (tag ``v4.4.0``):

* ``UCCommitCoordinatorClient.commitImpl`` (``storage/.../uccommitcoordinator/``) resends an
  add-commit that ended in an ``IOException`` (the dropped connection, "HTTP 0" in
  ``UCDeltaTokenBasedRestClient.handleUpdateTableException``, lines 960-990) with the same staged
  file (lines 456-527). The 409 becomes ``CommitFailedException(retryable, conflict)``, and the
  own-commit check for a conflict after such a resend, ``hasSameContent`` (lines 486-502,
  794-828), compares the staged file only with the *published* ``_delta_log/1.json``, which nobody
  has written, so the conflict is thrown. (After the 502 the 409 comes on the first attempt and
  the check, which asks for an earlier transient error, is skipped: the same conflict.) The client
  publishes (``backfillToVersion``, lines 605-618) only after an add-commit it heard succeed.
* ``OptimisticTransaction.doCommitRetryIteratively`` takes a retryable conflict for another
  writer's win (line 2848) and checks for conflicts against the versions the catalog lists, its
  ratified-unpublished version 1 among them (``getConflictingVersions``, line 3394). With
  ``spark.databricks.delta.commit.idempotencyCheck.enabled`` (``DeltaSQLConf``, line 532: internal,
  default false; delta-io/delta#7345), ``resolveAgainstWinningCommit`` and
  ``detectIdempotentSelfCommit`` (lines 3349-3390) take a winning commit at the attempted version
  that carries this transaction's ``txnId`` as its own, and ``doCommitRetryIteratively`` returns
  that version as committed (lines 2796-2824) without calling the coordinator again: hence no
  second commit, and no publication. Without it, a blind append conflicts with nothing and is
  committed at version 2.
* With ``txnAppId`` the write reads the app's version (``OptimisticTransaction.txnVersion``, line
  1384), so a winning commit that sets it conflicts
  (``ConflictChecker.checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn``, lines
  1219-1226); the rerun's ``WriteIntoDelta`` skips a ``txnVersion`` the table holds (line 107,
  ``DeltaCommand.hasBeenExecuted``).

**Unity Catalog's own server** answers a resent add-commit 200 from 0.6.0 on
(unitycatalog/unitycatalog#1685: ``DeltaCommitRepository.isAcceptedCommitReplay``, the same
``file-name`` at an accepted version is a no-op success; ``TableRepository.updateTableForDelta``
returns the table for it on the Delta API). Against it, by the sources above, Delta's resend
succeeds, the coordinator publishes, and the append is committed once without any setting (read,
not run here). olai-uc-server 0.0.11 answers 409, as Unity Catalog's managed tables specification
says a server does.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

from helpers.catalog import driver, failures, race, rest, tables
from helpers.delta import delta_log
from helpers.ground import config
from helpers.lost_answer import trials

PATH = "spark-catalog"
FAULT = "add-commit"
ENGINE = "Delta Spark"
STORE = "local disk + Unity Catalog"
REMEDIES = (trials.NO_REMEDY, "idempotency-check", "txn-app-id")
TABLE = "lost_answer"


def run(
    folder: Path,
    count: int = trials.TRIALS,
    progress=print,
    *,
    drop: bool = True,
    spark=None,
    job: driver.Job | None = None,
    remedies: tuple[str, ...] = REMEDIES,
) -> list[trials.Trial]:
    """``count`` trials of each of ``remedies`` (all of :data:`REMEDIES` by default), each a fresh
    table behind a server and gate of its own under ``folder``. ``spark`` creates the tables (the
    one step that needs Spark's testing flag: the one this process runs, or one made here); ``job``
    makes every append, a driver without the flag (:class:`helpers.catalog.driver.Job`, started
    here if not given). ``drop=False``: the gate answers 502 instead of closing the connection."""
    if spark is None:
        spark = tables.spark_session(
            "http://127.0.0.1:1/", creates_tables=True, app_name="lost-answer-catalog"
        )
    with contextlib.ExitStack() as stack:
        if job is None:
            job = stack.enter_context(driver.Job(folder / "job"))
        records = []
        for remedy in remedies:
            for number in range(1, count + 1):
                root = folder / remedy / f"t{number:02d}"
                records.append(trial(spark, job, root, remedy, number, drop=drop))
                progress(f"{PATH} {remedy} {number}/{count}: {records[-1].outcome}")
    return records


def trial(
    spark, job: driver.Job, root: Path, remedy: str, number: int, *, drop: bool = True
) -> trials.Trial:
    """One trial: a fresh table, the append done the remedy's way with its first add-commit's
    answer lost, then a plain append, and the table judged from the catalog and storage
    (:func:`catalog_commits`)."""
    with failures.through_gate(spark, job, root) as gate:
        catalog = rest.UnityCatalog(gate.endpoint)
        failures.fresh_table(spark, job, catalog, TABLE)
        gate.lose_answer(1, drop=drop)
        told, steps = _procedure(job, remedy, number)
        _wait_for_publication(gate, catalog)
        before = race.check_table(catalog, TABLE)
        steps += [
            "add-commits "
            + ", ".join(
                f"v{c.version} {c.status}/{c.answered or 'dropped'}" for c in gate.add_commits
            ),
            f"published {before.published}, ratified not published {before.unpublished}",
        ]
        later = job.append(TABLE, "later", 2, rows=trials.LATER_ROWS)
        steps.append(f"later append: {_short(later)}")
        _wait_for_publication(gate, catalog)
        check = race.check_table(catalog, TABLE)
        commits, rows, later_committed = catalog_commits(check)
        steps.append(f"then published {check.published}")
        steps += [f"problem: {p}" for p in check.problems]
        return trials.Trial(
            path=PATH,
            engine=ENGINE,
            release=config.DELTA_JARS_VERSION,
            store=STORE,
            fault=FAULT,
            remedy=remedy,
            trial=number,
            dropped=any(c.status == 200 and c.answered != 200 for c in gate.add_commits),
            told="success" if told == "success" else "failed",
            steps="; ".join(steps),
            commits=commits,
            rows=rows,
            later=later_committed,
        )


def _wait_for_publication(gate: failures.CatalogGate, catalog: rest.UnityCatalog) -> None:
    """Wait for what Delta publishes in the background: every version up to the last one whose yes
    it heard. When that is the catalog's latest, wait for it (:func:`tables.wait_published`); a
    version whose yes it never heard stays unpublished until the table's next commit."""
    heard = [c.version for c in gate.add_commits if c.answered == 200]
    latest = catalog.table(tables.CATALOG, tables.SCHEMA, TABLE).latest_version
    if heard and max(heard) == latest:
        tables.wait_published(catalog, TABLE)


def _procedure(job: driver.Job, remedy: str, number: int) -> tuple[str, list[str]]:
    """The job's append done the remedy's way: what it concluded, and each call with its answer."""
    options = {"txnAppId": f"job-{number}", "txnVersion": "1"} if remedy == "txn-app-id" else None
    checked = remedy == "idempotency-check"
    job.configure(failures.IDEMPOTENCY_CHECK, "true" if checked else None)
    try:
        told = job.append(TABLE, "a", 1, options, rows=trials.APPENDED_ROWS)
        steps = [f"append: {_short(told)}"]
        if remedy == "txn-app-id" and told != "success":
            told = job.append(TABLE, "a", 1, options, rows=trials.APPENDED_ROWS)
            steps.append(f"rerun: {_short(told)}")
    finally:
        job.configure(failures.IDEMPOTENCY_CHECK, None)
    return told, steps


def _short(answer: str) -> str:
    """``success``, or an error by its class (``DELTA_...``), else its first 120 characters."""
    named = re.search(r"\[([A-Z][A-Z0-9_]+)\]", answer)
    return answer if answer == "success" else named.group(1) if named else answer[:120]


def catalog_commits(check: race.CatalogCheck) -> tuple[int, int, bool]:
    """:func:`helpers.lost_answer.trials.commits_of` a catalog-managed table: every version the
    catalog ratified, read from its published ``_delta_log/<v>.json``, or for one not published
    yet, from the staged commit the catalog names."""
    folder = tables.local_path(check.catalog.location)
    bodies = [
        (
            version,
            (
                folder / race.STAGED_DIR / check.ratified[version]
                if version not in check.published
                else folder / delta_log.LOG_DIR / delta_log.commit_file_name(version)
            ).read_bytes(),
        )
        for version in check.versions
    ]
    return trials.commits_of(bodies)
