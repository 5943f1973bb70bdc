"""What the query page (:mod:`helpers.page.html_page`) shows for one choice of a row, two operations, a
layout, a VACUUM retention and a condition: :func:`cell`, the one resolution of a race the page's data holds.

A cell stands under the worst of what its release did: every interleaving the matrix raced (a job cannot
choose when the other writes its data files) and, on S3, the confirmation on the S3 emulator. Its sentence
says the worst outcome first, then each milder outcome with its condition. What a team can choose (the
layout, VACUUM's retention, whether a condition names the partition) is a choice of the page, each measured
on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.ground import config
from helpers.matrix.layouts import LAYOUTS as LAYOUTS_RACED
from helpers.matrix.operations import BY_KEY, MATRIX_OPS
from helpers.page import columns, decision, engine_names, notebook_sections
from helpers.page.evidence import Check, Row, Unmeasured
from helpers.page.matrix_verdicts import CONDITIONS, CONFIRMATION, OP_WORDS, met

RETAINED = "vacuum_retained"
"""VACUUM keeping the default retention (7 days); the matrix's ``vacuum`` keeps 0 hours."""
OPERATIONS = tuple(op for op in MATRIX_OPS if op != RETAINED)
"""The operations a reader chooses for either job, in the matrix's order (VACUUM's retention a choice)."""
RETRIES = ("retry", "retry_txn", "retry_checked", "retry_checked_stale")
"""The later job's reruns of the first job's append: blind, with its idempotent-write id, after checking the
table for that id, and after checking its own stale snapshot instead (the mistake the check must avoid)."""
RETRY_PAIRS = {retry: ("append" if retry == "retry" else "append_txn", retry) for retry in RETRIES}
LATER = (*OPERATIONS, *RETRIES)
KEY_FORMS = {plain: form for form, plain in BY_KEY.items()}
"""Each operation whose condition may name only the key, and that form's name (``merge`` ->
``merge_on_id``)."""
LAYOUTS = {
    "shared": "both jobs touch the same files",
    "partitions": "each job on a partition of its own",
    "file-stats": "each job on a range of ids of its own, which the files' statistics keep apart "
    "(no partitions)",
}
RETENTIONS = {
    "zero": "zero hours (RETAIN 0 HOURS)",
    "default": "the default, 7 days",
}
PREDICATES = {
    "partition": "names the job's own partition or range",
    "key": "names only the key (the id)",
}
WORDS = {
    **OP_WORDS,
    "add_column": "ADD COLUMN",
    "set_property": "a table property change",
    "delete": "DELETE with a predicate",
    "retry": "rerun of the first job's append, no id",
    "retry_txn": "rerun of the first job's append with its idempotent-write id",
    "retry_checked": "rerun of the first job's append after looking for its id in the table",
    "retry_checked_stale": "rerun of the first job's append after looking for its id in its own stale "
    "snapshot",
    RETAINED: "VACUUM (7 days' retention)",
    "vacuum": "VACUUM",
    "merge_on_id": "MERGE on the key only",
    "delete_on_id": "DELETE by key only",
    "update_on_id": "UPDATE by key only",
}
KIND_WORDS = {
    "duplicated rows": "rows end up in the table twice",
    "resurrected rows": "rows that were removed come back",
    "removed twice": "the log removes a file twice",
    "lost update": "a committed write's rows are lost",
    "broken log": "the table can no longer be read",
}


@dataclass(frozen=True)
class Shown:
    """What the page shows for one choice: the verdict, a sentence, the evidence (a link into the notebooks
    and its label), the releases measured."""

    verdict: str
    sentence: str
    evidence: str = ""
    label: str = ""
    measured: str = ""


@dataclass(frozen=True)
class Choice:
    """A reader's choice beside the two operations: the layout, VACUUM's retention, what a condition names."""

    layout: str = "shared"
    retention: str = "zero"
    predicate: str = "partition"


def _kinds(rows: list[dict]) -> list[str]:
    return [
        k
        for r in rows
        for text in (r["anomaly_kind"], r["retry_after_reload_kind"])
        for k in text.split(" + ")
        if k
    ]


