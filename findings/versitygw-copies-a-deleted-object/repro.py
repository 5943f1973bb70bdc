"""versitygw (posix backend, bucket versioning on) copies an object that was deleted: once a key's
current version is a delete marker, GetObject and HeadObject answer 404, but CopyObject and
UploadPartCopy with that key as their source answer 200 and copy the bytes of the version before
the delete. S3 answers both with 404 NoSuchKey.

Run it::

    go install github.com/versity/versitygw/cmd/versitygw@v1.8.0    # or --versitygw PATH
    pip install boto3
    python repro.py [--versitygw PATH]

The script starts ``versitygw posix`` on 127.0.0.1, on a free port, with a fresh data folder and
versioning folder of its own (both removed at exit), and stops it at exit. For each bucket, one
with versioning enabled and one without, it:

1. puts ``staged.tmp`` (12 bytes);
2. deletes it (DeleteObjects, as delta-rs deletes a staged commit file);
3. asks for it: GetObject, HeadObject (404 expected);
4. copies it: CopyObject to ``copied-1`` and a multipart upload to ``copied-2`` whose only part is
   an UploadPartCopy of it (404 NoSuchKey expected for both);
5. lists the bucket.

Why it matters: a client that moves an object by copy and delete may decide that another job
already moved it when a retried copy answers 404 (delta-rs's S3 DynamoDB log store does, in
deltalake 0.15.0 to 1.6.0). Given a 200 instead, it acts on a deleted object.

Exit codes: 1 the bug is present (a copy of the deleted object answered 200 in some bucket), 0
every copy of it was refused with 404, 2 the script could not run.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

KEY, SECRET = "repro", "repro-secret"
REGION = "us-east-1"
BODY = b"hello staged"
START_TIMEOUT = 60.0


class CannotRun(Exception):
    """The reproduction could not be carried out; the message says why (exit 2)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def start_versitygw(binary: str) -> str:
    """Start versitygw's posix backend with versioning on 127.0.0.1; wait (bounded) until it answers;
    stop it and remove its folders at exit. Returns its endpoint."""
    found = shutil.which(binary)
    if not found:
        raise CannotRun(f"no versitygw at {binary!r}: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, "
                        "or pass --versitygw PATH")
    root = tempfile.mkdtemp(prefix="repro-versitygw-")
    atexit.register(shutil.rmtree, root, True)
    for folder in ("data", "versions"):
        os.makedirs(os.path.join(root, folder))
    port = free_port()
    log = tempfile.TemporaryFile(mode="w+")  # not a pipe: a full pipe would block the server
    server = subprocess.Popen([found, "--port", f"127.0.0.1:{port}", "posix", "--versioning-dir",
                               os.path.join(root, "versions"), os.path.join(root, "data")],
                              env={**os.environ, "ROOT_ACCESS_KEY": KEY, "ROOT_SECRET_KEY": SECRET},
                              stdout=log, stderr=subprocess.STDOUT, text=True)
    atexit.register(stop, server)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            log.seek(0)
            raise CannotRun(f"versitygw exited ({server.returncode}): {log.read().strip()[-600:]}")
        try:
            urllib.request.urlopen(endpoint, timeout=2).close()
            return endpoint
        except urllib.error.HTTPError:
            return endpoint  # it answers (an unsigned request gets an S3 error)
        except OSError:
            time.sleep(0.1)  # waiting for the server to listen, not deciding any outcome
    raise CannotRun(f"versitygw did not answer at {endpoint} within {START_TIMEOUT:.0f} s")


def version_of(binary: str) -> str:
    """The module version Go recorded in the binary (``go version -m``); a ``go install`` build's own
    ``--version`` says only "git"."""
    path = shutil.which(binary) or binary
    if shutil.which("go"):
        done = subprocess.run(["go", "version", "-m", path], capture_output=True, text=True, timeout=30)
        for line in done.stdout.splitlines():
            fields = line.split()
            if fields[:2] == ["mod", "github.com/versity/versitygw"] and len(fields) > 2:
                return f"versitygw {fields[2]}"
    done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    return "versitygw " + " ".join((done.stdout + done.stderr).split()[:4])


