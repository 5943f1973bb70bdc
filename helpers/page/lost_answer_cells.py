"""The answer page's column "the commit's answer is lost": for every row, what a lost commit answer
did in the row's setting and what its engine's remedy did, from the lost-answer run's trials
(``data/lost_answer.csv``, :mod:`helpers.lost_answer`), each cell the worst of its trials.

A row is measured by the (path, release) cells of :data:`ROW_PATHS`: the releases inside its span,
on its store and setting. A row of two engines takes each engine's path: a lost answer is one job's
own commit, and what follows is its engine's doing. A row whose commit involves no network
(:data:`NO_ANSWER_TO_LOSE`) has no answer to lose; a row that stands for a setting that cannot run
here (:data:`helpers.lost_answer.deltalake_paths.LEFT_OUT`) says so and is "not measured".
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from functools import cache

from helpers.lost_answer import trials
from helpers.lost_answer.deltalake_paths import LEFT_OUT
from helpers.page.engine_names import SPARK_3
from helpers.page.matrix_verdicts import DUPLICATES, LOSES, MISREPORTS, NOT_MEASURED, REFUSED, SAFE

TITLE = "the commit's answer is lost"
LINK = "[the lost-answer run](../data/lost_answer.csv)"

_CONDITIONAL = "deltalake-s3-conditional-put"
_DYNAMODB = "deltalake-s3-dynamodb"
_AZURE = "deltalake-azure"
_SPARK_DYNAMODB = (("spark-s3-dynamodb-claim", "4.4.0"), ("spark-s3-dynamodb-copy", "4.4.0"))
ROW_PATHS: dict[str, tuple[tuple[str, str], ...]] = {
    "rs-unsafe": (
        ("deltalake-s3-unsafe-rename", "0.14.0"),
        ("deltalake-s3-unsafe-rename", "0.22.3"),
    ),
    "rs-lease": (("deltalake-s3-dynamodb-lease", "0.14.0"),),
    "rs-lock-seeds": ((_DYNAMODB, "0.22.3"),),
    "rs-lock-0-23-0": ((_DYNAMODB, "0.25.5"),),
    "rs-lock-1-0-0": ((_DYNAMODB, "1.1.4"),),
    "rs-lock-1-2-0": ((_DYNAMODB, "1.5.0"),),
    "rs-lock-interop": ((_DYNAMODB, "1.5.1"),),
    "rs-put-opt-in": ((_CONDITIONAL, "0.22.3"),),
    "rs-put-0-23-0": ((_CONDITIONAL, "0.25.5"),),
    "rs-put-1-0-0": ((_CONDITIONAL, "1.1.4"),),
    "rs-put-1-2-0": ((_CONDITIONAL, "1.5.0"),),
    "rs-put": ((_CONDITIONAL, "1.5.1"), (_CONDITIONAL, "1.6.3")),
    "rs-put-today": ((_CONDITIONAL, "1.6.6"),),
    "rs-azure-0": ((_AZURE, "0.14.0"), (_AZURE, "0.22.3"), (_AZURE, "0.25.5")),
    "rs-azure-1-0-0": (),
    "rs-azure-1-2-0": (),
    "rs-azure-1-5-1": ((_AZURE, "1.5.1"), (_AZURE, "1.6.3")),
    "rs-azure": ((_AZURE, "1.6.6"),),
    "spark-one": (("spark-s3-default", "4.4.0"),),
    "spark-several": (("spark-s3-default", "4.4.0"),),
    "spark-dynamodb": _SPARK_DYNAMODB,
    "spark-catalog": (("spark-catalog", "4.4.0"),),
    "mixed-lock-early": (*_SPARK_DYNAMODB, (_DYNAMODB, "1.5.0")),
    "mixed-lock": (*_SPARK_DYNAMODB, (_DYNAMODB, "1.5.1")),
    "mixed-put": (*_SPARK_DYNAMODB, (_CONDITIONAL, "1.6.3"), (_CONDITIONAL, "1.6.6")),
    "mixed-local": (),
    # Delta Spark 3.3.2's rows: the lost-answer run measures Delta Spark 4.4.0 only
    "spark-one-3-3-2": (("spark-s3-default", SPARK_3),),
    "spark-several-3-3-2": (("spark-s3-default", SPARK_3),),
    "spark-dynamodb-3-3-2": (
        ("spark-s3-dynamodb-claim", SPARK_3),
        ("spark-s3-dynamodb-copy", SPARK_3),
    ),
    "mixed-lock-3-3-2": (
        ("spark-s3-dynamodb-claim", SPARK_3),
        ("spark-s3-dynamodb-copy", SPARK_3),
        (_DYNAMODB, "1.5.1"),
    ),
    "two-locks": (("deltalake-s3-dynamodb-lease", "0.14.0"), (_DYNAMODB, "0.22.3")),
}
"""Row key -> the (path, release) cells of the lost-answer run that measure it."""
NO_ANSWER_TO_LOSE = {
    "mixed-local": (
        "on local disk a commit is a call in the job's own process, which returns or raises: "
        "no answer crosses a network to be lost"
    ),
}
NOT_RUN_YET = {
    key
    for key, paths in ROW_PATHS.items()
    if any(path.startswith("spark") and release == SPARK_3 for path, release in paths)
}
"""Rows whose Delta Spark release the lost-answer run has not raced (it races Delta Spark 4.4.0):
their cell says so, "not measured"."""
NOT_RUN_HERE = {
    "rs-azure-1-0-0": LEFT_OUT[(_AZURE, "deltalake-1.1.4")],
    "rs-azure-1-2-0": LEFT_OUT[(_AZURE, "deltalake-1.5.0")],
}
STOPS = "stops later writes"
"""The one verdict of this column that no race gives: the table refuses every later write."""
VERDICT_OF = {
    trials.ONCE: SAFE,
    trials.REFUSED: REFUSED,
    trials.TOLD_FAILED: MISREPORTS,
    trials.STUCK: STOPS,
    trials.TWICE: DUPLICATES,
    trials.LOST: LOSES,
}
SAID = {
    trials.ONCE: "the append is committed once and the job is told so",
    trials.REFUSED: "the append is refused and nothing is committed",
    trials.TOLD_FAILED: (
        "the append is committed once, but the job is told it failed: a rerun without a check "
        "commits it again"
    ),
    trials.STUCK: (
        "the append is committed, and then the table refuses every later write: the next append "
        "fails and commits nothing"
    ),
    trials.TWICE: (
        "the append is committed twice, and the job is told it committed once: the table's history, "
        "its change data feed and a stream read its rows twice"
    ),
    trials.LOST: "the job is told the append committed, and nothing is in the table",
}
REMEDY_WORDS = {
    "app-transaction": "an app transaction and, on an error, a check of `transaction_version`",
    "app-transaction-no-retries": (
        "an app transaction with no commit retries (`max_commit_retries` set to 0) and, on an error, "
        "the same check"
    ),
    "idempotency-check": "`spark.databricks.delta.commit.idempotencyCheck.enabled=true`",
    "txn-app-id": "`txnAppId`/`txnVersion` on the write, rerun once on an error",
}
DONE = {
    trials.ONCE: "committed once, and the job knows it",
    trials.REFUSED: "nothing committed, and the job knows it",
    trials.TOLD_FAILED: "committed once, and the job concludes it failed",
    trials.STUCK: "every later write refused",
    trials.TWICE: "committed twice",
    trials.LOST: "told committed, nothing committed",
}
"""What a remedy's whole procedure ends with, by outcome."""
REMEDY_NOTES = {
    "spark-catalog": (
        "with the idempotency check, the version the catalog ratified stays unpublished until the "
        "table's next commit publishes it: a reader that lists `_delta_log/` sees the append only then"
    ),
}
"""What a path's remedy leaves behind that its outcome does not say (15 appendix B measures it)."""
PREFERRED = tuple(REMEDY_WORDS)
"""Of two remedies that do as well, the first here: it keeps the library's retries."""


