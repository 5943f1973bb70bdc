"""helpers.jupyter.parameters: a notebook refuses misspelt or unusable parameters before anything runs."""

from __future__ import annotations

import pytest

from helpers.ground import config
from helpers.jupyter import parameters, workbook

RULES = {
    "n_writers": parameters.whole(minimum=2, why="one writer has nobody to race"),
    "table_name": parameters.text(),
}


def _kernel(injected: str | None = None, **values) -> dict:
    """A kernel's namespace after the parameters cell (and papermill's injected cell, if any)."""
    history = ["", 'n_writers = 8\ntable_name = "people"']
    if injected is not None:
        history.append(injected)
    return {"In": history, "n_writers": 8, "table_name": "people", **values}


def test_declared_parameters_with_good_values_pass():
    parameters.check(_kernel(), **RULES)
    parameters.check(_kernel("# Parameters\nn_writers = 3\n", n_writers=3), **RULES)


def test_a_misspelt_injected_parameter_names_what_the_notebook_accepts():
    with pytest.raises(
        parameters.ParameterError,
        match=r"Unknown parameter\(s\) n_writer: this notebook accepts n_writers, table_name",
    ):
        parameters.check(_kernel("# Parameters\nn_writer = 4\n", n_writer=4), **RULES)


def test_variables_of_an_earlier_run_are_not_taken_for_parameters():
    """Re-running the setup cell in JupyterLab after Run All: other globals are no parameters."""
    parameters.check(_kernel(table_uri="s3://delta-root/t", rows=80), **RULES)


@pytest.mark.parametrize(
    "values, message",
    [
        (
            {"n_writers": 1},
            "n_writers=1 cannot be used; n_writers must be a whole number >= 2: one writer has nobody to race",
        ),
        ({"n_writers": "8"}, "n_writers='8' cannot be used"),
        ({"n_writers": True}, "n_writers=True cannot be used"),
        (
            {"table_name": "a/b"},
            "table_name='a/b' cannot be used; table_name must be a non-empty name without '/'",
        ),
    ],
)
def test_a_value_that_cannot_show_the_lesson_says_what_is_needed_and_why(values, message):
    with pytest.raises(
        parameters.ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        parameters.check(_kernel(**values), **RULES)


def test_rules_describe_themselves():
    assert parameters.whole(1, 7).accepts(7) and not parameters.whole(1, 7).accepts(8)
    assert parameters.choice(["a"]).accepts("a") and not parameters.choice(["a"]).accepts("b")
    assert parameters.subset(["local", "s3"]).accepts([]) and not parameters.subset(
        ["local"]
    ).accepts(["gs"])
    assert parameters.positive().accepts(0.5) and not parameters.positive().accepts(0)
    assert parameters.flag().accepts(False) and not parameters.flag().accepts(0)


def test_every_notebook_checks_exactly_its_declared_parameters():
    """The names passed to parameters.check are the names of the notebook's parameters cell."""
    import ast
    import json

    import papermill

    for path in workbook.notebooks():
        declared = set(papermill.inspect_notebook(str(path)))
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        calls = [
            node
            for node in ast.walk(ast.parse("".join(code[1]["source"])))
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "check"
        ]
        assert len(calls) == 1, (
            f"{path.name}: the cell after the parameters must call parameters.check once"
        )
        assert {k.arg for k in calls[0].keywords} == declared, path.name


@pytest.mark.parametrize(
    "given, message",
    [
        (
            {"n_writer": 4},
            "Unknown parameter(s) n_writer: this notebook accepts n_writers, table_name, era",
        ),
        ({"n_writers": 1}, "n_writers=1 cannot be used; n_writers must be a whole number >= 2"),
    ],
)
def test_papermill_stops_notebook_05_before_anything_runs(tmp_path, given, message):
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook = config.NOTEBOOKS_DIR / "05_unsafe_rename_data_loss.ipynb"
    with pytest.raises(PapermillExecutionError) as failure:
        papermill.execute_notebook(
            str(notebook),
            str(tmp_path / "out.ipynb"),
            parameters=given,
            kernel_name=workbook.KERNEL_NAME,
            cwd=str(config.NOTEBOOKS_DIR),
            progress_bar=False,
            log_output=False,
        )
    assert failure.value.ename == "ParameterError" and message in failure.value.evalue
    assert (
        failure.value.exec_count == 3
    )  # parameters, papermill's injected cell, then the check: nothing else ran
