"""``python -m helpers.probe`` (``make probe-store``): is this S3 store safe for Delta?

It asks the store, under contention, for what Delta's writers rely on, and prints one verdict per
check: bucket versioning (the workbook's evidence needs it, a writer does not), ``If-None-Match: *``
on PutObject, CompleteMultipartUpload and CopyObject (exactly one winner among ``--writers``
concurrent writers, in each of ``--rounds`` rounds, and only its bytes in the store), how a
refusal is answered (412, or 409 ``ConditionalRequestConflict``, and whether retrying a 409 is
safe), ``If-Match`` compare-and-swap on an ETag, and a Delta round trip: 8 deltalake 1.6.6
writers appending to one table at once, audited from storage.

The endpoint and credentials come from the environment, as the real-cloud profile reads them
(``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``), or
``--endpoint``; with none, the workbook's moto. A non-loopback endpoint is refused unless
``--allow-remote`` is given. The probe creates a bucket of its own (or, with ``--bucket``, uses a
prefix of its own in an existing one), sends a bounded number of requests (about 4 x writers x
rounds), and deletes everything it wrote, every object version included.

Exit status: 0 every check Delta's default writers rely on passed (``If-None-Match`` on PutObject,
the round trip), 1 one of them failed (the store is not safe for them), 2 the probe could not run
(the line printed names the endpoint and the setting to check). A failed check that no Delta
writer of the workbook relies on (a conditional copy, compare-and-swap) is reported as a
``fail`` in lower case and named in the last line, without changing the exit status.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import uuid
from dataclasses import dataclass
from typing import Sequence
from urllib.parse import urlparse

from helpers.ground import config
from helpers.probe import objects
from helpers.stores import store_trouble

LOOPBACK = ("127.0.0.1", "localhost", "::1")
PERMISSION_REFUSALS = ("403", "AccessDenied", "AccessDeniedException", "AllAccessDisabled")
"""Of the refusals :data:`helpers.stores.store_trouble.AWS_REFUSALS` names, those about permissions, not the keys themselves."""
DELTA_WRITERS = 8


class ProbeError(RuntimeError):
    """The probe could not run; the message names the endpoint and the setting to check."""


@dataclass
class Verdict:
    check: str
    verdict: str  # "pass", "FAIL" or "info"
    detail: str
    needed: bool = True  # a FAIL here makes the store unsafe for Delta's default writers
    who: str = ""  # who relies on what it checks


def target(endpoint: str | None, allow_remote: bool) -> dict[str, str]:
    """Endpoint, credentials and region to probe: ``endpoint``, else the environment's, else moto's."""
    endpoint = (
        endpoint or os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    )
    if endpoint is None:  # the workbook's own emulator
        return {
            "endpoint": config.s3_emulator_endpoint(),
            "key": config.EMULATOR_AWS_ACCESS_KEY_ID,
            "secret": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
            "region": config.EMULATOR_AWS_REGION,
        }
    parsed = urlparse(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ProbeError(
            f"{endpoint!r} is not an endpoint URL: set AWS_ENDPOINT_URL (or --endpoint) to http(s)://host:port."
        )
    if parsed.hostname not in LOOPBACK and not allow_remote:
        raise ProbeError(
            f"{endpoint} is not on this machine: the probe sends a few thousand requests and creates a bucket; "
            "pass --allow-remote to probe it anyway."
        )
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not key or not secret:
        raise ProbeError(
            f"No credentials for {endpoint}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
        )
    region = (
        os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or config.EMULATOR_AWS_REGION
    )
    return {"endpoint": endpoint, "key": key, "secret": secret, "region": region}


def client(where: dict[str, str], writers: int):
    """A boto3 S3 client that neither retries (each answer is counted as the store gave it) nor
    waits long for a store that does not answer."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=where["endpoint"],
        aws_access_key_id=where["key"],
        aws_secret_access_key=where["secret"],
        region_name=where["region"],
        config=Config(
            retries={"max_attempts": 1, "mode": "standard"},
            connect_timeout=5,
            read_timeout=60,
            max_pool_connections=writers + 4,
            s3={"addressing_style": "path"},
        ),
    )


