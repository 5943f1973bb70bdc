"""helpers.jupyter.lab_check, the parts that need no browser: what it says when the browser is missing,
the notebook copy it opens, and its JupyterLab server, started from a folder 150 characters deep,
whose kernels answer over a websocket as the browser's do, and whose kernel that cannot start is
reported with its own error (`make lab-check` itself runs in CI after `make test`)."""

import asyncio
import json
import stat
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest

from helpers.ground import config
from helpers.jupyter import kernels, lab_check, lab_server, workbook
from tests.test_kernels import deep_folder


@pytest.fixture
def no_browser(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("WORKBOOK_CHROMIUM", raising=False)
    monkeypatch.delenv("WORKBOOK_CHROMEDRIVER", raising=False)
    return monkeypatch


def test_a_missing_browser_names_the_packages_and_the_settings(no_browser):
    with pytest.raises(lab_check.LabCheckError) as error:
        lab_check.browser_binaries()
    message = str(error.value)
    assert "chromium and chromedriver not found" in message
    assert "apt-get install chromium chromium-driver" in message
    assert "WORKBOOK_CHROMIUM" in message and "WORKBOOK_CHROMEDRIVER" in message


def test_a_setting_that_points_nowhere_is_named(no_browser, tmp_path):
    no_browser.setenv("WORKBOOK_CHROMIUM", str(tmp_path / "no-such-chrome"))
    with pytest.raises(
        lab_check.LabCheckError,
        match=r"WORKBOOK_CHROMIUM=.*no-such-chrome is not an executable file",
    ):
        lab_check.browser_binaries()


def test_binaries_named_by_the_settings_are_used(no_browser, tmp_path):
    for name in ("chrome", "driver"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(stat.S_IRWXU)
    no_browser.setenv("WORKBOOK_CHROMIUM", str(tmp_path / "chrome"))
    no_browser.setenv("WORKBOOK_CHROMEDRIVER", str(tmp_path / "driver"))
    assert lab_check.browser_binaries() == (str(tmp_path / "chrome"), str(tmp_path / "driver"))


def test_the_copy_has_no_outputs_its_own_table_and_the_workbook_kernel(tmp_path):
    copy = tmp_path / lab_check.NOTEBOOK
    lab_check._parameterized_copy(
        config.NOTEBOOKS_DIR / lab_check.NOTEBOOK, copy, lab_check.PARAMETERS
    )
    nb = nbformat.read(copy, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    committed = [
        c
        for c in nbformat.read(config.NOTEBOOKS_DIR / lab_check.NOTEBOOK, as_version=4).cells
        if c.cell_type == "code"
    ]
    assert len(code) == len(committed) + 1  # the injected parameters
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    injected = next(c for c in code if "injected-parameters" in c.metadata.get("tags", []))
    assert f"table_name = {json.dumps(lab_check.PARAMETERS['table_name'])}" in injected.source
    assert nb.metadata.kernelspec.name == workbook.KERNEL_NAME


def test_a_misspelt_parameter_is_refused(tmp_path):
    with pytest.raises(workbook.NotebookError, match="has no parameter tabel_name"):
        lab_check._parameterized_copy(
            config.NOTEBOOKS_DIR / lab_check.NOTEBOOK, tmp_path / "x.ipynb", {"tabel_name": "x"}
        )


@pytest.mark.parametrize(
    "prompt, ran", [("[7]:", True), ("[12]:", True), ("[ ]:", False), ("[*]:", False), ("", False)]
)
def test_a_prompt_says_whether_its_cell_ran(prompt, ran):
    assert bool(lab_check.PROMPT.match(prompt)) is ran


def test_the_token_is_not_on_the_command_line_and_the_sandbox_is_dropped_for_root_only(tmp_path):
    token = "0123456789abcdef"
    command = lab_server.lab_command(
        tmp_path / "nb", 8899, tmp_path, Path("/tmp/workbook-kernels-abcdefgh")
    )
    assert not any(token in part or "IdentityProvider.token" in part for part in command)
    assert set(kernels.lab_arguments(Path("/tmp/workbook-kernels-abcdefgh"))) <= set(
        command
    )  # Unix sockets: no TCP ports, no TCP warning
    assert lab_server.lab_environment(token, tmp_path)["JUPYTER_TOKEN"] == token
    assert "--no-sandbox" in lab_check.chromium_flags(euid=0)
    assert "--no-sandbox" not in lab_check.chromium_flags(euid=1000)


BROKEN_KERNEL = "broken-on-purpose"
HANG_BOUND_S = 300.0
"""How long a test waits for what the server reports before calling it hung: a bound on a hang on a
loaded machine, not a speed the test asserts (lab-check reads a kernel's death from the log as it
is written, whatever the clock)."""


@pytest.fixture
def deep_lab(tmp_path, monkeypatch):
    """lab-check's JupyterLab, its folder at least 150 characters deep, with one more kernel that
    cannot start (an error at its first line, as a broken environment gives)."""
    work = deep_folder(tmp_path)
    spec = tmp_path / "jupyter-path" / "kernels" / BROKEN_KERNEL / "kernel.json"
    spec.parent.mkdir(parents=True)
    spec.write_text(
        json.dumps(
            {
                "argv": [
                    sys.executable,
                    "-c",
                    "raise RuntimeError('this kernel is broken on purpose')",
                ],
                "display_name": "broken",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(spec.parent.parent.parent))
    (work / "notebooks").mkdir()
    with (
        kernels.socket_folder() as sockets,
        lab_server.Lab(work / "notebooks", work, sockets) as lab,
    ):
        yield lab


def _start_kernel(lab, name: str) -> str:
    request = urllib.request.Request(
        lab.url("api/kernels"), data=json.dumps({"name": name}).encode(), method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=HANG_BOUND_S) as answer:
            return json.load(answer)["id"]
    except urllib.error.HTTPError as refused:
        pytest.fail(
            f"the server refused to start kernel {name} ({refused}): {lab.kernel_trouble()}"
        )


async def _execute(lab, kernel_id: str, code: str) -> str:
    """Run ``code`` in the kernel through the server's websocket, as JupyterLab's page does; its result."""
    from tornado.websocket import websocket_connect

    socket = await websocket_connect(
        lab.url(f"api/kernels/{kernel_id}/channels").replace("http://", "ws://")
    )
    msg_id = uuid.uuid4().hex
    socket.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": "test",
                    "session": uuid.uuid4().hex,
                    "version": "5.3",
                    "date": "",
                },
                "parent_header": {},
                "metadata": {},
                "channel": "shell",
                "buffers": [],
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                },
            }
        )
    )
    while True:
        message = json.loads(await socket.read_message())
        if (
            message.get("parent_header", {}).get("msg_id") == msg_id
            and message["msg_type"] == "execute_result"
        ):
            socket.close()
            return message["content"]["data"]["text/plain"]


