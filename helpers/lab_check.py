"""``make lab-check``: the workbook opened in JupyterLab in a real browser, as a learner opens it.

It starts JupyterLab on a free loopback port (a fresh token, its own folder), drives headless
Chromium through chromedriver (Debian's ``chromium`` and ``chromium-driver``; Selenium from the
kernel's lock), opens notebook 01, runs all its cells from the Run menu, waits until the kernel
is idle and every cell has run, saves the notebook and takes a screenshot. Then it checks what
the browser produced: every code cell executed, no output is an error, and the kernel is the
workbook's, both in the saved notebook and in the toolbar the learner sees.

The notebook is a copy in ``build/lab-check/`` (the committed one keeps its outputs) with its
table under a name of its own (:data:`PARAMETERS`, injected as papermill does), so a check never
meets a test run's table; the browser's profile, JupyterLab's log and ``notebook-01.png`` are there too. Nothing is downloaded: the
browser and its driver come from the system's packages::

    sudo apt-get install chromium chromium-driver     # Debian and Ubuntu
    python -m helpers.lab_check                       # or: make lab-check

The kernel's sockets are in a private temporary folder (:mod:`helpers.kernels`), so the check
runs from a clone in any folder. While the browser waits, the check follows the server's log and
the kernel's state: a kernel that dies, that the server cannot start, or that has not connected
:data:`KERNEL_START_TIMEOUT_S` after the notebook opened fails the check at once, with the
kernel's own error lines and what to do.

``WORKBOOK_CHROMIUM`` and ``WORKBOOK_CHROMEDRIVER`` name other binaries (Chrome and its driver
of one version). Exit 0 if every check passed, 1 with each failed one named, 2 if it could not
run (no browser, JupyterLab not starting).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers import config, kernels, services, workbook

NOTEBOOK = "01_local_delta_table.ipynb"
PARAMETERS = {"table_name": "lab_check"}
"""Injected into the copy: its table is ``build/tables/01_local_delta_table/lab_check``."""
WORK_DIR = config.BUILD_DIR / "lab-check"
LAB_START_TIMEOUT_S = 180.0
"""JupyterLab not answering after this long is broken (a hang detector, far above its start time)."""
RUN_TIMEOUT_S = 900.0
"""Notebook 01 still running after this long is hung (it runs in about a minute)."""
KERNEL_START_TIMEOUT_S = 50.0
"""A kernel not connected and idle this long after the notebook opened never will be (it takes a
few seconds; Jupyter Server itself gives up waiting for its first answer after 60 s). A kernel that dies, or that the server cannot start, fails the check sooner: as
soon as the server's log or the kernel's state says so."""
KERNEL_TROUBLE = re.compile(r"KernelRestarter: restart|Uncaught exception \w+ /api/(?:kernels|sessions)|Kernel died|"
                            r"Error (?:starting|connecting to) kernel")
"""A line of the server's log that means a kernel died or could not be started or reached."""
ERROR_LINE = re.compile(r"^\s*(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*: .+")
"""An exception's last line, as a traceback ends: ``zmq.error.ZMQError: ipc path ... is longer ...``."""
TOKEN = re.compile(r"token=\w+")
"""The server's token in a request its log quotes: not repeated in what the check prints."""
CHROMIUM_FLAGS = ("--headless=new", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000")
"""Headless, and nothing that reaches the network by itself (updates, sync, QUIC probes)."""


def chromium_flags(euid: int | None = None) -> tuple[str, ...]:
    """:data:`CHROMIUM_FLAGS`, plus ``--no-sandbox`` for root only (``euid``: this process's by
    default). Chromium refuses to start its sandbox as root ("Running as root without --no-sandbox
    is not supported"), and CI runs as root; as any other user the browser keeps its sandbox."""
    root = (os.geteuid() if euid is None else euid) == 0
    return (*CHROMIUM_FLAGS, "--no-sandbox") if root else CHROMIUM_FLAGS


class LabCheckError(RuntimeError):
    """The check could not run; the message says what to install or look at."""


def browser_binaries() -> tuple[str, str]:
    """(chromium, chromedriver): from WORKBOOK_CHROMIUM / WORKBOOK_CHROMEDRIVER or PATH."""
    found = {}
    for name, variable, commands in (("chromium", "WORKBOOK_CHROMIUM", ("chromium", "chromium-browser")),
                                     ("chromedriver", "WORKBOOK_CHROMEDRIVER", ("chromedriver",))):
        given = os.environ.get(variable)
        if given:
            if not (os.path.isfile(given) and os.access(given, os.X_OK)):
                raise LabCheckError(f"{variable}={given} is not an executable file: point it at {name}, or unset it to use the one on PATH.")
            found[name] = given
        else:
            found[name] = next((path for path in map(shutil.which, commands) if path), None)
    missing = [name for name, path in found.items() if not path]
    if missing:
        raise LabCheckError(
            f"{' and '.join(missing)} not found. Install the system's packages (Debian/Ubuntu: `sudo apt-get install "
            "chromium chromium-driver`), or point WORKBOOK_CHROMIUM and WORKBOOK_CHROMEDRIVER at a Chrome and its driver."
        )
    return found["chromium"], found["chromedriver"]


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
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--ServerApp.ip={config.LOCALHOST}",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--ServerApp.root_dir={folder}", f"--LabApp.user_settings_dir={work / 'lab-settings'}",
               f"--LabApp.workspaces_dir={work / 'lab-workspaces'}", "--LabApp.news_url=",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", *kernels.lab_arguments(sockets)]
    if os.geteuid() == 0:
        command.append("--allow-root")
    return command


def lab_environment(token: str, work: Path) -> dict[str, str]:
    """The check's JupyterLab environment: its token (``JUPYTER_TOKEN``, which Jupyter Server reads
    when no token is given on the command line), and its own config and runtime folders, so a
    learner's Jupyter configuration is neither read nor written (the runtime folder holds the
    kernels' connection files; their sockets are elsewhere, see :func:`lab_command`)."""
    return {**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_CONFIG_DIR": str(work / "jupyter-config"),
            "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime")}


