"""The engine interface of the conflict matrix, and the register of engines by name.

An engine is whatever writes Delta tables: delta-rs in one era, Delta Spark. The pair runner
(:mod:`helpers.matrix.pairs`) needs this of it, on local paths, in one process::

    class Engine:
        name: str                                  # "deltalake-1.6.6", later "delta-spark-4.4"
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

An engine runs in a process of its own Python (an era's environment, or the kernel's for Spark):
:data:`ENGINES` says which, and which module builds it (its ``engine(name)`` function).
``python -m helpers.matrix.worker`` is that process: it builds the engine and streams one JSON
line per pair. To add Delta Spark: a module ``helpers/matrix/spark.py`` with a class that has the
five methods above, ``engine(name)`` returning it, and an entry here such as
``"delta-spark-4.4": EngineSpec("delta-spark-4.4", "helpers.matrix.spark", eras.CURRENT)``.
A mixed pair (A by one engine, B by another) needs both in one process: the kernel has Delta
Spark and deltalake 1.6.6 side by side, and :class:`helpers.matrix.pairs.Runner` takes one
engine for A and one for B (the worker would build both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class Engine(Protocol):
    name: str
    version: str

    def unavailable(self, op: str) -> str | None: ...
    def create_base(self, path: str) -> None: ...
    def open(self, path: str) -> Any: ...
    def run(self, op: str, handle: Any, path: str) -> str | None: ...
    def read(self, path: str) -> dict: ...


@dataclass(frozen=True)
class EngineSpec:
    name: str
    module: str
    """The module whose ``engine(name)`` builds it, inside the worker process."""
    era: str
    """The environment its worker runs in (:mod:`helpers.eras`): an era's, or the kernel's."""
    default: bool = True
    """In the full matrix (``make matrix``) unless ``--engines`` names others."""


def _delta_rs(era: str, default: bool = True) -> EngineSpec:
    return EngineSpec(era, "helpers.matrix.deltars", era, default)


ENGINES: dict[str, EngineSpec] = {
    spec.name: spec
    for spec in (
        _delta_rs("deltalake-0.22.3"),
        _delta_rs("deltalake-1.5.1"),
        _delta_rs("deltalake-1.6.3"),
        _delta_rs("deltalake-1.6.6"),
    )
}
"""Every engine the matrix can run, by name (``--engines`` accepts these)."""

DEFAULT_ENGINES = tuple(name for name, spec in ENGINES.items() if spec.default)


def build(name: str):
    """The engine called ``name``, built in this process (its environment must be the right one)."""
    import importlib

    return importlib.import_module(ENGINES[name].module).engine(name)
