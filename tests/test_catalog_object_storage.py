"""Catalog-managed tables on object storage, committed through the Unity Catalog server
(olai-uc-server 0.0.11 + workbook patch sts-endpoint, :mod:`helpers.catalog.server`):

* on Azure Blob (Azurite), through the server's own Azure vending (a SAS for the emulator's account);
* on S3 (the S3 emulator), through the patched build's setting that names the emulator's STS.

Each table is created through the catalog and raced by two Delta Spark drivers that hold only the
credential the catalog vends (:mod:`helpers.catalog.vended`); every check reads the store and the
catalog. One Spark driver creates both tables (one JVM, two servers), with the workbook's keys."""

from __future__ import annotations

import pytest

from helpers.catalog import object_storage, server, tables, vended
from helpers.catalog.rest import UnityCatalog
from helpers.ground import config
from helpers.spark import sessions

pytestmark = pytest.mark.usefixtures("stores")

WRITERS, BATCHES = 2, 2
PROVIDERS = {"azure": "AbfsVendedTokenProvider", "s3": "AwsVendedTokenProvider"}
"""Unity Catalog's own providers, which hand the vended credential to Hadoop's ABFS and S3A."""


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


@pytest.mark.parametrize("store", object_storage.STORES)
def test_a_catalog_managed_table_on_object_storage_loses_nothing_in_a_race(
    creator, store, tmp_path
):
    with object_storage.store_server(store, tmp_path / "server") as running:
        run = object_storage.race_on(
            creator,
            store,
            tmp_path,
            writers=WRITERS,
            batches_per_writer=BATCHES,
            running=running,
        )
        # the catalog put the table under the store's managed root and vended a credential for exactly it
        assert run.location.startswith(run.root + "/__unitystorage/"), run.location
        assert [c["prefix"] for c in run.vended] == [run.location], run.vended
        assert run.vended[0]["operation"] == "READ_WRITE"
        wanted = {
            "azure": {"azure.sas-token"},
            "s3": {"s3.access-key-id", "s3.secret-access-key", "s3.session-token"},
        }
        assert wanted[store] <= set(run.vended[0]["config"]), run.vended
        # S3: minted by the emulator's STS (AssumeRole), not the key the server was given
        assert run.sts_minted == (store == "s3"), run.vended
        found = run.race.check
        assert not run.race.failed, run.race.failed
        assert not found.problems, found.summary()
        # read from the store: every batch once, one published commit per version, all ratified
        assert found.rows == {(w, b): 10 for w, bs in run.race.batches.items() for b in bs}, (
            found.rows
        )
        assert found.published == list(range(WRITERS * BATCHES + 1)), found.published
        assert found.catalog.latest_version == WRITERS * BATCHES and not found.unpublished
        assert f"_delta_log/{WRITERS * BATCHES:020d}.json" in run.keys
        assert sum(
            k.startswith("_delta_log/_staged_commits/") for k in run.keys
        ) == WRITERS * BATCHES + len(found.losers)
        # nothing was written to local disk: the server's folder holds no table
        assert run.on_local_disk == []
        # every driver wrote with the credential the catalog vended, through Unity Catalog's
        # provider, and held no workbook key and no testing flag anywhere
        assert set(run.drivers) == {f"w{n}" for n in range(1, WRITERS + 1)}
        for writer, held in run.drivers.items():
            assert held["workbook_keys"] == [], (writer, held)
            assert held["testing_flag"] is None, (writer, held)
            assert held["credential"]["provider"] == PROVIDERS[store], held
            assert held["credential"]["expires"], held
            if store == "azure":  # the server signs Azurite's account a SAS for the container
                assert held["credential"]["sas"]["sr"] == "c", held
                assert "w" in held["credential"]["sas"]["sp"], held
            else:
                assert held["credential"]["key"] == "ASIA...", held
        # the credential lives the server's default lifetime, which it never overrides: minted
        # during the staging call (expiry times are whole seconds on Azure, hence the second)
        assert run.lifetime_s - run.staging_s - 1 <= vended.LIFETIME_S <= run.lifetime_s + 1, (
            run.lifetime_s,
            run.staging_s,
        )
        # writes outside the table's folder with the vended credential: on Azurite the container
        # SAS reaches the whole container and no other; moto refuses nothing
        outcome = {a["where"]: (a["refused"], a["status"]) for a in run.outside}
        if store == "azure":
            assert outcome["beside the table"] == (False, None), run.outside
            assert outcome["another container"][0] and outcome["another container"][1] == 403
        else:
            assert outcome == {
                "beside the table": (False, None),
                "beside the table, a made-up key": (False, None),
            }, run.outside
        assert all(a["why not refused"] for a in run.outside if not a["refused"]), run.outside
        # and what they wrote is gone again
        assert not [k for k in object_storage.list_keys(run.root) if "outside-the-table" in k]
        row = run.row()
        assert row["workbook keys in drivers"] == 0 and row["problems"] == 0, row
        # crafted break: the store loses published version 1, and the checks see the gap
        object_storage.delete_object(run.location, f"_delta_log/{1:020d}.json")
        broken = object_storage.check(
            UnityCatalog(running[0].uri), f"orders_{store}", tmp_path / "broken-copy"
        )
        assert any("without a gap" in p for p in broken.problems), broken.summary()


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
