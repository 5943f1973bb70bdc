"""One truth, beyond tagged verdicts: the release ranges prose states, the "what to do" lines of the answer
page, and the figures its advice quotes, each held to the one home it comes from.

* **Release ranges.** A sentence that states a behaviour of deltalake (:data:`BEHAVIOURS`: "shares Spark's
  lock items", "conditional put when asked", ...) and a range of releases for it ("1.3.0 to 1.6.0",
  "0.19.2–0.22.3", "from 1.6.1", "0.14.0 and earlier", a list "1.5.1 and 1.6.0") must start and end the
  range where :mod:`helpers.page.boundaries` starts and ends that behaviour, and list only releases inside
  it. A version statement belongs to the behaviour whose words stand nearest to it in its sentence.
  ``tests/test_version_boundaries.py`` checks that a release is on *some* boundary; this checks it is on
  the boundary of the behaviour the sentence names.
* **What to do.** Where a finding that applies to a setting says a job can be told its write failed
  although it committed, no sentence of that setting may tell the reader to rerun a failed job without
  looking in the table first (or an idempotent-write id): in ``docs/answer.md``'s paragraphs and in the
  data of ``docs/answer.html`` (its "What to do" line for every verdict the row shows).
* **Quoted figures.** "M of K appends by N writers at once gave up" and "when N or more jobs commit at
  once" are recomputed from notebook 11's committed run (``data/full_runs/bench/commits.csv.gz``), with
  code of its own, for the store the sentence is about.

Each kind is shown failing on a crafted break below.
"""

from __future__ import annotations

import csv
import gzip
import re
from dataclasses import dataclass

import pytest
from test_one_truth import prose

from helpers.ground import config
from helpers.page import boundaries as b
from helpers.page.engine_names import CURRENT

# ---------------------------------------------------------------------------------------------
# Release ranges, against the boundaries
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """A behaviour of deltalake whose releases prose states: the words that name it, and its first and
    last release (``""``: from the earliest release, or still in the newest)."""

    name: str
    words: str
    first: str
    last: str

    def holds_for(self, version: str) -> bool:
        return (not self.first or _key(self.first) <= _key(version)) and (
            _key(version) <= _key(self.last)
        )

    def states(self, kind: str, versions: list[str]) -> bool:
        """Does a statement of this kind ("range", "from", "up to", "list") state releases of this
        behaviour? A range and a "from" start at its first release, a range and an "up to" end at its
        last, or at a boundary inside it (a row of the answer splits where another behaviour changes);
        a list names releases inside it."""
        if not all(self.holds_for(v) for v in versions):
            return False
        starts = {self.first} | {x.version for x in b.for_library("deltalake")}
        ends = {self.last} | {x.last_before for x in b.for_library("deltalake")}
        return (kind not in ("range", "from") or not self.first or versions[0] in starts) and (
            kind not in ("range", "up to") or versions[-1] in ends
        )


