"""The one home of the workbook's settings: paths, ports, names, credentials and versions.

Every other module and every notebook asks this module; nothing else hard-codes an endpoint.
Each setting can be overridden by an environment variable named in its comment, so the same
notebooks run against the native emulators, the docker-compose ones, or a real cloud account
(``WORKBOOK_PROFILE=cloud``).
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]
"""The workbook's top folder (the one holding README.md)."""

STATE_DIR = Path(os.environ.get("WORKBOOK_STATE_DIR", ROOT / ".state"))
"""Emulator state, pid files and logs. Ignored by git; ``make reset`` wipes it."""

CACHE_DIR = Path(os.environ.get("WORKBOOK_CACHE_DIR", ROOT / ".cache"))
"""Downloads kept between runs: wheels (uv), jars (Ivy), npm packages. Ignored by git."""

BUILD_DIR = ROOT / "build"
NOTEBOOKS_DIR = ROOT / "notebooks"
DATA_DIR = ROOT / "data"
LOCAL_TABLES_DIR = BUILD_DIR / "tables"
"""Local Delta tables the notebooks create (``make clean`` removes them)."""
ENVS_DIR = ROOT / ".envs"
"""One virtual environment per writer era (see helpers/ground/eras.py)."""

LOCALHOST = "127.0.0.1"
"""Every emulator binds here and nowhere else."""

PROFILES = ("local", "cloud")

NO_TELEMETRY = {"DO_NOT_TRACK": "1", "DAFT_ANALYTICS_ENABLED": "0", "SCARF_NO_ANALYTICS": "true"}
"""Set in every process the workbook starts: the notebooks' kernel (its kernel spec), every era
process (:mod:`helpers.ground.eras`), the tests, the ``make`` targets and docker-compose's JupyterLab.
Importing Daft otherwise sends its version, OS, Python and CPU to two hosts outside the machine
(``daft/scarf_telemetry.py``); ``DO_NOT_TRACK`` is the convention other tools honour too.
``tests/test_privacy.py`` checks that nothing the workbook runs connects beyond loopback."""


def without_telemetry(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's environment) with :data:`NO_TELEMETRY` added; a value
    the user set already is kept."""
    return {**NO_TELEMETRY, **(os.environ if environ is None else environ)}


def without_machine_paths(text: str) -> str:
    """Text with this folder's absolute path (also as a ``file://`` URI) replaced by ``<workbook>``,
    for printing commit files that record where the table lives."""
    root = str(ROOT)
    return text.replace(Path(root).as_uri(), "file://<workbook>").replace(root, "<workbook>")


def shown(path: Path | str) -> str:
    """A path as notebooks print it: relative to the workbook's folder, so outputs name no machine."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


MASKED = "<masked>"
_SECRET_KEY = re.compile(
    r"secret|token|password|(^|[._])(access[._])?key([._]|$)|_key$|key_id$", re.IGNORECASE
)


def is_secret(key: str) -> bool:
    """Does a storage option or Spark setting of this name hold a credential? (``AWS_SECRET_ACCESS_KEY``,
    ``AWS_ACCESS_KEY_ID``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``spark.hadoop.fs.s3a.secret.key``,
    ``spark.hadoop.fs.azure.account.key.<account>...``)"""
    return bool(_SECRET_KEY.search(key))


def masked(settings: dict[str, str]) -> dict[str, str]:
    """``settings`` as a notebook may show them: every credential's value replaced by :data:`MASKED`."""
    return {key: MASKED if is_secret(key) else value for key, value in settings.items()}


class ConfigError(RuntimeError):
    """A setting is missing or malformed; the message says which and how to fix it."""


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not a port number; use a whole number such as {default}."
        ) from None
    if not 1 <= value <= 65535:
        raise ConfigError(f"{name}={value} is outside 1-65535; use a free port such as {default}.")
    return value


def profile() -> str:
    """``local`` (emulators, the default) or ``cloud`` (real AWS/Azure from the environment)."""
    value = os.environ.get("WORKBOOK_PROFILE", "local").strip().lower()
    if value not in PROFILES:
        raise ConfigError(f"WORKBOOK_PROFILE={value!r} is not one of {', '.join(PROFILES)}.")
    return value


# --------------------------------------------------------------------------------------------
# Emulators (local profile). docker-compose.yml publishes the same ports; tests/test_compose.py
# checks that the two agree.
# --------------------------------------------------------------------------------------------

MOTO_DEFAULT_PORT = 5050  # not 5000: macOS' AirPlay receiver holds 5000
AZURITE_DEFAULT_PORT = 10000  # the port every Azure SDK assumes for the storage emulator


