"""Catalog-managed tables on object storage, committed through the Unity Catalog server
(olai-uc-server 0.0.11 + workbook patch sts-endpoint, :mod:`helpers.catalog.server`):

* on Azure Blob (Azurite), through the server's own Azure vending (a SAS for the emulator's account);
* on S3 (the S3 emulator), through the patched build's setting that names the emulator's STS.

The race itself (two Delta Spark drivers holding only the credential the catalog vends, on each
store, every check read from the store and the catalog) is notebook 15's appendix C, which
`make test` runs and whose checks assert each store's layout, credential, provider, staged commits
and out-of-folder writes. Here: the check those drivers pass, shown failing on the driver that
holds the workbook's keys, and the patch's settings. That driver runs in a process of its own:
jars are fixed when a JVM starts, and another heavy file may already have started one in this
worker for a catalog on local disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.catalog import object_storage, server, server_build, tables, vended
from helpers.ground import config
from helpers.spark import sessions

pytestmark = pytest.mark.usefixtures("stores")

RESULT_MARK = "workbook-keys-found: "
CHILD_BOUND_S = 600  # a bound on a hung JVM, never a measure


def creator_child() -> None:
    """The driver that creates tables on both stores, built as every store's session, with the
    workbook's keys: prints where it holds them, then again with a key in its environment."""
    spark = tables.spark_session(
        "http://127.0.0.1:1/",  # each run names its own server (race_on)
        *object_storage.STORES,
        creates_tables=True,
        app_name="catalog-stores-creator",
    )
    found = {"as built": vended.workbook_keys_in(spark)}
    os.environ["AWS_SECRET_ACCESS_KEY"] = config.EMULATOR_AWS_SECRET_ACCESS_KEY
    found["with the key in the environment"] = vended.workbook_keys_in(spark)
    print(RESULT_MARK + json.dumps(found), flush=True)
    spark.stop()


def test_a_driver_with_the_workbooks_keys_fails_the_check():
    """Crafted break: the driver that creates tables holds the workbook's keys (its session is
    built as every store's, :func:`helpers.spark.sessions.spark_conf`), and the check the racing
    drivers pass finds them there; a key in the process's environment is found too."""
    if not server_build.ready():
        pytest.fail(
            f"{server_build.BUILD_NAME} is not built: run `make uc-server` (make test does it first)."
        )
    env = {k: v for k, v in os.environ.items() if k != "AWS_SECRET_ACCESS_KEY"}
    done = subprocess.run(
        [sys.executable, __file__],
        check=False,
        cwd=config.ROOT,
        env={**env, "PYTHONPATH": str(config.ROOT), "WORKBOOK_SPARK_LOG_LEVEL": "WARN"},
        capture_output=True,
        text=True,
        timeout=CHILD_BOUND_S,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_MARK)]
    assert done.returncode == 0 and lines, (
        done.returncode,
        done.stdout[-2000:],
        done.stderr[-3000:],
    )
    found = json.loads(lines[-1][len(RESULT_MARK) :])
    built, with_key = found["as built"], found["with the key in the environment"]
    assert {"Spark settings", "Hadoop settings"} <= set(built), built
    assert "process environment" not in built and "$AWS_SECRET_ACCESS_KEY" not in built, built
    assert {"process environment", "$AWS_SECRET_ACCESS_KEY"} <= set(with_key), with_key


def test_the_settings_a_driver_leaves_out_hold_every_workbook_key_and_no_endpoint():
    """What :func:`helpers.catalog.tables.spark_session` leaves out with ``store_keys=False``: every
    setting that holds one of the workbook's keys, and none that says where the stores are."""
    conf = sessions.spark_conf("azure", "s3")
    left_out = tables.workbook_keys("azure", "s3")
    for secret in (config.EMULATOR_AWS_SECRET_ACCESS_KEY, config.AZURITE_ACCOUNT_KEY):
        holders = {key for key, value in conf.items() if secret in value}
        assert holders and holders <= set(left_out), (secret, left_out)
    assert not [key for key in left_out if "endpoint" in key], left_out


def test_without_its_setting_the_patched_server_still_calls_aws_sts(tmp_path):
    """The patch changes nothing unless its setting is set: the same staging call on S3, from a
    server started without it, goes to AWS's STS (the finding)."""
    refused = object_storage.without_the_setting(tmp_path)
    assert refused.status == 404
    assert f"https://sts.{config.names().aws_region}.amazonaws.com/" in str(refused)


if __name__ == "__main__":
    creator_child()
