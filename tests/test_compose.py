"""docker-compose.yml, the Dockerfile and environment.yml agree with the native setup."""

import ast
import subprocess
import sys
from pathlib import Path

import yaml

from helpers.ground import config

COMPOSE = yaml.safe_load((config.ROOT / "docker-compose.yml").read_text())


def test_compose_file_is_valid_compose_spec():
    checker = Path(sys.executable).with_name("check-jsonschema")
    done = subprocess.run(
        [
            str(checker),
            "--builtin-schema",
            "vendor.compose-spec",
            str(config.ROOT / "docker-compose.yml"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_emulator_images_are_pinned_to_the_native_versions():
    assert COMPOSE["services"]["moto"]["image"] == f"motoserver/moto:{config.MOTO_VERSION}"
    assert COMPOSE["services"]["azurite"]["image"].endswith(f"/azurite:{config.AZURITE_VERSION}")


def test_moto_runs_the_same_atomic_writes_server_as_natively():
    from helpers.stores import services

    moto = COMPOSE["services"]["moto"]
    # the server and the one module it imports, as the package `helpers.stores` under the working folder
    files = (
        "__init__.py",
        "stores/__init__.py",
        "stores/moto_server.py",
        "stores/moto_speedups.py",
    )
    mounts = [mount.split(":") for mount in moto["volumes"]]
    assert [
        ((config.ROOT / source).resolve(), target, mode) for source, target, mode in mounts
    ] == [
        (config.ROOT / "helpers" / name, f"{moto['working_dir']}/helpers/{name}", "ro")
        for name in files
    ]
    mounted = [Path(name).stem for name in files[2:]]
    imported = {
        alias.name
        for name in files[2:]
        for node in ast.walk(ast.parse((config.ROOT / "helpers" / name).read_text()))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("helpers")
        for alias in node.names
    }
    assert imported <= set(mounted), "the image has only the mounted helpers"
    native = services.SERVICES["moto"].command(config.MOTO_DEFAULT_PORT)
    assert native[1:3] == ["-m", "helpers.stores.moto_server"]
    assert moto["entrypoint"] == ["python", *native[1:3], "-H", "0.0.0.0", *native[-2:]]


def test_ports_are_the_native_defaults_on_loopback_only():
    assert COMPOSE["services"]["moto"]["ports"] == [
        f"127.0.0.1:{config.MOTO_DEFAULT_PORT}:{config.MOTO_DEFAULT_PORT}"
    ]
    assert COMPOSE["services"]["moto"]["environment"]["MOTO_PORT"] == str(config.MOTO_DEFAULT_PORT)
    assert COMPOSE["services"]["azurite"]["ports"] == [
        f"127.0.0.1:{config.AZURITE_DEFAULT_PORT}:{config.AZURITE_DEFAULT_PORT}"
    ]
    assert f"--blobPort={config.AZURITE_DEFAULT_PORT}" in COMPOSE["services"]["azurite"]["command"]
    for service in COMPOSE["services"].values():
        assert all(p.startswith("127.0.0.1:") for p in service.get("ports", []))


def test_azurite_runs_with_the_same_flags_as_natively():
    from helpers.stores import services

    compose = {a.split("=")[0] for a in COMPOSE["services"]["azurite"]["command"][1:]}
    assert set(services.AZURITE_FLAGS) <= compose


def test_jupyter_uses_the_native_names():
    env = COMPOSE["services"]["workbook"]["environment"]
    names = config.Names(
        env["WORKBOOK_S3_BUCKET"],
        env["WORKBOOK_AZURE_CONTAINER"],
        env["WORKBOOK_DYNAMODB_TABLE"],
        config.names().aws_region,
    )
    assert names == config.names()
    assert (env["WORKBOOK_MOTO_HOST"], env["WORKBOOK_AZURITE_HOST"]) == ("moto", "azurite")
    assert int(env["WORKBOOK_MOTO_PORT"]) == config.MOTO_DEFAULT_PORT


def test_dockerfile_installs_what_make_installs():
    dockerfile = (config.ROOT / "Dockerfile").read_text()
    makefile = (config.ROOT / "Makefile").read_text()
    assert "FROM python:3.11." in dockerfile and "openjdk-17" in dockerfile
    assert "make install-python" in dockerfile and "\ninstall-python:" in makefile


def test_dockerfile_builds_the_unity_catalog_server_as_make_does():
    from helpers.catalog import server_build

    dockerfile = (config.ROOT / "Dockerfile").read_text()
    rust = ".".join(map(str, server_build.RUST_MIN))
    assert f"FROM rust:{rust}-" in dockerfile
    assert f'{server_build.CRATE} = "={server_build.VERSION}"' in dockerfile
    assert f"COPY {server_build.PATCH.relative_to(config.ROOT)} /tmp/" in dockerfile
    assert f"patch -p1 < /tmp/{server_build.PATCH.name}" in dockerfile
    profile = " ".join(f"{key}={value}" for key, value in server_build.PROFILE.items())
    assert f"{profile} \\\n    cargo install --path . --features bin --locked" in dockerfile
    assert f"/bin/uc-server {server_build.BINARY.relative_to(config.ROOT)}" in dockerfile
    assert "server_build.STAMP.write_text(server_build.stamp_text()" in dockerfile


def test_conda_environment_uses_the_same_lock():
    env = yaml.safe_load((config.ROOT / "environment.yml").read_text())
    assert {"python=3.11", "openjdk=17", "nodejs=20"} <= set(
        d for d in env["dependencies"] if isinstance(d, str)
    )
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert pip == ["-r requirements/kernel.txt"]


def test_the_spark_cluster_runs_the_native_commands_and_the_workbook_can_use_it():
    from helpers.spark import cluster

    services = COMPOSE["services"]
    assert services["spark-master"]["command"] == [
        ".venv/bin/python",
        "-m",
        "helpers.spark.cluster",
        "master",
    ]
    master_url = cluster.master_url("spark-master", cluster.MASTER_DEFAULT_PORT)
    workers = [name for name in services if name.startswith("spark-worker")]
    assert len(workers) == cluster.WORKERS
    for name in workers:
        assert services[name]["command"] == [
            ".venv/bin/python",
            "-m",
            "helpers.spark.cluster",
            "worker",
            master_url,
        ]
        assert services[name]["hostname"] == name
        assert (
            "workbook-build:/workbook/build" in services[name]["volumes"]
        )  # local tables, shared with the driver
    for name in ["spark-master", *workers]:
        assert services[name]["profiles"] == [
            "cluster"
        ]  # `docker compose up -d` alone starts no cluster
        assert services[name]["image"] == services["workbook"]["image"]
    assert "workbook-build:/workbook/build" in services["workbook"]["volumes"]
    assert (
        services["workbook"]["environment"]["WORKBOOK_SPARK_MASTER"] == "${WORKBOOK_SPARK_MASTER:-}"
    )