def moto_port() -> int:
    """Port of the moto server that plays S3 and DynamoDB (``WORKBOOK_MOTO_PORT``)."""
    return _env_int("WORKBOOK_MOTO_PORT", MOTO_DEFAULT_PORT)


def azurite_port() -> int:
    """Port of Azurite's Blob service (``WORKBOOK_AZURITE_PORT``)."""
    return _env_int("WORKBOOK_AZURITE_PORT", AZURITE_DEFAULT_PORT)


def moto_host() -> str:
    """Where moto runs: 127.0.0.1 natively; docker-compose's JupyterLab sets ``WORKBOOK_MOTO_HOST=moto``."""
    return os.environ.get("WORKBOOK_MOTO_HOST", LOCALHOST)


def azurite_host() -> str:
    """Where Azurite runs: 127.0.0.1 natively; docker-compose's JupyterLab sets ``WORKBOOK_AZURITE_HOST=azurite``."""
    return os.environ.get("WORKBOOK_AZURITE_HOST", LOCALHOST)


def moto_endpoint() -> str:
    return f"http://{moto_host()}:{moto_port()}"


S3_SERVERS = ("moto", "versitygw")
"""Which server plays S3 locally (``WORKBOOK_S3_SERVER``): moto (the default; it also plays
DynamoDB), or versitygw, a real S3 server (``make versitygw`` builds it), with DynamoDB still on moto."""
VERSITYGW_DEFAULT_PORT = 7070


def s3_server() -> str:
    """``moto`` or ``versitygw`` (``WORKBOOK_S3_SERVER``); a misspelling is an error that lists both."""
    value = os.environ.get("WORKBOOK_S3_SERVER", "moto").strip().lower() or "moto"
    if value not in S3_SERVERS:
        raise ConfigError(
            f"WORKBOOK_S3_SERVER={value!r} is not one of {', '.join(S3_SERVERS)}: unset it for moto, "
            "or set versitygw (`make versitygw` builds it)."
        )
    return value


@contextlib.contextmanager
def s3_server_chosen(name: str) -> Iterator[str]:
    """Within the block, ``name`` plays S3 (``WORKBOOK_S3_SERVER`` set, then restored): a benchmark
    measures one protocol on both servers in one run. Both must be running (with versitygw chosen,
    ``make services`` starts moto too, and moto answers S3 as well)."""
    if name not in S3_SERVERS:
        raise ConfigError(f"S3 server {name!r} is not one of {', '.join(S3_SERVERS)}.")
    before = os.environ.get("WORKBOOK_S3_SERVER")
    os.environ["WORKBOOK_S3_SERVER"] = name
    try:
        yield name
    finally:
        if before is None:
            os.environ.pop("WORKBOOK_S3_SERVER", None)
        else:
            os.environ["WORKBOOK_S3_SERVER"] = before


def versitygw_port() -> int:
    """Port of versitygw when it plays S3 (``WORKBOOK_VERSITYGW_PORT``)."""
    return _env_int("WORKBOOK_VERSITYGW_PORT", VERSITYGW_DEFAULT_PORT)


def versitygw_host() -> str:
    return os.environ.get("WORKBOOK_VERSITYGW_HOST", LOCALHOST)


def versitygw_endpoint() -> str:
    return f"http://{versitygw_host()}:{versitygw_port()}"


def s3_emulator_endpoint() -> str:
    """The local server playing S3: moto's endpoint, or versitygw's with ``WORKBOOK_S3_SERVER=versitygw``."""
    return versitygw_endpoint() if s3_server() == "versitygw" else moto_endpoint()


# The well-known, public credentials of the emulators. They open nothing outside this machine.
EMULATOR_AWS_REGION = "us-east-1"
EMULATOR_AWS_ACCESS_KEY_ID = "workbook"
EMULATOR_AWS_SECRET_ACCESS_KEY = "workbook-secret"
AZURITE_ACCOUNT_NAME = "devstoreaccount1"
AZURITE_ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def azurite_endpoint() -> str:
    """The emulator itself: ``http://<host>:<port>``."""
    return f"http://{azurite_host()}:{azurite_port()}"


def azurite_blob_endpoint() -> str:
    """Path-style Blob endpoint of the emulator account, as Azure SDKs expect it."""
    return f"{azurite_endpoint()}/{AZURITE_ACCOUNT_NAME}"


# --------------------------------------------------------------------------------------------
# The endpoints actually used, in either profile (error messages name them).
# --------------------------------------------------------------------------------------------

