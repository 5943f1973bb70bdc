"""The JupyterLab server that ``make lab-check`` drives, and what its log says of its kernels.

:class:`Lab` starts JupyterLab on a free loopback port with a fresh token, and settings, config
and runtime folders of its own (a learner's are neither read nor written), its kernels' sockets
in a private temporary folder (:mod:`helpers.jupyter.kernels`), and stops it. :meth:`Lab.kernel_trouble`
reads the server's log and its kernels' states: a kernel that died, or that the server could not
start or reach, is said for a person by :func:`kernel_failure` (the kernel's own error lines and
what to do), so a check fails in seconds with the cause instead of waiting for a status bar.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers.ground import config, local_processes
from helpers.jupyter import kernels, workbook


class LabServerError(RuntimeError):
    """JupyterLab did not start or answer; the message says where its log is."""


LAB_START_TIMEOUT_S = 180.0
"""JupyterLab not answering after this long is broken (a hang detector, far above its start time)."""
KERNEL_TROUBLE = re.compile(
    r"KernelRestarter: restart|Uncaught exception \w+ /api/(?:kernels|sessions)|Kernel died|"
    r"Error (?:starting|connecting to) kernel"
)
"""A line of the server's log that means a kernel died or could not be started or reached."""
ERROR_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*: .+")
"""An exception's last line, as a traceback ends: ``zmq.error.ZMQError: ipc path ... is longer ...``."""
TOKEN = re.compile(r"token=\w+")
"""The server's token in a request its log quotes: not repeated in what the check prints."""
LAB_SETTINGS = {
    # every cell in the page, so the check sees each one's prompt (JupyterLab 4 renders on scroll)
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    # the check's own save is the only one
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    # no "notified about Jupyter news?" pop-up over the notebook in the screenshot
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
}
"""Settings of the check's JupyterLab, in its own settings folder (a learner's are not read)."""


def lab_command(folder: Path, port: int, work: Path, sockets: Path | None) -> list[str]:
    """The check's JupyterLab command line, its kernels' sockets in ``sockets`` (None: TCP). It
    holds no secret: the token is in the environment (:func:`lab_environment`), so ``ps`` does
    not show it to other users of the machine."""
    command = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--ServerApp.ip={config.LOCALHOST}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={folder}",
        f"--LabApp.user_settings_dir={work / 'lab-settings'}",
        f"--LabApp.workspaces_dir={work / 'lab-workspaces'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        *kernels.lab_arguments(sockets),
    ]
    if os.geteuid() == 0:
        command.append("--allow-root")
    return command


def lab_environment(token: str, work: Path) -> dict[str, str]:
    """The check's JupyterLab environment: its token (``JUPYTER_TOKEN``, which Jupyter Server reads
    when no token is given on the command line), and its own config and runtime folders, so a
    learner's Jupyter configuration is neither read nor written (the runtime folder holds the
    kernels' connection files; their sockets are elsewhere, see :func:`lab_command`)."""
    return {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(work / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime"),
    }


class Lab:
    """The check's JupyterLab server: its port, token, log, and what its log and kernels say."""

    def __init__(self, folder: Path, work: Path, sockets: Path | None):
        self.folder, self.work, self.sockets = folder, work, sockets
        self.port, self.token = local_processes.free_port(), secrets.token_hex(16)
        self.log = work / "jupyterlab.log"
        self.process: subprocess.Popen | None = None

    def url(self, path: str) -> str:
        return f"http://{config.LOCALHOST}:{self.port}/{path.lstrip('/')}{'&' if '?' in path else '?'}token={self.token}"

    def start(self) -> "Lab":
        settings = self.work / "lab-settings"
        for name, values in LAB_SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(values))
        command = lab_command(self.folder, self.port, self.work, self.sockets)
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=config.ROOT,
                env=lab_environment(self.token, self.work),
                start_new_session=True,
            )
        deadline = time.monotonic() + LAB_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LabServerError(
                    f"JupyterLab exited with code {self.process.returncode}; see {config.shown(self.log)}."
                )
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise LabServerError(
            f"JupyterLab did not answer on port {self.port} within {LAB_START_TIMEOUT_S:.0f} s; see {config.shown(self.log)}."
        )

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> "Lab":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def kernel_states(self) -> list[str]:
        """Each running kernel's state as the server reports it (``starting``, ``idle``, ``busy``,
        ``dead``...); empty if the server does not answer."""
        try:
            with urllib.request.urlopen(self.url("api/kernels"), timeout=10) as answer:
                return [k.get("execution_state", "?") for k in json.load(answer)]
        except (OSError, ValueError):
            return []

    def kernel_trouble(self) -> str | None:
        """What went wrong with a kernel, from the server's log and the kernels' states; None
        while nothing did."""
        text = self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""
        found = kernel_trouble(text)
        if found is None and "dead" in self.kernel_states():
            found = kernel_trouble(text, dead=True)
        return found and f"{found}\nThe server's whole log: {config.shown(self.log)}."


def kernel_trouble(log_text: str, dead: bool = False) -> str | None:
    """The trouble a JupyterLab server's log shows with a kernel (a restart, a request to start or
    reach one that the server could not serve), said for a person by :func:`kernel_failure`; None
    if the log shows none and ``dead`` is false (the server reports no kernel dead)."""
    sign = next(
        (
            TOKEN.sub("token=[secret]", line.strip())
            for line in log_text.splitlines()
            if KERNEL_TROUBLE.search(line)
        ),
        None,
    )
    if sign is None and not dead:
        return None
    return kernel_failure(
        log_text,
        f"the notebook's kernel did not start, or died ({sign or 'the server reports it dead'})",
    )


def kernel_failure(log_text: str, headline: str) -> str:
    """``headline``, then the last error lines the server and the kernel wrote to the log (or the
    log's last lines, if none), then what to do."""
    lines = log_text.splitlines()
    errors = list(
        dict.fromkeys(m.group(0).strip()[:400] for line in lines if (m := ERROR_LINE.match(line)))
    )[-3:]
    about_kernels = [line for line in lines if "kernel" in line.lower()][-5:]
    said = (
        "Its error:\n" + "\n".join(f"  {line}" for line in errors)
        if errors
        else "The log has no error line; what it says of kernels:\n"
        + "\n".join(f"  {line[:400]}" for line in about_kernels)
    )
    said = TOKEN.sub("token=[secret]", said)
    return f"{headline}.\n{said}\nWhat to do: {kernel_advice(errors)}"


def kernel_advice(errors: list[str]) -> str:
    """What to do about a kernel's error lines."""
    text = " ".join(errors)
    if "longer than" in text or "File name too long" in text:
        return (
            f"a kernel's socket path is longer than this system allows ({kernels.SOCKET_PATH_MAX} bytes). Run "
            "`make preflight`: it says where the workbook puts kernel sockets; set TMPDIR to a short folder "
            "such as /tmp and run the check again."
        )
    if "No such kernel" in text or "NoSuchKernel" in text:
        return (
            f"the workbook's kernel ({workbook.KERNEL_NAME}) is not registered: run `make install`."
        )
    if not errors:
        return (
            "the kernel's process started but never answered. Start it alone to see where it waits: "
            "`.venv/bin/python -m ipykernel_launcher --help` should return at once; then `make lab` and open notebook 01."
        )
    return (
        "read the kernel's error above. If it is an import error, `make install` repairs the environment; "
        "`make lab` starts the same server, where opening notebook 01 shows the kernel start."
    )
