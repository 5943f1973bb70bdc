"""Notebook 09's lessons on a real Spark cluster: a standalone master and two workers on
127.0.0.1 (helpers/spark/cluster.py), every Spark session pointed at it with WORKBOOK_SPARK_MASTER.

The notebook asserts its own lessons (several jobs of one driver lose nothing; several drivers
with the default log store lose commits; the DynamoDB log store loses none; Spark beside delta-rs
1.5.1 through one lock table loses none; the conditional-put hazard). Here it must run through
without a failed cell, and the master must have run every driver of it as an application with
executors on the workers, so the lessons were shown on the cluster, not in local JVMs.
Run with `make cluster-check` (pytest --cluster tests/cluster)."""

import json

import pytest

from helpers.ground import config
from helpers.jupyter import workbook
from helpers.spark import cluster

NOTEBOOK = config.NOTEBOOKS_DIR / "09_spark_multi_cluster_s3.ipynb"
ON_THE_CLUSTER = {"n_mixed_spark": 3}
"""The mixed race (section 5) with three Spark drivers, not one: each must commit and be told so
(the notebook's check), and a driver once was told its append failed for an append in the log,
on this run with versitygw playing S3, before the log store class published a won claim's
commit until ``N.json`` exists. Three drivers a run put three such commits through that path."""


@pytest.fixture(scope="module")
def running_cluster():
    was_running = (
        cluster.read_state() is not None
        and cluster.master_state(cluster.read_state()["webui"]) is not None
    )
    state = cluster.up(quiet=True)
    yield state
    if not was_running:
        cluster.down(quiet=True)


def _parameters() -> dict:
    import papermill

    return {name: p["default"] for name, p in papermill.inspect_notebook(str(NOTEBOOK)).items()}


def test_notebook_09_lessons_hold_with_every_driver_on_the_cluster(
    running_cluster, monkeypatch, tmp_path, stores
):
    monkeypatch.setenv("WORKBOOK_SPARK_MASTER", running_cluster["master"])
    before = {app["id"] for app in cluster.applications(running_cluster)}
    execution = workbook.execute(NOTEBOOK, tmp_path / NOTEBOOK.name, ON_THE_CLUSTER)
    assert execution.ok, (
        f"notebook 09 failed on the cluster at {execution.failed_cell}: {execution.error}"
    )

    apps = [app for app in cluster.applications(running_cluster) if app["id"] not in before]
    p = {
        name: int(value)
        for name, value in {**_parameters(), **ON_THE_CLUSTER}.items()
        if name.startswith("n_")
    }
    # the kernel's own driver (section 2) and every writer process's driver: two races of
    # n_spark_writers, the mixed race's Spark drivers, and one Spark driver in each of the two hazard runs
    expected = 1 + 2 * p["n_spark_writers"] + p["n_mixed_spark"] + 2
    names = sorted(app["name"] for app in apps)
    assert len(apps) == expected, names
    assert "09-one-driver" in names
    assert sum(name.startswith("writer-") for name in names) == expected - 1, names
    assert {app["state"] for app in apps} == {"FINISHED"}, [(a["name"], a["state"]) for a in apps]
    assert all(app["cores"] == 1 for app in apps), [(a["name"], a["cores"]) for a in apps]

    # each application's executors ran on the workers: their folders are in the workers' work dirs
    executor_dirs = {p.parent.name for p in (config.STATE_DIR / "cluster").glob("worker-*/app-*/*")}
    assert {app["id"] for app in apps} <= executor_dirs

    saved = json.loads((tmp_path / NOTEBOOK.name).read_text())
    assert not [
        o for c in saved["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"
    ]
