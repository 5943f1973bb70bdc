"""The writer protocol: what a writer process is told, what it reports, where it waits, how it
tags its commit, and the shape every engine has.

* :class:`WriterSpec`: what one writer does (built by :mod:`helpers.runs.runner`, passed as JSON);
* :class:`WriterResult`: what it says about itself, written atomically before it exits;
* the barrier: ``ready-<id>``, ``gone-<id>`` and ``go`` files in the run's barrier folder;
* the tags ``workbook.writer`` / ``workbook.batch`` on each commit, so the auditor can tell whose
  commit is whose;
* :class:`Engine`: the four steps an engine implements (``check_spec``, ``load``,
  ``snapshot_version``, ``append``); :data:`ENGINE_MODULES` names the engines, and
  :func:`engine_class` imports one on demand, so a writer era without Spark or Daft never loads them.

Standard library only: this module runs in every writer era's Python.
"""

from __future__ import annotations

import abc
import importlib
import json
import os
import re
import sys
import time
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from helpers.delta import landing
from helpers.delta.delta_log import BATCH_TAG, WRITER_TAG
from helpers.ground.local_processes import process_alive

T_PROCESS_START = time.time()

COMMITTED = "committed"
FAILED = "failed"

ENGINE_MODULES = {
    "deltalake": "helpers.writers.deltalake_engine",
    "daft": "helpers.writers.daft_engine",
    "spark": "helpers.writers.spark_engine",
}
"""Engine name -> the module whose ``ENGINE`` is its :class:`Engine` class."""
ENGINES = tuple(ENGINE_MODULES)


class SpecError(ValueError):
    """The writer spec is unusable; the message names the field."""


class EngineUnavailable(RuntimeError):
    """The engine's package cannot be used in this Python environment; the message says where it is."""


class TableNotFoundError(FileNotFoundError):
    """No Delta table at the URI a writer was given (named in the message)."""


def one_line(text: str, limit: int = 2000) -> str:
    """Error texts from delta-rs span lines and carry ANSI colours; keep them readable in a table."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return " ".join(text.split())[:limit]


def literal(value: Any, *, wrap: bool = True) -> str:
    """A Python literal of ``value`` a learner can paste, strings in double quotes; a dict of several
    keys one per line (``wrap=False``: on one line)."""
    if isinstance(value, str):
        return repr(value) if '"' in value and "'" not in value else json.dumps(value)
    if isinstance(value, dict):
        items = [f"{literal(k)}: {literal(v, wrap=False)}" for k, v in value.items()]
        if wrap and len(items) > 1:
            return "{\n" + "".join(f"    {item},\n" for item in items) + "}"
        return "{" + ", ".join(items) + "}"
    return repr(value)


READ_LANDING = "data = landing.read_landing_file(landing_file)  # the file that started this writer: a pyarrow Table"
"""How every engine's writer reads its data (:func:`helpers.delta.landing.read_landing_file`), as its code is shown."""


# ---------------------------------------------------------------------------------------------
# Tags
# ---------------------------------------------------------------------------------------------


def writer_tags(spec: "WriterSpec") -> dict[str, str]:
    """The tags a writer puts on its commit: ``{"workbook.writer": "w3", "workbook.batch": "3"}``."""
    return {WRITER_TAG: spec.writer_id, BATCH_TAG: str(spec.batch)}


# ---------------------------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------------------------


class Engine(abc.ABC):
    """What every engine does for :func:`helpers.writers.__main__.run`, in order: ``load`` the table
    (before the barrier), tell its ``snapshot_version``, then ``append`` the landing data."""

    name: ClassVar[str]
    holds_snapshot: ClassVar[bool] = True
    """Can it append against the snapshot loaded before the barrier? If not, ``refresh_reason`` says why."""
    refresh_reason: ClassVar[str] = ""
    version: str
    """The library version the result records (e.g. the deltalake version)."""

    @classmethod
    def check_spec(cls, spec: "WriterSpec") -> None:
        """Refuse, naming the field, what this engine cannot do (runs without importing the library)."""

    def library_max_commit_retries(self, retries: int | None) -> int | None:
        """The value the library is given for the spec's ``max_commit_retries`` (the same, by default)."""
        return retries

    @abc.abstractmethod
    def load(self, spec: "WriterSpec") -> Any:
        """Open the table; raise TableNotFoundError (naming the URI) if there is none."""

    @abc.abstractmethod
    def snapshot_version(self, table: Any) -> int:
        """The version of the snapshot ``load`` returned."""

    @abc.abstractmethod
    def append(self, table: Any, data: Any, spec: "WriterSpec") -> tuple[int | None, str]:
        """Append ``data`` (a pyarrow Table); return (the version it believes it committed, how it knows)."""

    @classmethod
    @abc.abstractmethod
    def code(cls, spec: "WriterSpec") -> str:
        """The library calls :meth:`load` and :meth:`append` make for ``spec`` in its era, as Python a
        learner can copy (built from the arguments those methods use; credentials masked)."""