def answer(call) -> str:
    """``200`` and what came back, or the status and error code S3 answered."""
    from botocore.exceptions import ClientError

    try:
        return f"200 {call()}"
    except ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return f"{status} {error.response.get('Error', {}).get('Code', '')}".strip()


def one_bucket(s3, bucket: str, versioned: bool) -> dict[str, str]:
    s3.create_bucket(Bucket=bucket)
    if versioned:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    status = s3.get_bucket_versioning(Bucket=bucket).get("Status", "never enabled")
    s3.put_object(Bucket=bucket, Key="staged.tmp", Body=BODY)
    deleted = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "staged.tmp"}]})
    if deleted.get("Errors") or [d["Key"] for d in deleted.get("Deleted", [])] != ["staged.tmp"]:
        raise CannotRun(f"DeleteObjects did not delete staged.tmp: {deleted}")
    source = f"{bucket}/staged.tmp"

    def part_copy() -> str:
        upload = s3.create_multipart_upload(Bucket=bucket, Key="copied-2")["UploadId"]
        try:
            etag = s3.upload_part_copy(Bucket=bucket, Key="copied-2", UploadId=upload, PartNumber=1,
                                       CopySource=source)["CopyPartResult"]["ETag"]
            s3.complete_multipart_upload(Bucket=bucket, Key="copied-2", UploadId=upload,
                                         MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
        except Exception:
            s3.abort_multipart_upload(Bucket=bucket, Key="copied-2", UploadId=upload)
            raise
        return f"copied-2 holds {s3.get_object(Bucket=bucket, Key='copied-2')['Body'].read()!r}"

    def copy() -> str:
        s3.copy_object(Bucket=bucket, Key="copied-1", CopySource=source)
        return f"copied-1 holds {s3.get_object(Bucket=bucket, Key='copied-1')['Body'].read()!r}"

    found = {"versioning": status,
             "GetObject": answer(lambda: len(s3.get_object(Bucket=bucket, Key="staged.tmp")["Body"].read())),
             "HeadObject": answer(lambda: s3.head_object(Bucket=bucket, Key="staged.tmp")["ContentLength"]),
             "CopyObject": answer(copy), "UploadPartCopy": answer(part_copy)}
    found["listed"] = ", ".join(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])) or "nothing"
    return found


def reproduce(binary: str) -> int:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as missing:
        raise CannotRun(f"{missing}. Install the package first: pip install boto3") from None
    print(f"{version_of(binary)}, boto3 {boto3.__version__}, Python {sys.version.split()[0]}")
    endpoint = start_versitygw(binary)
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=REGION, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                      config=Config(s3={"addressing_style": "path"}))
    print(f"versitygw posix at {endpoint}")
    copied = []
    for bucket, versioned in (("versioned", True), ("unversioned", False)):
        found = one_bucket(s3, bucket, versioned)
        print(f"bucket {bucket!r} (versioning: {found['versioning']}): put staged.tmp, DeleteObjects staged.tmp, then")
        for request in ("GetObject", "HeadObject", "CopyObject", "UploadPartCopy"):
            print(f"  {request} of staged.tmp -> {found[request]}")
        print(f"  listed: {found['listed']}")
        copied += [f"{request} in {bucket!r}" for request in ("CopyObject", "UploadPartCopy") if found[request].startswith("200")]
    if copied:
        print(f"BUG PRESENT: the deleted object was copied ({', '.join(copied)}); S3 answers 404 NoSuchKey.")
        return 1
    print("OK: every copy of the deleted object was refused with 404.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--versitygw", default=os.environ.get("VERSITYGW", "versitygw"),
                        help="the versitygw binary (default: versitygw on PATH, or $VERSITYGW)")
    args = parser.parse_args(argv)
    try:
        return reproduce(args.versitygw)
    except CannotRun as problem:
        print(f"cannot run: {problem}", file=sys.stderr)
        return 2
    except Exception:  # anything else is a failure to run, not an outcome
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
