"""One writer process: load a landing file, load the table, wait at a barrier, append, report.

It plays the seeds' function that a landing file triggers (an AWS Lambda or an Azure Function):
each instance is its own OS process, loads one JSON-lines or CSV file with pyarrow, and appends
it to a Delta table. :mod:`helpers.runner` starts several at once, in the Python environment of
a delta-rs era (:mod:`helpers.eras`), so this file uses the standard library, pyarrow and the
engine's own package only, and runs as a script::

    <era python> helpers/writer.py SPEC             # SPEC: a JSON file, or inline JSON
    <era python> helpers/writer.py --make-landing DIR [--batches 1-8]
    <era python> helpers/writer.py --create-table URI OPTIONS_JSON [LANDING_FILE]

The steps, each timestamped in the result:

1. import the engine and pyarrow (``t_imported``), read the landing file (``t_landing_loaded``);
2. load the table, remembering its version (``snapshot_version``, ``t_snapshot_loaded``);
3. create ``ready-<writer_id>`` in the barrier folder and poll for ``go`` every millisecond
   (``t_barrier_released``): every writer now holds the same snapshot, so all of them try to
   commit the same next version;
4. append against that snapshot (``t_write_finished``), with the spec's ``max_commit_retries``.

The result JSON is written atomically (temporary file + rename) before the process exits, and the
process then ends with ``os._exit``: deltalake sometimes aborts at interpreter exit ("terminate
called without an active exception"), so the exit code (0 committed, 1 failed, 2 unusable spec)
is a hint and the result file is the record. A writer that leaves no result file has crashed.

Engines are pluggable (``ENGINES``): ``deltalake`` (delta-rs's own ``write_deltalake``, every era),
``daft`` (Daft's ``DataFrame.write_deltalake``, which commits through delta-rs; only where Daft
is installed, i.e. the kernel's era) and ``spark`` (Delta Spark on its own JVM per writer, to an
``s3a://`` table; only in the kernel's era, the one with pyspark, delta-spark and ``helpers``).
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
import traceback
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

T_PROCESS_START = time.time()

# ---------------------------------------------------------------------------------------------
# Landing files: the data every writer appends
# ---------------------------------------------------------------------------------------------

ROWS_PER_BATCH = 10
BATCH_ID_STRIDE = 100
"""Batch ``b`` holds ids ``b*100+1 .. b*100+10``, so any row tells which batch (writer) it came from."""
MAX_BATCH = (2**31 - 1) // BATCH_ID_STRIDE - 1
LANDING_FORMATS = ("jsonl", "csv")
LANDING_COLUMNS = (("id", "int32"), ("name", "string"))

_FIRST_NAMES = (
    "Aroha", "Bilal", "Chiara", "Dmitri", "Esi", "Farah", "Gustavo", "Hana", "Ines", "Jomo",
    "Kaito", "Leila", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Sione", "Tamar",
    "Umar", "Valentina", "Wiremu", "Ximena", "Yusuf", "Zofia", "Amara", "Bjorn", "Camille",
)
_LAST_NAMES = (
    "Ngata", "Haddad", "Rossi", "Volkov", "Mensah", "Rahimi", "Pereira", "Sato", "Moreau",
    "Kamau", "Tanaka", "Karimi", "Garcia", "Novak", "Lindqvist", "Iyer", "Dubois", "Silva",
    "Tupou", "Levi", "Farouk", "Costa", "Parata", "Ruiz", "Demir", "Kowalska", "Okafor",
)


class SpecError(ValueError):
    """The writer spec (or a landing-data request) is unusable; the message names the field."""


def batch_ids(batch: int) -> range:
    """The ids of a batch: ``batch*100+1 .. batch*100+10``. Raises SpecError outside 1..MAX_BATCH."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 1 <= batch <= MAX_BATCH:
        raise SpecError(f"batch must be a whole number from 1 to {MAX_BATCH}, not {batch!r}")
    first = batch * BATCH_ID_STRIDE + 1
    return range(first, first + ROWS_PER_BATCH)


def batch_of_id(row_id: int) -> int:
    """The batch a row id belongs to (inverse of :func:`batch_ids`)."""
    return (int(row_id) - 1) // BATCH_ID_STRIDE


def landing_rows(batch: int) -> list[dict[str, Any]]:
    """The rows of a batch, always the same: ``{"id": 101, "name": "Aroha Ngata"}``, ..."""
    return [
        {"id": i, "name": f"{_FIRST_NAMES[(i * 7) % len(_FIRST_NAMES)]} {_LAST_NAMES[(i * 11) % len(_LAST_NAMES)]}"}
        for i in batch_ids(batch)
    ]


def landing_format(batch: int) -> str:
    """Odd batches land as JSON lines, even ones as CSV (the seeds' function took both)."""
    return LANDING_FORMATS[(batch - 1) % len(LANDING_FORMATS)]


def landing_file_name(batch: int) -> str:
    """``batch-001.jsonl``, ``batch-002.csv``, ..."""
    return f"batch-{batch:03d}.{landing_format(batch)}"


def write_landing_file(batch: int, folder: str | os.PathLike) -> Path:
    """Write one batch into ``folder`` (created if missing) and return its path. Deterministic:
    the same batch always gives the same bytes."""
    path = Path(folder) / landing_file_name(batch)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = landing_rows(batch)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    with open(tmp, "w", newline="", encoding="utf-8") as out:
        if landing_format(batch) == "jsonl":
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        else:
            table = csv.DictWriter(out, fieldnames=[name for name, _ in LANDING_COLUMNS], lineterminator="\n")
            table.writeheader()
            table.writerows(rows)
    os.replace(tmp, path)
    return path


