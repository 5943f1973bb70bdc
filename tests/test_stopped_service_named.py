"""A notebook that fails because an emulator stopped answering: ``make workbook`` and ``make test``
end with the sentence the notebook's running cell printed (helpers/stores/service_watch.py),
``moto (S3 + DynamoDB, 127.0.0.1:5050) stopped answering. Start it again with `make services` ...``,
not only with the client's ``EndpointConnectionError``.

Nothing here waits on a clock: moto is stopped (or never started) before the client asks, so
nothing listens on its port, and the client's error and the summary follow from that alone. moto
runs, when it does, on a free port with a state folder of the test's own.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from helpers.ground import config, local_processes
from helpers.jupyter import workbook
from helpers.stores import service_watch, services

pytestmark = pytest.mark.services


@pytest.fixture
def own_moto(monkeypatch, tmp_path):
    """moto's port is a free one and its state folder the test's own (inherited by the kernels and
    processes the test starts); the sentence the service watch says when nothing listens there. A
    moto a notebook started there is stopped afterwards."""
    monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(local_processes.free_port()))
    monkeypatch.setenv("WORKBOOK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(services.config, "STATE_DIR", tmp_path / "state")
    yield service_watch.stopped_message(services.endpoint(services.SERVICES["moto"]))
    services.down(["moto"], quiet=True)


def _notebook(*sources: str) -> str:
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"cell-{n}",
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for n, source in enumerate(sources)
    ]
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return json.dumps(
        {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}
    )


ASK_S3 = "from helpers.stores import storage\nstorage.s3_client().list_buckets()"


def test_make_workbook_ends_with_the_sentence_the_notebook_said(
    own_moto, tmp_path, monkeypatch, capsys
):
    """As a learner meets it: the notebook starts its moto, which then stops under a later cell."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "99_stopped.ipynb").write_text(
        _notebook(
            'from helpers.stores import services\nservices.require("s3")',
            "from helpers.stores import service_watch\n"
            'services.down(["moto"], quiet=True)\n'
            "service_watch.watch([]).check()  # the watch's next round, now\n" + ASK_S3,
        )
    )
    monkeypatch.setattr(workbook.config, "NOTEBOOKS_DIR", folder)
    assert workbook.main(["run", "99", "--into", str(tmp_path / "executed")]) == 1
    said = capsys.readouterr().err.strip().splitlines()
    assert "EndpointConnectionError" in said[-2]
    assert said[-1] == f"error: {own_moto}"
    executed = (tmp_path / "executed" / "99_stopped.ipynb").read_text()
    assert json.dumps(own_moto)[1:-1] in executed  # the same sentence the cell printed


def _pytest(notebook, *plugins: str) -> list[str]:
    """pytest on one notebook through nbval, with tests/conftest.py as a plugin or without it."""
    path = os.pathsep.join([str(config.ROOT / "tests"), str(config.ROOT)])
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            *plugins,
            "--nbval",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(notebook.parent),
            str(notebook),
        ],
        cwd=notebook.parent,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    return run.stdout.strip().splitlines()


def test_make_test_ends_with_the_sentence(own_moto, tmp_path):
    """Nothing listens on moto's port: the cell fails with the client's error, and pytest's last
    lines (before its count) name moto as the notebook's cell would; without the hook, they do
    not."""
    notebook = tmp_path / "99_stopped.ipynb"
    notebook.write_text(_notebook(ASK_S3))
    lines = _pytest(notebook, "-p", "conftest")
    assert lines[-2] == own_moto, "\n".join(lines[-8:])
    assert lines[-1].startswith("=") and "1 failed" in lines[-1]
    assert own_moto not in "\n".join(_pytest(notebook))  # the crafted break: no hook, no sentence


def test_a_failure_names_an_emulator_only_where_it_points_at_one(own_moto):
    host, port = config.LOCALHOST, int(os.environ["WORKBOOK_MOTO_PORT"])
    url = f'EndpointConnectionError: Could not connect to the endpoint URL: "http://{host}:{port}/"'
    assert workbook.stopped_services(url) == [own_moto]  # nothing listens there
    assert workbook.stopped_services(f"http://{host}:{port}1/") == []  # another port
    assert workbook.stopped_services("AssertionError: 2 != 3") == []
    with socket.create_server((host, port)):  # something answers there now
        assert workbook.stopped_services(url) == []
        assert workbook.stopped_services(f"cell 3 said:\n{own_moto}\n") == [own_moto]