class Lab:
    """The check's JupyterLab server: its port, token, log, and what its log and kernels say."""

    def __init__(self, folder: Path, work: Path, sockets: Path | None):
        self.folder, self.work, self.sockets = folder, work, sockets
        self.port, self.token = services.free_port(), secrets.token_hex(16)
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
            self.process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=config.ROOT,
                                            env=lab_environment(self.token, self.work), start_new_session=True)
        deadline = time.monotonic() + LAB_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LabCheckError(f"JupyterLab exited with code {self.process.returncode}; see {config.shown(self.log)}.")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=5) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise LabCheckError(f"JupyterLab did not answer on port {self.port} within {LAB_START_TIMEOUT_S:.0f} s; see {config.shown(self.log)}.")

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
    sign = next((TOKEN.sub("token=[secret]", line.strip()) for line in log_text.splitlines() if KERNEL_TROUBLE.search(line)), None)
    if sign is None and not dead:
        return None
    return kernel_failure(log_text, f"the notebook's kernel did not start, or died ({sign or 'the server reports it dead'})")


def kernel_failure(log_text: str, headline: str) -> str:
    """``headline``, then the last error lines the server and the kernel wrote to the log (or the
    log's last lines, if none), then what to do."""
    lines = log_text.splitlines()
    errors = list(dict.fromkeys(m.group(0).strip()[:400] for line in lines if (m := ERROR_LINE.match(line))))[-3:]
    about_kernels = [line for line in lines if "kernel" in line.lower()][-5:]
    said = (f"Its error:\n" + "\n".join(f"  {line}" for line in errors) if errors else
            "The log has no error line; what it says of kernels:\n" + "\n".join(f"  {line[:400]}" for line in about_kernels))
    said = TOKEN.sub("token=[secret]", said)
    return f"{headline}.\n{said}\nWhat to do: {kernel_advice(errors)}"


