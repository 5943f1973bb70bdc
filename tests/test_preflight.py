"""helpers.preflight: what `make install` cannot install, checked with a message that says how to fix it."""

import pytest

from helpers import preflight


@pytest.mark.parametrize(
    "text, major",
    [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_292"', 8), ('openjdk version "21" 2023-09-19', 21), ("garbage", None)],
)
def test_java_major(text, major):
    assert preflight.java_major(text) == major


def test_missing_java_and_node_are_explained(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no java, no node
    assert "Java is not on PATH" in preflight.check_java()
    assert "Node.js is not on PATH" in preflight.check_node()


def test_this_machine_passes():
    assert preflight.problems() == []
