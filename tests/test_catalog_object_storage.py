"""Catalog-managed tables on object storage, committed through the Unity Catalog server
(olai-uc-server 0.0.11 + workbook patch sts-endpoint, :mod:`helpers.catalog.server`):

* on Azure Blob (Azurite), through the server's own Azure vending (a SAS for the emulator's account);
* on S3 (the S3 emulator), through the patched build's setting that names the emulator's STS.

Each table is created through the catalog and raced by two Delta Spark drivers; every check reads
the store and the catalog. One Spark driver creates both tables (one JVM, two servers)."""

from __future__ import annotations

import pytest

from helpers.catalog import object_storage, server, tables
from helpers.catalog.rest import UnityCatalog
from helpers.ground import config

pytestmark = pytest.mark.usefixtures("stores")

WRITERS, BATCHES = 2, 2


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
        # crafted break: the store loses published version 1, and the checks see the gap
        object_storage.delete_object(run.location, f"_delta_log/{1:020d}.json")
        broken = object_storage.check(
            UnityCatalog(running[0].uri), f"orders_{store}", tmp_path / "broken-copy"
        )
        assert any("without a gap" in p for p in broken.problems), broken.summary()


def test_without_its_setting_the_patched_server_still_calls_aws_sts(tmp_path):
    """The patch changes nothing unless its setting is set: the same staging call on S3, from a
    server started without it, goes to AWS's STS (the finding)."""
    refused = object_storage.without_the_setting(tmp_path)
    assert refused.status == 404
    assert f"https://sts.{config.names().aws_region}.amazonaws.com/" in str(refused)