def kernel_advice(errors: list[str]) -> str:
    """What to do about a kernel's error lines."""
    text = " ".join(errors)
    if "longer than" in text or "File name too long" in text:
        return (f"a kernel's socket path is longer than this system allows ({kernels.SOCKET_PATH_MAX} bytes). Run "
                "`make preflight`: it says where the workbook puts kernel sockets; set TMPDIR to a short folder "
                "such as /tmp and run the check again.")
    if "No such kernel" in text or "NoSuchKernel" in text:
        return f"the workbook's kernel ({workbook.KERNEL_NAME}) is not registered: run `make install`."
    if not errors:
        return ("the kernel's process started but never answered. Start it alone to see where it waits: "
                "`.venv/bin/python -m ipykernel_launcher --help` should return at once; then `make lab` and open notebook 01.")
    return ("read the kernel's error above. If it is an import error, `make install` repairs the environment; "
            "`make lab` starts the same server, where opening notebook 01 shows the kernel start.")


def _menu_command(browser, wait, menu: str, command: str) -> None:
    """Open a menu of the menu bar by its label and click the item that runs ``command``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen

    bar = browser.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item")
    next(item for item in bar if item.text.strip() == menu).click()
    item = wait.until(seen.element_to_be_clickable((By.CSS_SELECTOR, f".lm-Menu-item[data-command='{command}']")))
    if "lm-mod-disabled" in (item.get_attribute("class") or ""):  # a click would do nothing, and the check would wait forever
        raise LabCheckError(f"{menu} > {item.text.strip()} is disabled in JupyterLab; see {config.shown(WORK_DIR / 'jupyterlab.log')}.")
    item.click()


PROMPT = re.compile(r"^\[(\d+)\]:$")
"""A code cell's prompt once it has run in this kernel: ``[7]:`` (``[ ]:`` not yet, ``[*]:`` running)."""


class KernelTrouble(Exception):
    """Raised inside a wait when the kernel died or never connected; its text says why."""


def _status_bar(browser) -> str:
    from selenium.webdriver.common.by import By

    return " / ".join(e.text for e in browser.find_elements(By.CSS_SELECTOR, ".jp-StatusBar-TextItem") if e.text.strip())


