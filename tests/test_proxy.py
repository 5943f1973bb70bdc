"""Behind a corporate proxy: HTTPS_PROXY reaches every downloader the install and the first Spark
start use (uv, npm, and Spark's Ivy through the Java options the workbook derives from it).

Checked against a proxy on 127.0.0.1 that records each request and refuses it: the downloader must
ask the proxy (a CONNECT to an HTTPS port), then fail with a message; no network is needed."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading

import pytest

from helpers.ground import config
from helpers.spark import sessions

CONNECT = re.compile(r"^CONNECT \S+:443 HTTP/1\.[01]$")


@pytest.fixture
def refusing_proxy():
    """(its URL, the request lines it saw): every request answered 403 and closed."""
    seen: list[str] = []
    server = socket.socket()
    server.bind((config.LOCALHOST, 0))
    server.listen(32)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                try:
                    first = conn.recv(65536).split(b"\r\n", 1)[0]
                    seen.append(first.decode("latin-1"))
                    conn.sendall(
                        b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://{config.LOCALHOST}:{server.getsockname()[1]}", seen
    server.close()


def _env(proxy: str, tmp_path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("https_proxy", "http_proxy", "no_proxy", "uv_offline")
    }
    env.update(
        HTTPS_PROXY=proxy,
        NO_PROXY="127.0.0.1,localhost",
        npm_config_offline="false",
        npm_config_cache=str(tmp_path / "npm"),
    )
    return env


def test_java_gets_the_proxy_and_loopback_stays_direct():
    env = {"HTTPS_PROXY": "http://proxy.corp.example:3128", "NO_PROXY": "127.0.0.1,.corp.example"}
    assert sessions.proxy_java_options(env) == [
        "-Dhttps.proxyHost=proxy.corp.example",
        "-Dhttps.proxyPort=3128",
        "-Dhttp.nonProxyHosts=localhost|127.*|[::1]|127.0.0.1|*.corp.example",
    ]
    assert sessions.proxy_java_options({}) == []
    with pytest.raises(
        sessions.SessionError, match="HTTPS_PROXY='proxy:port'.*http://proxy.example.com:3128"
    ):
        sessions.proxy_java_options({"HTTPS_PROXY": "proxy:port"})


def test_spark_fetches_its_jars_through_the_proxy(refusing_proxy, tmp_path):
    proxy, seen = refusing_proxy
    env = _env(proxy, tmp_path)
    # an empty Ivy cache, so Spark must download; no class-data archive to build
    env.update(
        WORKBOOK_CACHE_DIR=str(tmp_path / "cache"),
        WORKBOOK_STATE_DIR=str(tmp_path / "state"),
        WORKBOOK_SPARK_CDS="0",
    )
    done = subprocess.run(
        [sys.executable, "-m", "helpers.spark.install", "fetch-jars"],
        env=env,
        cwd=config.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "could not download its jars" in done.stderr and "HTTPS_PROXY" in done.stderr
    assert any(CONNECT.match(line) for line in seen), seen


def test_uv_installs_through_the_proxy(refusing_proxy, tmp_path):
    proxy, seen = refusing_proxy
    env = _env(proxy, tmp_path)
    env.update(UV_CACHE_DIR=str(tmp_path / "uv"), UV_HTTP_RETRIES="0")
    uv = config.CACHE_DIR / "bootstrap" / "bin" / "uv"
    done = subprocess.run(
        [str(uv), "pip", "install", "--dry-run", "--reinstall", "--python", sys.executable, "six"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert any(CONNECT.match(line) for line in seen), (seen, done.stderr[-2000:])


def test_npm_installs_through_the_proxy(refusing_proxy, tmp_path):
    proxy, seen = refusing_proxy
    done = subprocess.run(
        ["npm", "view", "azurite", "version", "--prefer-online", "--fetch-retries=0"],
        env=_env(proxy, tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert any(CONNECT.match(line) for line in seen), (seen, done.stderr[-2000:])