def _one_sentence(rows: list[dict], verdict: str) -> str:
    """The outcome of some rows that share ``verdict``, in a person's words."""
    worst = [r for r in rows if decision.verdict_of([r]) == verdict] or rows
    row = worst[0]
    if row["second"].startswith("retry"):
        return (
            "the rerun commits again, and the append's rows are in the table twice"
            if verdict == decision.DUPLICATES
            else "the rerun fails loudly from the old snapshot, and a rerun from a fresh snapshot is skipped"
            if verdict == decision.REFUSED
            else "the rerun appends nothing: the table holds the append once"
        )
    if verdict == decision.REFUSED:
        error = row["error_class"] or "an error"
        later = WORDS.get(row["second"].removesuffix("_apart"), row["second"])
        return f"the later job ({later}) fails with {error} and commits nothing"
    if verdict == decision.SAFE:
        return met(row["first"], row["second"], row["matched"])
    kinds = _kinds(worst)
    return (
        "both commit, and " + ", and ".join(dict.fromkeys(KIND_WORDS.get(k, k) for k in kinds))
        if kinds
        else verdict
    )


def sentence_of(rows: list[dict], verdict: str) -> str:
    """The worst outcome of ``rows``, then each interleaving whose rows gave a milder one, with its condition."""
    if verdict == decision.NOT_MEASURED:  # a row that could not be raced says why in its detail
        return "; ".join(
            dict.fromkeys(
                r["detail"].split(": ", 2)[-1]
                for r in rows
                if r["outcome"] in decision.UNDECIDED and r["detail"]
            )
        )
    text = _one_sentence(rows, verdict)
    by_point: dict[str, list[dict]] = {}
    for r in rows:
        by_point.setdefault(r["interleaving"], []).append(r)
    if len(by_point) > 1:
        for point, words in CONDITIONS:
            if point in by_point and (mine := decision.verdict_of(by_point[point])) != verdict:
                text += f"; {mine} {words}: {_one_sentence(by_point[point], mine)}"
    return text


def _checked(check: Check) -> Shown:
    sentence = {
        decision.SAFE: "both commit, and nothing is lost",
        decision.LOSES: "rows are lost, and every job is told it committed",
        decision.MISREPORTS: "nothing is lost, but a job can be told its write failed although it is in the table",
        decision.BY_DESIGN: f"{_listed(check.refuses) or 'the operation'} "
        f"{'is' if len(check.refuses) == 1 else 'are'} refused by design on this table",
    }
    text = sentence.get(check.verdict, check.check) + (f" ({check.note})" if check.note else "")
    return Shown(check.verdict, text, _link(check.section), check.section.label, check.versions)


