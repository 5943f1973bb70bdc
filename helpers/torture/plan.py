"""What a torture run does: the protocols (which writers, in which era, committing how), each
writer's operations, and where writers are killed.

A protocol is one or more groups of writer processes on one table. Safe protocols must lose
nothing; unsafe ones are run in the same harness so that their loss per contended commit is
measured, not assumed::

    plan.PROTOCOLS["s3-dynamodb-lock"].writers     # 8
    plan.operations(writers=8, per_writer=3)       # {"w1": [{"op": 1, "kind": "append"}, ...], ...}
    plan.PROTOCOLS["azure"].compactors             # (1,): OPTIMIZE from one writer

Kill points, the steps of a commit at which a writer is SIGKILLed by its gate
(:class:`helpers.torture.faults.KillGate`), and the protocols they exist in:

* ``data-written``: data files written, the commit not yet begun (every protocol);
* ``staged``: the commit written to a temporary file, the version not yet claimed (the DynamoDB
  log stores; delta-rs 1.6.1 and later (here 1.6.6) and Azure put the commit in place directly);
* ``claimed``: the store accepted the claim of a version (the conditional write of ``N.json``,
  or the DynamoDB item), and the writer dies before it hears so;
* ``copied``: the DynamoDB log stores' commit copied to ``N.json``, its item not yet marked complete.
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers.ground import eras
from helpers.stores import tables
from helpers.torture.worker import APPEND, COMPACT, DELETE

KILL_POINTS = ("data-written", "staged", "claimed", "copied")
COMMIT_STYLES = {
    "s3-conditional": "deltalake: a conditional PUT of N.json (If-None-Match)",
    "s3-dynamodb": "a DynamoDB log store: stage, claim the lock item, copy to N.json, mark the item complete",
    "azure": "Azure Blob: a conditional PUT of N.json",
    "s3-unsafe-rename": "deltalake 0.22: copy + delete 'rename' with no lock (AWS_S3_ALLOW_UNSAFE_RENAME)",
    "s3-spark-default": "Delta Spark's default S3 log store: check, then write N.json (safe inside one driver only)",
}


class PlanError(ValueError):
    """A protocol, count or kill point is not one the harness knows; the message lists those it does."""


@dataclass(frozen=True)
class Group:
    """Writer processes that share an era, an engine and a way of committing."""

    era: str
    engine: str
    commit: str
    processes: int
    threads: int = 1
    """Writers per process (Spark: one driver, a thread per writer)."""

    def storage_options(self) -> dict[str, str]:
        if self.commit == "azure":
            return tables.azure_storage_options()
        return tables.s3_storage_options(
            unsafe_rename=self.commit == "s3-unsafe-rename",
            locking_provider="dynamodb" if self.commit == "s3-dynamodb" else None,
        )

    def table_uri(self, name: str) -> str:
        if self.commit == "azure":
            return tables.azure_uri(name)
        return tables.s3_uri(name, scheme="s3a" if self.engine == "spark" else "s3")


@dataclass(frozen=True)
class Protocol:
    name: str
    label: str
    groups: tuple[Group, ...]
    safe: bool
    kill_points: tuple[str, ...] = ()
    restarts: tuple[str, ...] = ()
    """Services stopped and started again during a restart run (``moto``, ``azurite``)."""
    one_compactor: bool = False
    """OPTIMIZE from one writer only, as a table's maintenance job runs it. deltalake 1.6.4 to
    1.6.6 let two concurrent OPTIMIZEs both commit, so the compacted rows are in the table twice
    (notebook 12 shows it with two snapshots of one version); its protocols compact from one
    writer so that what they measure is the commit protocol. The others compact from one writer
    in four, and every OPTIMIZE that loses a race must fail."""

    @property
    def writers(self) -> int:
        return sum(g.processes * g.threads for g in self.groups)

    @property
    def spark(self) -> bool:
        """Whether any of its writers is a Spark driver."""
        return any(g.engine == "spark" for g in self.groups)

    @property
    def compactors(self) -> tuple[int, ...]:
        """The writers (by index, from 1) that compact."""
        return (
            (1,)
            if self.one_compactor
            else tuple(i for i in range(1, self.writers + 1) if i % 4 == 1)
        )

    @property
    def backend(self) -> str:
        return "azure" if self.groups[0].commit == "azure" else "s3"

    @property
    def dynamodb(self) -> bool:
        return any(g.commit == "s3-dynamodb" for g in self.groups)


CURRENT, INTEROP, SEEDS = eras.CURRENT, eras.DYNAMODB_INTEROP, eras.SEEDS
PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "s3-conditional-put",
            "S3 conditional put (deltalake 1.6.6)",
            (Group(CURRENT, "deltalake", "s3-conditional", 8),),
            safe=True,
            kill_points=("data-written", "claimed"),
            restarts=("moto",),
            one_compactor=True,
        ),
        Protocol(
            "s3-dynamodb-lock",
            "S3 + DynamoDB lock (deltalake 1.5.1)",
            (Group(INTEROP, "deltalake", "s3-dynamodb", 8),),
            safe=True,
            kill_points=KILL_POINTS,
            restarts=("moto",),
        ),
        Protocol(
            "spark-dynamodb",
            "Spark, DynamoDB log store (2 drivers x 4 writer threads)",
            (Group(CURRENT, "spark", "s3-dynamodb", 2, threads=4),),
            safe=True,
            kill_points=KILL_POINTS,
        ),
        Protocol(
            "azure",
            "Azure Blob, conditional put (deltalake 1.6.6, Azurite)",
            (Group(CURRENT, "deltalake", "azure", 8),),
            safe=True,
            kill_points=("data-written", "claimed"),
            restarts=("azurite",),
            one_compactor=True,
        ),
        Protocol(
            "s3-unsafe-rename",
            "the seeds' era: rename without a lock (deltalake 0.22.3)",
            (Group(SEEDS, "deltalake", "s3-unsafe-rename", 8),),
            safe=False,
        ),
        Protocol(
            "spark-default-log-store",
            "Spark's default S3 log store from 2 drivers (x 4 writer threads)",
            (Group(CURRENT, "spark", "s3-spark-default", 2, threads=4),),
            safe=False,
        ),
        Protocol(
            "mixed-spark-and-deltalake-1.6",
            "Spark with the DynamoDB log store beside deltalake 1.6.6 (conditional put)",
            (
                Group(CURRENT, "spark", "s3-dynamodb", 2, threads=2),
                Group(CURRENT, "deltalake", "s3-conditional", 4),
            ),
            safe=False,
            one_compactor=True,
        ),
    )
}


FULL_RUN_MIN_COMMITS = 1000
"""What ``make torture`` promises each safe protocol: at least this many contended commits."""
FULL_RUN_PER_WRITER = {
    "s3-conditional-put": 275,
    "s3-dynamodb-lock": 275,
    "spark-dynamodb": 160,
    "azure": 275,
}
"""Operations per writer of each safe protocol in ``make torture``: enough for at least 1,000
commits from its 8 writers. Not every operation commits: delta-rs 1.x fails an append that races
a delete or an OPTIMIZE ("a concurrent transaction deleted data this operation read"). In a
loaded ``make test`` run of notebook 12 (224 operations each), 143 committed on S3, 126 with the
lock, 150 on Azure: 0.56 and up, so 2,200 operations give about 1,200. Delta Spark fails no
append: 160 operations per writer hold 1,120 appends, 64 of which a run's 16 kills (4 writer
threads each) may interrupt."""
FULL_RUN_UNSAFE_PER_WRITER = 25
"""An unsafe protocol's operations per writer in ``make torture``: 200, enough for its loss rate."""


