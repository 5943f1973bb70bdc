"""helpers.machine.preflight: what `make install` cannot install, checked with a message that says how to fix it."""

import pytest

from helpers.ground import tools
from helpers.machine import preflight


@pytest.mark.parametrize(
    "text, major",
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ("garbage", None),
    ],
)
def test_java_major(text, major):
    assert tools.java_major(text) == major


def test_missing_java_and_node_are_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no java, no node
    assert "Java is not on PATH" in tools.check_java()
    assert "Node.js is not on PATH" in tools.check_node()
    assert (
        "No C compiler (cc) on PATH" in tools.check_cc()
        and "apt-get install gcc" in tools.check_cc()
    )


def test_this_machine_passes():
    assert preflight.problems() == []


def test_putting_the_jdk_and_node_on_path_fixes_it(monkeypatch, tmp_path):
    """The fix the messages give: a folder with the JDK's and Node's programs first on PATH."""
    import shutil

    programs = tmp_path / "bin"
    programs.mkdir()
    for program in ("java", "javac", "node", "npm", "cc"):
        (programs / program).symlink_to(shutil.which(program))
    monkeypatch.setenv("PATH", str(programs))
    assert (
        tools.check_java(),
        tools.check_javac(),
        tools.check_cc(),
        tools.check_node(),
    ) == (None,) * 4


def test_too_little_disk_is_explained_before_installing(monkeypatch, tmp_path):
    import collections

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(
        tools.shutil, "disk_usage", lambda path: usage(100 * 2**30, 98 * 2**30, 2 * 2**30)
    )
    assert "2.0 GB free" in tools.check_disk(tmp_path) and "make distclean" in tools.check_disk(
        tmp_path
    )
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / ".installed").touch()
    assert tools.check_disk(tmp_path) is None, "an installed folder needs no more room"
    monkeypatch.setattr(
        tools.shutil, "disk_usage", lambda path: usage(100 * 2**30, 90 * 2**30, 10 * 2**30)
    )
    (tmp_path / ".venv" / ".installed").unlink()
    assert tools.check_disk(tmp_path) is None, "freeing space fixes it"


def test_a_machine_without_chromium_is_told_what_make_test_needs_it_for(monkeypatch):

    monkeypatch.delenv("WORKBOOK_CHROMIUM", raising=False)
    monkeypatch.delenv("WORKBOOK_CHROMEDRIVER", raising=False)
    monkeypatch.setattr(tools.shutil, "which", lambda name: None)
    note = tools.check_browser()
    assert "docs/answer.html" in note and "apt-get install chromium chromium-driver" in note
    monkeypatch.setattr(tools.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert tools.check_browser() is None


def test_every_command_checks_problems_and_only_make_preflight_says_the_notes(monkeypatch, capsys):
    from helpers.machine import preflight

    monkeypatch.setattr(preflight, "problems", lambda: [])
    monkeypatch.setattr(preflight, "notes", lambda: ["a note that asks nothing"])
    assert preflight.main(["--problems-only"]) == 0 and "a note" not in capsys.readouterr().err
    assert preflight.main([]) == 0 and "a note that asks nothing" in capsys.readouterr().err
    assert preflight.main(["--problem-only"]) == 2 and "usage" in capsys.readouterr().err