def _listed(names: tuple[str, ...]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def refused_by_design(row: Row, *operations: str) -> Check | None:
    """The row's check that refuses one of these operations (the matrix's names) by design, if any: a
    pair with such an operation is no race on this setting, whatever the other job runs."""
    names = {WORDS.get(op.removesuffix("_retained")) for op in operations}
    return next(
        (
            check
            for check in row.cells.values()
            if isinstance(check, Check)
            and check.verdict == decision.BY_DESIGN
            and names & set(check.refuses)
        ),
        None,
    )


def _link(section: notebook_sections.Section | None) -> str:
    """The section in the learner's edition as a page to read (``docs/evidence/``), at its heading's anchor;
    the page links the same section of the solutions edition's notebook beside it."""
    return section.rendered if section else ""


def pair_of(first: str, second: str, choice: Choice) -> tuple[str, str]:
    """The matrix pair a choice names: the retention's VACUUM, the same operation from two jobs on parts of
    their own (``<op>_apart``), a condition naming only the key (``<op>_on_id``), a rerun's own pair."""
    if second in RETRY_PAIRS:
        return RETRY_PAIRS[second]
    by_key = choice.layout != "shared" and choice.predicate == "key"

    def form(op: str) -> str:
        if op == "vacuum" and choice.retention == "default":
            return RETAINED
        # a layout whose condition for ``op`` names ids already (file statistics' DELETE) races no other form
        keyed = by_key and op in (LAYOUTS_RACED[choice.layout].by_key or {})
        return KEY_FORMS[op] if keyed else op

    if choice.layout != "shared" and first == second:
        return form(first), f"{form(second)}_apart"
    return form(first), form(second)


def _column(first: str, second: str) -> columns.Column | None:
    plain = tuple(op.replace("_retained", "").replace("_on_id", "") for op in (first, second))
    if second.startswith("retry"):
        return next(c for c in columns.COLUMNS if c.key == "retry")
    return next((c for c in columns.COLUMNS if plain in c.pairs), None)


def matrix_rows(
    engines: list[str], pair: tuple[str, str], layout: str, results: decision.Results
) -> list[dict]:
    """The rows of a pair for a row's engines on a layout, with every interleaving raced (the S3
    confirmations on the shared layout only)."""
    names = (
        engines
        if layout == "shared"
        else [f"{e}+{layout}" for e in engines if not e.endswith(CONFIRMATION)]
    )
    return [r for r in results.raced(names, [pair]) if r is not None]


def cell(row: Row, first: str, second: str, choice: Choice, results: decision.Results) -> Shown:
    """The one resolution of a race for the page: the row's loss, its checked or unmeasured cell, or the
    conflict matrix's rows of its engines for the pair the choice names (every interleaving)."""
    if row.loses:
        return _checked(row.loses)
    pair = pair_of(first, second, choice)
    barred = refused_by_design(row, *pair)
    if barred:
        return _checked(barred)
    column = _column(*pair)
    found = row.cells.get(column.key) if column else None
    if isinstance(found, Check) and (choice.layout == "shared" or column.key == "other"):
        return _checked(found)
    if isinstance(found, Unmeasured):
        return Shown(decision.NOT_MEASURED, found.note or "nothing here races it for this setting")
    engines = results.engines(row.engines)
    if not engines:
        why = next((c.note for c in row.cells.values() if isinstance(c, Unmeasured) and c.note), "")
        return Shown(
            decision.NOT_MEASURED,
            why
            or f"no release of {row.versions} is raced by the conflict matrix yet"
            + (f" ({row.measured_as})" if row.measured_as else ""),
        )
    rows = matrix_rows(engines, pair, choice.layout, results)
    if not rows:
        return Shown(decision.NOT_MEASURED, _unraced(pair, choice, engines))
    verdict = decision.verdict_of(rows)
    engines = sorted({r["engine"] for r in rows})
    if engine_names.mixed_run(tuple(engines)):  # the mixed run on S3: its CSV is the evidence
        return _mixed(rows, verdict, engines, results)
    section = (
        notebook_sections.S13_6
        if pair[1].endswith("_apart")
        else column.section
        if column
        else None
    ) or notebook_sections.S13_5
    sentence = sentence_of(rows, verdict)
    if pair[1].endswith("_apart"):
        each = "each job appending to" if pair[0] == "append" else "each job on"
        names = "only the key" if "_on_id" in pair[0] else "its part"
        sentence = (
            f"{each} a {'partition' if choice.layout == 'partitions' else 'range of ids'} of its own"
            + ("" if pair[0] == "append" else f", its condition naming {names}")
            + f": {sentence}"
        )
    return Shown(verdict, sentence, _link(section), section.label, results.versions(engines))


def _unraced(pair: tuple[str, str], choice: Choice, engines: list[str]) -> str:
    if engine_names.mixed_run(tuple(engines)):
        return "the mixed run (`make matrix-mixed`) does not race this pair"
    if RETAINED in pair:
        return "the conflict matrix has not raced a VACUUM that keeps the default retention for this setting"
    if choice.layout == "shared":
        return "the conflict matrix does not race this pair for this setting"
    return (
        f"the conflict matrix does not race this pair on this layout ({LAYOUTS[choice.layout]}) "
        "for this setting"
    )


def _mixed(rows: list[dict], verdict: str, engines: list[str], results: decision.Results) -> Shown:
    by_order = {e: mine for e in engines if (mine := [r for r in rows if r["engine"] == e])}
    verdicts = {e: decision.verdict_of(mine) for e, mine in by_order.items()}
    sentence = (  # each order in its own words where the two orders differ
        "; ".join(
            f"{engine_names.MIXED_ORDERS[e]}: {sentence_of(mine, verdicts[e])}"
            for e, mine in by_order.items()
        )
        if len(set(verdicts.values())) > 1
        else sentence_of(rows, verdict)
    )
    return Shown(
        verdict,
        sentence,
        "../" + engine_names.MIXED_CSV.relative_to(config.ROOT).as_posix(),
        "make matrix-mixed",
        results.versions(engines),
    )
