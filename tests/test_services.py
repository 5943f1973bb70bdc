"""helpers.stores.services: real emulator processes on spare ports, started, checked, reset and stopped."""

import os
import socket
import sys

import pytest

from helpers.ground import config, local_processes
from helpers.stores import service_process, services, storage


def test_moto_lifecycle_up_idempotent_reset_down(private_services):
    assert services.up(["moto"], quiet=True) == ["moto"]
    assert services.up(["s3"], quiet=True) == [], "a second up must leave the running service alone"
    (state,) = services.status(["moto"])
    assert state.answering and state.managed
    storage.ensure_bucket("lifecycle")
    services.reset(["moto"])
    assert "lifecycle" not in [b["Name"] for b in storage.s3_client().list_buckets()["Buckets"]]
    assert services.down(["moto"], quiet=True) == ["moto"]
    assert not services.status(["moto"])[0].answering


def test_azurite_reset_wipes_containers(private_services):
    services.up(["azure"], quiet=True)
    storage.ensure_container("wipe-me")
    services.reset(["azurite"])
    assert services.status(["azurite"])[0].answering, "reset restarts a service that was running"
    assert "wipe-me" not in [c.name for c in storage.blob_service().list_containers()]


def test_busy_port_is_explained(private_services, monkeypatch):
    with socket.socket() as squatter:
        squatter.bind((config.LOCALHOST, 0))
        squatter.listen()
        monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(squatter.getsockname()[1]))
        with pytest.raises(services.ServiceError, match="taken by another program") as error:
            services.up(["moto"], quiet=True)
        assert "WORKBOOK_MOTO_PORT" in str(error.value)
        # the fix the message gives: another port, while the squatter still holds the first
        monkeypatch.setenv("WORKBOOK_MOTO_PORT", str(local_processes.free_port()))
        assert services.up(["moto"], quiet=True) == ["moto"]
        assert services.status(["moto"])[0].answering


def test_missing_node_is_explained(private_services, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(services.ServiceError, match="Node.js 20"):
        services.up(["azurite"], quiet=True)


def test_a_service_that_dies_while_starting_shows_its_log(private_services, free_port):
    doomed = service_process.Service(
        name="doomed",
        provides=("nothing",),
        host=lambda: config.LOCALHOST,
        port=free_port,
        identify=lambda host, port: None,
        command=lambda port: [
            sys.executable,
            "-c",
            "print('cannot open the pod bay doors'); raise SystemExit(3)",
        ],
        port_variable="WORKBOOK_DOOMED_PORT",
    )
    with pytest.raises(services.ServiceError, match="exited with code 3") as error:
        services._start(doomed)
    assert "cannot open the pod bay doors" in str(error.value)


def test_a_remote_host_is_never_started_here(private_services, monkeypatch):
    monkeypatch.setenv("WORKBOOK_MOTO_HOST", "127.0.0.2")
    with pytest.raises(services.ServiceError, match="WORKBOOK_MOTO_HOST"):
        services.up(["moto"], quiet=True)


def test_running_stops_only_what_it_started(private_services):
    services.up(["moto"], quiet=True)
    with services.running():
        assert all(s.answering for s in services.status())
    states = {s.name: s.answering for s in services.status()}
    assert states == {"moto": True, "azurite": False}


def test_running_leaves_alone_what_another_command_started_meanwhile(private_services, monkeypatch):
    """Two commands on the same ports (`make test` in one terminal, `make workbook` in another): a
    service the other one starts while this block runs is not this block's to stop, even though it
    was not running when the block began."""
    outer = os.environ.get(services.OWNER_VARIABLE)  # `make test`'s own block, if any
    with services.running(["azurite"]):
        with monkeypatch.context() as other:
            other.setenv(services.OWNER_VARIABLE, "another-command")
            assert services.up(["moto"], quiet=True) == ["moto"]
        inside = services.up(
            ["moto"], quiet=True
        )  # as a notebook in this block would: already answering
        assert inside == []
    states = {s.name: s.answering for s in services.status()}
    assert states == {"moto": True, "azurite": False}, (
        "the block stopped its own Azurite and left the other's moto"
    )
    assert os.environ.get(services.OWNER_VARIABLE) == outer, (
        "the block gives back the owner it found"
    )


def test_a_block_that_started_nothing_stops_nothing(private_services, monkeypatch):
    """Everything answers already (another command's emulators): the block starts nothing, and must
    not stop them on its way out (seen: a second `services run` stopped the first's moto)."""
    with monkeypatch.context() as other:
        other.setenv(services.OWNER_VARIABLE, "another-command")
        assert sorted(services.up(quiet=True)) == ["azurite", "moto"]
    with services.running():
        pass
    assert {s.name: s.answering for s in services.status()} == {"moto": True, "azurite": True}


def test_running_stops_what_a_process_inside_it_started(private_services):
    with services.running(["azurite"]):
        assert services.up(["moto"], quiet=True) == [
            "moto"
        ]  # a notebook's kernel inherits the block's owner
    assert {s.name: s.answering for s in services.status()} == {"moto": False, "azurite": False}


def test_unknown_service_and_cli(private_services, capsys):
    with pytest.raises(services.ServiceError, match="choose from"):
        services.up(["s4"])
    assert services.main(["status"]) == 0
    assert "not running" in capsys.readouterr().out
    assert services.main(["up", "s4"]) == 2
    assert "Unknown service 's4'" in capsys.readouterr().err


def test_versitygw_plays_s3_only_when_chosen(private_services, monkeypatch, capsys):
    """With WORKBOOK_S3_SERVER=versitygw, "s3" starts versitygw and "dynamodb" moto; status says who
    plays what. Without it, versitygw is not among the services at all."""
    monkeypatch.delenv("WORKBOOK_S3_SERVER", raising=False)
    assert [s.name for s in services.active()] == ["moto", "azurite"]
    assert [s.name for s in services._select(["s3"])] == ["moto"]
    monkeypatch.setenv("WORKBOOK_S3_SERVER", "versitygw")
    monkeypatch.setenv("WORKBOOK_VERSITYGW_PORT", str(local_processes.free_port()))
    assert [s.name for s in services._select(["s3"])] == ["versitygw"]
    assert [s.name for s in services._select(["dynamodb"])] == ["moto"]
    assert services.plays(services.SERVICES["moto"]) == ("dynamodb",)
    assert services.main(["status"]) == 0
    out = capsys.readouterr().out
    assert "versitygw plays s3" in out and "moto      plays dynamodb" in out, out