def _drive(lab: Lab, notebook: str, chromium: str, driver_path: str, screenshot: Path, saved: Path) -> dict:
    """Open the notebook, run all cells from the Run menu, save from the File menu, take a
    screenshot; return what the page showed. Every wait also watches the kernel (:meth:`Lab.kernel_trouble`)."""
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*chromium_flags(), f"--user-data-dir={lab.work / 'chromium-profile'}"):
        options.add_argument(flag)
    browser = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=driver_path))

    def watching(condition):
        def check(b):
            trouble = lab.kernel_trouble()
            if trouble:
                raise KernelTrouble(trouble)
            return condition(b)
        return check

    try:
        browser.get(lab.url(f"lab/tree/{notebook}"))
        wait = WebDriverWait(browser, RUN_TIMEOUT_S, poll_frequency=1)
        wait.until(watching(seen.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell"))))
        # the kernel connected and idle, as the status bar says it ("<kernel> | Idle"); before that
        # the Run menu's commands are disabled
        try:
            WebDriverWait(browser, KERNEL_START_TIMEOUT_S, poll_frequency=1).until(watching(
                lambda b: any(e.text.strip().endswith("| Idle") for e in b.find_elements(By.CSS_SELECTOR, ".jp-StatusBar-TextItem"))))
        except TimeoutException:
            raise KernelTrouble(kernel_failure(
                lab.log.read_text(encoding="utf-8", errors="replace"),
                f"the notebook's kernel has not connected {KERNEL_START_TIMEOUT_S:.0f} s after the notebook opened "
                f"(status bar: {_status_bar(browser) or 'empty'}; kernels: {', '.join(lab.kernel_states()) or 'none'})")
                + f"\nThe server's whole log: {config.shown(lab.log)}.") from None
        kernel_shown = browser.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel-toolbar [data-jp-item-name='kernelName']").text
        code_cells = len(browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell"))
        _menu_command(browser, wait, "Run", "runmenu:run-all")

        def prompts(b) -> list[str]:
            return [p.text.strip() for p in b.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell .jp-InputPrompt")]

        def finished(b) -> bool:
            idle = b.find_elements(By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator[data-status='idle']")
            return bool(idle) and len(shown := prompts(b)) == code_cells and all(PROMPT.match(p) for p in shown)

        wait.until(watching(finished))
        counts = [int(PROMPT.match(p).group(1)) for p in prompts(browser)]
        # a traceback is rendered as stderr with ANSI colours (a warning has none)
        errors_shown = len(browser.find_elements(
            By.CSS_SELECTOR, ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'] .ansi-red-fg"))
        before = saved.stat().st_mtime_ns
        _menu_command(browser, wait, "File", "docmanager:save")
        wait.until(lambda b: saved.stat().st_mtime_ns != before)
        browser.save_screenshot(str(screenshot))
        return {"kernel_shown": kernel_shown, "code_cells": code_cells, "counts": counts, "errors_shown": errors_shown}
    except KernelTrouble as trouble:
        failed = screenshot.with_name("kernel-failed.png")
        browser.save_screenshot(str(failed))
        raise LabCheckError(f"{trouble} The page is in {config.shown(failed)}.") from None
    except TimeoutException:
        failed = screenshot.with_name("timed-out.png")
        browser.save_screenshot(str(failed))
        raise LabCheckError(f"JupyterLab did not get there within {RUN_TIMEOUT_S:.0f} s (status bar: {_status_bar(browser) or 'empty'}); "
                            f"the page is in {config.shown(failed)}, the server's log in {config.shown(lab.log)}.") from None
    finally:
        browser.quit()


def _parameterized_copy(source: Path, target: Path, parameters: dict) -> None:
    """``source`` with its outputs and execution counts cleared, so every prompt the page shows
    comes from this run, and ``parameters`` in a cell after its ``parameters`` cell (papermill's
    way); a name the notebook does not declare is refused."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    workbook.check_parameters(source, parameters)
    nb = load_notebook_node(str(source))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(parameterize_notebook(nb, parameters, kernel_name=workbook.KERNEL_NAME), target)


def check(notebook: str = NOTEBOOK) -> list[str]:
    """Run the check; return the failed checks (empty: all passed). Raises LabCheckError if it cannot run."""
    chromium, driver_path = browser_binaries()
    shutil.rmtree(WORK_DIR, ignore_errors=True)
    folder = WORK_DIR / "notebooks"
    folder.mkdir(parents=True)
    copy = folder / notebook
    _parameterized_copy(config.NOTEBOOKS_DIR / notebook, copy, PARAMETERS)
    with kernels.socket_folder() as sockets, Lab(folder, WORK_DIR, sockets) as lab:
        started = time.monotonic()
        shown = _drive(lab, notebook, chromium, driver_path, WORK_DIR / "notebook-01.png", copy)
    saved = json.loads(copy.read_text())
    code = [c for c in saved["cells"] if c["cell_type"] == "code"]
    errors = [o.get("ename", "?") for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    failures = []
    if len(code) != shown["code_cells"]:
        failures.append(f"code cells on the page: {shown['code_cells']}, in the notebook: {len(code)}")
    saved_counts = [c.get("execution_count") for c in code]
    if shown["counts"] != list(range(1, len(code) + 1)):
        failures.append(f"prompts on the page after Run All: {shown['counts']}, not 1..{len(code)} in order")
    if saved_counts != shown["counts"]:
        failures.append(f"execution counts in the saved notebook {saved_counts} differ from the page's {shown['counts']}")
    if errors:
        failures.append(f"cells that raised: {errors}")
    if shown["errors_shown"]:
        failures.append(f"error outputs on the page: {shown['errors_shown']}")
    spec = saved["metadata"].get("kernelspec", {})
    if spec.get("name") != workbook.KERNEL_NAME:
        failures.append(f"kernel in the saved notebook: {spec.get('name')!r}, not {workbook.KERNEL_NAME!r}")
    display_name = workbook.KERNELSPEC["display_name"]
    if shown["kernel_shown"] != display_name:
        failures.append(f"kernel in the toolbar: {shown['kernel_shown']!r}, not {display_name!r}")
    print(f"{notebook} in JupyterLab (headless Chromium): {len(code)} code cells run in {time.monotonic() - started:.0f} s, "
          f"{len(errors)} errors, kernel {shown['kernel_shown']!r}; screenshot {config.shown(WORK_DIR / 'notebook-01.png')}")
    return failures


def main() -> int:
    try:
        failures = check()
    except LabCheckError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
