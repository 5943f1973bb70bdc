"""What a benchmark protocol is: one way of committing to one table from many writers
(:class:`Protocol`: its era, engine, emulator and claim style), and its copies per S3 server
(:func:`on_servers`, with the pairs known to break left out by :func:`left_out`). The benchmark's
own protocols are :data:`helpers.bench.run.PROTOCOLS`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from helpers.bench import stats
from helpers.ground import config
from helpers.stores import tables


@dataclass(frozen=True)
class Protocol:
    """One way of committing to one table from many writers."""

    name: str
    label: str
    era: str
    engine: str
    """``deltalake`` or ``spark`` (:data:`helpers.bench.worker.APPENDERS`)."""
    backend: str
    """``s3`` or ``azure``: which emulator, and which cloud the model projects to."""
    claim_style: str
    """How an attempt claims a version (:data:`helpers.bench.meter.CLAIM_STYLES`)."""
    writer_counts: tuple[int, ...] = (1, 2, 4, 8, 16)
    threads: bool = False
    """Writers share one process (one Spark driver with a pool of writer threads)."""
    safe: bool = True
    s3_server: str = ""
    """The server that plays S3 for this protocol (:data:`helpers.ground.config.S3_SERVERS`); empty: the
    environment's. Set by :func:`on_servers`, whose copies are named ``<protocol>@<server>``."""
    unsafe_on: tuple[tuple[str, str], ...] = ()
    """(S3 server, why): servers on which this safe protocol is known to break its promise, each with
    the finding that shows it; :func:`on_servers` leaves those pairs out and says so."""

    def table_uri(self, name: str) -> str:
        if self.backend == "azure":
            return tables.azure_uri(name)
        return tables.s3_uri(name, scheme="s3a" if self.engine == "spark" else "s3")

    def storage_options(self) -> dict[str, str]:
        if self.backend == "azure":
            return tables.azure_storage_options()
        options = tables.s3_storage_options(
            locking_provider="dynamodb" if self.claim_style == "dynamodb" else None
        )
        if self.threads:
            options["spark.master"] = (
                "local[2]"  # the pool's jobs may use both cores, as the drivers together do
            )
        return options


def on_servers(chosen: Sequence[Protocol], servers: Sequence[str] | None) -> list[Protocol]:
    """Each S3 protocol once per server (``s3-conditional-put@versitygw``), the others once; no
    ``servers``: every protocol once, on the environment's S3 server."""
    if not servers:
        return list(chosen)
    unknown = [s for s in servers if s not in config.S3_SERVERS]
    if unknown or len(set(servers)) != len(servers):
        raise stats.BenchError(
            f"S3 servers must be distinct names from {', '.join(config.S3_SERVERS)}, not {', '.join(servers)}."
        )
    return [
        replace(p, name=f"{p.name}@{server}", label=f"{p.label} on {server}", s3_server=server)
        if p.backend == "s3"
        else p
        for p in chosen
        for server in (servers if p.backend == "s3" else servers[:1])
        if server not in dict(p.unsafe_on)
    ]


def left_out(chosen: Sequence[Protocol], servers: Sequence[str] | None) -> dict[str, str]:
    """``{"<protocol>@<server>": why}``: the pairs :func:`on_servers` leaves out."""
    return {
        f"{p.name}@{server}": dict(p.unsafe_on)[server]
        for p in chosen
        if p.backend == "s3"
        for server in servers or ()
        if server in dict(p.unsafe_on)
    }
