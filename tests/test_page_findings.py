"""A finding applies by its own affected range (``findings/versions.csv``), not by a row's name: on the
page (``docs/answer.html``, in Chromium) and in the setting paragraphs of ``docs/answer.md``."""

from __future__ import annotations

import dataclasses

import pytest

from helpers.page import findings, html_page, table_rows

LOST = "deltalake-lost-commit-response-commits-twice"
TWO_OPTIMIZES = "deltalake-two-optimizes-both-commit"
ADVISORY = "deltalake-dynamodb-log-store-advisory"
SPARK_LOG_STORE = "delta-s3-dynamodb-log-store-unfinished-commit"
STALE = "deltalake-create-write-transaction-leaves-the-table-behind"
VACUUM = "deltalake-vacuum-full-deletes-files-within-retention"
LOST_CLAIM = "deltalake-dynamodb-lost-claim-answer-reported-failed"


def _row(key: str):
    return next(r for r in table_rows.ROWS if r.key == key)


def _folders(key: str, release: str, table=None) -> set[str]:
    return {f.folder for f in findings.applying(_row(key), release, table)}


@pytest.mark.parametrize(
    "key, release, expected",
    [
        ("rs-put", "1.6.3", {LOST, STALE}),
        ("rs-put", "1.5.1", {LOST, STALE}),
        ("rs-put-1-2-0", "1.2.0", {LOST, VACUUM}),
        ("rs-put-1-0-0", "1.0.0", {LOST, VACUUM}),
        ("rs-put-0-23-0", "0.25.5", {LOST}),
        ("rs-put-today", "1.6.4", {LOST, TWO_OPTIMIZES, STALE}),
        ("rs-put-opt-in", "0.22.3", {LOST}),
        ("rs-put-opt-in", "0.19.2", set()),
        ("rs-lock-interop", "1.5.1", {ADVISORY, STALE, LOST_CLAIM}),
        ("rs-lock-seeds", "0.22.3", {LOST_CLAIM}),
        ("rs-lock-seeds", "0.19.2", set()),
        ("mixed-lock-early", "1.3.0", {SPARK_LOG_STORE, VACUUM, LOST_CLAIM}),
        ("mixed-lock", "1.6.0", {SPARK_LOG_STORE, ADVISORY, STALE, LOST_CLAIM}),
        ("mixed-put", "1.6.6", {SPARK_LOG_STORE, LOST, TWO_OPTIMIZES, STALE}),
        ("spark-one", "4.4.0", set()),
    ],
)
def test_a_finding_applies_from_its_first_to_its_last_affected_release(key, release, expected):
    assert _folders(key, release) == expected


def test_a_moved_range_moves_the_finding():
    """The lost answer's S3 line said to start at 1.6.6: 1.6.3 by conditional put no longer meets it."""
    table = [
        dataclasses.replace(f, first="1.6.6")
        if f.folder == LOST and "s3-conditional-put" in f.paths
        else f
        for f in findings.load()
    ]
    assert LOST in _folders("rs-put", "1.6.3")
    assert LOST not in _folders("rs-put", "1.6.3", table)


def test_every_finding_of_the_table_has_words_and_every_words_a_line():
    table = findings.load()
    for finding in table:
        assert f"../findings/{finding.folder}/" in findings.finding_text(finding.folder)
    listed = {f.folder for f in table}
    for text in findings.FINDING_TEXTS:
        assert any(f"../findings/{folder}/" in text for folder in listed), text[:80]
    with pytest.raises(KeyError, match="FINDING_TEXTS does not describe"):
        findings.finding_text("no-such-finding")


def test_every_commit_path_of_the_table_is_a_rows():
    from helpers.page.evidence import PATHS

    for finding in findings.load():
        assert set(finding.paths) <= set(PATHS), finding.folder
    for row in table_rows.ROWS:
        assert row.paths and set(row.paths) <= set(PATHS), row.key


def test_the_page_lists_the_findings_of_the_release_chosen(browser):
    """In the browser: the same row shows another list of findings at another release."""
    browser.get(html_page.PAGE.as_uri())
    show = 'return window.answerPage.show(arguments[0], "append", "append", "shared", {release: arguments[1]})'
    for key, release, expected in (
        ("rs-put", "1.6.3", {LOST, STALE}),
        ("rs-put-1-2-0", "1.4.2", {LOST, VACUUM}),
        ("rs-put-today", "1.6.6", {LOST, TWO_OPTIMIZES, STALE}),
        ("mixed-lock-early", "1.3.0", {SPARK_LOG_STORE, VACUUM, LOST_CLAIM}),
        ("mixed-lock", "1.5.1", {SPARK_LOG_STORE, ADVISORY, STALE, LOST_CLAIM}),
        ("rs-put-opt-in", "0.19.2", set()),
    ):
        seen = browser.execute_script(show, key, release)
        assert (seen["row"], seen["release"]) == (key, release)
        assert {link.split("/")[2] for link in seen["findingLinks"]} == expected, (key, release)
