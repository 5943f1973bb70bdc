"""``make lab-check``: the workbook opened in JupyterLab in a real browser, as a learner opens it.

It starts JupyterLab on a free loopback port (:class:`helpers.jupyter.lab_server.Lab`: a fresh token, its
own folders, the kernels' sockets in a private temporary folder), drives headless
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
    python -m helpers.jupyter.lab_check                       # or: make lab-check

The check runs from a clone in any folder (:mod:`helpers.jupyter.kernels`). While the browser waits, it follows the server's log and
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
import shutil
import sys
import time
from pathlib import Path

from helpers.ground import config
from helpers.jupyter import kernels, lab_server, workbook
from helpers.jupyter.lab_server import Lab, kernel_failure

NOTEBOOK = "01_local_delta_table.ipynb"
PARAMETERS = {"table_name": "lab_check"}
"""Injected into the copy: its table is ``build/tables/01_local_delta_table/lab_check``."""
WORK_DIR = config.BUILD_DIR / "lab-check"
RUN_TIMEOUT_S = 900.0
"""Notebook 01 still running after this long is hung (it runs in about a minute)."""
KERNEL_START_TIMEOUT_S = 50.0
"""A kernel not connected and idle this long after the notebook opened never will be (it takes a
few seconds; Jupyter Server itself gives up waiting for its first answer after 60 s). A kernel that dies, or that the server cannot start, fails the check sooner: as
soon as the server's log or the kernel's state says so."""
CHROMIUM_FLAGS = (
    "--headless=new",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)
"""Headless, and nothing that reaches the network by itself (updates, sync, QUIC probes)."""


def chromium_flags(euid: int | None = None) -> tuple[str, ...]:
    """:data:`CHROMIUM_FLAGS`, plus ``--no-sandbox`` for root only (``euid``: this process's by
    default). Chromium refuses to start its sandbox as root ("Running as root without --no-sandbox
    is not supported"), and CI runs as root; as any other user the browser keeps its sandbox."""
    root = (os.geteuid() if euid is None else euid) == 0
    return (*CHROMIUM_FLAGS, "--no-sandbox") if root else CHROMIUM_FLAGS


class LabCheckError(lab_server.LabServerError):
    """The check could not run; the message says what to install or look at."""


def browser_binaries() -> tuple[str, str]:
    """(chromium, chromedriver): from WORKBOOK_CHROMIUM / WORKBOOK_CHROMEDRIVER or PATH."""
    found = {}
    for name, variable, commands in (
        ("chromium", "WORKBOOK_CHROMIUM", ("chromium", "chromium-browser")),
        ("chromedriver", "WORKBOOK_CHROMEDRIVER", ("chromedriver",)),
    ):
        given = os.environ.get(variable)
        if given:
            if not (os.path.isfile(given) and os.access(given, os.X_OK)):
                raise LabCheckError(
                    f"{variable}={given} is not an executable file: point it at {name}, or unset it to use the one on PATH."
                )
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


def _menu_command(browser, wait, menu: str, command: str) -> None:
    """Open a menu of the menu bar by its label and click the item that runs ``command``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen

    bar = browser.find_elements(By.CSS_SELECTOR, "#jp-menu-panel .lm-MenuBar-item")
    next(item for item in bar if item.text.strip() == menu).click()
    item = wait.until(
        seen.element_to_be_clickable((By.CSS_SELECTOR, f".lm-Menu-item[data-command='{command}']"))
    )
    if "lm-mod-disabled" in (
        item.get_attribute("class") or ""
    ):  # a click would do nothing, and the check would wait forever
        raise LabCheckError(
            f"{menu} > {item.text.strip()} is disabled in JupyterLab; see {config.shown(WORK_DIR / 'jupyterlab.log')}."
        )
    item.click()


PROMPT = re.compile(r"^\[(\d+)\]:$")
"""A code cell's prompt once it has run in this kernel: ``[7]:`` (``[ ]:`` not yet, ``[*]:`` running)."""


class KernelTrouble(Exception):
    """Raised inside a wait when the kernel died or never connected; its text says why."""


def _status_bar(browser) -> str:
    from selenium.webdriver.common.by import By

    return " / ".join(
        e.text
        for e in browser.find_elements(By.CSS_SELECTOR, ".jp-StatusBar-TextItem")
        if e.text.strip()
    )


def headless_browser(chromium: str, driver_path: str, profile: Path):
    """Chromium driven by chromedriver, headless, with a profile folder of its own and nothing that
    reaches the network by itself (:func:`chromium_flags`). The caller quits it."""
    from selenium import webdriver

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (*chromium_flags(), f"--user-data-dir={profile}"):
        options.add_argument(flag)
    return webdriver.Chrome(
        options=options, service=webdriver.ChromeService(executable_path=driver_path)
    )


def _watching(lab: Lab, condition):
    """``condition`` for a wait that first asks the server's log and the kernel's state
    (:meth:`Lab.kernel_trouble`): trouble ends the wait at once with :class:`KernelTrouble`."""

    def check(b):
        trouble = lab.kernel_trouble()
        if trouble:
            raise KernelTrouble(trouble)
        return condition(b)

    return check


def _wait_for_kernel(browser, lab: Lab) -> None:
    """Wait until the kernel connected and is idle, as the status bar says it ("<kernel> | Idle");
    before that the Run menu's commands are disabled. Not within :data:`KERNEL_START_TIMEOUT_S`:
    :class:`KernelTrouble` with the kernel's own error lines from the server's log."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        WebDriverWait(browser, KERNEL_START_TIMEOUT_S, poll_frequency=1).until(
            _watching(
                lab,
                lambda b: any(
                    e.text.strip().endswith("| Idle")
                    for e in b.find_elements(By.CSS_SELECTOR, ".jp-StatusBar-TextItem")
                ),
            )
        )
    except TimeoutException:
        raise KernelTrouble(
            kernel_failure(
                lab.log.read_text(encoding="utf-8", errors="replace"),
                f"the notebook's kernel has not connected {KERNEL_START_TIMEOUT_S:.0f} s after the notebook opened "
                f"(status bar: {_status_bar(browser) or 'empty'}; kernels: {', '.join(lab.kernel_states()) or 'none'})",
            )
            + f"\nThe server's whole log: {config.shown(lab.log)}."
        ) from None


def _prompts(browser) -> list[str]:
    """The code cells' input prompts as the page shows them (:data:`PROMPT`)."""
    from selenium.webdriver.common.by import By

    return [
        p.text.strip()
        for p in browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell .jp-InputPrompt")
    ]


def _run_all(browser, wait, lab: Lab, code_cells: int) -> list[int]:
    """Run all cells from the Run menu and wait until the kernel is idle and each of the
    ``code_cells`` shows an execution count; return the counts, in the page's order."""
    from selenium.webdriver.common.by import By

    _menu_command(browser, wait, "Run", "runmenu:run-all")

    def finished(b) -> bool:
        idle = b.find_elements(
            By.CSS_SELECTOR, ".jp-Notebook-ExecutionIndicator[data-status='idle']"
        )
        return (
            bool(idle)
            and len(shown := _prompts(b)) == code_cells
            and all(PROMPT.match(p) for p in shown)
        )

    wait.until(_watching(lab, finished))
    return [int(PROMPT.match(p).group(1)) for p in _prompts(browser)]


def _errors_shown(browser) -> int:
    """The error outputs on the page: a traceback is rendered as stderr with ANSI colours (a
    warning has none)."""
    from selenium.webdriver.common.by import By

    return len(
        browser.find_elements(
            By.CSS_SELECTOR,
            ".jp-Notebook .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'] .ansi-red-fg",
        )
    )


def _drive(
    lab: Lab, notebook: str, chromium: str, driver_path: str, screenshot: Path, saved: Path
) -> dict:
    """Open the notebook, run all cells from the Run menu, save from the File menu, take a
    screenshot; return what the page showed. Every wait also watches the kernel (:meth:`Lab.kernel_trouble`)."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as seen
    from selenium.webdriver.support.ui import WebDriverWait

    browser = headless_browser(chromium, driver_path, lab.work / "chromium-profile")
    try:
        browser.get(lab.url(f"lab/tree/{notebook}"))
        wait = WebDriverWait(browser, RUN_TIMEOUT_S, poll_frequency=1)
        wait.until(
            _watching(
                lab,
                seen.presence_of_element_located((By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell")),
            )
        )
        _wait_for_kernel(browser, lab)
        kernel_shown = browser.find_element(
            By.CSS_SELECTOR, ".jp-NotebookPanel-toolbar [data-jp-item-name='kernelName']"
        ).text
        code_cells = len(browser.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell"))
        counts = _run_all(browser, wait, lab, code_cells)
        errors_shown = _errors_shown(browser)
        before = saved.stat().st_mtime_ns
        _menu_command(browser, wait, "File", "docmanager:save")
        wait.until(lambda b: saved.stat().st_mtime_ns != before)
        browser.save_screenshot(str(screenshot))
        return {
            "kernel_shown": kernel_shown,
            "code_cells": code_cells,
            "counts": counts,
            "errors_shown": errors_shown,
        }
    except KernelTrouble as trouble:
        failed = screenshot.with_name("kernel-failed.png")
        browser.save_screenshot(str(failed))
        raise LabCheckError(f"{trouble} The page is in {config.shown(failed)}.") from None
    except TimeoutException:
        failed = screenshot.with_name("timed-out.png")
        browser.save_screenshot(str(failed))
        raise LabCheckError(
            f"JupyterLab did not get there within {RUN_TIMEOUT_S:.0f} s (status bar: {_status_bar(browser) or 'empty'}); "
            f"the page is in {config.shown(failed)}, the server's log in {config.shown(lab.log)}."
        ) from None
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
    errors = [
        o.get("ename", "?")
        for c in code
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]
    failures = []
    if len(code) != shown["code_cells"]:
        failures.append(
            f"code cells on the page: {shown['code_cells']}, in the notebook: {len(code)}"
        )
    saved_counts = [c.get("execution_count") for c in code]
    if shown["counts"] != list(range(1, len(code) + 1)):
        failures.append(
            f"prompts on the page after Run All: {shown['counts']}, not 1..{len(code)} in order"
        )
    if saved_counts != shown["counts"]:
        failures.append(
            f"execution counts in the saved notebook {saved_counts} differ from the page's {shown['counts']}"
        )
    if errors:
        failures.append(f"cells that raised: {errors}")
    if shown["errors_shown"]:
        failures.append(f"error outputs on the page: {shown['errors_shown']}")
    spec = saved["metadata"].get("kernelspec", {})
    if spec.get("name") != workbook.KERNEL_NAME:
        failures.append(
            f"kernel in the saved notebook: {spec.get('name')!r}, not {workbook.KERNEL_NAME!r}"
        )
    display_name = workbook.KERNELSPEC["display_name"]
    if shown["kernel_shown"] != display_name:
        failures.append(f"kernel in the toolbar: {shown['kernel_shown']!r}, not {display_name!r}")
    print(
        f"{notebook} in JupyterLab (headless Chromium): {len(code)} code cells run in {time.monotonic() - started:.0f} s, "
        f"{len(errors)} errors, kernel {shown['kernel_shown']!r}; screenshot {config.shown(WORK_DIR / 'notebook-01.png')}"
    )
    return failures


def main() -> int:
    try:
        failures = check()
    except lab_server.LabServerError as error:  # LabCheckError too
        print(f"error: {error}", file=sys.stderr)
        return 2
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
