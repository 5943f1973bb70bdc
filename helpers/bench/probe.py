"""The emulators' own latency, per request, measured in the same benchmark run: what one S3 PUT,
GET, LIST and conditional PUT costs on moto, one conditional DynamoDB PutItem, and one blob PUT,
GET, LIST and conditional copy on Azurite; each sent directly and through the request meter, so
the meter's own share is known too. One request at a time, from this process, after a few
unmeasured requests to open connections. The rows feed the cloud projection
(:mod:`helpers.bench.model`).
"""

from __future__ import annotations

import time
import uuid

from helpers.bench import stats
from helpers.bench.meter import RequestMeter, upstream
from helpers.ground import config
from helpers.stores import storage

WARM_UP = 3


def _timed(call, requests: int) -> list[float]:
    for _ in range(WARM_UP):
        call()
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - started)
    return seconds


def _s3_calls(endpoint: str | None) -> dict:
    s3, dynamodb = storage.s3_client(endpoint), storage.dynamodb_client(endpoint)
    bucket = config.names().s3_bucket
    prefix = f"bench-probe/{uuid.uuid4().hex}"
    s3.put_object(Bucket=bucket, Key=f"{prefix}/read.json", Body=b"{}")
    lock_table = storage.ensure_lock_table()

    def conditional_put():
        s3.put_object(
            Bucket=bucket,
            Key=f"{prefix}/_delta_log/{uuid.uuid4().hex}.json",
            Body=b"{}",
            IfNoneMatch="*",
        )

    def claim():
        dynamodb.put_item(
            TableName=lock_table,
            Item={
                "tablePath": {"S": f"s3://{bucket}/{prefix}"},
                "fileName": {"S": uuid.uuid4().hex},
            },
            ConditionExpression="attribute_not_exists(fileName)",
        )

    return {
        ("s3", "PUT"): lambda: s3.put_object(
            Bucket=bucket, Key=f"{prefix}/{uuid.uuid4().hex}.parquet", Body=b"x" * 700
        ),
        ("s3", "GET"): lambda: s3.get_object(Bucket=bucket, Key=f"{prefix}/read.json")[
            "Body"
        ].read(),
        ("s3", "LIST"): lambda: s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/"),
        ("s3", "conditional PUT"): conditional_put,
        ("dynamodb", "conditional PutItem"): claim,
    }, lambda: storage.remove_table(f"s3://{bucket}/{prefix}")


def _azure_calls(endpoint: str | None) -> dict:
    service = storage.blob_service(endpoint)
    container = service.get_container_client(storage.ensure_container())
    prefix = f"bench-probe/{uuid.uuid4().hex}"
    source = container.get_blob_client(f"{prefix}/read.json")
    source.upload_blob(b"{}")

    def conditional_copy():
        target = container.get_blob_client(f"{prefix}/_delta_log/{uuid.uuid4().hex}.json")
        target.start_copy_from_url(
            source.url, headers={"If-None-Match": "*"}
        )  # what delta-rs sends

    return {
        ("azure", "PUT"): lambda: container.get_blob_client(
            f"{prefix}/{uuid.uuid4().hex}.parquet"
        ).upload_blob(b"x" * 700),
        ("azure", "GET"): lambda: source.download_blob().readall(),
        ("azure", "LIST"): lambda: list(container.list_blobs(name_starts_with=f"{prefix}/")),
        ("azure", "conditional copy"): conditional_copy,
    }, lambda: [
        container.delete_blob(b.name) for b in container.list_blobs(name_starts_with=f"{prefix}/")
    ]


def measure(backends, *, requests: int = 40) -> list[dict]:
    """Rows ``{service, request, path, n, p50_ms, p95_ms, mean_ms}`` for each request of each
    backend (``s3``, ``azure``), sent ``direct`` and ``metered``."""
    if isinstance(requests, bool) or not isinstance(requests, int) or requests < 1:
        raise stats.BenchError(f"probe requests must be a whole number >= 1, not {requests!r}.")
    rows = []
    for backend in backends:
        with RequestMeter(upstream(backend)) as meter:
            for path, endpoint in (("direct", None), ("metered", meter.endpoint)):
                calls, cleanup = (_azure_calls if backend == "azure" else _s3_calls)(endpoint)
                try:
                    for (service, request), call in calls.items():
                        seconds = _timed(call, requests)
                        rows.append(
                            {
                                "service": service,
                                "request": request,
                                "path": path,
                                "n": len(seconds),
                                "p50_ms": 1000 * stats.percentile(seconds, 50),
                                "p95_ms": 1000 * stats.percentile(seconds, 95),
                                "mean_ms": 1000 * sum(seconds) / len(seconds),
                            }
                        )
                finally:
                    cleanup()
    return rows
