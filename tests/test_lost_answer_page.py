"""The answer page's "the commit's answer is lost", in a browser, against the lost-answer run's data
read by code of this file's own: every row's verdict is the worst of the trials (no remedy) of the
commit paths its store and setting name, in the releases its span holds; its trials are counted as
the page says; a row with none says "not measured"; a commit on local disk has no answer to lose.
A crafted break of the data is found."""

from __future__ import annotations

import csv
import re
import shutil
from collections import Counter

import pytest

from helpers.ground import config

PAGE = config.ROOT / "docs" / "answer.html"
DATA = config.ROOT / "data" / "lost_answer.csv"
ORDER = (
    "committed once",
    "refused, nothing committed",
    "told failed although committed",
    "later writes refused",
    "committed twice",
    "told committed, nothing committed",
)
VERDICT = dict(
    zip(
        ORDER,
        (
            "safe",
            "refused (retry)",
            "fails though committed",
            "stops later writes",
            "duplicates data",
            "loses data",
        ),
    )
)
SPARK_LOCK = ("spark-s3-dynamodb-claim", "spark-s3-dynamodb-copy")
PATHS = (  # (engine as the page's chooser has it, store, setting) patterns, first match -> (paths whose releases the span bounds, paths taken whole)
    ("^deltalake$", "DynamoDB", "own lock", ("deltalake-s3-dynamodb",),
     ("deltalake-s3-dynamodb-lease",)),
    ("^deltalake$", "^S3$", "UNSAFE_RENAME", ("deltalake-s3-unsafe-rename",), ()),
    ("^deltalake$", "DynamoDB", "lease", ("deltalake-s3-dynamodb-lease",), ()),
    ("^deltalake$", "DynamoDB", "log store", ("deltalake-s3-dynamodb",), ()),
    ("^deltalake$", "^S3$", "conditional put", ("deltalake-s3-conditional-put",), ()),
    ("^deltalake$", "Azure", "", ("deltalake-azure",), ()),
    ("^Delta Spark$", "^S3$", "default S3 log store", (), ("spark-s3-default",)),
    ("^Delta Spark$", "DynamoDB", "S3DynamoDBLogStore", (), SPARK_LOCK),
    ("^Delta Spark$", "Unity Catalog", "", (), ("spark-catalog",)),
    ("^both$", "DynamoDB", "both DynamoDB log stores", ("deltalake-s3-dynamodb",), SPARK_LOCK),
    ("^both$", "DynamoDB", "deltalake by conditional put",
     ("deltalake-s3-conditional-put",), SPARK_LOCK),
)  # fmt: skip
ROWS_JS = "return D.rows.map((r) => [r.key, r.span, r.store, r.setting, r.engine, r.spark]);"
LOST_JS = (
    "return arguments[0].map((key) => "
    "window.answerPage.show(key, 'append', 'append', 'shared').lost);"
)


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def _within(release: str, span: list[str]) -> bool:
    first, last = span
    return (not first or _release(first) <= _release(release)) and _release(release) <= _release(
        last
    )


def expected(rows: list[dict], key, span, store, setting, engine, spark) -> tuple[str, str]:
    """(verdict, "N of M trials") for a row, from the data alone; ("", "") for no network. A Delta
    Spark path counts the trials of the row's Delta Spark release (``spark``) only."""
    if store == "local disk":
        return "safe", ""
    chosen = next(
        (
            p
            for p in PATHS
            if re.search(p[0], engine) and re.search(p[1], store) and re.search(p[2], setting)
        ),
        None,
    )
    assert chosen is not None, f"the reader does not know the setting of {key}: {store}, {setting}"
    _, _, _, bounded, whole = chosen
    trials = [
        r
        for r in rows
        if r["remedy"] == "none"
        and (
            (r["path"] in whole and (r["release"] == spark or not r["path"].startswith("spark")))
            or (r["path"] in bounded and _within(r["release"], span))
        )
    ]
    measured = {r["path"] for r in trials}
    if not trials or not set(whole) <= measured or (bounded and not set(bounded) & measured):
        return "not measured", ""  # a path the row names has no trial
    counted = Counter(r["outcome"] for r in trials)
    worst = max(counted, key=ORDER.index)
    return VERDICT[worst], f"{counted[worst]} of {len(trials)} trials"


def problems(browser, page, data) -> list[str]:
    with open(data, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    browser.get(page.as_uri())
    shown_rows = browser.execute_script(ROWS_JS)
    lost = browser.execute_script(LOST_JS, [r[0] for r in shown_rows])
    found = []
    for (key, span, store, setting, engine, spark), text in zip(shown_rows, lost, strict=True):
        verdict, counts = expected(rows, key, span, store, setting, engine, spark)
        if not text.startswith(f"{verdict}: "):
            found.append(f"{key}: the page says {text[:80]!r}, the data {verdict}")
        elif counts and f"({counts}" not in text:
            found.append(
                f"{key}: the page's trials differ from the data's {counts}: {text[:160]!r}"
            )
        elif store == "local disk" and "no answer to lose" not in text:
            found.append(f"{key}: a local-disk row must say there is no answer to lose")
    return found


def test_every_rows_lost_answer_is_the_datas(browser):
    assert problems(browser, PAGE, DATA) == []


def test_a_crafted_break_of_the_data_is_found(browser, tmp_path):
    """One trial of today's conditional put made a loss: the page (rendered from the real data) is
    then wrong for the two rows that stand on it, and the reader names both."""
    crafted = tmp_path / "lost_answer.csv"
    with open(DATA, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    target = next(
        r
        for r in rows
        if r["path"] == "deltalake-s3-conditional-put"
        and r["release"] == "1.6.6"
        and r["remedy"] == "none"
    )
    target["outcome"] = ORDER[-1]
    with open(crafted, "w", newline="", encoding="utf-8") as handle:
        out = csv.DictWriter(handle, fieldnames=list(rows[0]))
        out.writeheader()
        out.writerows(rows)
    page = tmp_path / "answer.html"
    shutil.copyfile(PAGE, page)
    found = problems(browser, page, crafted)
    assert sorted(f.split(":")[0] for f in found) == ["mixed-put", "rs-put-today"], found
    assert all("the data loses data" in f for f in found), found
