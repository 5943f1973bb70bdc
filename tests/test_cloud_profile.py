"""The real-cloud profile (WORKBOOK_PROFILE=cloud), pointed where a new user's settings might point
it: at an endpoint that does not answer (a closed loopback port) or at an emulator that refuses
the keys. Every failure is a StorageError that names the endpoint actually used and the cloud
settings to check, never the emulators' ports or `make services`; and it comes at once, before
any era's writer process starts. (No emulator's own settings are used: the emulators stand in
for AWS and Azure, reached through the standard AWS_ENDPOINT_URL and AZURE_STORAGE_ENDPOINT.)"""

import uuid

import pytest

from helpers.ground import config, eras
from helpers.runs import runner
from helpers.stores import services, storage, store_check, tables

LOCAL_ADVICE = (
    "make services",
    "helpers.stores.services up",
    "WORKBOOK_MOTO_PORT",
    "WORKBOOK_AZURITE_PORT",
)


@pytest.fixture
def cloud(monkeypatch):
    """The cloud profile with AWS keys in the environment (as a user's shell would have them)."""
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWORKBOOKBADKEY00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    for variable in (
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL_S3",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AZURE_STORAGE_ACCOUNT_KEY",
    ):
        monkeypatch.delenv(variable, raising=False)
    return monkeypatch


def _says_cloud(message: str, endpoint: str, *settings: str) -> None:
    assert endpoint in message, message
    assert "WORKBOOK_PROFILE=cloud" in message, message
    for setting in settings:
        assert setting in message, message
    for local in LOCAL_ADVICE:
        assert local not in message, message


def test_closed_aws_endpoint_is_named_with_the_settings_to_check(cloud, free_port):
    endpoint = f"http://{config.LOCALHOST}:{free_port()}"
    cloud.setenv("AWS_ENDPOINT_URL", endpoint)
    assert config.aws_endpoint("s3") == config.aws_endpoint("dynamodb") == endpoint
    with pytest.raises(storage.StorageError, match="S3 does not answer") as s3_error:
        storage.ensure_bucket()
    _says_cloud(str(s3_error.value), endpoint, "AWS_ENDPOINT_URL", "AWS_REGION")
    with pytest.raises(storage.StorageError, match="DynamoDB does not answer") as dynamodb_error:
        storage.ensure_lock_table()
    _says_cloud(str(dynamodb_error.value), endpoint, "AWS_ENDPOINT_URL")


def test_create_table_in_era_raises_instead_of_reporting(cloud, free_port):
    """The era's own process would report the failure as a result (a dict); the probe raises first."""
    endpoint = f"http://{config.LOCALHOST}:{free_port()}"
    cloud.setenv("AWS_ENDPOINT_URL", endpoint)
    options = tables.s3_storage_options(locking_provider="dynamodb")
    assert (
        "AWS_ENDPOINT_URL" not in options
    )  # the cloud profile leaves endpoints to the environment, as delta-rs reads it
    with pytest.raises(storage.StorageError, match="does not answer") as error:
        runner.create_table_in_era(
            f"s3://{config.names().s3_bucket}/cloud-check/t", options, era=eras.DYNAMODB_INTEROP
        )
    _says_cloud(str(error.value), endpoint, "AWS_ENDPOINT_URL")


def test_closed_azure_endpoint_is_named(cloud, free_port):
    endpoint = f"http://{config.LOCALHOST}:{free_port()}/{config.AZURITE_ACCOUNT_NAME}"
    cloud.setenv("AZURE_STORAGE_ACCOUNT_NAME", config.AZURITE_ACCOUNT_NAME)
    cloud.setenv("AZURE_STORAGE_ACCOUNT_KEY", config.AZURITE_ACCOUNT_KEY)
    cloud.setenv("AZURE_STORAGE_ENDPOINT", endpoint)
    with pytest.raises(storage.StorageError, match="Azure Blob does not answer") as error:
        storage.ensure_container()
    _says_cloud(str(error.value), endpoint, "AZURE_STORAGE_ENDPOINT", "AZURE_STORAGE_ACCOUNT_NAME")


@pytest.mark.services
def test_wrong_azure_key_is_refused_by_name(cloud):
    cloud.setenv("WORKBOOK_PROFILE", "local")
    services.require("azure")
    cloud.setenv("WORKBOOK_PROFILE", "cloud")
    endpoint = config.azurite_blob_endpoint()  # read before the profile hides the emulator
    cloud.setenv("AZURE_STORAGE_ACCOUNT_NAME", config.AZURITE_ACCOUNT_NAME)
    cloud.setenv("AZURE_STORAGE_ACCOUNT_KEY", "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
    cloud.setenv("AZURE_STORAGE_ENDPOINT", endpoint)
    with pytest.raises(storage.StorageError, match="refused the credentials") as error:
        storage.ensure_container()
    _says_cloud(str(error.value), endpoint, "AZURE_STORAGE_ACCOUNT_KEY")
    with pytest.raises(storage.StorageError, match="refused the credentials") as probe_error:
        store_check.check_store(
            f"az://{config.names().azure_container}/t",
            {"account_name": config.AZURITE_ACCOUNT_NAME},
        )
    _says_cloud(str(probe_error.value), endpoint, "AZURE_STORAGE_ACCOUNT_KEY")


@pytest.mark.services
def test_wrong_aws_keys_are_refused_by_name(private_services, monkeypatch, cloud):
    """A moto of this test's own that checks every request's keys (moto's
    INITIAL_NO_AUTH_ACTION_COUNT=0), as AWS does; these keys are unknown to it."""
    monkeypatch.setenv("INITIAL_NO_AUTH_ACTION_COUNT", "0")
    monkeypatch.setenv("WORKBOOK_PROFILE", "local")
    services.up(["moto"], quiet=True)
    endpoint = config.moto_endpoint()
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    cloud.setenv("AWS_ENDPOINT_URL", endpoint)
    with pytest.raises(storage.StorageError, match="refused the credentials") as s3_error:
        storage.ensure_bucket(f"cloud-{uuid.uuid4().hex[:8]}")
    _says_cloud(str(s3_error.value), endpoint, "AWS credential chain")
    with pytest.raises(storage.StorageError, match="refused the credentials") as dynamodb_error:
        storage.ensure_lock_table()
    _says_cloud(str(dynamodb_error.value), endpoint, "AWS credential chain")
