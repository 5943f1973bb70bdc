"""helpers.ground.checks: failures name what was expected and what was found; prose is rendered."""

import pytest

from helpers.ground import checks


def test_equal_passes_and_fails_with_both_values():
    checks.equal("rows", 80, 80)
    with pytest.raises(checks.CheckFailed, match=r"rows added: expected 80, found 70"):
        checks.equal("rows added", 70, 80)


def test_a_failed_check_is_an_assertion_error():
    with pytest.raises(AssertionError):
        checks.equal("outcomes", {"committed": 1}, {"committed": 2})


def test_holds_describes_the_expectation():
    checks.holds("rows lost", True, expected="more than 0", found=10)
    with pytest.raises(checks.CheckFailed, match=r"rows lost: expected more than 0, found 0"):
        checks.holds("rows lost", False, expected="more than 0", found=0)


def test_counted_spells_singular_and_plural():
    assert checks.counted(1, "writer") == "1 writer"
    assert checks.counted(7, "writer") == "7 writers"
    assert checks.counted(2, "object version") == "2 object versions"
    assert checks.counted(0, "batch", "batches") == "0 batches"


def test_say_prints_outside_jupyter(capsys):
    checks.say("**3 of 3** committed")
    assert capsys.readouterr().out == "**3 of 3** committed\n"


def test_a_checklist_collects_every_failure_for_one_assert():
    check = checks.Checklist()
    assert check.equal("rows", 80, 80)
    assert not check.equal("rows lost", 0, 70)
    assert not check.holds("object versions", False, expected="8", found=1)
    assert not check.passed
    assert (
        check.report()
        == "2 of 3 checks failed:\n- rows lost: expected 70, found 0\n- object versions: expected 8, found 1"
    )
    with pytest.raises(AssertionError, match="rows lost: expected 70, found 0"):
        assert check.passed, check.report()


def test_an_empty_checklist_does_not_pass():
    check = checks.Checklist()
    assert not check.passed and check.report() == "no check was made"
    check.equal("x", 1, 1)
    assert check.passed
