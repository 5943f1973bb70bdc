"""helpers.spark.sessions: the Spark settings of every store, and a real local session."""

import pytest

from helpers.ground import config
from helpers.spark import install, sessions


def test_jar_versions_follow_what_is_installed():
    import pyspark

    assert sessions.delta_spark_package() == (
        f"io.delta:delta-spark_{'.'.join(pyspark.__version__.split('.')[:2])}_2.13:{config.DELTA_JARS_VERSION}"
    )
    assert (
        sessions.spark_packages("s3")[1]
        == f"org.apache.hadoop:hadoop-aws:{sessions.hadoop_version()}"
    )
    assert sessions.hadoop_version() == "3.5.0"  # pyspark 4.2.0 bundles Hadoop 3.5.0


def test_s3a_points_at_the_emulator():
    conf = sessions.spark_conf("s3")
    assert conf["spark.hadoop.fs.s3a.endpoint"] == config.moto_endpoint()
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.jars.ivy"].endswith(".cache/ivy")
    assert "hadoop-azure" not in conf["spark.jars.packages"]


def test_abfs_reaches_azurite_through_the_blob_endpoint():
    conf = sessions.spark_conf("azure")
    assert (
        conf["spark.hadoop.fs.azure.abfs.endpoint"]
        == f"{config.azurite_host()}:{config.azurite_port()}"
    )
    assert conf["spark.hadoop.fs.azure.fns.account.service.type"] == "BLOB"


def test_master_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SPARK_MASTER", "spark://cluster:7077")
    conf = sessions.spark_conf("local")
    assert conf["spark.master"] == "spark://cluster:7077"
    assert "spark.driver.bindAddress" not in conf


def test_unknown_store_is_refused():
    with pytest.raises(sessions.SessionError, match="choose from local, s3, azure, dynamodb"):
        sessions.spark_conf("gcs")
    with pytest.raises(sessions.SessionError, match='with "s3"'):
        sessions.spark_conf("dynamodb")


def test_dynamodb_commits_use_the_workbooks_log_store_locally_and_deltas_in_the_cloud(monkeypatch):
    local = sessions.spark_conf("s3", "dynamodb")
    assert local["spark.delta.logStore.s3a.impl"] == sessions.WORKBOOK_DYNAMODB_LOG_STORE
    assert local[sessions.DYNAMODB_ENDPOINT_KEY] == config.moto_endpoint()
    assert (
        local[f"{sessions.DYNAMODB_LOG_STORE_PREFIX}.ddb.tableName"]
        == config.names().dynamodb_lock_table
    )
    jar = local["spark.jars"]
    assert jar.endswith("workbook-log-store.jar")
    import zipfile

    assert (
        "workbook/storage/EndpointS3DynamoDBLogStore.class" in zipfile.ZipFile(jar).namelist()
    )  # compiled by javac
    assert sessions.spark_packages("s3", "dynamodb") == sessions.spark_packages(
        "s3"
    )  # nothing more to download locally
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    cloud = sessions.spark_conf("s3", "dynamodb")
    assert cloud["spark.delta.logStore.s3a.impl"] == sessions.DELTA_DYNAMODB_LOG_STORE
    assert sessions.DYNAMODB_ENDPOINT_KEY not in cloud and "spark.jars" not in cloud
    assert (
        f"io.delta:delta-storage-s3-dynamodb:{config.DELTA_JARS_VERSION}"
        in cloud["spark.jars.packages"]
    )


def test_s3_sessions_fetch_the_sdk_modules_not_its_bundle():
    """hadoop-aws declares the AWS SDK v2 bundle (686 MB); the sessions exclude it and ask for the
    modules S3A and the DynamoDB log store use, at the release hadoop-aws was built against."""
    conf = sessions.spark_conf("s3", "dynamodb")
    assert "software.amazon.awssdk:bundle" in conf["spark.jars.excludes"].split(",")
    asked = conf["spark.jars.packages"].split(",")
    for module in ("s3", "s3-transfer-manager", "sts", "dynamodb"):
        assert f"software.amazon.awssdk:{module}:{config.AWS_SDK_V2_VERSION}" in asked
    fetched = [
        p.name for p in (config.CACHE_DIR / "ivy" / "jars").glob("software.amazon.awssdk_*.jar")
    ]
    assert fetched and not [
        name for name in fetched if name.startswith("software.amazon.awssdk_bundle")
    ]


def test_the_bundle_an_earlier_install_fetched_is_pruned_and_nothing_else(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "CACHE_DIR", tmp_path)
    jars, cache = (
        tmp_path / "ivy" / "jars",
        tmp_path / "ivy" / "cache" / "software.amazon.awssdk" / "bundle" / "jars",
    )
    jars.mkdir(parents=True)
    cache.mkdir(parents=True)
    (jars / "software.amazon.awssdk_bundle-2.35.4.jar").write_bytes(b"x" * 1000)
    (cache / "bundle-2.35.4.jar").write_bytes(b"x" * 500)
    kept = jars / "software.amazon.awssdk_s3-2.35.4.jar"
    kept.write_bytes(b"x" * 10)
    assert install.prune_unused_jars() == 1500
    assert [p.name for p in jars.iterdir()] == [kept.name] and not cache.exists()
    assert install.prune_unused_jars() == 0


def test_cloud_profile_spark_conf_uses_no_emulator_endpoint_or_key(monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "realaccount")
    conf = sessions.spark_conf("s3", "azure")
    assert (
        "spark.hadoop.fs.s3a.endpoint" not in conf
        and "spark.hadoop.fs.azure.abfs.endpoint" not in conf
    )
    assert not any("secret" in k for k in conf)


@pytest.mark.spark
def test_a_local_session_round_trip_then_other_jars_need_a_restart(tmp_path, capfd):
    spark = sessions.spark_session("local", app_name="test-sessions")
    try:
        spark.range(3).write.format("delta").save(str(tmp_path / "t"))
        assert spark.read.format("delta").load(str(tmp_path / "t")).count() == 3
        assert ":: resolution report ::" not in capfd.readouterr().err, (
            "JVM console output belongs in the log"
        )
        assert sessions.spark_session("local") is spark
        with pytest.raises(sessions.SessionError, match="Restart the kernel"):
            sessions.spark_session("s3")
    finally:
        spark.stop()
