"""helpers.probe (`make probe-store`): the verdicts it gives a store, and the clear line it prints
when it cannot run. The store probed here is the workbook's moto: each check's rounds really race."""

from __future__ import annotations

import subprocess
import sys

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from helpers.ground import config, local_processes
from helpers.probe import cli, objects


def _probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "helpers.probe", *args],
        cwd=config.ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_a_remote_endpoint_is_refused_without_the_flag_and_credentials_are_asked_for(monkeypatch):
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    with pytest.raises(cli.ProbeError, match="pass --allow-remote"):
        cli.target("https://s3.example.test", allow_remote=False)
    assert (
        cli.target("https://s3.example.test", allow_remote=True)["endpoint"]
        == "https://s3.example.test"
    )
    with pytest.raises(cli.ProbeError, match="not an endpoint URL"):
        cli.target("s3.example.test:9000", allow_remote=True)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(cli.ProbeError, match="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        cli.target("http://127.0.0.1:9", allow_remote=False)


def test_each_way_to_fail_is_one_line_naming_the_endpoint_and_the_setting():
    where = {"endpoint": "http://127.0.0.1:9"}

    def refused(code):
        return ClientError(
            {"Error": {"Code": code, "Message": "no"}, "ResponseMetadata": {"HTTPStatusCode": 403}},
            "CreateBucket",
        )

    lines = [
        str(cli._explain(error, where, "creating bucket b"))
        for error in (
            EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
            refused("InvalidAccessKeyId"),
            refused("AccessDenied"),
            refused("404"),
        )
    ]
    assert all("http://127.0.0.1:9" in line and "\n" not in line for line in lines)
    assert "check AWS_ENDPOINT_URL" in lines[0]
    assert "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" in lines[1]
    assert "pass --bucket" in lines[2]
    assert "has no such bucket" in lines[3] and "check --bucket" in lines[3]


def test_an_unreachable_store_exits_2_with_one_line(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "AWS_ENDPOINT_URL": f"http://{config.LOCALHOST}:{local_processes.free_port()}",
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "HOME": str(tmp_path),
    }
    done = _probe("--writers", "2", "--rounds", "1", "--no-delta", env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: Cannot reach the S3 endpoint {env['AWS_ENDPOINT_URL']}")
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_round_with_two_winners_or_foreign_bytes_is_counted_as_not_atomic():
    class Store:  # what the store holds after the round: writer 1's bytes
        def get_object(self, **_):
            return {"Body": type("B", (), {"read": lambda self: objects._body(1, 0)})()}

    refused = ClientError(
        {"Error": {"Code": "PreconditionFailed"}, "ResponseMetadata": {"HTTPStatusCode": 412}},
        "PutObject",
    )
    check = objects.Contention("x")
    objects._judge(
        Store(),
        "b",
        "k",
        [("won", {}), ("won", {}), ("refused", refused)],
        check,
        0,
        versioned=False,
    )
    objects._judge(
        Store(),
        "b",
        "k",
        [("won", {}), ("refused", refused), ("refused", refused)],
        check,
        0,
        versioned=False,
    )
    objects._judge(
        Store(),
        "b",
        "k",
        [("refused", refused), ("won", {}), ("refused", refused)],
        check,
        0,
        versioned=False,
    )
    assert check.bad_rounds == [
        "round 0: 2 writers told they won",
        "round 0: the object holds another writer's bytes than the winner's",
    ]
    assert not check.atomic and check.refusals[(412, "PreconditionFailed")] == 5


def test_the_exit_status_follows_the_checks_delta_s_writers_rely_on():
    put = cli.Verdict("PutObject If-None-Match: *", "pass", "", needed=True)
    copy = cli.Verdict("CopyObject If-None-Match: *", "FAIL", "", needed=False)
    assert cli.summary([put])[0] == 0
    status, line = cli.summary([put, copy])
    assert (
        status == 0
        and line.startswith("Safe for Delta's default writers")
        and "CopyObject If-None-Match: *" in line
    )
    status, line = cli.summary(
        [cli.Verdict("PutObject If-None-Match: *", "FAIL", "", needed=True), copy]
    )
    assert status == 1 and line.startswith(
        "NOT SAFE for Delta's default writers: PutObject If-None-Match: *."
    )
    assert "| CopyObject If-None-Match: * | fail |" in cli.table([copy])


def _verdicts(stdout: str) -> dict[str, str]:
    return {
        cells[0]: cells[1]
        for cells in (
            line.strip("| ").split(" | ")
            for line in stdout.splitlines()
            if line.startswith("| ") and not line.startswith(("| check", "| ---"))
        )
    }


@pytest.mark.services
def test_the_workbook_s_moto_is_safe_for_delta_though_its_copy_ignores_the_condition(stores):
    """The wrapped moto makes PutObject's and CompleteMultipartUpload's conditions atomic; CopyObject's
    If-None-Match it does not implement, so every writer's copy wins, which no Delta writer of the
    workbook relies on: the probe says so and exits 0. Whatever the verdicts, its bucket is gone after."""
    from helpers.stores import storage

    before = {b["Name"] for b in storage.s3_client().list_buckets()["Buckets"]}
    done = _probe("--writers", "8", "--rounds", "3")
    assert done.returncode == 0, done.stdout + done.stderr
    verdicts = _verdicts(done.stdout)
    assert verdicts["PutObject If-None-Match: *, 8 writers"] == "pass"
    assert verdicts["CompleteMultipartUpload If-None-Match: *, 8 writers"] == "pass"
    assert verdicts["PutObject If-Match: <ETag>, 8 writers"] == "pass"
    assert verdicts["CopyObject If-None-Match: *, 8 writers"] == "fail"
    assert (
        verdicts["a copy of a deleted object is refused"] == "pass"
    )  # versitygw v1.8.0 fails it (make probe-versitygw)
    assert verdicts["Delta round trip: 8 deltalake 1.6.6 writers appending at once"] == "pass"
    assert (
        "Beware, though Delta's default writers do not rely on it: CopyObject If-None-Match: *, 8 writers"
        in done.stdout
    )
    assert {b["Name"] for b in storage.s3_client().list_buckets()["Buckets"]} == before
