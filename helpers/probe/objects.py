"""What a Delta writer asks of an S3 store, asked under contention: each check releases many
writers at one barrier onto one key, then reads the store (the object, its versions) to count
winners. One winner per round, and nothing but the winner's bytes in the store, is what makes a
commit safe; two winners, or a winner whose bytes another write replaced, is a lost commit."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

PRECONDITION_FAILED = 412
CONDITIONAL_CONFLICT = (
    409  # ConditionalRequestConflict: a concurrent conditional write was in flight
)


@dataclass
class Contention:
    """One check's rounds: per round, the writers that were told they won, and what the store holds."""

    name: str
    rounds: int = 0
    bad_rounds: list[str] = field(default_factory=list)
    refusals: Counter = field(default_factory=Counter)  # (status, code) -> count
    retried: Counter = field(
        default_factory=Counter
    )  # what a 409's retry got: "won" / "refused 412" / ...
    errors: Counter = field(default_factory=Counter)  # anything but a win or a refusal

    @property
    def atomic(self) -> bool:
        return self.rounds > 0 and not self.bad_rounds and not self.errors


def status_of(error) -> tuple[int, str]:
    """The HTTP status and S3 error code of a refused request."""
    response = getattr(error, "response", {}) or {}
    return (
        int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0),
        response.get("Error", {}).get("Code", type(error).__name__),
    )


def _race(writers: int, attempt) -> list:
    """Run ``attempt(writer)`` in ``writers`` threads released together; their results in order."""
    barrier = threading.Barrier(writers)
    results: list = [None] * writers

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = ("won", attempt(i))
        except Exception as error:  # noqa: BLE001 - every answer is counted, not raised
            results[i] = ("refused", error)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def _body(writer: int, round_: int) -> bytes:
    return f"round {round_} writer {writer}\n".encode()


def _judge(
    s3,
    bucket: str,
    key: str,
    results: list,
    check: Contention,
    round_: int,
    versioned: bool,
    retry=None,
) -> None:
    """Count one round: exactly one writer told it won, the object holding its bytes, and (when the
    bucket keeps versions) exactly one version of the key."""
    check.rounds += 1
    winners = [i for i, (kind, _) in enumerate(results) if kind == "won"]
    for i, (kind, outcome) in enumerate(results):
        if kind != "refused":
            continue
        status = status_of(outcome)
        if status[0] in (PRECONDITION_FAILED, CONDITIONAL_CONFLICT):
            check.refusals[status] += 1
            if status[0] == CONDITIONAL_CONFLICT and retry is not None:  # the store said: try again
                try:
                    retry(i)
                    check.retried["won"] += 1
                    winners.append(i)
                except Exception as again:  # noqa: BLE001
                    check.retried[f"refused {status_of(again)[0]}"] += 1
        else:
            check.errors[f"{status[0]} {status[1]}"] += 1
    held = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    problems = []
    if len(winners) != 1:
        problems.append(f"{len(winners)} writers told they won")
    elif held != _body(winners[0], round_):
        problems.append("the object holds another writer's bytes than the winner's")
    if versioned:
        versions = s3.list_object_versions(Bucket=bucket, Prefix=key).get("Versions", [])
        count = sum(v["Key"] == key for v in versions)
        if count != 1:
            problems.append(f"{count} object versions")
    if problems:
        check.bad_rounds.append(f"round {round_}: " + ", ".join(problems))


def put_if_absent(
    s3, bucket: str, prefix: str, writers: int, rounds: int, versioned: bool
) -> Contention:
    """``PutObject`` with ``If-None-Match: *`` (how delta-rs 1.x and Delta Spark's S3 writers claim
    ``N.json`` when the store has conditional writes)."""
    check = Contention("PutObject If-None-Match: *")
    for r in range(rounds):
        key = f"{prefix}put/{r:04d}.json"

        def attempt(i: int, key=key, r=r):
            return s3.put_object(Bucket=bucket, Key=key, Body=_body(i, r), IfNoneMatch="*")

        _judge(s3, bucket, key, _race(writers, attempt), check, r, versioned, retry=attempt)
    return check


def multipart_if_absent(
    s3, bucket: str, prefix: str, writers: int, rounds: int, versioned: bool
) -> Contention:
    """``CompleteMultipartUpload`` with ``If-None-Match: *``: each writer uploads its part first,
    then all complete at once (object_store's conditional multipart path)."""
    check = Contention("CompleteMultipartUpload If-None-Match: *")
    for r in range(rounds):
        key = f"{prefix}multipart/{r:04d}.json"
        uploads = []
        for i in range(writers):
            upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            etag = s3.upload_part(
                Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, Body=_body(i, r)
            )["ETag"]
            uploads.append((upload, etag))

        def attempt(i: int, key=key):
            upload, etag = uploads[i]
            return s3.complete_multipart_upload(
                Bucket=bucket,
                Key=key,
                UploadId=upload,
                IfNoneMatch="*",
                MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]},
            )

        results = _race(writers, attempt)
        _judge(s3, bucket, key, results, check, r, versioned)
        for (upload, _), (kind, _) in zip(uploads, results):
            if kind != "won":  # a refused completion leaves its upload open: abort it
                try:
                    s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload)
                except Exception:  # noqa: BLE001 - the store may have dropped it already
                    pass
    return check