def _explain(error: Exception, where: dict[str, str], doing: str) -> ProbeError:
    """One line for what stopped the probe."""
    from botocore.exceptions import (
        ClientError,
        EndpointConnectionError,
    )
    from botocore.exceptions import (
        ConnectionError as BotoConnectionError,
    )

    endpoint = where["endpoint"]
    if isinstance(error, (EndpointConnectionError, BotoConnectionError)):
        return ProbeError(
            f"Cannot reach the S3 endpoint {endpoint} ({doing}): check AWS_ENDPOINT_URL (or --endpoint) "
            "and that the store is running."
        )
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        if code in store_trouble.AWS_REFUSALS and code not in PERMISSION_REFUSALS:
            return ProbeError(
                f"{endpoint} refused the credentials ({code}) while {doing}: check AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY."
            )
        if code in PERMISSION_REFUSALS:
            return ProbeError(
                f"{endpoint} denied {doing} ({code}): give these credentials that permission, or pass "
                "--bucket with a bucket they may write to and delete from."
            )
        if code in ("404", "NoSuchBucket"):
            return ProbeError(
                f"{endpoint} has no such bucket ({doing}): check --bucket, or leave it out and the probe "
                "creates a bucket of its own."
            )
        return ProbeError(f"{endpoint} answered {code or 'an error'} while {doing}: {error}")
    return ProbeError(f"{doing} at {endpoint} failed: {type(error).__name__}: {error}")


def _empty(s3, bucket: str, prefix: str) -> int:
    """Delete every object version, delete marker and open upload under ``prefix``; how many went.
    Everything is listed before anything is deleted (deleting under a listing's feet skips pages)."""
    for page in s3.get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=prefix):
        for upload in page.get("Uploads", []):
            s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    doomed = [
        {"Key": v["Key"], "VersionId": v["VersionId"]}
        for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix)
        for v in page.get("Versions", []) + page.get("DeleteMarkers", [])
    ]
    for start in range(0, len(doomed), 1000):
        s3.delete_objects(
            Bucket=bucket, Delete={"Objects": doomed[start : start + 1000], "Quiet": True}
        )
    return len(doomed)


def versioning(s3, bucket: str, created: bool) -> Verdict:
    """Turn versioning on in a bucket the probe made (a store that cannot is told apart here)."""
    if created:
        try:
            s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
        except Exception as error:  # noqa: BLE001
            return Verdict(
                "bucket versioning",
                "info",
                f"off: the store refused to enable it ({objects.status_of(error)[1]}); "
                "writers do not need it, the notebooks' evidence of an overwritten commit does",
            )
    status = s3.get_bucket_versioning(Bucket=bucket).get("Status", "never enabled")
    return Verdict(
        "bucket versioning",
        "info",
        f"{status.lower()}: writers do not need it; the notebooks' evidence "
        "(an overwritten commit's older versions) does",
        needed=False,
        who="the workbook's auditor",
    )


def contention_verdict(
    check: objects.Contention, writers: int, needed: bool, who: str
) -> list[Verdict]:
    shown = (
        ", ".join(f"{status} {code}: {n}" for (status, code), n in sorted(check.refusals.items()))
        or "none"
    )
    rows = [
        Verdict(
            f"{check.name}, {writers} writers",
            "pass" if check.atomic else "FAIL",
            f"{check.rounds - len(check.bad_rounds)} of {check.rounds} rounds had one winner and only its bytes"
            + (
                f"; {check.bad_rounds[0]}"
                + (f" (and {len(check.bad_rounds) - 1} more)" if len(check.bad_rounds) > 1 else "")
                if check.bad_rounds
                else ""
            )
            + (f"; other answers: {dict(check.errors)}" if check.errors else "")
            + f"; refusals: {shown}",
            needed,
            who,
        )
    ]
    if check.retried:
        safe = not check.retried.get("won") or check.atomic
        rows.append(
            Verdict(
                f"{check.name}: retrying a 409",
                "pass" if safe else "FAIL",
                ", ".join(f"{outcome}: {n}" for outcome, n in sorted(check.retried.items()))
                + (
                    "; a retry never made a second winner"
                    if safe
                    else "; a retry won a round another writer had won"
                ),
                needed,
                who,
            )
        )
    return rows