BEHAVIOURS = (
    Behaviour(
        "the dynamodb_lock crate's lease",
        r"dynamodb_lock|\blease\b|`key`",
        "",
        b.DYNAMODB_LOG_STORE.last_before,
    ),
    Behaviour(
        "speaks the DynamoDB log store's protocol",
        r"\bspeaks?\b[^.;]{0,40}\bprotocol|\bprotocol\b[^.;]{0,40}\bspeaks?\b|replaced it with the log store",
        b.DYNAMODB_LOG_STORE.version,
        b.DYNAMODB_LOG_STORE_REMOVED.last_before,
    ),
    Behaviour(
        "shares Spark's lock items",
        r"\bshares?\b[^.;]{0,30}\block\b|takes? part in Spark's|claim the same (?:lock )?items"
        r"|\bone lock table\b|`tablePath` as Spark|with Delta Spark's `S3DynamoDBLogStore`|naming the table Spark's",
        b.TABLE_PATH_SLASH.version,
        b.DYNAMODB_LOG_STORE_REMOVED.last_before,
    ),
    Behaviour(
        "the log store's repair finishes a live commit, or wedges the table",
        r"finish\w* (?:its|a writer's|the writer's) commit|\bwedges?\b|\bstuck\b",
        b.STUCK_REPAIR.version,
        b.DYNAMODB_LOG_STORE_REMOVED.last_before,
    ),
    Behaviour(
        "conditional put when asked",
        r"conditional_put=etag|\bopt-in\b|\bwhen asked\b",
        b.CONDITIONAL_PUT_OPT_IN.version,
        b.CONDITIONAL_PUT_DEFAULT.last_before,
    ),
    Behaviour(
        "conditional put by default",
        r"conditional put[^.;]{0,30}\bdefault\b|\bdefault\b[^.;]{0,30}\bconditional put",
        b.CONDITIONAL_PUT_DEFAULT.version,
        CURRENT,
    ),
    Behaviour(
        "the DynamoDB log store removed, its options ignored",
        r"\bignor(?:e|es|ed)\b|cannot take part|no longer coordinat\w*|\bremov\w* the DynamoDB log store"
        r"|\bno DynamoDB log store\b|(?:log store|lock) beside deltalake",
        b.DYNAMODB_LOG_STORE_REMOVED.version,
        CURRENT,
    ),
    Behaviour(
        "VACUUM's full mode deletes a write in flight whatever the retention",
        r"full mode[^.;]{0,40}\bdeletes?\b|deletes every file the current version does not name",
        b.VACUUM_FULL_MODE.version,
        b.VACUUM_FULL_KEEPS_NEW_FILES.last_before,
    ),
    Behaviour(
        "VACUUM's full mode deletes files removed within the retention",
        r"written more than 7 days ago|time travel[^.;]{0,40}fails?",
        b.VACUUM_FULL_MODE.version,
        b.VACUUM_FULL_RETENTION.last_before,
    ),
    Behaviour(
        "the second of two OPTIMIZEs from one snapshot commits",
        r"two OPTIMIZEs[^.;]{0,60}\bboth commit|\bcommits? two OPTIMIZEs|second OPTIMIZE[^.;]{0,40}\bcommits\b",
        b.DOUBLE_OPTIMIZE.version,
        CURRENT,
    ),
)
"""The behaviours whose releases prose states, each with the boundaries that start and end it."""

V = r"\d+\.\d+\.\d+"
STATEMENTS = (
    ("range", re.compile(rf"\b({V})\s*(?:–|to)\s*(?:deltalake\s+)?({V})")),
    ("from", re.compile(rf"\b(?:from|since|as of)\s+(?:deltalake\s+)?({V})")),
    ("from", re.compile(rf"\b({V})\s+(?:and|or)\s+later\b")),
    ("up to", re.compile(rf"\b(?:up to|until)\s+(?:deltalake\s+)?({V})")),
    ("up to", re.compile(rf"\b({V})\s+(?:and|or)\s+earlier\b")),
    ("list", re.compile(rf"\b({V}(?:,\s+{V})*,?\s+and\s+{V})\b")),
)
OTHER_LIBRARY = re.compile(r"\b(?:Delta Spark|Spark|Daft|Delta|Kernel|moto|versitygw|Azurite)\s*$")
"""Words right before a version that make it another library's release."""


CLAUSE = re.compile(r"[;:]|,\s+(?!\d)|\s+—\s+|\s+and\s+(?=deltalake|Delta Spark|delta-rs)")
"""Where a clause ends: a version statement belongs to a behaviour named in its own clause."""


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _sentences(text: str) -> list[str]:
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    pieces = re.split(r"(?<=[.;!?])\s+|\n(?=\s*(?:$|[-|#*]|\d+\.\s))|\s\|\s", text)
    return [" ".join(p.replace("*", "").split()) for p in pieces if p.strip()]


def _statements(sentence: str):
    """(kind, versions, span) of each version statement of deltalake in a sentence; a list's versions
    that a range or a "from" already took are not a list of their own."""
    taken: list[tuple[int, int]] = []
    for kind, pattern in STATEMENTS:
        for match in pattern.finditer(sentence):
            if OTHER_LIBRARY.search(sentence[: match.start()]):
                continue
            if any(a < match.end() and match.start() < z for a, z in taken):
                continue
            taken.append(match.span())
            versions = re.findall(V, match.group(1)) if kind == "list" else list(match.groups())
            yield kind, versions, match.span()


def _nearest(sentence: str, span: tuple[int, int]) -> Behaviour | None:
    found = [
        (max(m.start() - span[1], span[0] - m.end(), 0), i)
        for i, behaviour in enumerate(BEHAVIOURS)
        for m in re.finditer(behaviour.words, sentence, re.I)
    ]
    return BEHAVIOURS[min(found)[1]] if found else None


