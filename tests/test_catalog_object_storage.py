"""Catalog-managed tables on object storage, committed through the Unity Catalog server
(olai-uc-server 0.0.11 + workbook patch sts-endpoint, :mod:`helpers.catalog.server`):

* on Azure Blob (Azurite), through the server's own Azure vending (a SAS for the emulator's account);
* on S3 (the S3 emulator), through the patched build's setting that names the emulator's STS.

The race itself (two Delta Spark drivers holding only the credential the catalog vends, on each
store, every check read from the store and the catalog) is notebook 15's appendix C, which
`make test` runs and whose checks assert each store's layout, credential, provider, staged commits
and out-of-folder writes. Here: the check those drivers pass, shown failing on the driver that
holds the workbook's keys, and the patch's settings. One Spark driver creates tables on both
stores (its jars are fixed when its JVM starts), with the workbook's keys."""

from __future__ import annotations

import pytest

from helpers.catalog import object_storage, server, tables, vended
from helpers.ground import config
from helpers.spark import sessions

pytestmark = pytest.mark.usefixtures("stores")


@pytest.fixture(scope="module")
def creator(stores):
    """One Spark driver that creates tables on both stores (its jars are fixed when its JVM starts)."""
    if not server.built():
        pytest.fail(
            f"{server.BUILD_NAME} is not built: run `make uc-server` (make test does it first)."
        )
    return tables.spark_session(
        "http://127.0.0.1:1/",  # each run names its own server (race_on)
        *object_storage.STORES,
        creates_tables=True,
        app_name="catalog-stores-creator",
    )


def test_a_driver_with_the_workbooks_keys_fails_the_check(creator, monkeypatch):
    """Crafted break: the driver that creates tables holds the workbook's keys (its session is
    built as every store's, :func:`helpers.spark.sessions.spark_conf`), and the check the racing
    drivers pass finds them there; a key in the process's environment is found too."""
    found = vended.workbook_keys_in(creator)
    assert {"Spark settings", "Hadoop settings"} <= set(found), found
    assert "process environment" not in found and "$AWS_SECRET_ACCESS_KEY" not in found, found
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", config.EMULATOR_AWS_SECRET_ACCESS_KEY)
    found = vended.workbook_keys_in(creator)
    assert {"process environment", "$AWS_SECRET_ACCESS_KEY"} <= set(found), found


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