CLOUD_AWS_SETTINGS = "AWS_ENDPOINT_URL (unset for AWS itself), AWS_REGION, HTTPS_PROXY"
"""What to check when AWS does not answer in the cloud profile (boto3 and delta-rs read them)."""
CLOUD_AWS_CREDENTIALS = "the AWS credential chain (`aws sts get-caller-identity`: AWS_PROFILE, AWS_ACCESS_KEY_ID, SSO, an instance role)"
CLOUD_AZURE_SETTINGS = (
    "AZURE_STORAGE_ACCOUNT_NAME, AZURE_STORAGE_ENDPOINT (unset for Azure itself), HTTPS_PROXY"
)
CLOUD_AZURE_CREDENTIALS = 'AZURE_STORAGE_ACCOUNT_KEY, AZURE_CLIENT_* or `az login`, and the role in docs/running.md ("Real cloud")'


def aws_endpoint(service: str = "s3") -> str:
    """Where ``service`` (``s3`` or ``dynamodb``) requests go: the emulator locally; in the cloud
    profile ``AWS_ENDPOINT_URL_<SERVICE>`` or ``AWS_ENDPOINT_URL`` if set (boto3 and delta-rs read
    both), else AWS's regional endpoint."""
    if profile() == "local":
        return s3_emulator_endpoint() if service == "s3" else moto_endpoint()
    override = os.environ.get(f"AWS_ENDPOINT_URL_{service.upper()}") or os.environ.get(
        "AWS_ENDPOINT_URL"
    )
    return override or f"https://{service}.{names().aws_region}.amazonaws.com"


def blob_endpoint() -> str:
    """Where Azure Blob requests go: Azurite locally; in the cloud profile ``AZURE_STORAGE_ENDPOINT``
    if set (delta-rs reads it too), else the account's own endpoint."""
    if profile() == "local":
        return azurite_blob_endpoint()
    return (
        os.environ.get("AZURE_STORAGE_ENDPOINT")
        or f"https://{azure_account_name()}.blob.core.windows.net"
    )


# --------------------------------------------------------------------------------------------
# Names shared by the notebooks, docker-compose.yml and the real-cloud profile.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Names:
    s3_bucket: str
    azure_container: str
    dynamodb_lock_table: str
    aws_region: str


def names() -> Names:
    """Bucket, container, lock table and region (``WORKBOOK_S3_BUCKET``, ``WORKBOOK_AZURE_CONTAINER``,
    ``WORKBOOK_DYNAMODB_TABLE``, ``AWS_REGION``)."""
    return Names(
        s3_bucket=os.environ.get("WORKBOOK_S3_BUCKET", "delta-root"),
        azure_container=os.environ.get("WORKBOOK_AZURE_CONTAINER", "delta"),
        dynamodb_lock_table=os.environ.get("WORKBOOK_DYNAMODB_TABLE", "delta_log"),
        aws_region=os.environ.get(
            "AWS_REGION", os.environ.get("AWS_DEFAULT_REGION", EMULATOR_AWS_REGION)
        ),
    )


def azure_account_name() -> str:
    """The storage account: Azurite's in the local profile, ``AZURE_STORAGE_ACCOUNT_NAME`` in the cloud."""
    if profile() == "local":
        return AZURITE_ACCOUNT_NAME
    account = os.environ.get("AZURE_STORAGE_ACCOUNT_NAME")
    if not account:
        raise ConfigError(
            "WORKBOOK_PROFILE=cloud needs AZURE_STORAGE_ACCOUNT_NAME (an ADLS Gen2 account); "
            "credentials come from the Azure default chain (az login, a managed identity or AZURE_CLIENT_* variables)."
        )
    return account


# --------------------------------------------------------------------------------------------
# Versions that are not Python packages (those are pinned in pyproject.toml / uv.lock).
# --------------------------------------------------------------------------------------------

DELTA_JARS_VERSION = "4.4.0"
"""Delta Spark's jars. The delta-spark 4.4.1 wheel is byte-for-byte 4.4.0 but for its version
string, and 4.4.1 jars were never published to Maven Central, so the builder asks for 4.4.0
instead of letting ``configure_spark_with_delta_pip`` ask for a jar that does not exist."""

AWS_SDK_V2_VERSION = "2.35.4"
"""The AWS SDK v2 release hadoop-aws 3.5.0 is built against (its pom names the bundle of it);
Spark sessions fetch the modules they need at this version instead of the bundle."""

AZURITE_VERSION = "3.37.0"
"""Mirrored in package.json and docker-compose.yml (a test keeps them equal). The first release
that honours List Blobs' ``startFrom``, which deltalake 1.x uses to list ``_delta_log``; with
3.35.0 any append to a table at version 1 or later fails ("Invalid table version: 1"). Its
package declares Node.js 22, but it runs on Node.js 20, where the whole test suite passes."""

MOTO_VERSION = "5.2.5"
"""Mirrored in pyproject.toml and docker-compose.yml (a test keeps them equal)."""