def engine_class(name: str) -> type[Engine]:
    """The Engine class called ``name``, imported on demand. Raises SpecError for an unknown name."""
    if name not in ENGINE_MODULES:
        raise SpecError(f"Unknown engine {name!r}; this writer has {', '.join(ENGINES)}.")
    return importlib.import_module(ENGINE_MODULES[name]).ENGINE


def check_max_commit_retries(retries: Any) -> None:
    """Raise SpecError unless ``retries`` is None (the library's default) or a whole number >= 0."""
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or retries < 0
    ):
        raise SpecError(
            f"max_commit_retries must be None (the library's default) or a whole number >= 0, not {retries!r}."
        )


# ---------------------------------------------------------------------------------------------
# The spec and the result
# ---------------------------------------------------------------------------------------------


@dataclass
class WriterSpec:
    """What one writer process does. Built by the runner, passed as JSON."""

    writer_id: str
    era: str
    table_uri: str
    landing_file: str
    result_path: str
    storage_options: dict = field(default_factory=dict)
    engine: str = "deltalake"
    batch: int | None = None
    """The batch number of the landing file (its ids are batch*100+1..+10); for the record."""
    max_commit_retries: int | None = None
    """None: the library's default; 0: no retry, a lost race fails."""
    barrier_dir: str | None = None
    """Folder of the cross-process barrier; None to write at once."""
    barrier_timeout_s: float | None = None
    """None: wait for ``go`` as long as the runner lives (the runner decides when a run has lasted
    too long); a number: give up after that many seconds."""
    runner_pid: int | None = None
    """The process that will open the barrier (None: this writer's parent)."""
    hold_snapshot: bool = True
    """Append against the snapshot loaded before the barrier (the seeds' Rust program did). False:
    refresh to the latest version first, as deltalake 0.22.3's write_deltalake does by itself."""

    @classmethod
    def from_dict(cls, data: Any) -> "WriterSpec":
        """Validate a decoded JSON spec; raises SpecError naming the missing, unknown or bad field."""
        if not isinstance(data, dict):
            raise SpecError(f"A writer spec is a JSON object, not {type(data).__name__}.")
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise SpecError(
                f"Unknown spec field(s) {', '.join(unknown)}; the writer knows {', '.join(known)}."
            )
        required = [
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING
        ]
        missing = [name for name in required if name not in data]
        if missing:
            raise SpecError(f"The writer spec lacks {', '.join(missing)}.")
        spec = cls(**data)
        spec.check()
        return spec

    def check(self) -> None:
        """Raise SpecError naming the first field that is unusable (for any engine, then for this one)."""
        for name in ("writer_id", "era", "table_uri", "landing_file", "result_path", "engine"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise SpecError(f"Spec field {name} must be a non-empty string, not {value!r}.")
        if not isinstance(self.storage_options, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.storage_options.items()
        ):
            raise SpecError(
                "Spec field storage_options must map strings to strings (delta-rs takes only strings)."
            )
        check_max_commit_retries(self.max_commit_retries)
        if self.batch is not None:
            try:
                landing.batch_ids(self.batch)
            except landing.LandingError as error:
                raise SpecError(f"Spec field {error}") from None
        if not isinstance(self.hold_snapshot, bool):
            raise SpecError(
                f"Spec field hold_snapshot must be true or false, not {self.hold_snapshot!r}."
            )
        if self.runner_pid is not None and (
            isinstance(self.runner_pid, bool)
            or not isinstance(self.runner_pid, int)
            or self.runner_pid < 1
        ):
            raise SpecError(
                f"Spec field runner_pid must be null or a process id, not {self.runner_pid!r}."
            )
        timeout = self.barrier_timeout_s
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0
        ):
            raise SpecError(
                f"Spec field barrier_timeout_s must be null or a positive number, not {timeout!r}."
            )
        engine = engine_class(self.engine)
        if self.hold_snapshot and not engine.holds_snapshot:
            raise SpecError(
                f"The {self.engine} engine needs hold_snapshot=false: {engine.refresh_reason}"
            )
        engine.check_spec(self)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