def _until(lab, done, bound_s: float):
    """Poll ``done()`` until it gives something, failing with the kernel's trouble as soon as the
    server's log shows one; ``bound_s`` only ends a hang."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if (result := done()) is not None:
            return result
        time.sleep(0.5)
    pytest.fail(f"nothing after {bound_s:.0f} s; the server's log:\n{lab.log.read_text()[-3000:]}")


def test_labs_kernel_starts_and_answers_from_a_deep_folder(deep_lab):
    assert len(str(deep_lab.work)) >= 150
    kernel_id = _start_kernel(deep_lab, workbook.KERNEL_NAME)
    answer = asyncio.run(
        asyncio.wait_for(_execute(deep_lab, kernel_id, "6 * 7"), timeout=lab_check.RUN_TIMEOUT_S)
    )
    assert answer == "42"
    assert deep_lab.kernel_trouble() is None
    assert _until(deep_lab, lambda: deep_lab.kernel_states() or None, HANG_BOUND_S) == ["idle"]


def test_a_kernel_that_cannot_start_is_reported_with_its_own_error_and_what_to_do(deep_lab):
    assert deep_lab.kernel_trouble() is None
    _start_kernel(deep_lab, BROKEN_KERNEL)
    trouble = _until(deep_lab, deep_lab.kernel_trouble, HANG_BOUND_S)
    assert (
        "the notebook's kernel did not start, or died (" in trouble
        and "KernelRestarter: restart" in trouble
    )
    assert "RuntimeError: this kernel is broken on purpose" in trouble
    assert "What to do: read the kernel's error above" in trouble
    assert f"The server's whole log: {config.shown(deep_lab.log)}." in trouble


@pytest.mark.parametrize(
    "error, advice",
    [
        (
            'zmq.error.ZMQError: ipc path "/x/kernel-1-ipc-1" is longer than 107 characters (sizeof(sockaddr_un.sun_path)).',
            "socket path is longer than this system allows",
        ),
        (
            "jupyter_client.kernelspec.NoSuchKernel: No such kernel named delta-lake-workbook",
            "run `make install`",
        ),
    ],
)
def test_the_advice_fits_the_error(error, advice):
    log = (
        f'[I 12:00 ServerApp] starting\nTraceback (most recent call last):\n  File "x"\n{error}\n'
        "[E 12:00 ServerApp] Uncaught exception POST /api/sessions?token=0123abcd (127.0.0.1)\n"
    )
    trouble = lab_server.kernel_trouble(log)
    assert error[:60] in trouble and advice in trouble
    assert "POST /api/sessions?token=[secret]" in trouble and "0123abcd" not in trouble
    assert lab_server.kernel_trouble("[I 12:00 ServerApp] Kernel started: 1234\n") is None
