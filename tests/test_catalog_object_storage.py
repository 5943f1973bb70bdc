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
def creator(tmp_path_factory, stores):
    """Two servers, one per store, with the store registered; one Spark driver that creates tables."""
    if not server.built():
        pytest.fail(
            f"{server.BUILD_NAME} is not built: run `make uc-server` (make test does it first)."
        )
    running = {}
    try:
        for store in object_storage.STORES:
            uc, base = object_storage.start_server(tmp_path_factory.mktemp(f"uc-{store}"), store)
            running[store] = (uc, base)
            object_storage.register_store(UnityCatalog(uc.uri), store, base)
        spark = object_storage.session(
            running["azure"][0].uri,
            *object_storage.STORES,
            creates_tables=True,
            app_name="catalog-stores-creator",
        )
        yield spark, running
    finally:
        for uc, _ in running.values():
            uc.stop()


@pytest.mark.parametrize("store", object_storage.STORES)
def test_a_catalog_managed_table_on_object_storage_loses_nothing_in_a_race(
    creator, store, tmp_path
):
    spark, running = creator
    uc, base = running[store]
    catalog = UnityCatalog(uc.uri)
    name = f"orders_{store}"  # one creating driver names both tables in its session catalog
    staged, vended = object_storage.stage(catalog, name)
    # the catalog put the table under the store's managed root and vended a credential for exactly it
    assert staged.location.startswith(base + "/__unitystorage/"), staged.location
    assert [c["prefix"] for c in vended] == [staged.location], object_storage.masked(vended)
    assert vended[0]["operation"] == "READ_WRITE"
    wanted = {
        "azure": {"azure.sas-token"},
        "s3": {"s3.access-key-id", "s3.secret-access-key", "s3.session-token"},
    }
    assert wanted[store] <= set(vended[0]["config"]), object_storage.masked(vended)
    if store == "s3":  # minted by the emulator's STS (AssumeRole), not the key the server was given
        key = vended[0]["config"]["s3.access-key-id"]
        assert key.startswith("ASIA") and key != config.EMULATOR_AWS_ACCESS_KEY_ID, (
            object_storage.masked(vended)
        )

    spark.conf.set(tables.URI_KEY, uc.uri)
    object_storage.create(spark, catalog, staged)
    race = object_storage.run_race(
        catalog,
        store,
        name,
        staged.location,
        writers=WRITERS,
        batches_per_writer=BATCHES,
        run_dir=tmp_path / "race",
    )
    found = race.check
    assert not race.failed, race.failed
    assert not found.problems, found.summary()
    # read from the store: every batch once, one published commit per version, all ratified
    assert found.rows == {(w, b): 10 for w, bs in race.batches.items() for b in bs}, found.rows
    assert found.published == list(range(WRITERS * BATCHES + 1)), found.published
    assert found.catalog.latest_version == WRITERS * BATCHES and not found.unpublished
    keys = object_storage.list_keys(staged.location)
    assert f"_delta_log/{WRITERS * BATCHES:020d}.json" in keys
    assert sum(
        k.startswith("_delta_log/_staged_commits/") for k in keys
    ) == WRITERS * BATCHES + len(found.losers)
    # nothing was written to local disk: the server's folder holds no table
    assert not any((uc.root / "tables").iterdir())
    # crafted break: the store loses published version 1, and the checks see the gap
    object_storage.delete_object(staged.location, f"_delta_log/{1:020d}.json")
    broken = object_storage.check(catalog, name, tmp_path / "broken-copy")
    assert any("without a gap" in p for p in broken.problems), broken.summary()


def test_without_its_setting_the_patched_server_still_calls_aws_sts(tmp_path):
    """The patch changes nothing unless its setting is set: the same staging call on S3, from a
    server started without it, goes to AWS's STS (the finding)."""
    from helpers.catalog.rest import CatalogError
    from helpers.ground import local_processes

    base = object_storage.managed_root("s3", "unset")
    # nothing leaves the machine: HTTPS goes to a port of 127.0.0.1 where nothing listens
    environment = {
        server.STS_ENDPOINT_VARIABLE: "",
        "HTTPS_PROXY": f"http://{config.LOCALHOST}:{local_processes.free_port()}",
    }
    with server.start(tmp_path, managed_storage_root=base, environment=environment) as uc:
        catalog = UnityCatalog(uc.uri)
        object_storage.register_store(catalog, "s3", base)
        with pytest.raises(CatalogError) as refused:
            object_storage.stage(catalog, "orders")
    assert refused.value.status == 404
    assert f"https://sts.{config.names().aws_region}.amazonaws.com/" in str(refused.value)
