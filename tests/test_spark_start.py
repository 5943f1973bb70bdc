"""helpers.spark.spark_start: the jars Ivy resolved are remembered, and the class-data archive is optional."""

from __future__ import annotations

import pytest

from helpers.spark import spark_start

CONF = {
    "spark.jars.packages": "io.delta:delta-spark_4.2_2.13:4.4.0",
    "spark.jars.excludes": "x:y",
    "spark.jars": "/opt/own.jar",
    "spark.app.name": "t",
}


@pytest.fixture
def resolved_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(spark_start, "RESOLVED_DIR", tmp_path / "resolved")
    return tmp_path


def test_the_first_start_asks_ivy_and_later_ones_pass_the_jars_it_found(resolved_dir):
    first = spark_start.launch_conf(CONF)
    assert (
        first["spark.jars.packages"] == CONF["spark.jars.packages"]
        and first[spark_start.ASKED_PACKAGES] == CONF["spark.jars.packages"]
    )
    jars = [resolved_dir / "delta.jar", resolved_dir / "storage.jar"]
    for jar in jars:
        jar.write_bytes(b"jar")
    running = ",".join([jar.as_uri() for jar in jars] + ["file:///opt/own.jar"])
    spark_start.remember_resolved_jars(first, CONF, running)
    later = spark_start.launch_conf(CONF)
    assert "spark.jars.packages" not in later and "spark.jars.excludes" not in later
    assert later["spark.jars"].split(",") == [jar.as_uri() for jar in jars] + ["/opt/own.jar"]
    assert later[spark_start.ASKED_PACKAGES] == CONF["spark.jars.packages"]
    jars[1].unlink()  # a jar gone from the Ivy cache: back to Ivy
    assert spark_start.launch_conf(CONF)["spark.jars.packages"] == CONF["spark.jars.packages"]


def test_a_session_that_skipped_ivy_records_nothing(resolved_dir):
    launch = {k: v for k, v in CONF.items() if k != "spark.jars.packages"}
    spark_start.remember_resolved_jars(launch, CONF, "file:///opt/other.jar")
    assert not (resolved_dir / "resolved").exists()


def test_the_class_archive_can_be_turned_off(monkeypatch, tmp_path):
    archive = tmp_path / "spark.jsa"
    archive.write_bytes(b"cds")
    monkeypatch.setattr(spark_start, "class_archive", lambda: archive)
    assert spark_start.class_archive_options() == [f"-XX:SharedArchiveFile={archive}"]
    monkeypatch.setenv("WORKBOOK_SPARK_CDS", "0")
    assert spark_start.class_archive_options() == []
    monkeypatch.delenv("WORKBOOK_SPARK_CDS")
    archive.unlink()
    assert spark_start.class_archive_options() == []


def test_a_new_session_removes_the_scratch_folders_of_processes_that_are_gone(
    tmp_path, monkeypatch
):
    import os
    import subprocess
    import sys

    monkeypatch.setattr(spark_start, "SCRATCH_DIR", tmp_path)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / str(gone.pid) / "userFiles-x").mkdir(parents=True)  # a killed driver's jars
    (tmp_path / str(os.getppid())).mkdir()  # a running process's
    (tmp_path / "notes").mkdir()  # not a process's folder
    assert spark_start.scratch_dir() == tmp_path / str(os.getpid())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([str(os.getppid()), "notes"])
    assert spark_start.launch_conf({"spark.app.name": "x"})["spark.local.dir"] == str(
        tmp_path / str(os.getpid())
    )


def test_drivers_keep_a_full_size_code_cache_with_the_first_compiler_tier_only():
    """C1 alone gets a 48 MB code cache, which a driver running for minutes fills; the JVM then
    cannot link the method handles a task needs and Spark stops the driver (spark_start's text)."""
    import subprocess

    flags = subprocess.run(
        ["java", *spark_start.DRIVER_JVM_OPTIONS, "-XX:+PrintFlagsFinal", "-version"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    sizes = {
        line.split()[1]: int(line.split()[3])
        for line in flags.splitlines()
        if line.split()[1:2] in (["ReservedCodeCacheSize"], ["TieredStopAtLevel"])
    }
    assert sizes["TieredStopAtLevel"] == 1
    assert sizes["ReservedCodeCacheSize"] >= 240 * 2**20