def range_problems(where: str, text: str) -> list[str]:
    """Each version statement that does not start or end where its behaviour does, or lists a release
    outside it."""
    found = []
    for sentence in _sentences(text):
        for clause in CLAUSE.split(sentence):
            for kind, versions, span in _statements(clause):
                behaviour = _nearest(clause, span)
                if behaviour is not None and not behaviour.states(kind, versions):
                    found.append(
                        f"{where}: {clause[span[0] : span[1]]!r} for {behaviour.name!r}, which runs from "
                        f"{behaviour.first or 'the first release'} to {behaviour.last}: {sentence[:160]}"
                    )
    return found


def texts() -> dict[str, str]:
    """The prose of tests/test_one_truth.py and the generated answer page."""
    found = prose()
    for name in ("docs/answer.md", "docs/disagreements.md"):
        found[name] = (config.ROOT / name).read_text(encoding="utf-8")
    return found


def test_every_range_of_releases_in_the_prose_is_its_behaviours():
    assert [p for where, text in texts().items() for p in range_problems(where, text)] == []


@pytest.mark.parametrize(
    "sentence, problem",
    [
        (
            "Spark and deltalake 0.15.0 to 1.6.0 share one lock table without losing data.",
            "'0.15.0 to 1.6.0' for \"shares Spark's lock items\"",
        ),
        (
            "deltalake 1.5.1–1.6.3 with the DynamoDB lock tells a writer whose commit a job finishes its "
            "commit for that it failed.",
            "'1.5.1–1.6.3' for \"the log store's repair",
        ),
        (
            "Conditional put is an opt-in from deltalake 0.19.1.",
            "'from deltalake 0.19.1' for 'conditional put when asked'",
        ),
        (
            "The options of the DynamoDB lock are ignored by 1.6.0 and later.",
            "'1.6.0 and later' for 'the DynamoDB log store removed",
        ),
        (
            "The seeds' lease is deltalake's S3 lock up to 0.15.0.",
            "'up to 0.15.0' for \"the dynamodb_lock crate's lease\"",
        ),
        (
            "deltalake 1.2.1 and 1.5.1 claim the same items as Spark for one table.",
            "'1.2.1 and 1.5.1' for \"shares Spark's lock items\"",
        ),
    ],
)
def test_a_range_that_is_not_its_behaviours_is_caught(sentence, problem):
    found = range_problems("README.md", sentence)
    assert len(found) == 1 and problem in found[0], found


@pytest.mark.parametrize(
    "sentence",
    [
        "deltalake 0.15.0 to 1.6.0 speak the same DynamoDB protocol, and from 1.3.0 on write the table's "
        "`tablePath` as Spark does.",
        "deltalake 1.6.1 and later cannot take part in Spark's lock; 0.19.2 to 0.22.3 commit by conditional "
        "put when asked.",
        "A Delta Spark 4.4.0 driver and deltalake 1.5.1 share one lock table.",
        "Delta Spark 4.4.0 and deltalake 1.3.0–1.5.0 through one lock table.",
    ],
)
def test_a_range_that_is_its_behaviours_passes(sentence):
    assert range_problems("README.md", sentence) == []


# ---------------------------------------------------------------------------------------------
# "What to do", against the findings of the same setting
# ---------------------------------------------------------------------------------------------

LANDED = re.compile(r"\b(?:told|reported)\b[^.;]{0,30}\bfail(?:s|ed)?\b", re.I)
"""A finding that says a job can be told its write failed although it committed."""
RERUN = re.compile(
    r"\brerun(?:ning)? (?:it|them|the job)\b|\bcan (?:be )?rerun\b|\brun (?:it|them) again\b", re.I
)
"""An instruction to rerun a failed job (not "a rerun append", a race's name)."""
LOOKED = re.compile(
    r"look(?:ed|ing)? (?:for (?:it|them|the write|its write) )?in the table|after looking|idempotent"
    r"|transaction_version",
    re.I,
)
"""What makes a rerun safe where a failed write may have landed."""


def unguarded_reruns(sentences: list[str]) -> list[str]:
    """The sentences that tell the reader to rerun with no look in the table (nor an idempotent id) in
    them or in the sentence right after them."""
    return [
        s
        for s, after in zip(sentences, sentences[1:] + [""])
        if RERUN.search(s) and not LOOKED.search(s + " " + after)
    ]


