"""A Unity Catalog server for catalog-managed Delta tables (notebook 15): olai-uc-server (Rust,
Apache-2.0), a server that speaks Unity Catalog's REST API and its Delta API (``/delta/v1``, the
one Delta's own ``UCDeltaTokenBasedRestClient`` calls), built from its crate at a pinned version
into ``.cache/uc/`` and started on 127.0.0.1, its catalog in memory, tables on local disk under
the run's folder (or, with ``managed_storage_root``, on object storage: :mod:`helpers.catalog.object_storage`).

The build is **olai-uc-server 0.0.11 + workbook patch sts-endpoint** (:mod:`helpers.catalog.server_build`): the
crate's sources with one patch, ``patches/sts-endpoint.patch``, the fix that
``findings/olai-uc-server-s3-vending-only-through-aws-sts`` proposes, in the form of a setting of
the server's environment. With ``UC_SERVER_AWS_STS_ENDPOINT`` set, an ``aws_iam_role`` credential
mints through the STS at that address (and ``UC_SERVER_AWS_S3_ENDPOINT``, if set, is handed to
clients as the store's endpoint); without it the patched server does exactly what 0.0.11 does, so
one build serves every notebook.

In Python (what notebook 15 does)::

    uc_server = server.start(root)   # a UCServer; uc_server.uri is http://127.0.0.1:<port>
    ...
    uc_server.stop()                 # or at the interpreter's exit
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from helpers.catalog import server_build
from helpers.catalog.server_build import UCServerError
from helpers.ground import config

START_TIMEOUT_S = 60.0
STS_ENDPOINT_VARIABLE = "UC_SERVER_AWS_STS_ENDPOINT"
"""The patch's setting: the STS every ``aws_iam_role`` credential mints through (unset: AWS STS)."""
S3_ENDPOINT_VARIABLE = "UC_SERVER_AWS_S3_ENDPOINT"
"""The patch's second setting: the S3 endpoint handed to clients with the minted credentials."""


def config_text(root: Path, managed_storage_root: str | None = None) -> str:
    """The server's configuration: loopback only, its catalog in memory (gone when it stops), and
    local disk under ``root/tables`` the only local storage a table may live in (the server refuses
    every ``file://`` location outside its allowed roots). Managed tables go under
    ``managed_storage_root`` (an ``abfs://`` or ``s3a://`` URL), by default under ``root/tables``."""
    tables = (root / "tables").resolve()
    return json.dumps(
        {  # JSON is YAML
            "host": config.LOCALHOST,
            "backend": {"engine": "sqlite", "path": ":memory:"},
            "local_storage": {"allowed-roots": [str(tables)]},
            "managed_storage_root": managed_storage_root or tables.as_uri(),
            "ui": {"serve": False},
        },
        indent=1,
    )


def health(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@dataclass
class UCServer:
    """A running server: its root URI (what Delta's REST client takes as ``uri``), its process,
    and the folder of its tables and log."""

    uri: str
    root: Path
    process: subprocess.Popen = field(repr=False)

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def log(self) -> Path:
        return self.root / "uc-server.log"

    def stop(self) -> None:
        from helpers.ground import local_processes

        if self.process.poll() is None:
            local_processes.stop_process_group(self.process.pid)

    def __enter__(self) -> "UCServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(
    root: Path,
    *,
    managed_storage_root: str | None = None,
    environment: dict[str, str] | None = None,
) -> UCServer:
    """Start a server of its own on a free loopback port, its tables and log under ``root``;
    returns once it answers ``/health``. ``managed_storage_root``: managed tables on object storage
    instead (:func:`config_text`); ``environment``: variables added to the server's, such as
    :data:`STS_ENDPOINT_VARIABLE`."""
    from helpers.ground import local_processes

    if not server_build.ready():
        raise server_build.not_built()
    root = Path(root)
    (root / "tables").mkdir(parents=True, exist_ok=True)
    (root / "uc.yaml").write_text(config_text(root, managed_storage_root))
    port = local_processes.free_port()
    with open(root / "uc-server.log", "ab") as log:
        process = subprocess.Popen(
            [
                str(server_build.BINARY),
                "serve",
                "-c",
                str(root / "uc.yaml"),
                "--host",
                config.LOCALHOST,
                "--port",
                str(port),
                "--no-ui",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=root,
            env={**os.environ, **(environment or {})},
        )
    server = UCServer(f"http://{config.LOCALHOST}:{port}", root, process)
    atexit.register(server.stop)  # a kernel that ends without stopping it leaves no server behind
    deadline = time.monotonic() + START_TIMEOUT_S
    while not health(server.uri):
        if process.poll() is not None or time.monotonic() > deadline:
            server.stop()
            raise UCServerError(
                f"{server_build.CRATE} did not answer on {server.uri}/health (exit code {process.poll()}); "
                f"its log: {config.shown(server.log)}"
            )
        time.sleep(0.2)
    return server
