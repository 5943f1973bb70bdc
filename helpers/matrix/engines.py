"""The engine interface of the conflict matrix, and the register of engines by name.

An engine is whatever writes Delta tables: delta-rs in one era, Delta Spark. The pair runner
(:mod:`helpers.matrix.pairs`) needs this of it, in one process (``path``: a local path, or an
``s3://`` URI for an engine on S3)::

    class Engine:
        name: str                                  # "deltalake-1.6.6", "delta-spark-4.4"
        version: str                               # what the process really imports
        def unavailable(op) -> str | None          # None, or why this engine cannot run op
        def create_base(path) -> None              # the base table (operations.BASE_*)
        def open(path) -> handle                   # a snapshot of the table as it is now
        def run(op, handle, path) -> str | None    # op from that snapshot; raises if refused;
                                                   # returns a note if it chose to do nothing
        def read(path) -> dict                     # {"columns": [...], "properties": {...},
                                                   #  "rows": [[id, value, ...], ...]}

``run`` must commit from the handle's snapshot even when the table moved on since ``open``:
that is how a pair is raced without a clock (A commits, then B runs from its older handle).

An engine runs in a worker process of its own Python (an era's environment, or the kernel's for
Spark): :data:`ENGINES` says which, and which module builds it (its ``engine(name)`` function).
``python -m helpers.matrix.worker`` is that process: it builds the engine and streams one JSON
line per pair. Engines with the same :attr:`EngineSpec.process` share one worker process, so one
Spark session (one JVM, compiled once) serves every Spark engine's pairs.

Three kinds of entry besides one engine on local disk:

* a **mixed pair** (:attr:`EngineSpec.parts`): A by one engine, B by another, in one process (the
  kernel has Delta Spark and deltalake 1.6.6 side by side); :class:`helpers.matrix.pairs.Runner`
  takes one engine for A and one for B, and the serial orders use the same two;
* an engine on **S3** (:attr:`EngineSpec.store`): the same engine, its tables under a prefix of
  the S3 emulator's bucket; it confirms a local engine's cells (:attr:`EngineSpec.confirms`), and
  the summary lists every cell where the two differ;
* an engine whose process cannot hold a snapshot (Delta Spark) has ``run_held(op, path, first)``:
  B is held before its commit while ``first()`` runs A (:mod:`helpers.matrix.spark`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from helpers.ground import eras
from helpers.matrix import layouts
from helpers.matrix import operations as ops


class Engine(Protocol):
    name: str
    version: str

    def unavailable(self, op: str) -> str | None: ...
    def create_base(self, path: str) -> None: ...
    def open(self, path: str) -> Any: ...
    def run(self, op: str, handle: Any, path: str) -> str | None: ...
    def read(self, path: str) -> dict: ...


SPARK = "delta-spark-4.4"
SECOND_SPARK = "spark-2"
"""A second Spark worker process (its own driver): one driver's pairs keep about one core busy (its
threads take turns in Python and py4j), so the mixed pairs and Spark's other layouts run in a second
driver beside the first, which races Delta Spark alone, its other interleaving and its S3 sample."""
SPARK_3 = "delta-spark-3.3"
"""Delta Spark 3.3.2 on Spark 3.5 (:data:`helpers.ground.eras.GLUE_SPARK`), in its own environment:
the same engine module and pairs as :data:`SPARK`, in drivers of their own (``spark-3.3`` and
:data:`SECOND_SPARK_3`)."""
SECOND_SPARK_3 = "spark-3.3-2"
SECOND_DRIVERS = {SECOND_SPARK: "spark", SECOND_SPARK_3: "spark-3.3"}
"""Each second Spark driver, and the first driver its engines join in a short run."""
SPARK_OF_ERA = {eras.CURRENT_SPARK: SPARK, eras.GLUE_SPARK: SPARK_3}
"""The Delta Spark engine of each Spark era (:data:`helpers.ground.eras.SPARK_ERAS`)."""


def spark_here() -> str:
    """The Delta Spark engine this process runs (its pyspark's era)."""
    from helpers.spark import releases

    return SPARK_OF_ERA[releases.running().name]


CURRENT_RS = eras.CURRENT
"""The delta-rs era of the kernel (deltalake 1.6.6), the one mixed pairs and the S3 run use."""


@dataclass(frozen=True)
class EngineSpec:
    name: str
    module: str
    """The module whose ``engine(name)`` builds it, inside the worker process."""
    era: str
    """The environment its worker runs in (:mod:`helpers.ground.eras`): an era's, or the kernel's."""
    default: bool = True
    """In the full matrix (``make matrix``) unless ``--engines`` names others."""
    parts: tuple[str, str] | None = None
    """A mixed pair: the engines of A and of B (names of single-engine entries)."""
    store: str = "local"
    """Where its tables live: ``local`` (a folder) or ``s3`` (a prefix of the emulator's bucket)."""
    confirms: str | None = None
    """The engine whose cells this one re-runs on another store (the summary compares them)."""
    sample: bool = False
    """Run only the confirmed engine's non-refused pairs and a sample of its refused ones
    (:func:`helpers.matrix.worker.confirmation_pairs`); needs the confirmed engine in the same process."""
    process: str | None = None
    """Engines with the same key share one worker process (default: the engine's own name)."""
    threads: int = 1
    """How many of its process's engines run at once (threads: one Spark session, both cores busy)."""
    base_of: str | None = None
    """Another engine of the same process, run before this one, whose base table, "alone" tables and
    serial results this one reuses (the two mixed pairs: A→B of one is B→A of the other; an engine
    and its other interleaving); run without it, it creates its own base with its first engine."""
    layout: str = layouts.SHARED_FILES.name
    """The base table and predicates (:data:`helpers.matrix.layouts.LAYOUTS`); on a layout other
    than the shared files, only :data:`~helpers.matrix.operations.LAYOUT_OPS` are raced, and each of them
    against a second job of its own on another part (:data:`~helpers.matrix.operations.APART_OPS`)."""
    held_interleaving: str | None = None
    """Set on a variant that races the interleaving its engine does not race by itself
    (:data:`helpers.matrix.operations.INTERLEAVINGS`): only pairs whose B writes data files."""
    variant_of: str | None = None
    """The engine this one varies (its layout or interleaving): the summary lists every cell where
    the two differ, and the page states the condition."""

    def after(self) -> tuple[str, ...]:
        """The engines of its process that must finish before it starts (when they are in it)."""
        return tuple(filter(None, (self.base_of, self.confirms if self.sample else None)))

    @property
    def interleaving(self) -> str:
        """Whether B's data files come before or after A's commit in its races."""
        if self.held_interleaving:
            return self.held_interleaving
        b_module = ENGINES[self.parts[1]].module if self.parts else self.module
        return "b-files-first" if b_module == "helpers.matrix.spark" else "b-files-after"

    def chosen(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The pairs of ``pairs`` this engine races (a variant races only those its variation concerns):
        on the shared files, none of a second job on a part of its own (:data:`~helpers.matrix.operations.APART_OPS`:
        there are no parts); on another layout, the :data:`~helpers.matrix.operations.LAYOUT_OPS` and those;
        on another layout in the other interleaving, those alone; on each, only what the layout has
        (:meth:`helpers.matrix.layouts.Layout.races`: file-stats has no DELETE or UPDATE by id of its own)."""
        layout = layouts.LAYOUTS[self.layout]
        pairs = [(a, b) for a, b in pairs if layout.races(a) and layout.races(b)]
        if self.layout == layouts.SHARED_FILES.name:
            pairs = [(a, b) for a, b in pairs if b not in ops.APART_OPS]
        elif self.held_interleaving:
            pairs = [(a, b) for a, b in pairs if b in ops.APART_OPS]
        else:
            pairs = [
                (a, b)
                for a, b in pairs
                if (a in ops.LAYOUT_OPS and b in ops.LAYOUT_OPS) or b in ops.APART_OPS
            ]
        if self.held_interleaving:
            pairs = [(a, b) for a, b in pairs if ops.OPERATIONS[b].writes_data]
        return pairs

    @property
    def process_key(self) -> str:
        return self.process or self.name


def _delta_rs(era: str, default: bool = True) -> EngineSpec:
    return EngineSpec(era, "helpers.matrix.deltars", era, default)


def _variants(
    spec: EngineSpec, interleaving: str, layouts_in: str | None = None
) -> list[EngineSpec]:
    """The engine's other interleaving (in its process: it shares the engine's base and serial
    results) and its other layouts (in ``layouts_in``, default the engine's process)."""
    from dataclasses import replace

    key = spec.process_key
    others = [layout for layout in layouts.LAYOUTS if layout != layouts.SHARED_FILES.name]
    return [
        replace(
            spec,
            name=f"{spec.name}+{interleaving}",
            held_interleaving=interleaving,
            variant_of=spec.name,
            base_of=spec.name,
            process=key,
        ),
        *(
            replace(
                spec,
                name=f"{spec.name}+{layout}",
                layout=layout,
                variant_of=spec.name,
                process=layouts_in or key,
            )
            for layout in others
        ),
        # the same operation from two jobs on parts of their own, in the other interleaving too
        *(
            replace(
                spec,
                name=f"{spec.name}+{layout}+{interleaving}",
                layout=layout,
                held_interleaving=interleaving,
                variant_of=f"{spec.name}+{layout}",
                base_of=f"{spec.name}+{layout}",
                process=layouts_in or key,
            )
            for layout in others
        ),
    ]


def _on_s3(spec: EngineSpec, sample: bool) -> EngineSpec:
    """A Spark engine again on S3, in its driver: every pair, or (``sample``) the pairs it did not
    refuse and a sample of the rest."""
    from dataclasses import replace

    return replace(spec, name=f"{spec.name}@s3", store="s3", confirms=spec.name, sample=sample)


_DELTA_RS = [
    _delta_rs(era)
    for era in (
        "deltalake-0.22.3",
        "deltalake-0.25.5",
        "deltalake-1.1.4",
        "deltalake-1.5.0",
        "deltalake-1.5.1",
        "deltalake-1.6.3",
        CURRENT_RS,
    )
]
_SPARK = EngineSpec(SPARK, "helpers.matrix.spark", eras.CURRENT, process="spark", threads=2)
_SPARK_3 = EngineSpec(
    SPARK_3, "helpers.matrix.spark", eras.GLUE_SPARK, process="spark-3.3", threads=2
)


ENGINES: dict[str, EngineSpec] = {
    spec.name: spec
    for spec in (
        *_DELTA_RS,
        _SPARK,
        EngineSpec(
            f"spark-then-{CURRENT_RS}",
            "",
            eras.CURRENT,
            parts=(SPARK, CURRENT_RS),
            process=SECOND_SPARK,
            threads=2,
        ),
        EngineSpec(
            f"{CURRENT_RS}-then-spark",
            "",
            eras.CURRENT,
            parts=(CURRENT_RS, SPARK),
            process=SECOND_SPARK,
            threads=2,
            base_of=f"spark-then-{CURRENT_RS}",
        ),
        _on_s3(_SPARK, sample=True),
        EngineSpec(
            f"{CURRENT_RS}@s3",
            "helpers.matrix.deltars",
            eras.CURRENT,
            store="s3",
            confirms=CURRENT_RS,
        ),
        *(variant for spec in _DELTA_RS for variant in _variants(spec, "b-files-first")),
        *_variants(_SPARK, "b-files-after", layouts_in=SECOND_SPARK),
        _SPARK_3,
        # every pair, so that each S3 cell of 4.4.0's sample (chosen in the order its runs merged)
        # has 3.3.2's beside it
        _on_s3(_SPARK_3, sample=False),
        *_variants(_SPARK_3, "b-files-after", layouts_in=SECOND_SPARK_3),
    )
}
"""Every engine the matrix can run, by name (``--engines`` accepts these)."""

DEFAULT_ENGINES = tuple(name for name, spec in ENGINES.items() if spec.default)


ONE_SPARK_DRIVER_BELOW = 100
"""A run that gives its Spark engines fewer pairs than this in all (notebook 13's, a test's) runs them in
one driver: a second driver's start costs more than the core it adds (:data:`SECOND_SPARK`)."""


def processes(names: list[str], pairs: dict[str, int] | None = None) -> list[tuple[str, list[str]]]:
    """The worker processes for these engines: ``(era, [engine, ...])`` per :attr:`EngineSpec.process`
    key, in the order of each key's first engine, those with Delta Spark first (a Spark pair costs a
    hundred delta-rs pairs), then the largest groups (they take longest). ``pairs`` (how many each
    engine races): with fewer than :data:`ONE_SPARK_DRIVER_BELOW` Spark pairs in all, the second
    Spark driver's engines join the first's."""
    spark_pairs = sum((pairs or {}).get(name, 0) for name in names if ENGINES[name].threads > 1)
    one_driver = pairs is not None and spark_pairs < ONE_SPARK_DRIVER_BELOW
    groups: dict[str, list[str]] = {}
    for name in names:
        key = ENGINES[name].process_key
        if one_driver and key in SECOND_DRIVERS:
            key = SECOND_DRIVERS[key]
        groups.setdefault(key, []).append(name)

    def spark(group: list[str]) -> bool:
        return any(ENGINES[name].threads > 1 for name in group)

    ordered = sorted(groups.values(), key=lambda group: (not spark(group), -len(group)))
    return [(ENGINES[group[0]].era, group) for group in ordered]


this_process = "spark"
"""The :attr:`EngineSpec.process_key` of this worker process (set by :func:`helpers.matrix.worker.main`):
each Spark driver names its application, and so its log file, after it."""
pairs_in_this_process = 0
"""How many pairs the worker process was given (set by :func:`helpers.matrix.worker.main`, before it
builds its engines): a Spark engine's driver is tuned for a short or a long run by it."""


def race_held(op: str, b, wait_held, release, abandon, first) -> dict:
    """B of a race run in a thread while held (an engine's ``run_held``): ``b()`` runs the operation
    and is stopped by the engine's hold; ``wait_held()`` returns the held commit file's name once B
    waits there (None if B ended first) or raises TimeoutError; then ``first()`` (A) runs; then
    ``release()`` lets B go on. ``abandon()`` runs when B ends, to wake ``wait_held``. Returns B's
    ``note``, ``held_at`` and ``error`` (what B raised, or None)."""
    import threading

    outcome: dict = {}

    def run_b() -> None:
        try:
            outcome["note"] = b()
        except BaseException as error:  # noqa: BLE001  (handed to the caller's thread)
            outcome["error"] = error
        finally:
            abandon()

    thread = threading.Thread(target=run_b, name=f"matrix-held-{op}", daemon=True)
    thread.start()
    try:
        held = wait_held()
        first()
    finally:
        release()
    thread.join()
    return {"note": outcome.get("note"), "held_at": held, "error": outcome.get("error")}


def build(name: str):
    """The engine called ``name``, built in this process (its environment must be the right one).
    A mixed pair has no engine of its own: build each of its :attr:`EngineSpec.parts`."""
    import importlib

    spec = ENGINES[name]
    if spec.parts:
        raise ValueError(f"{name} is a mixed pair: build its parts {spec.parts}")
    return importlib.import_module(spec.module).engine(name)