def _around(sentence: str) -> str:
    """The words around a sentence's rerun, for a message."""
    match = RERUN.search(sentence)
    return sentence[max(0, match.start() - 120) : match.end() + 40]


def _paragraph_sentences(paragraph: str) -> list[str]:
    flat = re.sub(r"\([^()]*\([^()]*\)[^()]*\)|\[([^\]]*)\]\([^)]*\)", " ", paragraph)
    return [s for s in re.split(r"(?<=[.!?])\s+(?=\*\*|[A-Z])", flat) if s.strip()]


def answer_md_problems(page: str) -> list[str]:
    """Each setting paragraph of docs/answer.md whose findings say a failed write may have landed, and
    that tells the reader to rerun a failed job without looking first."""
    section = page.split("## Your setting", 1)[1].split("\n## ", 1)[0]
    found = []
    for paragraph in re.findall(r"^\*\*.+$", section, re.M):
        findings = re.findall(
            r"\*\*Finding:\*\*(.*?)(?=\*\*Finding:\*\*|\*\*Which class|Shown in|$)", paragraph
        )
        if not any(LANDED.search(f) for f in findings):
            continue
        title = paragraph.split("**")[1]
        found += [
            f"docs/answer.md, {title}: {_around(s)!r}"
            for s in unguarded_reruns(_paragraph_sentences(paragraph.split("**Finding:**")[0]))
        ]
    return found


def page_data_problems(data: dict) -> list[str]:
    """Each row of docs/answer.html's data whose findings say a failed write may have landed, and whose
    "What to do" for a verdict it shows, or whose configuration, tells the reader to rerun without looking."""
    found = []
    for row in data["rows"]:
        if not any(LANDED.search(re.sub(r"<[^>]+>", "", f)) for f in _findings_of(row, data)):
            continue
        shown = {data["verdicts"][v] for v in _verdicts_shown(row["grid"], data)}
        lines = [(f"what to do when {v}", _todo(data, row, v)) for v in sorted(shown)]
        lines.append(("configure", re.sub(r"<[^>]+>", "", row["configure"])))
        found += [
            f"answer.html, {row['name']}, {what}: {_around(s)!r}"
            for what, text in lines
            for s in unguarded_reruns(_paragraph_sentences(text))
        ]
    return found


def _todo(data: dict, row: dict, verdict: str) -> str:
    """A cell's "What to do" as the page writes it: its verdict's, and for a refused cell the row's
    rerun advice from the lost-answer run."""
    rerun = row.get("lost", {}).get("rerun", "") if verdict == "refused (retry)" else ""
    return f"{data['todo'][verdict]} {rerun}".strip()


def _verdicts_shown(grid, data: dict):
    """The verdict of every cell of a row's grids: each grid a list of indices into the page's ``cells``,
    or (without them) of packed cells whose first number is the verdict."""
    if isinstance(grid, dict):
        for value in grid.values():
            yield from _verdicts_shown(value, data)
    elif isinstance(grid, int):
        yield data["cells"][grid][0]
    elif "cells" not in data and grid and all(isinstance(x, int) for x in grid):
        yield grid[0]
    else:
        for value in grid:
            yield from _verdicts_shown(value, data)


def _findings_of(row: dict, data: dict) -> list[str]:
    """The findings the page shows for a row: its own list, or those of the page's table whose commit path
    is the row's and whose releases meet the row's (deltalake's; another library's: by path alone)."""
    if "findings" in row:
        return row["findings"]
    low, high = row["span"]
    return [
        f["html"]
        for f in data["findings"]
        if set(f["paths"]) & set(row["paths"])
        and (
            f["library"] != "deltalake"
            or (
                (not high or _key(f["first"]) <= _key(high))
                and (not low or _key(low) <= _key(f["last"]))
            )
        )
    ]


def _page_data() -> dict:
    from helpers.page import html_page

    return html_page.page_data()


def test_no_setting_with_a_failed_write_that_may_have_landed_says_rerun_without_looking():
    page = (config.ROOT / "docs" / "answer.md").read_text(encoding="utf-8")
    assert answer_md_problems(page) + page_data_problems(_page_data()) == []