DELETED_COPY_WHO = (
    "delta-rs's DynamoDB log store (deltalake 0.15.0 to 1.6.0): a 404 tells it a repair already "
    "moved its staged commit"
)


def deleted_copy_verdict(s3, bucket: str, prefix: str) -> Verdict:
    """A copy of a deleted object must be refused (findings/versitygw-copies-a-deleted-object)."""
    try:
        refused, detail = objects.copy_of_a_deleted_object(s3, bucket, prefix)
    except Exception as error:  # noqa: BLE001 - a store that cannot run it fails the check, not the probe
        refused, detail = False, f"{type(error).__name__}: {error}"[:300]
    return Verdict(
        "a copy of a deleted object is refused",
        "pass" if refused else "FAIL",
        detail,
        needed=False,
        who=DELETED_COPY_WHO,
    )


def delta_round_trip(where: dict[str, str], bucket: str, prefix: str) -> Verdict:
    """8 deltalake 1.6.6 writers append to one new table at once; the auditor counts from storage."""
    from helpers.runs import audit, runner

    uri = f"s3://{bucket}/{prefix}delta-round-trip"
    options = {
        "AWS_ENDPOINT_URL": where["endpoint"],
        "AWS_ACCESS_KEY_ID": where["key"],
        "AWS_SECRET_ACCESS_KEY": where["secret"],
        "AWS_REGION": where["region"],
    }
    if where["endpoint"].startswith("http://"):
        options["AWS_ALLOW_HTTP"] = "true"
    runner.create_table(uri, options)
    run = runner.run_writers(uri, options, n=DELTA_WRITERS, progress=False)
    checked = audit.audit(run)
    ok = (
        checked.rows_lost == 0
        and run.committed == DELTA_WRITERS
        and checked.max_commits_per_file == 1
    )
    return Verdict(
        f"Delta round trip: {DELTA_WRITERS} deltalake 1.6.6 writers appending at once",
        "pass" if ok else "FAIL",
        f"{run.committed} of {DELTA_WRITERS} committed, rows {checked.rows_actual} of {checked.rows_expected}, "
        f"lost {checked.rows_lost}; at most {checked.max_commits_per_file} distinct commit per commit file",
        True,
        "every Delta writer: nothing acknowledged may be lost",
    )