@dataclass(frozen=True)
class LostCell:
    verdict: str
    text: str
    """What a lost answer does, measured, in a sentence (with its trials and releases)."""
    remedy: str = ""
    """What to configure, measured, in a sentence ("" where no remedy is needed or none exists)."""
    remedy_verdict: str = ""


@cache
def _trials() -> tuple[trials.Trial, ...]:
    return tuple(trials.read_csv()) if trials.COMMITTED_CSV.exists() else ()


def _cells() -> dict[tuple[str, str, str], collections.Counter]:
    cells: dict[tuple[str, str, str], collections.Counter] = collections.defaultdict(
        collections.Counter
    )
    for t in _trials():
        cells[(t.path, t.release, t.remedy)][t.outcome] += 1
    return cells


def _worst(counted: list[collections.Counter]) -> tuple[str, int, int]:
    """(the worst outcome of these cells, trials that had it, trials in all)."""
    total = collections.Counter()
    for c in counted:
        total.update(c)
    outcome = trials.worst(total)
    return outcome, total[outcome], sum(total.values())


def _releases(paths: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(dict.fromkeys(release for _, release in paths))


def _measured(paths, remedy: str) -> list[collections.Counter] | None:
    cells = _cells()
    found = [cells.get((path, release, remedy)) for path, release in paths]
    return None if not found or None in found else found


FAULT_WORDS = {
    "conditional-put": "the conditional write of `N.json`",
    "put": "the write of `N.json`",
    "dynamodb-claim": "the DynamoDB claim",
    "add-commit": "the catalog's `add-commit`",
}
"""The request whose answer was lost, as a row's cell names it where its paths lose different ones."""


def _by_request(paths) -> str:
    """Where a row's paths lose the answers of different requests: each request's trials by outcome."""
    faults: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for t in _trials():
        if (t.path, t.release) in paths and t.remedy == trials.NO_REMEDY:
            faults[f"{t.engine}, {FAULT_WORDS.get(t.fault, t.fault)}"][t.outcome] += 1
    if len(faults) < 2:
        return ""
    return "; by the request whose answer was lost: " + "; ".join(
        f"{request}: "
        + ", ".join(
            f"{n} {o}" for o, n in sorted(c.items(), key=lambda x: -trials.OUTCOMES.index(x[0]))
        )
        for request, c in faults.items()
    )


def _by_engine(paths) -> dict[str, tuple[tuple[str, str], ...]]:
    engines: dict[str, list] = collections.defaultdict(list)
    for path, release in paths:
        engines["Delta Spark" if path.startswith("spark") else "deltalake"].append((path, release))
    return {engine: tuple(found) for engine, found in engines.items()}


def _tried(paths) -> dict[str, tuple[str, int, int]]:
    """Each remedy measured on all of ``paths``: (worst outcome, its trials, trials)."""
    found = {r: _measured(paths, r) for r in PREFERRED}
    return {r: _worst(c) for r, c in found.items() if c}


def _remedy(paths) -> tuple[str, str]:
    """(each engine's remedies as measured, its best first; the worst verdict of the best ones).
    Releases with no remedy to try (deltalake 0.14.0 has no app transactions) are named apart."""
    parts, outcomes = [], []
    for engine, own in _by_engine(paths).items():
        able = tuple(p for p in own if _tried((p,)))
        unable = tuple(p for p in own if p not in able)
        if unable:
            parts.append(f"{engine} {_releases(unable)} has none to try: move to a later release")
            outcomes.append(_worst(_measured(unable, trials.NO_REMEDY))[0])
        tried = _tried(able) if able else {}
        if not tried:
            continue
        ranked = sorted(
            tried, key=lambda r: (trials.OUTCOMES.index(tried[r][0]), PREFERRED.index(r))
        )
        outcomes.append(tried[ranked[0]][0])
        shown = "; ".join(
            f"{REMEDY_WORDS[r]}: {DONE[tried[r][0]]} ({tried[r][1]} of {tried[r][2]} trials)"
            for r in ranked
        )
        notes = "".join(f" ({REMEDY_NOTES[path]})" for path, _ in able if path in REMEDY_NOTES)
        parts.append(f"{engine} {_releases(able)}, {shown}{notes}")
    return "; ".join(parts), VERDICT_OF[trials.worst(outcomes)] if outcomes else ""


def cell(row_key: str) -> LostCell:
    """The row's lost-answer cell; raises KeyError for a row :data:`ROW_PATHS` does not name."""
    paths = ROW_PATHS[row_key]
    if row_key in NO_ANSWER_TO_LOSE:
        return LostCell(SAFE, f"no answer to lose: {NO_ANSWER_TO_LOSE[row_key]}")
    if row_key in NOT_RUN_HERE:
        return LostCell(NOT_MEASURED, NOT_RUN_HERE[row_key])
    measured = _measured(paths, trials.NO_REMEDY)
    if measured is None:
        return LostCell(NOT_MEASURED, f"no trials of {_releases(paths)} in {LINK} yet")
    outcome, count, total = _worst(measured)
    text = f"{SAID[outcome]} ({count} of {total} trials, {_releases(paths)}{_by_request(paths)})"
    remedy, remedy_verdict = _remedy(paths)
    return LostCell(VERDICT_OF[outcome], text, remedy, remedy_verdict)


def may_have_landed(row_key: str) -> bool:
    """Whether, in the row's setting, a job told its commit failed may have committed after all:
    measured, the row's lost answer leaves it committed (told it failed, or its remedy's check finds it)."""
    found = cell(row_key)
    return found.verdict not in (SAFE, REFUSED, NOT_MEASURED)


def paragraph(row_key: str) -> str:
    """The sentences of a setting's paragraph on a lost commit answer."""
    found = cell(row_key)
    said = f"**If a commit's answer is lost** ({LINK}): {found.text}."
    if found.remedy:
        heading = "Configure against it" if found.verdict != SAFE else "Its remedies, measured"
        said += f" **{heading}:** {found.remedy}."
    return said


def configure(row_key: str) -> str:
    """What to configure against a lost commit answer, for the page's "configure" ("" if nothing)."""
    found = cell(row_key)
    if not found.remedy or found.verdict == SAFE:
        return ""
    return f"Against a lost commit answer, measured: {found.remedy}."


RERUN = {
    SAFE: "Measured here: a commit whose answer was lost landed once and its job was told so, so a lost "
    "answer leaves no failed job whose write is in the table.",
    REFUSED: "Measured here: a commit whose answer was lost was refused, nothing committed, and its job "
    "was told so.",
    NOT_MEASURED: "A lost commit answer is not measured in this setting: before rerunning a job that "
    "failed otherwise than by a conflict, look for its write in the table.",
}
"""A refused cell's rerun advice, by the row's lost-answer verdict (the rest: :func:`rerun`)."""


def rerun(row_key: str) -> str:
    """What the lost-answer run shows about rerunning a job that was told it failed, in the row's setting."""
    found = cell(row_key)
    if found.verdict in RERUN:
        return RERUN[found.verdict]
    return (
        f"Measured here, when a commit's answer was lost: {found.text}. So a job that failed "
        "otherwise than by a conflict may have committed: look for its write in the table before "
        "rerunning it." + (f" The remedy, measured: {found.remedy}." if found.remedy else "")
    )