def test_an_unguarded_rerun_beside_such_a_finding_is_caught():
    paragraph = (
        "**deltalake 1.6.6 on Azure Blob** (Azure Blob). **One of the two fails loudly and commits nothing; "
        "rerun it:** a DELETE with a predicate beside an append. **Finding:** a lost commit answer: a DELETE "
        "is reported failed although it committed. Shown in 03 §3."
    )
    page = f"# x\n\n## Your setting\n\n{paragraph}\n\n## Every setting\n"
    assert len(answer_md_problems(page)) == 1
    looked = paragraph.replace("rerun it:", "rerun it once you looked in the table:")
    assert answer_md_problems(page.replace(paragraph, looked)) == []
    assert answer_md_problems(page.replace("is reported failed although it committed", "")) == []
    data = _page_data()
    row = next(r for r in data["rows"] if any(LANDED.search(f) for f in _findings_of(r, data)))
    crafted = {
        **data,
        "rows": [row],
        "todo": {v: "The job that fails committed nothing; rerun it." for v in data["todo"]},
    }
    assert page_data_problems(crafted) and all(
        "rerun it." in p for p in page_data_problems(crafted)[:1]
    )


# ---------------------------------------------------------------------------------------------
# Figures the advice quotes, against notebook 11's committed run
# ---------------------------------------------------------------------------------------------

BENCH = config.DATA_DIR / "full_runs" / "bench" / "commits.csv.gz"
STORES = (("DynamoDB", "s3-dynamodb-lock"), ("Azure", "azure"), ("S3", "s3-conditional-put"))
"""The store a quote is about, by the last of these words before it (or its setting's title), and the
benchmark's protocol for it."""
N = r"\d+"


def _and_list(text: str) -> list[str]:
    return re.split(r",\s+|\s+and\s+", text)


def _appends(runs, protocol: str, writers: int) -> list[tuple[str, int]]:
    return runs.get((protocol, writers), [])


def _gave_up(runs, protocol: str, writers: str, failed: str, appends: str) -> bool:
    found = _appends(runs, protocol, int(writers))
    return len(found) == int(appends) and sum(o != "committed" for o, _ in found) == int(failed)


def _needed(runs, protocol: str, text: str) -> bool:
    """ "R with N writers, ...": at N writers every append committed, the most after R retries."""
    pairs = re.findall(rf"({N}) with ({N}) writers?", text)
    return bool(pairs) and all(
        (found := _appends(runs, protocol, int(n)))
        and {o for o, _ in found} == {"committed"}
        and max(a for _, a in found) - 1 == int(r)
        for r, n in pairs
    )


def _gave_up_list(runs, protocol: str, writers: str, counts: str) -> bool:
    """ "with 8 and 16 writers, 7 of 64 and 26 of 128 appends gave up"."""
    ns, pairs = _and_list(writers), [c.split(" of ") for c in _and_list(counts)]
    return len(ns) == len(pairs) and all(
        _gave_up(runs, protocol, n, *mk) for n, mk in zip(ns, pairs)
    )


def _from_jobs(runs, protocol: str, writers: str) -> bool:
    failing = sorted(
        n for (p, n), f in runs.items() if p == protocol and {o for o, _ in f} - {"committed"}
    )
    return bool(failing) and failing[0] == int(writers)


def _bound(runs, protocol: str, bound: str, writers: str) -> bool:
    """ "120 for the 16 writers measured": (writers - 1) x the appends each made."""
    found = _appends(runs, protocol, int(writers))
    return bool(found) and int(bound) == (int(writers) - 1) * len(found) // int(writers)


def _per_writer(runs, protocol: str, appends: str) -> bool:
    return all(len(f) == int(appends) * n for (p, n), f in runs.items() if p == protocol)


FIGURES = (
    (
        re.compile(rf"\b({N}) of ({N}) (?:appends )?by ({N})\b(?: writers)?(?=[^.;(]*\bgave up\b)"),
        lambda runs, p, m: _gave_up(runs, p, m[3], m[1], m[2]),
    ),
    (
        re.compile(rf"\bwhen ({N}) or more jobs commit at once"),
        lambda runs, p, m: _from_jobs(runs, p, m[1]),
    ),
    (
        re.compile(
            rf"the most retries an append needed was ((?:{N} with {N} writers?(?:,\s+|\s+and\s+)?)+)"
        ),
        lambda runs, p, m: _needed(runs, p, m[1]),
    ),
    (
        re.compile(
            rf"\bwith ((?:{N}(?:,\s+|\s+and\s+))*{N}) writers, ((?:{N} of {N}(?:,\s+|\s+and\s+))*{N} of {N}) appends gave up"
        ),
        lambda runs, p, m: _gave_up_list(runs, p, m[1], m[2]),
    ),
    (
        re.compile(rf"\b({N}) for the ({N}) writers measured"),
        lambda runs, p, m: _bound(runs, p, m[1], m[2]),
    ),
    (re.compile(rf"\(({N}) appends per writer"), lambda runs, p, m: _per_writer(runs, p, m[1])),
)
"""Each figure the retry advice quotes, and how notebook 11's run gives it for one protocol."""


