"""No Spark driver that measures something runs with Spark's testing flag: the job of
:mod:`helpers.catalog.driver` refuses it (both ways Spark reads it), and every driver of
``helpers/catalog`` and ``helpers/lost_answer`` that starts a session either creates tables, in the
places listed here, or refuses the flag in the same function."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from helpers.catalog import driver
from helpers.ground import config

CREATORS = {
    ("helpers/lost_answer/catalog_path.py", "run"),
    ("helpers/catalog/long_run.py", "run"),
    ("helpers/catalog/outage.py", "measure"),
    ("helpers/catalog/cost.py", "main"),
}
"""The functions that may start a session with ``creates_tables=True``: a driver that creates the
tables it measures on and appends nothing (notebook 15's own driver is the other one)."""


def flag_problems(path: str, source: str) -> list[str]:
    """Each function of ``source`` that starts a catalog session (``tables.spark_session(...)``, the
    one that can set the flag: :func:`helpers.catalog.tables.session_conf`) with the
    testing flag without being a creator, or without it and without ``refuse_testing(spark)``."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef):
            continue
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
        names = {getattr(c.func, "attr", getattr(c.func, "id", None)) for c in calls}
        for call in calls:
            if ast.unparse(call.func) != "tables.spark_session":
                continue
            creates = any(
                k.arg == "creates_tables" and getattr(k.value, "value", None) is True
                for k in call.keywords
            )
            if creates and (path, node.name) not in CREATORS:
                problems.append(f"{path}:{node.lineno} {node.name} starts a driver with the flag")
            if not creates and "refuse_testing" not in names:
                problems.append(
                    f"{path}:{node.lineno} {node.name} starts a driver without refusing the flag"
                )
    return problems


def test_every_driver_of_the_catalog_refuses_the_testing_flag_or_only_creates_tables():
    found = []
    for folder in ("helpers/catalog", "helpers/lost_answer"):
        for module in sorted((config.ROOT / folder).glob("*.py")):
            relative = module.relative_to(config.ROOT).as_posix()
            found += flag_problems(relative, module.read_text())
    assert found == []


def test_the_check_fails_on_a_driver_that_sets_the_flag_or_forgets_to_refuse_it():
    crafted = (
        "def measure():\n    spark = tables.spark_session(uri, creates_tables=True)\n"
        "def forgets():\n    spark = tables.spark_session(uri)\n"
        "def refuses():\n    spark = tables.spark_session(uri)\n    refuse_testing(spark)\n"
    )
    assert flag_problems("x.py", crafted) == [
        "x.py:1 measure starts a driver with the flag",
        "x.py:3 forgets starts a driver without refusing the flag",
    ]


@pytest.mark.heavy  # a JVM each (make test-heavy): notebook 15's checks cover the job in make test
@pytest.mark.parametrize(
    "variable, value, shown",
    [
        ("SPARK_TESTING", "1", "SPARK_TESTING=1"),
        ("JAVA_TOOL_OPTIONS", "-Dspark.testing=true", "spark.testing=true"),
    ],
)
def test_the_job_refuses_to_start_with_the_flag_set_either_way(
    tmp_path: Path, monkeypatch, variable, value, shown
):
    monkeypatch.setenv(variable, value)
    with pytest.raises(driver.JobError, match=f"testing flag \\({shown}\\)"):
        driver.Job(tmp_path)


@pytest.mark.heavy
def test_the_job_starts_without_the_flag_and_says_so(tmp_path: Path):
    assert "SPARK_TESTING" not in os.environ
    with driver.Job(tmp_path) as job:
        assert job.testing_flag is None
        assert job.process.poll() is None
    assert job.process.poll() == 0
