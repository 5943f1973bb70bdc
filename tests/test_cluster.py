"""helpers.spark.cluster without starting Spark: what a session asks of a cluster on this machine, the
commands the master and workers run, and the errors a user meets first. The cluster itself is
started and used by `make cluster-check` (tests/cluster/)."""

import socket

import pytest

from helpers.ground import config
from helpers.spark import cluster, sessions
from helpers.writers import spark_engine


@pytest.fixture
def private_state(monkeypatch, tmp_path):
    monkeypatch.setattr(config, "STATE_DIR", tmp_path / "state")
    return tmp_path / "state"


def test_a_session_on_the_local_cluster_is_reachable_by_its_executors(monkeypatch):
    monkeypatch.setenv("WORKBOOK_SPARK_MASTER", cluster.master_url())
    conf = sessions.spark_conf("local")
    assert conf["spark.master"] == "spark://127.0.0.1:7077"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == config.LOCALHOST


@pytest.mark.parametrize(
    "master, here",
    [
        ("spark://127.0.0.1:7077", True),
        ("spark://localhost:7078", True),
        ("spark://cluster:7077", False),
        ("local[*]", False),
        ("yarn", False),
    ],
)
def test_only_a_standalone_master_on_loopback_is_this_machine(master, here):
    assert sessions.on_this_machine(master) is here


def test_writer_drivers_join_the_cluster_instead_of_a_local_jvm(monkeypatch):
    from helpers import writers as w
    from tests.test_writer_spark import _spec

    spec = w.WriterSpec.from_dict(_spec())
    assert spark_engine.SparkEngine.session_conf(spec)["spark.master"] == "local[1]"
    monkeypatch.setenv("WORKBOOK_SPARK_MASTER", "spark://127.0.0.1:7077")
    conf = spark_engine.SparkEngine.session_conf(spec)
    assert "spark.master" not in conf  # spark_conf's, the cluster's, applies


def test_master_and_workers_run_pysparks_own_launcher(private_state):
    master = cluster.master_command("127.0.0.1", 7077, 8080)
    assert master[0].endswith("pyspark/bin/spark-class") and master[1] == cluster.MASTER_CLASS
    assert (
        master[master.index("--host") + 1] == "127.0.0.1"
        and master[master.index("--port") + 1] == "7077"
    )
    worker = cluster.worker_command("127.0.0.1", cluster.master_url(), 8081, private_state / "w")
    assert worker[1] == cluster.WORKER_CLASS and worker[-1] == "spark://127.0.0.1:7077"
    assert worker[worker.index("--cores") + 1] == str(cluster.WORKER_CORES)
    properties = (private_state / "cluster" / "spark-cluster.conf").read_text()
    assert (
        "spark.deploy.defaultCores 1" in properties
    )  # several applications at once, one core each


def test_a_busy_master_port_says_how_to_move_it(private_state, monkeypatch):
    with socket.socket() as busy:
        busy.bind((config.LOCALHOST, 0))
        busy.listen()
        monkeypatch.setenv("WORKBOOK_SPARK_MASTER_PORT", str(busy.getsockname()[1]))
        with pytest.raises(
            cluster.ClusterError, match="taken by another program.*WORKBOOK_SPARK_MASTER_PORT"
        ):
            cluster.up(quiet=True)
    assert cluster.read_state() is None  # nothing started, nothing recorded


def test_no_java_is_said_before_anything_starts(private_state, monkeypatch):
    monkeypatch.setenv("PATH", str(private_state))
    with pytest.raises(cluster.ClusterError, match="Java is not on PATH"):
        cluster.up(quiet=True)


def test_without_a_cluster_down_and_status_say_so(private_state, capsys):
    assert cluster.down() is False
    assert "not running" in cluster.status()
    with pytest.raises(cluster.ClusterError, match="make cluster"):
        cluster.applications()