def copy_if_absent(
    s3, bucket: str, prefix: str, writers: int, rounds: int, versioned: bool
) -> Contention:
    """``CopyObject`` with ``If-None-Match: *``: each writer copies its own staged object onto the key
    (a copy-if-not-exists commit, as the DynamoDB log stores' final step or delta-rs on stores without
    conditional put)."""
    check = Contention("CopyObject If-None-Match: *")
    for r in range(rounds):
        key = f"{prefix}copy/{r:04d}.json"
        sources = [f"{prefix}copy-staged/{r:04d}/{i}.json" for i in range(writers)]
        for i, source in enumerate(sources):
            s3.put_object(Bucket=bucket, Key=source, Body=_body(i, r))

        def attempt(i: int, key=key):
            return s3.copy_object(
                Bucket=bucket,
                Key=key,
                CopySource={"Bucket": bucket, "Key": sources[i]},
                IfNoneMatch="*",
            )

        _judge(s3, bucket, key, _race(writers, attempt), check, r, versioned, retry=attempt)
    return check


def compare_and_swap(
    s3, bucket: str, prefix: str, writers: int, rounds: int, versioned: bool
) -> Contention:
    """``PutObject`` with ``If-Match: <ETag>``: every round all writers replace the object they read
    (the same ETag); exactly one may. A store that lets two through loses an update."""
    check = Contention("PutObject If-Match: <ETag>")
    key = f"{prefix}cas/object.json"
    etag = s3.put_object(Bucket=bucket, Key=key, Body=b"start\n")["ETag"]
    for r in range(rounds):

        def attempt(i: int, r=r, etag=etag):
            return s3.put_object(Bucket=bucket, Key=key, Body=_body(i, r), IfMatch=etag)

        results = _race(writers, attempt)
        _judge(s3, bucket, key, results, check, r, versioned=False)
        won = [outcome for kind, outcome in results if kind == "won"]
        etag = won[0]["ETag"] if won else s3.head_object(Bucket=bucket, Key=key)["ETag"]
    if versioned:
        count = sum(
            v["Key"] == key
            for v in s3.list_object_versions(Bucket=bucket, Prefix=key).get("Versions", [])
        )
        if count != rounds + 1:
            check.bad_rounds.append(
                f"{count} object versions after {rounds} rounds (expected {rounds + 1}: one write per round)"
            )
    return check


def copy_of_a_deleted_object(s3, bucket: str, prefix: str) -> tuple[bool, str]:
    """Put a staged file, delete it, then copy it as CopyObject and as a multipart UploadPartCopy:
    S3 refuses both with 404 (NoSuchKey), also when versioning keeps the deleted bytes under a
    delete marker. delta-rs's DynamoDB log store reads that 404 as "a repair already moved my
    staged file"; a store that copies instead lets a retried commit write the same append twice.
    Returns (refused both, what the store answered)."""
    staged, answers = f"{prefix}copy-of-deleted/staged.tmp", {}
    s3.put_object(Bucket=bucket, Key=staged, Body=b"a staged commit\n")
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": staged}]})
    source = {"Bucket": bucket, "Key": staged}

    def part_copy() -> None:
        key = f"{prefix}copy-of-deleted/part-copied"
        upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        try:
            s3.upload_part_copy(
                Bucket=bucket, Key=key, UploadId=upload, PartNumber=1, CopySource=source
            )
        finally:
            s3.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload)

    for name, call in (
        (
            "CopyObject",
            lambda: s3.copy_object(
                Bucket=bucket, Key=f"{prefix}copy-of-deleted/copied", CopySource=source
            ),
        ),
        ("UploadPartCopy", part_copy),
    ):
        try:
            call()
            answers[name] = "200 (copied the deleted bytes)"
        except Exception as error:  # noqa: BLE001 - the refusal is the answer wanted
            status, code = status_of(error)
            answers[name] = f"{status} {code}"
    refused = all(not answer.startswith("200") for answer in answers.values())
    return refused, "; ".join(f"{name}: {answer}" for name, answer in answers.items())


@dataclass(frozen=True)
class Check:
    run: object  # one of the functions above
    needed: bool  # Delta's default writers rely on it: a failure makes the store unsafe for them
    who: str  # which writers rely on it


CHECKS = (
    Check(put_if_absent, True, "deltalake 0.23.0 and later: every commit on S3, by default"),
    Check(
        multipart_if_absent,
        False,
        "delta-rs with AWS_COPY_IF_NOT_EXISTS=multipart (object_store's multipart path)",
    ),
    Check(
        copy_if_absent,
        False,
        "no Delta writer of the workbook's eras; clients that copy a staged file onto a key if absent",
    ),
    Check(
        compare_and_swap,
        False,
        "no Delta commit; other table formats and tools that update one object in place",
    ),
)
