"""helpers.ground.progress: live status while a run goes, one static line when it ends."""

from __future__ import annotations

from helpers.ground import progress


def test_outside_a_notebook_each_new_status_is_one_line_and_the_end_is_stated(capsys):
    shown = progress.RunProgress("4 Spark drivers", 4)
    for status in (
        "0 at the barrier, 0 gone",
        "0 at the barrier, 0 gone",
        "4 at the barrier, 0 gone",
        "released",
    ):
        shown.status(status)
    shown.done(4)
    shown.finish("4/4 done, 4 committed, 0 failed")
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "4 Spark drivers: 0 at the barrier, 0 gone",
        "4 Spark drivers: 4 at the barrier, 0 gone",
        "4 Spark drivers: released",
    ]
    assert out == "4 Spark drivers: 4/4 done, 4 committed, 0 failed\n"


def test_a_log_gets_the_first_statuses_then_one_per_interval(capsys, monkeypatch):
    clock = iter(range(0, 10_000, 2))  # each status two seconds after the last
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    shown = progress.RunProgress("torture", 100)
    for done in range(1, 101):
        shown.status(f"{done}/100 acknowledged")
    lines = capsys.readouterr().err.splitlines()
    first = [f"torture: {done}/100 acknowledged" for done in range(1, progress.LOG_FIRST + 1)]
    assert lines[: progress.LOG_FIRST] == first
    assert len(lines) == progress.LOG_FIRST + (100 - progress.LOG_FIRST) * 2 // int(
        progress.LOG_EVERY_S
    )


def test_a_disabled_progress_says_nothing(capsys):
    shown = progress.RunProgress("2 writers", 2, enabled=False)
    shown.status("released")
    shown.finish("2/2 done")
    assert capsys.readouterr() == ("", "")


def test_outside_a_kernel_there_is_no_widget():
    assert not progress._in_kernel()
    assert progress.RunProgress("x", 1)._widgets is None
