"""Delta Spark 3.3.2 on Spark 3.5 (helpers.ground.eras.GLUE_SPARK): its session settings, and notebook
09's check with its drivers: several drivers lose commits with the default S3 log store and none
with the DynamoDB log store (heavy: four JVMs of the era's own environment, ``make spark-era``)."""

import pytest

from helpers.ground import eras
from helpers.runs import audit, driver_jobs, runner
from helpers.spark import releases, sessions
from helpers.stores import services, storage, tables

GLUE = eras.SPARK_ERAS[eras.GLUE_SPARK]


def test_each_spark_era_names_its_own_release_of_delta_and_scala():
    assert (GLUE.delta_version, GLUE.spark_line, GLUE.scala) == ("3.3.2", "3.5", "2.12")
    assert eras.SPARK_ERAS[eras.CURRENT_SPARK].in_kernel
    assert releases.running().name == eras.CURRENT_SPARK  # the kernel's pyspark is 4.2
    assert GLUE.requirements.name == "spark-delta-3.3.2.txt" and GLUE.requirements.is_file()


def test_a_session_of_another_era_is_refused_with_the_python_that_runs_it():
    with pytest.raises(sessions.SessionError, match=r"delta-spark-3\.3\.2 .*its own Python"):
        sessions.spark_conf("s3", spark_era=eras.GLUE_SPARK)
    with pytest.raises(sessions.SessionError, match="Unknown Spark era 'delta-spark-3.4'"):
        sessions.spark_conf("s3", spark_era="delta-spark-3.4")
    assert sessions.spark_conf("local", spark_era=eras.CURRENT_SPARK)["spark.master"]


def test_an_era_not_installed_names_the_command_that_installs_it(monkeypatch, tmp_path):
    from helpers.ground import config

    monkeypatch.setattr(config, "ENVS_DIR", tmp_path)
    with pytest.raises(eras.EraError, match="Run `make spark-era`"):
        eras.python_for(eras.GLUE_SPARK)


@pytest.mark.heavy
def test_several_delta_spark_3_3_drivers_lose_commits_without_the_dynamodb_log_store_and_none_with_it():
    services.require("s3", "dynamodb")
    storage.ensure_bucket()
    storage.ensure_lock_table()
    gate = driver_jobs.DataFirstGate()
    races = {}
    try:
        for name, options, max_wait_s in (
            ("default", tables.s3_storage_options(), 120.0),
            ("dynamodb", tables.s3_storage_options(locking_provider="dynamodb"), 3.0),
        ):
            storage.remove_table(tables.s3_uri(f"test-spark-era/{name}"))
            runner.create_table(
                tables.s3_uri(f"test-spark-era/{name}"), tables.s3_storage_options()
            )
            gate.hold(together=2, max_wait_s=max_wait_s, version=1)
            run = runner.run_writers(
                tables.s3_uri(f"test-spark-era/{name}", scheme="s3a"),
                gate.route(options),
                n=2,
                engine="spark",
                era=eras.GLUE_SPARK,
                timeout_s=900,
                progress=False,
            )
            races[name] = (run, audit.audit(run))
    finally:
        gate.close()
    for run, checked in races.values():
        assert run.outcomes == {"committed": 2, "failed": 0}
        commits = checked.commits
        engines = set(commits.loc[commits["version"] > 0, "engine"])
        assert engines == {"Apache-Spark/3.5.5 Delta-Lake/3.3.2"}, engines
    default_run, default = races["default"]
    assert sorted(default_run.reported_versions) == [1, 1]  # both told they committed version 1
    assert default.rows_lost == default.rows_expected // 2 and len(default.silent_losses) == 1
    assert default.versions_per_commit[1] == 2  # the second PUT replaced the first
    dynamodb_run, dynamodb = races["dynamodb"]
    assert sorted(dynamodb_run.reported_versions) == [1, 2]
    assert dynamodb.rows_lost == 0 and dynamodb.max_commits_per_file == 1
