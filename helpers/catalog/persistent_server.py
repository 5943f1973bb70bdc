"""The Unity Catalog server with its catalog in a SQLite file, which survives a restart (the
workbook's :func:`helpers.catalog.server.start` keeps it in memory): the configuration, the store
made once per folder, and a start that picks SQLite when the folder holds a database. The failure
scenarios (:mod:`helpers.catalog.failures`) restart a server on either.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

from helpers.catalog import server, server_build

DATABASE = "uc.sqlite"
KEY_FILE = "uc.key"


def _persistent_config(root: Path) -> str:
    """The workbook's configuration (:func:`server.config_text`) with the catalog in a SQLite file
    under ``root``, and the key the server seals its secrets with in a durable store (it refuses to
    start without one): random, made once per folder and kept beside the database."""
    key = root / KEY_FILE
    if not key.exists():
        key.write_text(base64.b64encode(os.urandom(32)).decode())
    settings = json.loads(server.config_text(root))
    settings["backend"] = {"engine": "sqlite", "path": str((root / DATABASE).resolve())}
    settings["encryption"] = {"active": {"id": "workbook", "key": key.read_text().strip()}}
    return json.dumps(settings, indent=1)


def start_on_store(root: Path) -> server.UCServer:
    """:func:`server.start`, with the catalog in SQLite when ``root`` holds a database (made by
    :func:`start_persistent`), in memory otherwise."""
    if not (root / DATABASE).exists():
        return server.start(root)
    text = _persistent_config(root)
    original = server.config_text
    server.config_text = lambda *_args, **_kwargs: text  # what server.start writes and runs
    try:
        return server.start(root)
    finally:
        server.config_text = original


def start_persistent(root: Path) -> server.UCServer:
    """A server whose catalog is kept in ``root/uc.sqlite``, which survives a restart: the store is
    made first (``uc-server migrate``, which a durable store requires), then the server started."""
    if not server_build.ready():
        raise server_build.not_built()
    root.mkdir(parents=True, exist_ok=True)
    (root / "tables").mkdir(exist_ok=True)
    settings = root / "uc-migrate.yaml"
    settings.write_text(_persistent_config(root))
    (root / DATABASE).touch()
    done = subprocess.run(
        [str(server_build.BINARY), "migrate", "-c", str(settings)],
        check=False,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise server.UCServerError(f"uc-server migrate failed: {done.stderr.strip()[-1000:]}")
    return start_on_store(root)