def landing_schema():
    """The pyarrow schema of the landing files and of the tables the writers append to."""
    import pyarrow as pa

    return pa.schema([(name, getattr(pa, kind)()) for name, kind in LANDING_COLUMNS])


def read_landing_file(path: str | os.PathLike):
    """Load a landing file (``.jsonl``/``.json`` or ``.csv``) into a pyarrow Table with the landing
    schema (``id`` int32, ``name`` string). Raises SpecError for another extension or a file that
    does not fit the schema, FileNotFoundError if it is missing."""
    import pyarrow as pa

    path = Path(path)
    schema = landing_schema()
    if not path.is_file():
        raise FileNotFoundError(f"Landing file {path} does not exist.")
    try:
        if path.suffix in (".jsonl", ".json"):
            import pyarrow.json as pj

            table = pj.read_json(path, parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"))
        elif path.suffix == ".csv":
            import pyarrow.csv as pc

            table = pc.read_csv(path, convert_options=pc.ConvertOptions(column_types=schema, include_columns=schema.names))
        else:
            raise SpecError(f"Landing file {path} is neither .jsonl nor .csv; the writer reads only those.")
    except pa.ArrowInvalid as error:
        raise SpecError(f"Landing file {path} does not fit the schema id:int32, name:string ({error}).") from None
    return table.select(schema.names).cast(schema)


# ---------------------------------------------------------------------------------------------
# The spec and the result
# ---------------------------------------------------------------------------------------------

COMMITTED = "committed"
FAILED = "failed"
WRITER_TAG = "workbook.writer"
BATCH_TAG = "workbook.batch"
"""Keys this writer adds to its commit's commitInfo, so an auditor can tell whose commit it is."""


def writer_tags(spec: "WriterSpec") -> dict[str, str]:
    """The tags a writer puts on its commit: ``{"workbook.writer": "w3", "workbook.batch": "3"}``."""
    return {WRITER_TAG: spec.writer_id, BATCH_TAG: str(spec.batch)}


def commit_tags(info: dict) -> dict[str, str]:
    """The workbook tags of a commit, from its commitInfo: delta-rs and Daft put them in commitInfo
    itself, Delta Spark (which cannot add keys there) in ``userMetadata`` as JSON. {} if none."""
    if WRITER_TAG in info:
        found = info
    else:
        try:
            found = json.loads(info.get("userMetadata") or "{}")
        except ValueError:
            return {}
    return {k: str(v) for k, v in found.items() if k in (WRITER_TAG, BATCH_TAG)} if isinstance(found, dict) else {}


def check_max_commit_retries(retries: Any) -> None:
    """Raise SpecError unless ``retries`` is None (the library's default) or a whole number >= 0."""
    if retries is not None and (isinstance(retries, bool) or not isinstance(retries, int) or retries < 0):
        raise SpecError(f"max_commit_retries must be None (the library's default) or a whole number >= 0, not {retries!r}.")


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
    barrier_timeout_s: float = 300.0
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
            raise SpecError(f"Unknown spec field(s) {', '.join(unknown)}; the writer knows {', '.join(known)}.")
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        missing = [name for name in required if name not in data]
        if missing:
            raise SpecError(f"The writer spec lacks {', '.join(missing)}.")
        spec = cls(**data)
        spec._check_types()
        return spec

    def _check_types(self) -> None:
        for name in ("writer_id", "era", "table_uri", "landing_file", "result_path", "engine"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise SpecError(f"Spec field {name} must be a non-empty string, not {value!r}.")
        if not isinstance(self.storage_options, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.storage_options.items()
        ):
            raise SpecError("Spec field storage_options must map strings to strings (delta-rs takes only strings).")
        check_max_commit_retries(self.max_commit_retries)
        if self.batch is not None:
            batch_ids(self.batch)
        if self.engine not in ENGINES:
            raise SpecError(f"Unknown engine {self.engine!r}; this writer has {', '.join(ENGINES)}.")
        if not isinstance(self.hold_snapshot, bool):
            raise SpecError(f"Spec field hold_snapshot must be true or false, not {self.hold_snapshot!r}.")
        if isinstance(self.barrier_timeout_s, bool) or not isinstance(self.barrier_timeout_s, (int, float)) or self.barrier_timeout_s <= 0:
            raise SpecError(f"Spec field barrier_timeout_s must be a positive number, not {self.barrier_timeout_s!r}.")
        check = getattr(ENGINES[self.engine], "check_spec", None)
        if check is not None:
            check(self)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


@dataclass
class WriterResult:
    """What a writer reports about itself (never checked here: see helpers.audit for that)."""

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


def one_line(text: str, limit: int = 2000) -> str:
    """Error texts from delta-rs span lines and carry ANSI colours; keep them readable in a table."""
    import re

    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return " ".join(text.split())[:limit]


def write_result(result: WriterResult, path: str | os.PathLike) -> None:
    """Write the result JSON atomically: readers see the whole file or none."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(asdict(result), indent=1))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# The barrier
# ---------------------------------------------------------------------------------------------

BARRIER_GO = "go"
BARRIER_POLL_S = 0.001


def ready_file(barrier_dir: str | os.PathLike, writer_id: str) -> Path:
    return Path(barrier_dir) / f"ready-{writer_id}"


class BarrierTimeout(TimeoutError):
    """The runner never said go."""


def wait_at_barrier(barrier_dir: str, writer_id: str, timeout_s: float) -> float:
    """Announce readiness, then poll for ``go`` every millisecond; return the time it was seen.
    Raises BarrierTimeout after ``timeout_s`` seconds."""
    ready_file(barrier_dir, writer_id).touch()
    go = Path(barrier_dir) / BARRIER_GO
    deadline = time.monotonic() + timeout_s
    while not go.exists():
        if time.monotonic() > deadline:
            raise BarrierTimeout(f"No '{BARRIER_GO}' in {barrier_dir} within {timeout_s:.0f} s; was the runner stopped?")
        time.sleep(BARRIER_POLL_S)
    return time.time()


# ---------------------------------------------------------------------------------------------
# Engines
# ---------------------------------------------------------------------------------------------


def open_delta_table(table_uri: str, storage_options: dict[str, str]):
    """A deltalake ``DeltaTable``; a missing table raises deltalake's TableNotFoundError, reworded
    to name the URI."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(table_uri, storage_options=dict(storage_options))
    except TableNotFoundError as error:
        raise TableNotFoundError(
            f"No Delta table at {table_uri} ({one_line(str(error), 300)}); create it before starting writers."
        ) from None


class DeltalakeEngine:
    """Appends with the deltalake (delta-rs) Python package of the running environment.

    Era differences handled here:

    * ``write_deltalake(<DeltaTable>, ...)`` in deltalake < 1.0 refreshes the table
      (``update_incremental``) before and after writing; 1.x writes against the object's snapshot
      and leaves it at the version it committed. With ``hold_snapshot`` the pre-write refresh is
      suppressed, so both eras commit against the snapshot loaded before the barrier.
    * ``max_commit_retries``: in 1.x it counts retries after the first attempt (0 = one attempt);
      in 0.22.3 the same parameter counts attempts (0 = the commit is never even tried, and fails
      with "Failed to commit transaction: 0" on an idle table). The spec always means retries, so
      0.22.3 is passed ``max_commit_retries + 1``.
    * retries in 0.22.3 try ``snapshot + 1``, ``snapshot + 2``, ... one version per attempt; 1.x
      lists the log first and jumps to the latest version + 1 (and records ``num_retries`` in
      its commitInfo ``operationMetrics``).
    * ``reported_version``: 1.x, ``table.version()`` after the write is the writer's own commit;
      0.22.3, the library does not say which version it wrote, so the writer reports the latest
      version its table sees right after the write (what the seeds' program printed).
    """

    name = "deltalake"

    def __init__(self) -> None:
        import deltalake

        self.module = deltalake
        self.version = deltalake.__version__
        self.major = int(self.version.split(".")[0])

    def load(self, spec: WriterSpec):
        """Open the table (:func:`open_delta_table`)."""
        return open_delta_table(spec.table_uri, spec.storage_options)

    @staticmethod
    def snapshot_version(table) -> int:
        return int(table.version())

    def library_max_commit_retries(self, retries: int | None) -> int | None:
        """The value to pass as ``max_commit_retries`` so that it means retries in every era."""
        if retries is None or self.major >= 1:
            return retries
        return retries + 1

    def append(self, table, data, spec: WriterSpec) -> tuple[int, str]:
        """Append ``data`` to ``table``; return (reported_version, how it was observed)."""
        from deltalake import CommitProperties, write_deltalake

        properties = CommitProperties(
            max_commit_retries=self.library_max_commit_retries(spec.max_commit_retries),
            custom_metadata=writer_tags(spec),
        )
        if not spec.hold_snapshot:
            table.update_incremental()
        if self.major >= 1:
            write_deltalake(table, data, mode="append", commit_properties=properties)
            return int(table.version()), "table.version() after write (the commit this writer made)"
        if spec.hold_snapshot:
            table.update_incremental = lambda: None  # keep the snapshot loaded before the barrier
        try:
            write_deltalake(table, data, mode="append", commit_properties=properties)
        finally:
            table.__dict__.pop("update_incremental", None)
        table.update_incremental()
        return int(table.version()), "table.version() refreshed after write (latest version, not necessarily this writer's)"


class EngineUnavailable(RuntimeError):
    """The engine's package cannot be used in this Python environment; the message says where it is."""


class DaftEngine:
    """Appends with Daft: ``daft.from_arrow(data).write_deltalake(table_uri, mode="append", ...)``.

    What Daft 0.7.26 does (``daft/dataframe/dataframe.py``), and what this engine does about it:

    * **S3 settings** come from a ``daft.io.IOConfig``, not from delta-rs ``storage_options``. The
      engine builds ``IOConfig(s3=S3Config(...))`` from the spec's ``storage_options``
      (:data:`DAFT_S3_CONFIG_KEYS`); Daft turns it back into delta-rs options
      (``io_config_to_storage_options``) for both the data files and the commit.
    * **Locking options** are Daft parameters: ``AWS_S3_LOCKING_PROVIDER=dynamodb`` with
      ``DELTA_DYNAMO_TABLE_NAME`` becomes ``dynamo_table_name=...``, ``AWS_S3_ALLOW_UNSAFE_RENAME=true``
      becomes ``allow_unsafe_rename=True`` (Daft's ``_configure_deltalake_storage_options`` sets
      exactly those keys back). With neither, Daft sets ``AWS_S3_ALLOW_UNSAFE_RENAME=true`` itself
      only on deltalake < 0.23 (with a DeprecationWarning); Daft 0.7.26 requires deltalake 1.6, where
      it sets nothing. ``AWS_ENDPOINT_URL_DYNAMODB`` is accepted but Daft cannot forward it.
    * **No held snapshot.** Daft opens the table itself when ``write_deltalake`` runs (a URI is
      loaded afresh; a ``DeltaTable`` passed in is refreshed with ``update_incremental()``), names
      its data files ``<that version + 1>-<uuid>-<n>.parquet``, and commits with delta-rs's
      ``create_write_transaction``. So its writers race from the version they read *after* the
      barrier: the spec must say ``hold_snapshot=false``.
    * **Retries.** Daft passes ``CommitProperties(custom_metadata=...)`` only, so delta-rs's default
      commit retries always apply; the spec's ``max_commit_retries`` must be null.
    * ``reported_version``: Daft returns the files it added, not a version. The writer finds its
      own commit in the log afterwards by the ``workbook.writer``/``workbook.batch`` tags it passed
      as ``custom_metadata``: the version this writer's commit really got.
    * **Warm-up.** The first ``write_deltalake`` in a process spends seconds compiling and
      importing Daft's write path (pyiceberg included); the engine pays that before the barrier by
      appending the same rows to a throwaway local table, so the race after go is about the commit.
    """

    name = "daft"
    _snapshot_version = -1
    URI_SCHEMES = ("s3", "s3a", "", "file")
    LOCK_KEYS = ("AWS_S3_LOCKING_PROVIDER", "DELTA_DYNAMO_TABLE_NAME", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_S3_ALLOW_UNSAFE_RENAME")

    def __init__(self) -> None:
        where = f"this environment ({Path(sys.prefix).name}, {sys.executable})"
        try:
            import daft
        except ImportError:
            try:
                import deltalake

                has = f"deltalake {deltalake.__version__}"
            except ImportError:
                has = "no deltalake"
            raise EngineUnavailable(
                f"Daft is not installed in {where}, which has {has}. Daft 0.7.26 requires deltalake>=1.6,<1.7, "
                "so only the kernel's era (deltalake-1.6.6) has it: run Daft writers with era='deltalake-1.6.6'."
            ) from None
        try:
            import pyiceberg  # noqa: F401
        except ImportError:
            raise EngineUnavailable(
                f"Daft {daft.__version__} is installed in {where} but cannot write Delta tables there: its write path "
                "(daft/io/writer.py) imports pyiceberg, which only the 'iceberg' extra installs. Install "
                "daft[aws,deltalake,iceberg,pandas] (pyproject.toml, then `make lock install`)."
            ) from None
        import deltalake

        self.daft = daft
        self.daft_version = daft.__version__
        self.version = deltalake.__version__
        self._warm_up()

    # -- the spec ------------------------------------------------------------------------------

    @classmethod
    def check_spec(cls, spec: "WriterSpec") -> None:
        """Refuse what Daft cannot do (no held snapshot, no retry setting, other stores, options it
        has no place for), naming the field. Runs without importing Daft."""
        from urllib.parse import urlparse

        if spec.hold_snapshot:
            raise SpecError(
                "The daft engine needs hold_snapshot=false: Daft's write_deltalake opens (or refreshes) the table "
                "itself when it writes, so it cannot append against a snapshot held across the barrier."
            )
        if spec.max_commit_retries is not None:
            raise SpecError(
                f"The daft engine needs max_commit_retries=null, not {spec.max_commit_retries!r}: Daft's "
                "write_deltalake passes no retry setting to delta-rs, whose default retries always apply."
            )
        scheme = urlparse(spec.table_uri).scheme
        if scheme not in cls.URI_SCHEMES:
            raise SpecError(f"The daft engine writes to s3://, s3a:// or local paths, not {spec.table_uri!r}.")
        options = spec.storage_options
        if scheme in ("", "file") and options:
            raise SpecError(f"A local table takes no storage_options in the daft engine, got {', '.join(sorted(options))}.")
        known = set(DAFT_S3_CONFIG_KEYS) | set(cls.LOCK_KEYS)
        unknown = sorted(set(options) - known)
        if unknown:
            raise SpecError(
                f"The daft engine cannot pass storage option(s) {', '.join(unknown)} to Daft (it takes S3 settings "
                f"through IOConfig); it translates {', '.join(sorted(known))}."
            )
        provider = options.get("AWS_S3_LOCKING_PROVIDER")
        if provider is not None and provider != "dynamodb":
            raise SpecError(f"AWS_S3_LOCKING_PROVIDER must be 'dynamodb' (Daft's dynamo_table_name), not {provider!r}.")
        if provider and not options.get("DELTA_DYNAMO_TABLE_NAME"):
            raise SpecError("AWS_S3_LOCKING_PROVIDER=dynamodb needs DELTA_DYNAMO_TABLE_NAME (Daft's dynamo_table_name).")
        if "DELTA_DYNAMO_TABLE_NAME" in options and not provider:
            raise SpecError("DELTA_DYNAMO_TABLE_NAME without AWS_S3_LOCKING_PROVIDER=dynamodb means nothing to Daft.")
        unsafe = options.get("AWS_S3_ALLOW_UNSAFE_RENAME")
        if unsafe is not None and unsafe.lower() not in ("true", "false"):
            raise SpecError(f"AWS_S3_ALLOW_UNSAFE_RENAME must be 'true' or 'false', not {unsafe!r}.")

    @staticmethod
    def write_arguments(spec: "WriterSpec") -> dict[str, Any]:
        """Daft's locking parameters for a spec: ``dynamo_table_name`` and ``allow_unsafe_rename``."""
        options = spec.storage_options
        dynamo = options.get("DELTA_DYNAMO_TABLE_NAME") if options.get("AWS_S3_LOCKING_PROVIDER") == "dynamodb" else None
        return {
            "dynamo_table_name": dynamo,
            "allow_unsafe_rename": options.get("AWS_S3_ALLOW_UNSAFE_RENAME", "false").lower() == "true",
        }

    @staticmethod
    def io_config(spec: "WriterSpec"):
        """The ``daft.io.IOConfig`` for the spec's table (None for a local path)."""
        from urllib.parse import urlparse

        if urlparse(spec.table_uri).scheme not in ("s3", "s3a"):
            return None
        from daft.io import IOConfig, S3Config

        settings: dict[str, Any] = {"anonymous": False}
        for key, value in spec.storage_options.items():
            if key in DAFT_S3_CONFIG_KEYS:
                name, convert = DAFT_S3_CONFIG_KEYS[key]
                settings[name] = convert(value)
        return IOConfig(s3=S3Config(**settings))

    @classmethod
    def delta_storage_options(cls, spec: "WriterSpec") -> dict[str, str]:
        """The delta-rs options Daft derives from the IOConfig (the locking keys left out), used to
        read the table before the barrier and to find this writer's commit after the write."""
        from daft.io.object_store_options import io_config_to_storage_options

        io_config = cls.io_config(spec)
        return (io_config_to_storage_options(io_config, spec.table_uri) or {}) if io_config is not None else {}

    # -- the steps -----------------------------------------------------------------------------

    def _warm_up(self) -> None:
        import tempfile

        import pyarrow as pa

        with tempfile.TemporaryDirectory(prefix="daft-warm-up-") as folder:
            frame = self.daft.from_arrow(pa.table({"id": pa.array([0], pa.int32()), "name": ["warm-up"]}))
            frame.write_deltalake(os.path.join(folder, "t"), mode="append")

    def load(self, spec: "WriterSpec"):
        """Open the table with the options Daft will use (so a wrong endpoint or a missing table fails
        here, before the barrier). Daft reads the table again when it writes."""
        table = open_delta_table(spec.table_uri, self.delta_storage_options(spec))
        self._snapshot_version = int(table.version())
        return table

    snapshot_version = staticmethod(DeltalakeEngine.snapshot_version)

    def append(self, table, data, spec: "WriterSpec") -> tuple[int | None, str]:
        """Append with Daft; return (the version of this writer's commit as the log shows it, how it was found)."""
        frame = self.daft.from_arrow(data)
        written = frame.write_deltalake(
            spec.table_uri, mode="append", io_config=self.io_config(spec),
            custom_metadata=writer_tags(spec),
            **self.write_arguments(spec),
        ).to_pydict()
        files = [name for name, op in zip(written["file_name"], written["operation"]) if op == "ADD"]
        read_from = sorted({int(name.split("-", 1)[0]) - 1 for name in files if name.split("-", 1)[0].isdigit()})
        basis = f"; Daft read v{read_from[0]} when it wrote (its data file is named {read_from[0] + 1}-...)" if len(read_from) == 1 else ""
        version = self.find_commit(spec, after=self._snapshot_version)
        if version is None:
            return None, "Daft returned without error, but no commit with this writer's tag is in the log" + basis
        return version, f"this writer's commit found in the log by its {WRITER_TAG} tag (Daft returns no version){basis}"

    def find_commit(self, spec: "WriterSpec", after: int = -1) -> int | None:
        """The version of the commit this writer tagged, found by reading the commit files after
        version ``after`` newest first (None if none carries the tag). Read directly, because
        ``DeltaTable.history()`` in deltalake 1.6.6 numbers its entries by counting down from the
        latest version it sees, which is wrong while other writers are still committing."""
        from deltalake import DeltaTable
        from deltalake.fs import DeltaStorageHandler

        options = self.delta_storage_options(spec)
        latest = DeltaTable(spec.table_uri, storage_options=options).version()
        files = DeltaStorageHandler(spec.table_uri, options)
        for version in range(latest, after, -1):
            body = files.open_input_file(f"_delta_log/{version:020d}.json").read().decode("utf-8")
            for line in body.splitlines():
                info = json.loads(line).get("commitInfo") if line.strip() else None
                if info and commit_tags(info) == writer_tags(spec):
                    return version
        return None


def _true(value: str) -> bool:
    return value.strip().lower() == "true"


DAFT_S3_CONFIG_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "AWS_ENDPOINT_URL": ("endpoint_url", str),
    "AWS_ACCESS_KEY_ID": ("key_id", str),
    "AWS_SECRET_ACCESS_KEY": ("access_key", str),
    "AWS_SESSION_TOKEN": ("session_token", str),
    "AWS_REGION": ("region_name", str),
    "AWS_ALLOW_HTTP": ("use_ssl", lambda value: not _true(value)),
}
"""delta-rs storage option -> (``daft.io.S3Config`` argument, conversion)."""


class SparkEngine:
    """Appends with Spark + Delta Spark: ``df.write.format("delta").mode("append").save(s3a_uri)``.

    Each writer process starts its own JVM, so each is "its own cluster" (a driver with
    ``local[1]``): the lock Delta Spark's default S3 LogStore (``S3SingleDriverLogStore``) takes
    before it writes a commit file lives in that one JVM and is invisible to the others. What this
    engine does about Spark's ways:

    * **Session.** Built in :meth:`load` (it needs the writer id) with
      ``helpers.sessions.spark_session("s3", app_name="writer-<id>", extra_conf=...)``, so jars,
      endpoint and keys are the notebooks' own. ``helpers`` is the project's package: it is
      imported only here (other eras have no Spark), with the project root put on ``sys.path``.
      The JVM start (tens of seconds) falls between ``t_landing_loaded`` and ``t_snapshot_loaded``;
      ``reported_version_source`` also gives it.
    * **Settings.** The same ``storage_options`` a delta-rs writer gets work here, translated
      (:meth:`session_conf`): ``AWS_ENDPOINT_URL`` becomes ``fs.s3a.endpoint``;
      ``AWS_S3_LOCKING_PROVIDER=dynamodb`` selects Delta Spark's multi-cluster log store (the
      session store ``dynamodb``), with ``DELTA_DYNAMO_TABLE_NAME`` as its ``ddb.tableName`` and
      ``AWS_ENDPOINT_URL_DYNAMODB`` as its endpoint. Keys and region otherwise come from
      ``helpers.config``, as for every session. Keys that start with ``spark.`` are Spark settings
      for this writer's session, applied last. Options Spark has no counterpart for (unsafe
      rename, ``conditional_put``) are refused by name. Defaults (:data:`DEFAULT_CONF`), for a JVM
      that lives for one append beside three others on 2 cores: ``spark.master=local[1]``, driver
      memory 1g, the JIT's first tier only and the serial GC, and Spark SQL expressions
      interpreted instead of compiled (measured alone: JVM start 18 → 16 s, first append 11.5 →
      8.5 s).
    * **Snapshot.** Before the barrier the table is opened (``DeltaLog.forTable``, which starts
      S3A and reads the log: the slow part, ~10 s); ``snapshot_version`` is the version it saw. Spark
      cannot append against a held snapshot: its write starts a transaction that refreshes the
      log first. So the spec must say ``hold_snapshot=false``; released together, the writers
      still all read the same latest version after go.
    * **Retries.** ``max_commit_retries=None`` keeps Delta's default
      (``spark.databricks.delta.maxCommitAttempts``, ten million); ``k`` sets it to ``k + 1``.
      A blind append that finds its version taken retries at the next one.
    * **Tags.** Delta Spark writes no custom top-level commitInfo keys; it writes ``userMetadata``
      (one string). The engine puts ``{"workbook.writer": ..., "workbook.batch": ...}`` there as
      JSON (:func:`commit_tags` reads it back).
    * ``reported_version``: the version Delta says it committed (its post-commit snapshot,
      ``DeltaLog.unsafeVolatileSnapshot().version()``, read right after the write);
      ``reported_version_source`` adds whether the commit file at that version now carries this
      writer's tag, or another writer's (overwritten), as the log says.
    """

    name = "spark"
    URI_SCHEMES = ("s3a",)
    DELTA_RS_S3_KEYS = ("AWS_REGION", "AWS_ENDPOINT_URL", "AWS_ALLOW_HTTP", "AWS_ACCESS_KEY_ID",
                        "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_S3_LOCKING_PROVIDER",
                        "DELTA_DYNAMO_TABLE_NAME", "AWS_ENDPOINT_URL_DYNAMODB")
    REFUSED_KEYS = {
        "DYNAMO_LOCK_TABLE_NAME": "the old delta-rs lock table; Delta Spark's log store takes DELTA_DYNAMO_TABLE_NAME",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "Delta Spark never renames on S3; it writes the commit file directly",
        "conditional_put": "the S3A analogue is spark.hadoop.fs.s3a.create.conditional.enabled",
    }
    DEFAULT_CONF = {"spark.master": "local[1]", "spark.driver.memory": "1g", "spark.sql.codegen.wholeStage": "false",
                    "spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    SHORT_LIVED_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
    MAX_COMMIT_ATTEMPTS = "spark.databricks.delta.maxCommitAttempts"

    def __init__(self) -> None:
        try:
            import pyspark
            from delta import tables  # noqa: F401  (delta-spark, the Python side)
        except ImportError as error:
            raise EngineUnavailable(
                f"Spark cannot run in this environment ({Path(sys.prefix).name}, {sys.executable}): {error}. "
                "Only the kernel's era (deltalake-1.6.6) has pyspark and delta-spark: run Spark writers with era='deltalake-1.6.6'."
            ) from None
        root = str(Path(__file__).resolve().parent.parent)
        if root not in sys.path:
            sys.path.insert(0, root)  # the writer runs as a script: make the project's helpers importable
        try:
            from helpers import config, sessions
        except ImportError as error:
            raise EngineUnavailable(f"The spark engine needs the project's helpers package ({root}): {error}.") from None
        self.sessions = sessions
        self.spark_version = pyspark.__version__
        self.version = f"delta-spark {config.DELTA_JARS_VERSION} (Spark {pyspark.__version__})"
        self.spark = None
        self.start_seconds: float | None = None
        self._snapshot_version = -1

    # -- the spec ------------------------------------------------------------------------------

    @classmethod
    def check_spec(cls, spec: "WriterSpec") -> None:
        """Refuse what a Spark writer cannot do, naming the field. Runs without starting Spark."""
        from urllib.parse import urlparse

        scheme = urlparse(spec.table_uri).scheme
        if scheme not in cls.URI_SCHEMES:
            hint = f" (use s3a://{spec.table_uri.split('://', 1)[1]})" if scheme == "s3" else ""
            raise SpecError(f"The spark engine writes to s3a:// tables (Hadoop's S3A), not {spec.table_uri!r}{hint}.")
        if spec.hold_snapshot:
            raise SpecError(
                "The spark engine needs hold_snapshot=false: Delta Spark's append starts a transaction that "
                "refreshes the log first, so it cannot commit against a snapshot held across the barrier."
            )
        refused = sorted(set(spec.storage_options) & set(cls.REFUSED_KEYS))
        if refused:
            raise SpecError("The spark engine cannot use storage option(s) " + "; ".join(
                f"{key} ({cls.REFUSED_KEYS[key]})" for key in refused) + ".")
        unknown = sorted(k for k in spec.storage_options if not k.startswith("spark.") and k not in cls.DELTA_RS_S3_KEYS)
        if unknown:
            raise SpecError(
                f"The spark engine does not know storage option(s) {', '.join(unknown)}: it takes Spark settings "
                f"(keys starting with 'spark.') and delta-rs's {', '.join(cls.DELTA_RS_S3_KEYS)}."
            )
        provider = spec.storage_options.get("AWS_S3_LOCKING_PROVIDER")
        if provider is not None and provider.lower() != "dynamodb":
            raise SpecError(f"AWS_S3_LOCKING_PROVIDER={provider!r}: the only locking provider is 'dynamodb'.")
        if cls.MAX_COMMIT_ATTEMPTS in spec.storage_options and spec.max_commit_retries is not None:
            raise SpecError(f"Give either max_commit_retries or {cls.MAX_COMMIT_ATTEMPTS}, not both.")

    @staticmethod
    def stores(spec: "WriterSpec") -> tuple[str, ...]:
        """The session stores: ``s3``, plus ``dynamodb`` when the options ask for the DynamoDB lock."""
        locked = spec.storage_options.get("AWS_S3_LOCKING_PROVIDER", "").lower() == "dynamodb"
        return ("s3", "dynamodb") if locked else ("s3",)

    @classmethod
    def session_conf(cls, spec: "WriterSpec") -> dict[str, str]:
        """The settings this writer's session gets on top of ``helpers.sessions.spark_conf(*stores(spec))``:
        the delta-rs options translated, then the ``spark.*`` options as given."""
        from helpers import sessions

        options = spec.storage_options
        conf = dict(cls.DEFAULT_CONF)
        conf["spark.driver.extraJavaOptions"] = sessions.driver_java_options(*cls.SHORT_LIVED_JVM)
        if "AWS_ENDPOINT_URL" in options:
            conf["spark.hadoop.fs.s3a.endpoint"] = options["AWS_ENDPOINT_URL"]
        if "dynamodb" in cls.stores(spec):
            if "DELTA_DYNAMO_TABLE_NAME" in options:
                conf[f"{sessions.DYNAMODB_LOG_STORE_PREFIX}.ddb.tableName"] = options["DELTA_DYNAMO_TABLE_NAME"]
            if "AWS_ENDPOINT_URL_DYNAMODB" in options:
                conf[sessions.DYNAMODB_ENDPOINT_KEY] = options["AWS_ENDPOINT_URL_DYNAMODB"]
        conf.update({k: v for k, v in options.items() if k.startswith("spark.")})
        if spec.max_commit_retries is not None:
            conf[cls.MAX_COMMIT_ATTEMPTS] = str(spec.max_commit_retries + 1)
        return conf

    @staticmethod
    def user_metadata(spec: "WriterSpec") -> str:
        """The commit's ``userMetadata``: this writer's tags as JSON."""
        return json.dumps(writer_tags(spec), sort_keys=True)

    # -- the steps -----------------------------------------------------------------------------

    def _delta_log(self, uri: str):
        jvm = self.spark._jvm
        return jvm.org.apache.spark.sql.delta.DeltaLog.forTable(self.spark._jsparkSession, uri)

    def load(self, spec: "WriterSpec"):
        """Start this writer's Spark and open the table (its log), before the barrier. Raises
        TableNotFoundError (named for the URI) if there is no Delta table there."""
        started = time.monotonic()
        self.spark = self.sessions.spark_session(*self.stores(spec), app_name=f"writer-{spec.writer_id}", extra_conf=self.session_conf(spec))
        self.start_seconds = time.monotonic() - started
        from delta.tables import DeltaTable

        self._snapshot_version = int(self._delta_log(spec.table_uri).unsafeVolatileSnapshot().version())
        if self._snapshot_version < 0:
            raise TableNotFoundError(f"No Delta table at {spec.table_uri} (Spark found no _delta_log there); create it before starting writers.")
        return DeltaTable.forPath(self.spark, spec.table_uri)

    def snapshot_version(self, table) -> int:
        return self._snapshot_version

    def append(self, table, data, spec: "WriterSpec") -> tuple[int, str]:
        """Append with Delta Spark; return (the version Delta says it committed, how that is known)."""
        frame = self.spark.createDataFrame(data)
        frame.write.format("delta").mode("append").option("userMetadata", self.user_metadata(spec)).save(spec.table_uri)
        version = int(self._delta_log(spec.table_uri).unsafeVolatileSnapshot().version())
        found = self.find_commits(spec, after=self._snapshot_version)
        if found.get(version) == spec.writer_id:
            check = "the log's commit at that version carries this writer's tag"
        elif version in found:
            check = f"but the log's commit at that version carries {found[version]}'s tag: this commit was overwritten"
        else:
            check = "but the log's commit at that version carries no workbook tag"
        others = sorted(v for v, w in found.items() if w == spec.writer_id and v != version)
        if others:
            check += f"; this writer's tag is also at v{', v'.join(map(str, others))}"
        return version, (f"Delta's post-commit snapshot version (DeltaLog.unsafeVolatileSnapshot after the write); {check}; "
                         f"JVM started in {self.start_seconds:.1f} s")

    def find_commits(self, spec: "WriterSpec", after: int = -1) -> dict[int, str]:
        """Version -> writer id of every commit after ``after`` whose userMetadata carries workbook
        tags, read with ``DeltaTable.history()`` (it numbers commits by their file names)."""
        from delta.tables import DeltaTable

        rows = DeltaTable.forPath(self.spark, spec.table_uri).history().select("version", "userMetadata").collect()
        found = {}
        for row in rows:
            tags = commit_tags({"userMetadata": row["userMetadata"]})
            if int(row["version"]) > after and WRITER_TAG in tags:
                found[int(row["version"])] = tags[WRITER_TAG]
        return found


class TableNotFoundError(FileNotFoundError):
    """No Delta table at the URI a Spark writer was given."""


ENGINES: dict[str, Callable[[], Any]] = {"deltalake": DeltalakeEngine, "daft": DaftEngine, "spark": SparkEngine}


# ---------------------------------------------------------------------------------------------
# The process
# ---------------------------------------------------------------------------------------------


def run(spec: WriterSpec) -> WriterResult:
    """Do the four steps of the module docstring and return the result (never raises for a
    storage or engine error: that becomes ``outcome="failed"`` with the error recorded)."""
    result = WriterResult(
        writer_id=spec.writer_id, era=spec.era, engine=spec.engine, table_uri=spec.table_uri,
        batch=spec.batch, landing_file=spec.landing_file, max_commit_retries=spec.max_commit_retries,
        t_start=time.time(),
    )
    try:
        result.stage = "landing"
        engine = ENGINES[spec.engine]()
        result.deltalake_version = getattr(engine, "version", None)
        if hasattr(engine, "library_max_commit_retries"):
            result.library_max_commit_retries = engine.library_max_commit_retries(spec.max_commit_retries)
        import pyarrow  # noqa: F401  (imported here so that reading the file is timed on its own)

        result.t_imported = time.time()
        data = read_landing_file(spec.landing_file)
        result.rows = data.num_rows
        ids = data.column("id").to_pylist()
        result.id_min, result.id_max = (min(ids), max(ids)) if ids else (None, None)
        result.t_landing_loaded = time.time()

        result.stage = "snapshot"
        table = engine.load(spec)
        result.snapshot_version = engine.snapshot_version(table)
        result.t_snapshot_loaded = time.time()

        result.stage = "barrier"
        if spec.barrier_dir:
            result.t_barrier_released = wait_at_barrier(spec.barrier_dir, spec.writer_id, spec.barrier_timeout_s)
        else:
            result.t_barrier_released = time.time()

        result.stage = "write"
        result.reported_version, result.reported_version_source = engine.append(table, data, spec)
        result.t_write_finished = time.time()
        result.outcome = COMMITTED
        result.stage = "done"
    except Exception as error:  # the record of any failure is the result file
        result.t_write_finished = time.time() if result.stage == "write" else None
        result.fail(error)
    finally:
        if spec.barrier_dir and result.stage in ("landing", "snapshot"):
            # tell the runner this writer will not come to the barrier, so it need not wait for it
            (Path(spec.barrier_dir) / f"gone-{spec.writer_id}").touch()
    return result


def load_spec(argument: str) -> WriterSpec:
    """A spec from inline JSON (starts with ``{``) or from a JSON file; raises SpecError."""
    text = argument
    if not argument.lstrip().startswith("{"):
        try:
            text = Path(argument).read_text()
        except OSError as error:
            raise SpecError(f"Cannot read the spec file {argument}: {error.strerror}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise SpecError(f"The spec is not valid JSON ({error}).") from None
    return WriterSpec.from_dict(data)


def _parse_batches(text: str) -> list[int]:
    first, _, last = text.partition("-")
    try:
        return list(range(int(first), int(last or first) + 1))
    except ValueError:
        raise SpecError(f"--batches takes N or FIRST-LAST, not {text!r}") from None


def _exit(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip interpreter teardown, where deltalake sometimes aborts


def create_table(table_uri: str, storage_options: dict, landing_file: str | None = None) -> dict:
    """Create an empty table with the landing schema using this environment's deltalake, then
    append ``landing_file`` if given. Returns what happened (never raises for a storage error):
    ``{"deltalake", "created", "appended", "version", "error", "message"}``; ``error`` is the
    exception class of the step that failed, ``message`` its text."""
    from deltalake import DeltaTable, __version__, write_deltalake

    report = {"deltalake": __version__, "created": False, "appended": False, "version": None, "error": None, "message": None}
    try:
        table = DeltaTable.create(table_uri, schema=landing_schema(), mode="error", storage_options=storage_options)
        report["created"], report["version"] = True, table.version()
        if landing_file:
            write_deltalake(table_uri, read_landing_file(landing_file), mode="append", storage_options=storage_options)
            report["appended"], report["version"] = True, DeltaTable(table_uri, storage_options=storage_options).version()
    except Exception as error:  # the report is the record
        report["error"], report["message"] = type(error).__name__, one_line(str(error), 600)
    return report


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        _exit(0 if argv else 2)
    if argv[0] == "--make-landing":
        if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--batches"):
            print("usage: writer.py --make-landing DIR [--batches FIRST-LAST]", file=sys.stderr)
            _exit(2)
        for batch in _parse_batches(argv[3] if len(argv) == 4 else "1-8"):
            print(write_landing_file(batch, argv[1]))
        _exit(0)
    if argv[0] == "--create-table":
        if len(argv) not in (3, 4):
            print("usage: writer.py --create-table URI OPTIONS_JSON [LANDING_FILE]", file=sys.stderr)
            _exit(2)
        print(json.dumps(create_table(argv[1], json.loads(argv[2]), argv[3] if len(argv) == 4 else None)))
        _exit(0)
    try:
        spec = load_spec(argv[0])
    except SpecError as error:
        _report_bad_spec(argv[0], error)
        _exit(2)
    result = run(spec)
    try:
        write_result(result, spec.result_path)
    except OSError:
        traceback.print_exc()
        _exit(3)
    print(f"{result.writer_id}: {result.outcome}"
          + (f" v{result.reported_version}" if result.outcome == COMMITTED else f" ({result.error_class}: {result.error_message})"))
    _exit(0 if result.outcome == COMMITTED else 1)


def _report_bad_spec(argument: str, error: SpecError) -> None:
    """Print the problem; also leave a failed result if the spec at least names where to put it."""
    print(f"writer: unusable spec: {error}", file=sys.stderr)
    try:
        data = json.loads(argument if argument.lstrip().startswith("{") else Path(argument).read_text())
        result = WriterResult(
            writer_id=str(data.get("writer_id", "?")), era=str(data.get("era", "?")), engine=str(data.get("engine", "?")),
            table_uri=str(data.get("table_uri", "?")), batch=None, landing_file=str(data.get("landing_file", "?")),
            stage="spec",
        )
        result.fail(error)
        write_result(result, data["result_path"])
    except Exception:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
