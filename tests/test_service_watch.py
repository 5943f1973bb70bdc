"""An emulator that stops answering under a running notebook is named at once, with the command
that brings it back, in the output of the cell that is running (helpers/stores/service_watch.py).

Real servers: a moto server of the test's own, on a free port with a state folder of its own, is
stopped and started again. The waits are bounded by what the watcher is asked to notice, never
by a tight clock: the test waits up to a minute for a message the watcher prints within seconds.
"""

from __future__ import annotations

import json
import time

import pytest

from helpers.ground import local_processes
from helpers.jupyter import workbook
from helpers.stores import service_watch, services

pytestmark = pytest.mark.services
PATIENCE_S = 60.0


@pytest.fixture
def own_settings(monkeypatch, tmp_path):
    """A port and state folder of this test's own for moto, not the workbook's; whatever moto the
    test started there is stopped afterwards."""
    monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(local_processes.free_port()))
    monkeypatch.setenv("WORKBOOK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(services.config, "STATE_DIR", tmp_path / "state")
    moto = services.SERVICES["moto"]
    yield service_watch.Endpoint("moto", ("s3", "dynamodb"), moto.host(), moto.port())
    services.down(["moto"], quiet=True)


@pytest.fixture
def own_moto(own_settings):
    """A moto of this test's own, answering."""
    services.up(["moto"], quiet=True)
    return own_settings


def until_said(watcher: service_watch.Watcher) -> list[str]:
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        if said := watcher.check():
            return said
        time.sleep(0.5)
    return []


def test_a_stopped_emulator_is_named_with_the_command_that_restarts_it(own_moto):
    watcher = service_watch.Watcher([own_moto])
    assert watcher.check() == []  # answering: nothing is said
    services.down(["moto"], quiet=True)
    said = until_said(watcher)
    assert said == [
        f"moto (S3 + DynamoDB, {own_moto.host}:{own_moto.port}) stopped answering. "
        "Start it again with `make services` in a terminal, then rerun this cell."
    ]
    assert watcher.check() == []  # said once, not every round
    services.up(["moto"], quiet=True)
    assert until_said(watcher) == [
        f"moto (S3 + DynamoDB, {own_moto.host}:{own_moto.port}) answers again."
    ]


def test_a_port_nobody_listens_on_is_refused_and_a_listening_one_is_not(own_moto):
    assert not service_watch.refused(own_moto)
    nobody = service_watch.Endpoint("moto", ("s3",), own_moto.host, local_processes.free_port())
    assert service_watch.refused(nobody)


def _cell(source: str) -> dict:
    return {
        "id": f"cell-{len(source)}",
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def test_in_a_notebook_the_running_cell_says_which_emulator_stopped(own_settings, tmp_path):
    """A notebook asks for S3 (``services.require``, which starts a moto of the test's own), then a
    later cell runs while that emulator stops: the cell's own output names it, long before any
    client would give up."""
    own_moto = own_settings
    notebook = {
        "cells": [
            _cell('from helpers.stores import services\nservices.require("s3")'),
            _cell(
                "import time\n"
                "from helpers.stores import service_watch\n"
                "t0 = time.monotonic()\n"
                'services.down(["moto"], quiet=True)\n'
                "t1 = time.monotonic()\n"
                f"deadline = time.monotonic() + {PATIENCE_S}\n"
                "while time.monotonic() < deadline and not service_watch._WATCHER.down:\n"
                "    time.sleep(0.5)\n"
                "time.sleep(2)  # the message is flushed to this cell's output\n"
                'print(f"cell done: stopped in {t1 - t0:.1f} s, named {time.monotonic() - t1 - 2:.1f} s later")'
            ),
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    source = tmp_path / "watch.ipynb"
    source.write_text(json.dumps(notebook))
    done = workbook.execute(source, tmp_path / "out.ipynb")
    assert done.ok, done.error
    cells = json.loads(done.output.read_text())["cells"]
    setup, running = ("".join("".join(o.get("text", "")) for o in c["outputs"]) for c in cells)
    assert f"moto: answering on {own_moto.host}:{own_moto.port}" in setup
    assert "stopped answering" not in setup
    assert (
        f"moto (S3 + DynamoDB, {own_moto.host}:{own_moto.port}) stopped answering. "
        "Start it again with `make services` in a terminal, then rerun this cell." in running
    )
    assert running.index("stopped answering") < running.index("cell done")
