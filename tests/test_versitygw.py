"""helpers.stores.versitygw: what it says when Go is missing or too old, where the build keeps its caches,
and the server's command line. (The real server is built and probed by `make probe-versitygw`,
which .ci/run runs: a machine without Go still runs everything else on moto.)"""

from __future__ import annotations

import re

from helpers.ground import config
from helpers.machine import preflight
from helpers.stores import versitygw


def test_without_go_or_with_an_old_one_the_note_says_how_to_add_the_real_server(monkeypatch):
    monkeypatch.setattr(versitygw, "go_version", lambda: None)
    note = versitygw.check_go()
    assert (
        "Go is not on PATH" in note
        and "everything runs on moto" in note
        and "`make versitygw`" in note
    )
    assert (
        note in preflight.notes() and note not in preflight.problems()
    )  # optional: preflight still passes
    monkeypatch.setattr(versitygw, "go_version", lambda: (1, 24))
    assert "Go 1.24 is on PATH; versitygw v1.8.0 needs Go 1.25+" in versitygw.check_go()
    monkeypatch.setattr(versitygw, "go_version", lambda: (1, 26))
    assert versitygw.check_go() is None and not [
        n for n in preflight.notes() if "Go" in n
    ]  # the kernel-socket note may remain, in a deep clone


def test_the_build_keeps_its_modules_and_cache_in_the_project_and_builds_offline_from_them():
    env = versitygw.go_environment(offline=True)
    assert env["GOMODCACHE"] == str(config.CACHE_DIR / "go" / "mod") and env["GOCACHE"] == str(
        config.CACHE_DIR / "go" / "build"
    )
    assert env["GOBIN"] == str(config.CACHE_DIR / "bin") and env["GOPROXY"] == "off"
    assert versitygw.go_environment(offline=False).get("GOPROXY") != "off"


def test_the_server_listens_on_loopback_with_versioning_and_the_emulators_keys(tmp_path):
    command = versitygw.command(7070, tmp_path)
    assert command[1:4] == ["--port", "127.0.0.1:7070", "posix"]
    assert command[-3:] == ["--versioning-dir", str(tmp_path / "versions"), str(tmp_path / "data")]
    env = versitygw.environment()
    assert (env["ROOT_ACCESS_KEY"], env["ROOT_SECRET_KEY"]) == (
        config.EMULATOR_AWS_ACCESS_KEY_ID,
        config.EMULATOR_AWS_SECRET_ACCESS_KEY,
    )


def test_ci_builds_and_probes_the_pinned_release():
    ci = (config.ROOT / ".ci" / "run").read_text()
    assert "make probe-versitygw" in ci
    makefile = (config.ROOT / "Makefile").read_text()
    assert re.search(r"^probe-versitygw: versitygw\b", makefile, re.M)
    assert re.fullmatch(r"v\d+\.\d+\.\d+", versitygw.VERSION)


def test_make_prefetch_passes_without_go_and_make_versitygw_says_what_is_missing(
    monkeypatch, capsys
):
    monkeypatch.setattr(versitygw, "go_version", lambda: None)
    monkeypatch.setattr(versitygw, "built", lambda: False)
    assert versitygw.main(["build", "--if-go"]) == 0
    assert capsys.readouterr().out.startswith("versitygw not built (optional): Go is not on PATH")
    assert versitygw.main(["build"]) == 2
    assert capsys.readouterr().err.startswith("error: Go is not on PATH")
