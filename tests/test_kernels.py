"""helpers.jupyter.kernels: every kernel the workbook starts names its sockets in a short private folder,
so a clone (or a Jupyter runtime folder) however deep starts its kernels; where no folder is
short enough, kernels talk over TCP on 127.0.0.1 and the workbook says so once."""

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path

from helpers.ground import config
from helpers.jupyter import kernels, workbook
from helpers.machine import preflight

DEPTH = 150
"""How long a deep folder's absolute path is, at least, in these tests (a home folder's clone is
about 40; Jupyter's own socket names break past about 58)."""


def deep_folder(base: Path, depth: int = DEPTH) -> Path:
    """A folder under ``base`` whose absolute path is at least ``depth`` characters long."""
    folder = base
    while len(str(folder)) < depth:
        folder = folder / ("deep-" + "d" * 40)
    folder.mkdir(parents=True)
    return folder


def _notebook(source: str) -> dict:
    return {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": source,
            }
        ],
        "metadata": {"kernelspec": dict(workbook.KERNELSPEC)},
        "nbformat": 4,
        "nbformat_minor": 4,
    }


def test_the_limit_is_the_one_pyzmq_enforces():
    import zmq

    assert kernels.SOCKET_PATH_MAX == zmq.IPC_PATH_MAX_LEN


def test_the_socket_folder_is_private_short_and_removed_afterwards():
    with kernels.socket_folder() as folder:
        assert folder is not None and folder.is_dir()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert (
            kernels.fits(folder) and kernels.socket_path_length(folder) <= kernels.SOCKET_PATH_MAX
        )
        (folder / "k0123456789ab-1").write_text("a socket left behind")
    assert not folder.exists()


def test_a_deep_temporary_folder_falls_back_to_tmp_then_to_tcp_and_says_why_once(
    monkeypatch, tmp_path, capsys
):
    deep = deep_folder(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert kernels.candidate_parents() == [deep, Path("/tmp")]
    assert kernels.short_parent() == Path("/tmp")  # TMPDIR too deep (as macOS's can be): /tmp

    monkeypatch.setattr(kernels, "candidate_parents", lambda: [deep])
    monkeypatch.setattr(kernels, "_said", set())
    for _ in range(2):
        with kernels.socket_folder() as folder:
            assert folder is None
    said = capsys.readouterr().err
    assert said.count("note: kernels talk over TCP on 127.0.0.1") == 1
    assert str(deep) in said and "Set TMPDIR to a short folder" in said
    assert kernels.lab_arguments(None) == ["--KernelManager.transport=tcp"]
    assert kernels.papermill_kernel_manager(None)().transport == "tcp"


def test_a_kernel_manager_names_its_sockets_in_the_folder(tmp_path):
    manager = kernels.papermill_kernel_manager(Path("/tmp/workbook-kernels-abcdefgh"))()
    assert manager.transport == "ipc"
    assert os.path.dirname(manager.ip) == "/tmp/workbook-kernels-abcdefgh"
    assert (
        manager.ip != kernels.papermill_kernel_manager(Path("/tmp/workbook-kernels-abcdefgh"))().ip
    )  # one name per kernel
    arguments = kernels.lab_arguments(Path("/tmp/workbook-kernels-abcdefgh"))
    assert "--LabKernelManager.socket_folder=/tmp/workbook-kernels-abcdefgh" in arguments
    assert "--KernelManager.transport=ipc" in arguments
    assert (
        kernels.LabKernelManager.__name__ == "LabKernelManager"
    )  # what JupyterLab imports by name


def test_a_notebook_runs_from_a_deep_folder_over_unix_sockets(monkeypatch, tmp_path, capfd):
    """papermill's kernel, as ``make workbook`` starts it, from a folder 150 characters deep with
    Jupyter's runtime folder in it: Jupyter's own socket names would be past the limit there."""
    deep = deep_folder(tmp_path)
    assert not kernels.fits(
        deep / "runtime", kernels.JUPYTER_SOCKET_NAME
    )  # where the sockets would have gone
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(deep / "runtime"))
    monkeypatch.chdir(deep)
    used = []
    made = kernels.socket_folder

    @contextlib.contextmanager
    def recorded():
        with made() as folder:
            used.append(folder)
            yield folder

    monkeypatch.setattr(kernels, "socket_folder", recorded)
    source = deep / "talk.ipynb"
    source.write_text(json.dumps(_notebook("import os\nprint(6 * 7, len(os.getcwd()) > 0)")))
    done = workbook.execute(source, deep / "out.ipynb")
    assert done.ok, done.error
    assert "42 True" in json.dumps(json.loads(done.output.read_text())["cells"][0]["outputs"])
    assert (
        "without encryption" not in capfd.readouterr().err
    )  # ipykernel's warning for a kernel on TCP: none over IPC
    (folder,) = used
    assert (
        folder is not None and len(str(folder)) < 40 and not folder.exists()
    )  # short, and removed afterwards


def test_preflight_says_when_the_clone_is_too_deep_and_what_the_workbook_does(
    monkeypatch, tmp_path
):
    assert (
        kernels.preflight_note(Path("/srv/wb")) is None
    )  # shallow clone, short temporary folder: nothing to say
    deep = deep_folder(tmp_path)
    note = kernels.preflight_note(deep)
    assert f"this clone's path is {len(str(deep))} bytes long" in note
    assert f"/{kernels.FOLDER_PREFIX}XXXXXXXX/" in note and "nothing needs doing" in note
    monkeypatch.setattr(kernels, "candidate_parents", lambda: [deep])
    note = kernels.preflight_note(deep)
    assert "kernels talk over TCP on 127.0.0.1" in note and "Set TMPDIR" in note
    monkeypatch.setattr(config, "ROOT", deep)
    assert note in preflight.notes()


def test_make_lab_and_the_docker_image_start_jupyterlab_the_same_way():
    lab = next(
        line
        for line in (config.ROOT / "Makefile").read_text().splitlines()
        if "helpers.jupyter.kernels lab" in line
    )
    assert lab.strip() == "$(PY) -m helpers.jupyter.kernels lab $(LAB_DIR)"
    dockerfile = (config.ROOT / "Dockerfile").read_text()
    assert (
        'CMD [".venv/bin/python", "-m", "helpers.jupyter.kernels", "lab", "notebooks",'
        in dockerfile
    )
    assert "-m jupyter lab" not in (config.ROOT / "Makefile").read_text()  # no other way in


def test_a_folder_that_is_not_there_is_refused(capsys):
    assert kernels.main(["lab", "no-such-folder"]) == 2
    assert (
        "no-such-folder is not a folder: use notebooks (the default) or student"
        in capsys.readouterr().err
    )
