"""Which server answers on a port: each emulator answers a plain GET in its own way, so
:mod:`helpers.stores.services` can tell moto (with atomic writes, or without), Azurite and
versitygw from each other and from any other program holding the port.

Imports: :mod:`helpers.ground` and :mod:`helpers.stores.moto_server` (the header that marks it).
"""

from __future__ import annotations

import urllib.error
import urllib.request

from helpers.ground import config
from helpers.stores import moto_server


def _http_get(url: str, timeout: float = 2.0) -> tuple[int, dict[str, str], bytes] | None:
    """GET a URL; (status, headers, body), or None if nothing answers there."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()
    except (urllib.error.URLError, OSError, ValueError):
        return None


def identify_moto(host: str, port: int) -> str | None:
    # The dashboard page is small and constant; /moto-api/data.json would serialise all state.
    answer = _http_get(f"http://{host}:{port}/moto-api/")
    if answer is None or answer[0] != 200 or b"<title>Moto" not in answer[2]:
        return None
    if {k.lower(): v for k, v in answer[1].items()}.get(
        moto_server.MARK_HEADER
    ) == moto_server.MARK_VALUE:
        return "moto server (S3 + DynamoDB), writes atomic"
    return (
        "moto server (S3 + DynamoDB) WITHOUT atomic writes: two conditional writes that arrive together "
        "can both succeed, a loss real S3 and DynamoDB do not have; stop it and run `make services` "
        "(or `docker compose up -d moto`), which start helpers/stores/moto_server.py"
    )


def identify_azurite(host: str, port: int) -> str | None:
    answer = _http_get(f"http://{host}:{port}/{config.AZURITE_ACCOUNT_NAME}?comp=list")
    if answer is None:
        return None
    server = next((v for k, v in answer[1].items() if k.lower() == "server"), "")
    return server if server.startswith("Azurite-Blob") else None


def identify_versitygw(host: str, port: int) -> str | None:
    # An unsigned request gets an S3 error document, from a server that names itself
    answer = _http_get(f"http://{host}:{port}/")
    if answer is None or {k.lower(): v for k, v in answer[1].items()}.get("server") != "VERSITYGW":
        return None
    return "versitygw (a real S3 server)"