def bench_runs() -> dict[tuple[str, int], list[tuple[str, int]]]:
    """(protocol, writers) -> each append's (outcome, attempts), with the library's default retries."""
    with gzip.open(BENCH, "rt", newline="", encoding="utf-8") as handle:
        runs: dict[tuple[str, int], list[tuple[str, int]]] = {}
        for r in csv.DictReader(handle):
            runs.setdefault((r["protocol"], int(r["writers"])), []).append(
                (r["outcome"], int(r["attempts"]))
            )
    return runs


def figure_problems(where: str, text: str, runs: dict, store: str = "") -> list[str]:
    """Each quoted figure that the run of its store (``store``, or the store named last before the quote in
    its paragraph; every protocol if none is) does not give."""
    found = []
    for paragraph in re.split(r"\n\s*\n", text):
        title = re.match(r"\*\*([^*]+)\*\*", paragraph)
        for pattern, holds in FIGURES:
            for match in pattern.finditer(paragraph):
                protocols = _protocols(
                    store or (title.group(1) if title else paragraph[: match.start()]), runs
                )
                if not any(holds(runs, p, match) for p in protocols):
                    found.append(
                        f"{where}: {match.group(0)!r} is not what {'/'.join(protocols)} measured"
                    )
    return found


def _protocols(before: str, runs: dict) -> list[str]:
    named = [(before.rfind(word), protocol) for word, protocol in STORES if word in before]
    return [max(named)[1]] if named else sorted({p for p, _ in runs})


def test_every_figure_the_advice_quotes_is_the_committed_runs():
    runs = bench_runs()
    found = [p for where, text in texts().items() for p in figure_problems(where, text, runs)]
    for row in _page_data()["rows"]:
        found += figure_problems(
            f"answer.html, {row['name']}", row["configure"], runs, row["store"]
        )
    assert found == []


def test_the_page_quotes_figures_this_test_reads():
    """Each setting of docs/answer.md that advises on retries quotes figures the check above reads."""
    page = (config.ROOT / "docs" / "answer.md").read_text(encoding="utf-8")
    advising = [
        p for p in re.split(r"\n\s*\n", page) if "max_commit_retries=" in p and p.startswith("**")
    ]
    assert advising and all(any(pattern.search(p) for pattern, _ in FIGURES) for p in advising)


@pytest.mark.parametrize(
    "paragraph, problem",
    [
        (
            "On S3, with the default, 6 of 64 appends by 8 writers at once gave up.",
            "'6 of 64 appends by 8 writers' is not what s3-conditional-put measured",
        ),
        (
            "On Azure, raise the retries when 8 or more jobs commit at once.",
            "'when 8 or more jobs commit at once' is not what azure measured",
        ),
        (
            "**deltalake 1.6.6 on Azure Blob** (Azure Blob). In notebook 11's run (8 appends per writer), the "
            "most retries an append needed was 0 with 1 writer and 2 with 2 writers.",
            "is not what azure measured",
        ),
        (
            "On S3, 7 of 64 appends by 8 writers and 25 of 128 by 16 gave up after 15.",
            "'25 of 128 by 16' is not what s3-conditional-put measured",
        ),
        (
            "On S3, with 8 and 16 writers, 7 of 64 and 25 of 128 appends gave up after 15.",
            "'with 8 and 16 writers, 7 of 64 and 25 of 128 appends gave up' is not what s3-conditional-put",
        ),
        (
            "On S3, retries cannot run out: 112 for the 16 writers measured.",
            "'112 for the 16 writers measured' is not what s3-conditional-put measured",
        ),
    ],
)
def test_a_figure_the_run_does_not_give_is_caught(paragraph, problem):
    found = figure_problems("README.md", paragraph, bench_runs())
    assert len(found) == 1 and problem in found[0], found
