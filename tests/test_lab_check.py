"""helpers.lab_check, the parts that need no browser: what it says when the browser is missing,
and the notebook copy it opens (`make lab-check` itself runs in CI after `make test`)."""

import json
import stat

import nbformat
import pytest

from helpers import config, lab_check, workbook


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
    with pytest.raises(lab_check.LabCheckError, match=r"WORKBOOK_CHROMIUM=.*no-such-chrome is not an executable file"):
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
    lab_check._parameterized_copy(config.NOTEBOOKS_DIR / lab_check.NOTEBOOK, copy, lab_check.PARAMETERS)
    nb = nbformat.read(copy, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    committed = [c for c in nbformat.read(config.NOTEBOOKS_DIR / lab_check.NOTEBOOK, as_version=4).cells if c.cell_type == "code"]
    assert len(code) == len(committed) + 1  # the injected parameters
    assert all(c.outputs == [] and c.execution_count is None for c in code)
    injected = next(c for c in code if "injected-parameters" in c.metadata.get("tags", []))
    assert f"table_name = {json.dumps(lab_check.PARAMETERS['table_name'])}" in injected.source
    assert nb.metadata.kernelspec.name == workbook.KERNEL_NAME


def test_a_misspelt_parameter_is_refused(tmp_path):
    with pytest.raises(workbook.NotebookError, match="has no parameter tabel_name"):
        lab_check._parameterized_copy(config.NOTEBOOKS_DIR / lab_check.NOTEBOOK, tmp_path / "x.ipynb", {"tabel_name": "x"})


@pytest.mark.parametrize("prompt, ran", [("[7]:", True), ("[12]:", True), ("[ ]:", False), ("[*]:", False), ("", False)])
def test_a_prompt_says_whether_its_cell_ran(prompt, ran):
    assert bool(lab_check.PROMPT.match(prompt)) is ran


def test_the_token_is_not_on_the_command_line_and_the_sandbox_is_dropped_for_root_only(tmp_path):
    token = "0123456789abcdef"
    command = lab_check.lab_command(tmp_path / "nb", 8899, tmp_path)
    assert not any(token in part or "IdentityProvider.token" in part for part in command)
    assert f"--KernelManager.transport={workbook.KERNEL_TRANSPORT}" in command  # no TCP ports, no TCP warning
    assert lab_check.lab_environment(token, tmp_path)["JUPYTER_TOKEN"] == token
    assert "--no-sandbox" in lab_check.chromium_flags(euid=0)
    assert "--no-sandbox" not in lab_check.chromium_flags(euid=1000)
