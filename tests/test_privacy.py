"""Nothing the workbook runs sends anything beyond the machine (downloads at install aside).

Each process below starts with ``tests/no_egress`` on its PYTHONPATH: its ``sitecustomize``
installs an audit hook that refuses every name look-up and connection beyond loopback and records
it. Daft is the one library found to phone home (its usage telemetry, on import and on each
write); ``config.NO_TELEMETRY`` turns it off for every process the workbook starts. The control
run removes those switches and must see the hook catch Daft's requests, so a hook that stopped
seeing them would fail here rather than pass silently.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from helpers.delta import landing
from helpers.ground import config, eras

NO_EGRESS = config.ROOT / "tests" / "no_egress"
DAFT_ERAS = [
    eras.CURRENT,
    "deltalake-0.22.3",
]  # the two Dafts the workbook installs (0.7.26, 0.7.9)
TELEMETRY_HOSTS = {"daft.gateway.scarf.sh", "osstelemetry.io"}

# A Daft writer's first append (``daft_engine.first_write``, the Daft write path the writers use),
# then a wait for Daft's telemetry threads, so that a request they would send is made before exit.
DAFT_WRITE = """
import json, sys, threading
from helpers.writers import daft_engine
report = daft_engine.first_write(sys.argv[1], {}, sys.argv[2], "w1")
for thread in threading.enumerate():
    if thread.name.endswith("(send_request)"):
        thread.join()
print(json.dumps(report))
"""


def _watched(tmp_path, environ: dict[str, str]) -> tuple[dict[str, str], object]:
    log = tmp_path / "egress.jsonl"
    return {**environ, "PYTHONPATH": str(NO_EGRESS), "WORKBOOK_EGRESS_LOG": str(log)}, log


def _refused(log) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _without_telemetry_switches() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in config.NO_TELEMETRY}


@pytest.mark.parametrize("era", DAFT_ERAS)
def test_a_daft_writer_sends_nothing_beyond_loopback(era, tmp_path):
    env, log = _watched(tmp_path, _without_telemetry_switches())
    done = eras.run_in_era(
        era,
        ["-c", DAFT_WRITE, str(tmp_path / "table"), str(landing.landing_file(1))],
        env=env,
        timeout=300,
    )  # eras adds config.NO_TELEMETRY, as for every writer
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1])["outcome"] == "committed"
    assert _refused(log) == [], f"{era} tried to reach beyond loopback"


def test_without_the_switches_the_hook_catches_daft_telemetry(tmp_path):
    """The control: the same write, started without the workbook's switches (not through eras)."""
    env, log = _watched(tmp_path, _without_telemetry_switches())
    done = subprocess.run(
        [
            str(eras.python_for(eras.CURRENT)),
            "-c",
            DAFT_WRITE,
            str(tmp_path / "table"),
            str(landing.landing_file(1)),
        ],
        cwd=config.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        json.loads(done.stdout.splitlines()[-1])["outcome"] == "committed"
    )  # refused telemetry breaks nothing
    assert {r["host"] for r in _refused(log)} == TELEMETRY_HOSTS


@pytest.mark.services
def test_notebook_00_imports_everything_and_sends_nothing_beyond_loopback(stores, tmp_path):
    """Notebook 00 imports every module the workbook imports; its kernel gets the switches from
    the kernel spec alone (this test's environment has none of them). It runs without its round
    trips (`stores` empty): the hook watches Python, and the requests those make go to the emulators
    (a Spark JVM's own connections are not Python's to see); its own run in `make test` makes them."""
    env, log = _watched(tmp_path, _without_telemetry_switches())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            "--no-progress-bar",
            "--cwd",
            str(config.NOTEBOOKS_DIR),
            "-y",
            "stores: []",
            "-p",
            "table_prefix",
            "00_environment_check-privacy",
            "-p",
            "check_writer_eras",
            "False",
            str(config.NOTEBOOKS_DIR / "00_environment_check.ipynb"),
            str(tmp_path / "00.ipynb"),
        ],
        cwd=config.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert _refused(log) == [], "notebook 00 tried to reach beyond loopback"


def test_every_way_in_sets_the_same_switches():
    """make, the kernel spec, the Docker image: the same variables as config.NO_TELEMETRY."""
    makefile = (config.ROOT / "Makefile").read_text()
    assert (
        dict(re.findall(r"^export (\w+) := (\S+)$", makefile, re.M)).items()
        >= config.NO_TELEMETRY.items()
    )
    dockerfile = (config.ROOT / "Dockerfile").read_text()
    (env_line,) = re.findall(r"^ENV (.*DO_NOT_TRACK.*)$", dockerfile, re.M)
    assert dict(pair.split("=") for pair in env_line.split()) == config.NO_TELEMETRY
    from helpers.jupyter import workbook

    spec = json.loads(
        (
            config.ROOT / ".venv/share/jupyter/kernels" / workbook.KERNEL_NAME / "kernel.json"
        ).read_text()
    )
    assert spec["env"] == config.NO_TELEMETRY
    assert (
        eras.run_in_era(
            eras.CURRENT,
            ["-c", "import os; print(os.environ.get('DAFT_ANALYTICS_ENABLED'))"],
            env={"PATH": os.environ["PATH"]},
        ).stdout.strip()
        == "0"
    )
