"""helpers.ground.config: one home for ports, names and profiles; bad values give errors that say what to do."""

import pytest

from helpers.ground import config


def test_ports_default_and_override(monkeypatch):
    monkeypatch.delenv("WORKBOOK_MOTO_PORT", raising=False)
    assert config.moto_port() == config.MOTO_DEFAULT_PORT
    monkeypatch.setenv("WORKBOOK_MOTO_PORT", "5999")
    assert config.moto_endpoint().endswith(":5999")


@pytest.mark.parametrize(
    "value, fragment",
    [("abc", "not a port number"), ("70000", "outside 1-65535"), ("0", "outside")],
)
def test_bad_port_names_the_variable(monkeypatch, value, fragment):
    monkeypatch.setenv("WORKBOOK_AZURITE_PORT", value)
    with pytest.raises(config.ConfigError, match=fragment) as error:
        config.azurite_port()
    assert "WORKBOOK_AZURITE_PORT" in str(error.value)


def test_misspelled_profile_is_refused(monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROFILE", "clowd")
    with pytest.raises(config.ConfigError, match="local, cloud"):
        config.profile()


def test_cloud_profile_needs_an_azure_account(monkeypatch):
    monkeypatch.setenv("WORKBOOK_PROFILE", "cloud")
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    with pytest.raises(config.ConfigError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        config.azure_account_name()


def test_names_follow_the_environment(monkeypatch):
    monkeypatch.setenv("WORKBOOK_S3_BUCKET", "my-bucket")
    assert config.names().s3_bucket == "my-bucket"
    monkeypatch.delenv("WORKBOOK_S3_BUCKET")
    assert config.names() == config.Names(
        "delta-root", "delta", "delta_log", config.names().aws_region
    )


def test_shown_paths_name_no_machine():
    assert config.shown(config.ROOT / "build" / "tables" / "x") == "build/tables/x"
    assert config.shown("/elsewhere/x") == "/elsewhere/x"


def test_the_s3_server_is_moto_unless_versitygw_is_chosen(monkeypatch):
    """WORKBOOK_S3_SERVER picks who plays S3; DynamoDB stays on moto; a misspelling says what to set."""
    monkeypatch.delenv("WORKBOOK_S3_SERVER", raising=False)
    monkeypatch.delenv("WORKBOOK_PROFILE", raising=False)
    assert config.s3_server() == "moto"
    assert config.aws_endpoint("s3") == config.aws_endpoint("dynamodb") == config.moto_endpoint()
    monkeypatch.setenv("WORKBOOK_S3_SERVER", "versitygw")
    monkeypatch.setenv("WORKBOOK_VERSITYGW_PORT", "7171")
    assert config.aws_endpoint("s3") == "http://127.0.0.1:7171" == config.s3_emulator_endpoint()
    assert config.aws_endpoint("dynamodb") == config.moto_endpoint()
    monkeypatch.setenv("WORKBOOK_S3_SERVER", "minio")
    with pytest.raises(config.ConfigError, match="not one of moto, versitygw: unset it for moto"):
        config.s3_server()
