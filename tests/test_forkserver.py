"""helpers.ground.forkserver: a child forked from an era's fork server is the process `python -m` would
have started (its module, arguments, environment, folder, output files and session; its own
random numbers), and is waited for and killed as one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap

import pytest

from helpers.ground import config, eras
from helpers.ground import forkserver

PROBE = "probe_forkserver_child"


@pytest.fixture
def probe(tmp_path):
    """A module that reports what its process sees, then exits with the code it is given."""
    (tmp_path / f"{PROBE}.py").write_text(
        textwrap.dedent("""
        import json, os, random, sys, time
        if sys.argv[1] == "sleep":
            print("sleeping", flush=True)
            time.sleep(600)  # killed by the test long before; not a timing of anything
        print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "marker": os.environ.get("PROBE_MARKER"),
                          "pid": os.getpid(), "pgid": os.getpgid(0), "random": random.random(),
                          "main": __name__, "deltalake": "deltalake" in sys.modules}))
        print("to stderr", file=sys.stderr)
        sys.exit(int(sys.argv[1]))
    """)
    )
    return tmp_path


def _start(folder, *args, marker="one", new_session=False, python=None):
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(folder),
        "PYTHONUNBUFFERED": "1",
        "PROBE_MARKER": marker,
    }
    name = f"{marker}-{'-'.join(args)}"
    return forkserver.start(
        python or eras.python_for(eras.CURRENT),
        PROBE,
        list(args),
        env=env,
        cwd=folder,
        stdout=folder / f"{name}.out",
        stderr=folder / f"{name}.err",
        new_session=new_session,
    )


def test_a_child_runs_its_module_with_its_own_arguments_environment_folder_and_files(probe):
    first, second = _start(probe, "0", marker="one"), _start(probe, "3", marker="two")
    assert (first.wait(timeout=120), second.wait(timeout=120)) == (0, 3)
    seen = [json.loads((probe / name).read_text()) for name in ("one-0.out", "two-3.out")]
    assert [(s["argv"], s["marker"], s["cwd"], s["main"]) for s in seen] == [
        (["0"], "one", str(probe), "__main__"),
        (["3"], "two", str(probe), "__main__"),
    ]
    assert [s["pid"] for s in seen] == [first.pid, second.pid] and first.pid != second.pid
    assert all(
        s["deltalake"] for s in seen
    )  # imported once, by the server: what the children are spared
    assert seen[0]["random"] != seen[1]["random"]  # each child seeds its own
    assert (probe / "one-0.err").read_text() == "to stderr\n"
    assert first.poll() == 0 and second.returncode == 3


def test_a_child_is_killed_and_waited_for_like_a_popen_and_may_lead_its_own_session(probe):
    child = _start(probe, "sleep", new_session=True)
    plain = _start(probe, "sleep", marker="plain")
    try:
        assert child.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=0)
        assert (
            os.getpgid(child.pid) == child.pid
        )  # its own process group: os.killpg reaches whatever it starts
        os.killpg(child.pid, signal.SIGKILL)
        assert child.wait(timeout=120) == -signal.SIGKILL
        assert os.getpgid(plain.pid) != plain.pid
        plain.kill()
        assert plain.wait(timeout=120) == -signal.SIGKILL
    finally:  # a failed assertion leaves no sleeper behind
        child.kill()
        plain.kill()


def test_one_server_per_era_python_serves_every_later_start(probe):
    _start(probe, "0", marker="a").wait(timeout=120)
    _start(probe, "0", marker="b").wait(timeout=120)
    servers = [
        s
        for (pid, python), s in forkserver._SERVERS.items()
        if pid == os.getpid() and python == str(eras.python_for(eras.CURRENT))
    ]
    assert len(servers) == 1
    older = _start(probe, "0", marker="c", python=eras.python_for(eras.SEEDS))
    assert older.wait(timeout=120) == 0  # the seeds' era: a server of its own Python


def test_a_module_that_cannot_be_found_fails_as_python_m_would(probe):
    env = {"PATH": os.environ["PATH"], "PYTHONUNBUFFERED": "1"}
    child = forkserver.start(
        eras.python_for(eras.CURRENT),
        "no_such_module_here",
        [],
        env=env,
        cwd=probe,
        stdout=probe / "missing.out",
        stderr=probe / "missing.err",
    )
    assert child.wait(timeout=120) == 1
    assert "No module named no_such_module_here" in (probe / "missing.err").read_text()


def test_without_the_server_processes_start_as_fresh_interpreters(monkeypatch, tmp_path):
    from helpers.writers import processes

    monkeypatch.setenv("WORKBOOK_FORKSERVER", "0")
    spec = tmp_path / "spec.json"
    spec.write_text("{}")
    proc = processes.EraProcess(
        "w1", eras.CURRENT, "helpers.writers", spec, tmp_path / "w1.out", tmp_path / "w1.err"
    )
    processes.launch([proc])
    assert isinstance(proc.process, subprocess.Popen)
    assert proc.process.wait(timeout=120) != 0  # an empty spec is refused
    assert "writer_id" in (tmp_path / "w1.err").read_text()  # the fresh interpreter's own refusal


def test_the_server_is_the_workbook_module_run_in_an_era(tmp_path):
    """The server imports nothing of the workbook (its settings are read from the environment at import)."""
    done = subprocess.run(
        [
            str(eras.python_for(eras.CURRENT)),
            "-c",
            "import sys, runpy; sys.argv=['x']; import helpers.ground.forkserver as f; "
            "print(sorted(m for m in sys.modules if m.startswith('helpers')))",
        ],
        capture_output=True,
        text=True,
        cwd=config.ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['helpers', 'helpers.ground', 'helpers.ground.forkserver']"