@contextlib.contextmanager
def _profile_of(where: dict[str, str]):
    """The workbook's helpers pointed at the probed store, as the real-cloud profile reads it."""
    settings = {
        "WORKBOOK_PROFILE": "cloud",
        "AWS_ENDPOINT_URL": where["endpoint"],
        "AWS_ACCESS_KEY_ID": where["key"],
        "AWS_SECRET_ACCESS_KEY": where["secret"],
        "AWS_REGION": where["region"],
    }
    before = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def probe(
    where: dict[str, str], *, writers: int, rounds: int, bucket: str | None, delta: bool
) -> list[Verdict]:
    s3 = client(where, writers)
    created = bucket is None
    bucket = bucket or f"workbook-probe-{uuid.uuid4().hex[:12]}"
    prefix = "" if created else f"workbook-probe-{uuid.uuid4().hex[:12]}/"
    try:
        if created:
            s3.create_bucket(Bucket=bucket)
        else:
            s3.head_bucket(Bucket=bucket)
    except Exception as error:  # noqa: BLE001
        raise _explain(
            error, where, f"creating bucket {bucket}" if created else f"opening bucket {bucket}"
        ) from None
    verdicts: list[Verdict] = []
    try:
        verdicts.append(versioning(s3, bucket, created))
        versioned = s3.get_bucket_versioning(Bucket=bucket).get("Status") == "Enabled"
        for check in objects.CHECKS:
            try:
                result = check.run(s3, bucket, prefix, writers, rounds, versioned)
            except Exception as error:  # noqa: BLE001 - a store without the feature fails its check, not the probe
                verdicts.append(
                    Verdict(
                        check.run.__name__.replace("_", " "),
                        "FAIL",
                        f"{type(error).__name__}: {error}"[:300],
                        check.needed,
                        check.who,
                    )
                )
                continue
            verdicts += contention_verdict(result, writers, check.needed, check.who)
        verdicts.append(deleted_copy_verdict(s3, bucket, prefix))
        if delta:
            with _profile_of(where):  # the auditor reads the store as the real-cloud profile would
                verdicts.append(delta_round_trip(where, bucket, prefix))
    finally:
        try:
            _empty(s3, bucket, prefix)
            if created:
                s3.delete_bucket(Bucket=bucket)
        except Exception as error:  # noqa: BLE001
            print(
                f"warning: could not remove everything the probe wrote in {bucket}/{prefix}: {error}",
                file=sys.stderr,
            )
    return verdicts


def table(verdicts: list[Verdict]) -> str:
    lines = [
        "| check | verdict | what the store did | who relies on it |",
        "| --- | --- | --- | --- |",
    ]
    shown = {("FAIL", True): "**FAIL**", ("FAIL", False): "fail"}
    lines += [
        f"| {v.check} | {shown.get((v.verdict, v.needed), v.verdict)} | {v.detail} | {v.who} |"
        for v in verdicts
    ]
    return "\n".join(lines)


def summary(verdicts: list[Verdict]) -> tuple[int, str]:
    """The exit status and the last line: unsafe when a check Delta's default writers need failed."""
    unsafe = [v.check for v in verdicts if v.verdict == "FAIL" and v.needed]
    hazards = [v.check for v in verdicts if v.verdict == "FAIL" and not v.needed]
    also = (
        (
            f" Beware, though Delta's default writers do not rely on it: {'; '.join(hazards)} (its row says who "
            "does)."
        )
        if hazards
        else ""
    )
    if unsafe:
        return 1, f"NOT SAFE for Delta's default writers: {'; '.join(unsafe)}.{also}"
    return 0, f"Safe for Delta's default writers: every check they rely on passed.{also}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.probe", description=__doc__.split("\n\n")[0].split(": ", 1)[1]
    )
    parser.add_argument(
        "--endpoint", help="the S3 endpoint (default: AWS_ENDPOINT_URL, else the workbook's moto)"
    )
    parser.add_argument(
        "--allow-remote", action="store_true", help="probe an endpoint that is not on this machine"
    )
    parser.add_argument(
        "--bucket",
        help="an existing bucket to probe under a prefix of its own (default: a new bucket)",
    )
    parser.add_argument(
        "--writers", type=int, default=32, help="concurrent writers per round (default 32)"
    )
    parser.add_argument("--rounds", type=int, default=30, help="rounds per check (default 30)")
    parser.add_argument(
        "--no-delta", dest="delta", action="store_false", help="leave out the Delta round trip"
    )
    args = parser.parse_args(argv)
    if args.writers < 2 or args.rounds < 1:
        parser.error("--writers must be at least 2 (contention needs two) and --rounds at least 1")
    try:
        where = target(args.endpoint, args.allow_remote)
        print(
            f"Probing {where['endpoint']}: {args.writers} writers x {args.rounds} rounds per check",
            flush=True,
        )
        verdicts = probe(
            where, writers=args.writers, rounds=args.rounds, bucket=args.bucket, delta=args.delta
        )
    except ProbeError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(table(verdicts))
    status, line = summary(verdicts)
    print(f"\n{line}")
    return status