def full_run_per_writer(name: str) -> int:
    return FULL_RUN_PER_WRITER.get(name, FULL_RUN_UNSAFE_PER_WRITER)


def protocol(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise PlanError(
            f"Unknown protocol {name!r}; the torture run has {', '.join(PROTOCOLS)}."
        ) from None


def kind_of(position: int, writer_index: int, compactors: tuple[int, ...]) -> str:
    """The operation at a writer's ``position`` (1-based): the 5th, 15th, 25th, ... a delete, the
    10th, 20th, ... of a writer in ``compactors`` a compaction, the rest appends. (With a delete at
    every 5th, delta-rs failed up to 6 appends in 10 under a loaded test run: each delete fails the
    appends that race it, see :data:`FULL_RUN_PER_WRITER`.)"""
    if position % 10 == 0 and writer_index in compactors:
        return COMPACT
    return DELETE if position % 10 == 5 else APPEND


def operations(
    writers: int, per_writer: int, compactors: tuple[int, ...] = (1,)
) -> dict[str, list[dict]]:
    """Each writer's operations: writer ``w<i>`` has numbers ``(i-1)*M+1 .. i*M``, so an
    operation's number (its commit's ``workbook.batch`` tag, an append's batch) names its writer;
    the writers in ``compactors`` (:attr:`Protocol.compactors`) compact."""
    if isinstance(per_writer, bool) or not isinstance(per_writer, int) or per_writer < 1:
        raise PlanError(f"operations per writer must be a whole number >= 1, not {per_writer!r}.")
    return {
        f"w{i}": [
            {"op": (i - 1) * per_writer + k, "kind": kind_of(k, i, compactors)}
            for k in range(1, per_writer + 1)
        ]
        for i in range(1, writers + 1)
    }


def kill_schedule(proto: Protocol, kills: int) -> list[str]:
    """The kill points of ``kills`` kills, each of the protocol's points in turn."""
    if kills and not proto.kill_points:
        raise PlanError(f"{proto.name} has no kill points: only the safe protocols are killed.")
    return [proto.kill_points[i % len(proto.kill_points)] for i in range(kills)]