@dataclass
class WriterResult:
    """What a writer reports about itself (never checked here: see helpers.runs.audit for that)."""

    writer_id: str
    era: str
    engine: str
    table_uri: str
    batch: int | None
    landing_file: str
    deltalake_version: str | None = None
    pid: int = field(default_factory=os.getpid)
    outcome: str = FAILED
    stage: str = "start"
    """Where it got to: start, landing, snapshot, barrier, write, done."""
    rows: int | None = None
    id_min: int | None = None
    id_max: int | None = None
    snapshot_version: int | None = None
    reported_version: int | None = None
    """The version the writer believes it committed; ``reported_version_source`` says how it knows."""
    reported_version_source: str | None = None
    max_commit_retries: int | None = None
    library_max_commit_retries: int | None = None
    """What was passed to the library (differs from max_commit_retries in deltalake < 1.0)."""
    error_class: str | None = None
    error_message: str | None = None
    t_process_start: float = T_PROCESS_START
    t_start: float | None = None
    t_imported: float | None = None
    t_landing_loaded: float | None = None
    t_snapshot_loaded: float | None = None
    t_barrier_released: float | None = None
    t_write_finished: float | None = None

    def fail(self, error: BaseException) -> None:
        self.outcome = FAILED
        self.error_class = type(error).__name__
        self.error_message = one_line(str(error)) or repr(error)


def write_result(result: WriterResult, path: str | os.PathLike) -> None:
    """Write the result JSON atomically: readers see the whole file or none."""
    write_json_atomically(asdict(result), path)


def spec_process_main(module: str, run) -> None:
    """The command line of a process started with a spec file (``python -m <module> SPEC_JSON_FILE``):
    read the spec, ``run(spec)``, write its result to ``spec["result_path"]`` atomically, and exit
    at once with 0 (no ``error`` in the result), 1, or 2 (usage). The exit skips interpreter
    shutdown: deltalake sometimes aborts there, and the result file is the record."""
    if len(sys.argv) != 2:
        print(f"usage: python -m {module} SPEC_JSON_FILE", file=sys.stderr)
        code = 2
    else:
        spec = json.loads(Path(sys.argv[1]).read_text())
        result = run(spec)
        write_json_atomically(result, spec["result_path"])
        code = 0 if result["error"] is None else 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def write_json_atomically(data: Any, path: str | os.PathLike) -> None:
    """Write ``data`` as JSON through a temporary file and a rename: readers see the whole file or none."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# The barrier: the writer creates ready-<id> (or gone-<id> if it fails before), the runner go
# ---------------------------------------------------------------------------------------------

BARRIER_POLL_S = 0.001


def ready_file(barrier_dir: str | os.PathLike, writer_id: str) -> Path:
    """The file a writer creates once it holds its snapshot and waits for go."""
    return Path(barrier_dir) / f"ready-{writer_id}"


def gone_file(barrier_dir: str | os.PathLike, writer_id: str) -> Path:
    """The file a writer creates when it fails before the barrier (so nobody waits for it)."""
    return Path(barrier_dir) / f"gone-{writer_id}"


def go_file(barrier_dir: str | os.PathLike) -> Path:
    """The file whose appearance releases every writer at once."""
    return Path(barrier_dir) / "go"


def open_barrier(barrier_dir: str | os.PathLike) -> float:
    """Create ``go`` atomically (every writer sees it whole or not at all); return the time."""
    go = go_file(barrier_dir)
    tmp = go.with_name(f".{go.name}.tmp")
    tmp.write_text(str(time.time()))
    os.replace(tmp, go)
    return time.time()


class BarrierTimeout(TimeoutError):
    """``go`` never came: the spec's barrier timeout passed, or the runner that would open it is gone."""


def wait_at_barrier(
    barrier_dir: str, writer_id: str, timeout_s: float | None = None, runner_pid: int | None = None
) -> float:
    """Announce readiness, then poll for ``go`` every millisecond; return the time it was seen.

    ``timeout_s=None`` waits as long as the process ``runner_pid`` (default: this writer's parent)
    lives; a number gives up after that many seconds. Either way the end is BarrierTimeout."""
    runner = runner_pid or os.getppid()
    ready_file(barrier_dir, writer_id).touch()
    go = go_file(barrier_dir)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while not go.exists():
        if deadline is not None and time.monotonic() > deadline:
            raise BarrierTimeout(
                f"No '{go.name}' in {barrier_dir} within {timeout_s:.0f} s; was the runner stopped?"
            )
        if not process_alive(runner):
            raise BarrierTimeout(
                f"The runner (pid {runner}) is gone; nobody will open {barrier_dir}."
            )
        time.sleep(BARRIER_POLL_S)
    return time.time()
