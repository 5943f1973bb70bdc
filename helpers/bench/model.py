"""From the emulators to a cloud: a simple model that projects each measured run to published
per-request latencies. It is a model, not a measurement; its assumptions, all of them:

1. A commit's requests happen one after another, and each costs the cloud's latency for its
   service in place of the emulator's (:data:`CLOUD_REQUEST_S`: one figure per service).
2. The requests per commit, of every kind, are the run's own (:mod:`helpers.bench.meter`):
   contention's extra log reads and refused claims are carried over as measured.
3. Time a writer spends outside requests (its CPU, the library's backoff, waiting for a core on
   this 2-core machine) is carried over unchanged. It is measured as the commits' latency minus
   their requests' seconds; when a writer sends requests in parallel (delta-rs reads the commits
   it lost to concurrently) the requests' seconds overlap, the difference can fall below zero,
   and it is then taken as zero: the model counts those requests one after another, so it
   overstates their cost rather than understating it.
4. Claims on one object are capped at the published rate of conditional writes to one object
   (:data:`OBJECT_CLAIMS_PER_S`); DynamoDB claims go to a new item per version, so no such cap.
5. N writers then give ``N / projected latency`` commits per second, up to that cap.

Published figures (2026 measurements of conditional writes on one object): S3 Standard about
58-68 ms per operation and about 15 per second; Azure Blob 9-16 per second. DynamoDB conditional
writes take a few milliseconds. Every other S3 or Azure request is assumed to cost the same as
their conditional write (no published figure for small GETs and LISTs is used).
"""

from __future__ import annotations

import math
from typing import Mapping

from helpers.bench.meter import KINDS, OUTSIDE_REQUESTS, column

CLOUD_REQUEST_S = {"s3": 0.063, "azure": 1 / 12.5, "dynamodb": 0.005}
"""Seconds per request: S3, the middle of 58-68 ms; Azure, one over the middle of 9-16 per second; DynamoDB, 'a few ms'."""
OBJECT_CLAIMS_PER_S = {"s3": 15.0, "azure": 12.5}
"""Published conditional writes per second on one object (S3 Standard; Azure Blob, the middle of 9-16)."""


def request_service(kind: str, backend: str, claim_style: str) -> str:
    """Which service a request of ``kind`` goes to: claims and lock finishing go to DynamoDB
    under the DynamoDB lock (the copy of the commit is one S3 request among them, see below)."""
    if claim_style == "dynamodb" and kind in ("claim accepted", "claim refused"):
        return "dynamodb"
    return backend


def project(
    run: Mapping,
    *,
    claim_style: str,
    cloud: Mapping[str, float] = CLOUD_REQUEST_S,
    caps: Mapping[str, float] = OBJECT_CLAIMS_PER_S,
) -> dict:
    """The projection of one metered run (a row of ``runs.csv``): ``projected_latency_s`` and
    ``projected_commits_per_s``. Lock bookkeeping under the DynamoDB lock (``commit finish``:
    the staged file's PUT, its copy and the item's update) is counted as S3 requests, the
    dearer service, which overstates the update's cost by a few milliseconds."""
    backend = run["backend"]
    latency = max(
        float(run[OUTSIDE_REQUESTS]), 0.0
    )  # below 0 when a writer's requests overlapped (see assumption 3)
    for kind in KINDS:
        latency += (
            float(run[column("n", kind)]) * cloud[request_service(kind, backend, claim_style)]
        )
    if not latency > 0:
        return {"projected_latency_s": math.nan, "projected_commits_per_s": math.nan}
    rate = int(run["writers"]) / latency
    if claim_style == "object":
        rate = min(rate, caps[backend])
    return {"projected_latency_s": latency, "projected_commits_per_s": rate}


def project_runs(results):
    """The projection of every metered run of a benchmark's results (:class:`helpers.bench.run.Results`):
    a frame of ``protocol``, ``writers``, ``projected_latency_s``, ``projected_commits_per_s``."""
    import pandas as pd

    from helpers.bench.run import PROTOCOLS

    rows = [
        {
            "protocol": row["protocol"],
            "writers": row["writers"],
            **project(row, claim_style=PROTOCOLS[row["protocol"].split("@")[0]].claim_style),
        }
        for row in results.runs.to_dict("records")
        if row.get("metered")
    ]
    return pd.DataFrame(
        rows, columns=["protocol", "writers", "projected_latency_s", "projected_commits_per_s"]
    )
