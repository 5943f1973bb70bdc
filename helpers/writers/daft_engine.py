"""The Daft engine: appends with Daft's ``DataFrame.write_deltalake``, which commits through delta-rs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from helpers.delta import delta_log
from helpers.delta.delta_log import WRITER_TAG, commit_tags
from helpers.writers.deltalake_engine import open_delta_table
from helpers.writers.protocol import (
    READ_LANDING,
    Engine,
    EngineUnavailable,
    SpecError,
    WriterSpec,
    literal,
    writer_tags,
)


class DaftEngine(Engine):
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
      it sets nothing, and from 1.6.1 on (the kernel's 1.6.6) delta-rs ignores the DynamoDB keys, so
      every parameter commits by conditional put. ``AWS_ENDPOINT_URL_DYNAMODB`` is accepted but Daft
      cannot forward it.
    * **No held snapshot.** Daft opens the table itself when ``write_deltalake`` runs (a URI is
      loaded afresh; a ``DeltaTable`` passed in is refreshed with ``update_incremental()``), names
      its data files ``<that version + 1>-<uuid>-<n>.parquet``, and commits with delta-rs's
      ``create_write_transaction``. So its writers race from the version they read *after* the
      barrier: the spec must say ``hold_snapshot=false``.
    * **Retries.** Daft passes ``CommitProperties(custom_metadata=...)`` only, so delta-rs's default
      commit retries always apply; the spec's ``max_commit_retries`` must be null.
    * ``reported_version``: Daft returns the files it added, not a version. The writer finds its
      own commit in the log afterwards by the ``workbook.writer``/``workbook.batch`` tags it passed
      as ``custom_metadata``: the version this writer's commit really got. The files Daft returned
      (its public result) are kept beside the writer's result (:func:`returned_files` reads them),
      so an auditor can check that the commit at the reported version adds exactly those files
      (:func:`helpers.runs.audit.own_commit_problems`).
    * **The seeds' era.** Daft 0.7.9, the last release whose ``deltalake`` extra admits deltalake
      0.22.3, is installed beside it. Its ``write_deltalake`` opens the table *first* and only then
      adds ``AWS_S3_ALLOW_UNSAFE_RENAME=true`` (no ``dynamo_table_name``) or the DynamoDB keys to its
      options: an existing table was opened without them, so the commit fails with deltalake's
      "Atomic rename requires a LockClient" whatever the parameters (measured). The fallback reaches
      delta-rs only when Daft creates the table: :func:`first_write`.
    * **Warm-up.** The first ``write_deltalake`` in a process spends seconds compiling and
      importing Daft's write path (pyiceberg included); the engine pays that before the barrier by
      appending the same rows to a throwaway local table, so the race after go is about the commit.
    """

    name = "daft"
    holds_snapshot = False
    refresh_reason = (
        "Daft's write_deltalake opens (or refreshes) the table itself when it writes, so it cannot "
        "append against a snapshot held across the barrier."
    )
    _snapshot_version = -1
    URI_SCHEMES = ("s3", "s3a", "", "file")
    LOCK_KEYS = (
        "AWS_S3_LOCKING_PROVIDER",
        "DELTA_DYNAMO_TABLE_NAME",
        "AWS_ENDPOINT_URL_DYNAMODB",
        "AWS_S3_ALLOW_UNSAFE_RENAME",
    )

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
                f"Daft is not installed in {where}, which has {has}. Daft 0.7.26 requires deltalake>=1.6,<1.7 "
                "(the kernel's era, deltalake-1.6.6) and Daft 0.7.9 is installed beside deltalake 0.22.3 "
                "(deltalake-0.22.3): run Daft writers in one of those eras."
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
    def check_spec(cls, spec: WriterSpec) -> None:
        """Refuse what Daft cannot do (no retry setting, other stores, options it has no place for),
        naming the field. Runs without importing Daft."""
        from urllib.parse import urlparse

        if spec.max_commit_retries is not None:
            raise SpecError(
                f"The daft engine needs max_commit_retries=null, not {spec.max_commit_retries!r}: Daft's "
                "write_deltalake passes no retry setting to delta-rs, whose default retries always apply."
            )
        scheme = urlparse(spec.table_uri).scheme
        if scheme not in cls.URI_SCHEMES:
            raise SpecError(
                f"The daft engine writes to s3://, s3a:// or local paths, not {spec.table_uri!r}."
            )
        options = spec.storage_options
        if scheme in ("", "file") and options:
            raise SpecError(
                f"A local table takes no storage_options in the daft engine, got {', '.join(sorted(options))}."
            )
        known = set(DAFT_S3_CONFIG_KEYS) | set(cls.LOCK_KEYS)
        unknown = sorted(set(options) - known)
        if unknown:
            raise SpecError(
                f"The daft engine cannot pass storage option(s) {', '.join(unknown)} to Daft (it takes S3 settings "
                f"through IOConfig); it translates {', '.join(sorted(known))}."
            )
        provider = options.get("AWS_S3_LOCKING_PROVIDER")
        if provider is not None and provider != "dynamodb":
            raise SpecError(
                f"AWS_S3_LOCKING_PROVIDER must be 'dynamodb' (Daft's dynamo_table_name), not {provider!r}."
            )
        if provider and not options.get("DELTA_DYNAMO_TABLE_NAME"):
            raise SpecError(
                "AWS_S3_LOCKING_PROVIDER=dynamodb needs DELTA_DYNAMO_TABLE_NAME (Daft's dynamo_table_name)."
            )
        if "DELTA_DYNAMO_TABLE_NAME" in options and not provider:
            raise SpecError(
                "DELTA_DYNAMO_TABLE_NAME without AWS_S3_LOCKING_PROVIDER=dynamodb means nothing to Daft."
            )
        unsafe = options.get("AWS_S3_ALLOW_UNSAFE_RENAME")
        if unsafe is not None and unsafe.lower() not in ("true", "false"):
            raise SpecError(
                f"AWS_S3_ALLOW_UNSAFE_RENAME must be 'true' or 'false', not {unsafe!r}."
            )

    @staticmethod
    def write_arguments(spec: WriterSpec) -> dict[str, Any]:
        """Daft's locking parameters for a spec: ``dynamo_table_name`` and ``allow_unsafe_rename``."""
        options = spec.storage_options
        dynamo = (
            options.get("DELTA_DYNAMO_TABLE_NAME")
            if options.get("AWS_S3_LOCKING_PROVIDER") == "dynamodb"
            else None
        )
        return {
            "dynamo_table_name": dynamo,
            "allow_unsafe_rename": options.get("AWS_S3_ALLOW_UNSAFE_RENAME", "false").lower()
            == "true",
        }

    @staticmethod
    def s3_settings(spec: WriterSpec) -> dict[str, Any] | None:
        """The ``daft.io.S3Config`` arguments for the spec's table (None for a local path)."""
        from urllib.parse import urlparse

        if urlparse(spec.table_uri).scheme not in ("s3", "s3a"):
            return None
        settings: dict[str, Any] = {"anonymous": False}
        for key, value in spec.storage_options.items():
            if key in DAFT_S3_CONFIG_KEYS:
                name, convert = DAFT_S3_CONFIG_KEYS[key]
                settings[name] = convert(value)
        return settings

    @classmethod
    def io_config(cls, spec: WriterSpec):
        """The ``daft.io.IOConfig`` for the spec's table (None for a local path)."""
        settings = cls.s3_settings(spec)
        if settings is None:
            return None
        from daft.io import IOConfig, S3Config

        return IOConfig(s3=S3Config(**settings))

    @classmethod
    def call_arguments(cls, spec: WriterSpec) -> dict[str, Any]:
        """The arguments of this writer's ``write_deltalake`` besides the table and ``io_config``."""
        return {"mode": "append", "custom_metadata": writer_tags(spec), **cls.write_arguments(spec)}

    @classmethod
    def code(cls, spec: WriterSpec) -> str:
        """What the writer process runs for ``spec`` (:meth:`append` uses the same :meth:`s3_settings`
        and :meth:`call_arguments`), as Python to copy; credentials masked."""
        from helpers.ground import config, eras

        settings = cls.s3_settings(spec)
        version = f"Daft over deltalake {eras.era(spec.era).deltalake_version}"
        lines = ["import daft", "", "from helpers.delta import landing"]
        if settings is not None:
            lines[1:1] = ["from daft.io import IOConfig, S3Config"]
            lines += [
                "",
                f"io_config = IOConfig(s3=S3Config(**{literal(config.masked(settings))}))",
            ]
        lines += [
            READ_LANDING,
            f"daft.from_arrow(data).write_deltalake(  # {version}: Daft opens the table itself when it writes",
            f"    {literal(spec.table_uri)},",
        ]
        if settings is not None:
            lines.append("    io_config=io_config,")
        lines += [
            f"    {name}={literal(value, wrap=False)},"
            for name, value in cls.call_arguments(spec).items()
        ]
        lines.append(")")
        return "\n".join(lines)

    @classmethod
    def delta_storage_options(cls, spec: WriterSpec) -> dict[str, str]:
        """The delta-rs options Daft derives from the IOConfig (the locking keys left out), used to
        read the table before the barrier and to find this writer's commit after the write."""
        from daft.io.object_store_options import io_config_to_storage_options

        io_config = cls.io_config(spec)
        return (
            (io_config_to_storage_options(io_config, spec.table_uri) or {})
            if io_config is not None
            else {}
        )

    # -- the steps -----------------------------------------------------------------------------

    def _warm_up(self) -> None:
        import tempfile

        import pyarrow as pa

        with tempfile.TemporaryDirectory(prefix="daft-warm-up-") as folder:
            frame = self.daft.from_arrow(
                pa.table({"id": pa.array([0], pa.int32()), "name": ["warm-up"]})
            )
            frame.write_deltalake(os.path.join(folder, "t"), mode="append")

    def load(self, spec: WriterSpec):
        """Open the table with the options Daft will use (so a wrong endpoint or a missing table fails
        here, before the barrier). Daft reads the table again when it writes."""
        table = open_delta_table(spec.table_uri, self.delta_storage_options(spec))
        self._snapshot_version = int(table.version())
        return table

    def snapshot_version(self, table) -> int:
        return self._snapshot_version

    def append(self, table, data, spec: WriterSpec) -> tuple[int | None, str]:
        """Append with Daft; return (the version of this writer's commit as the log shows it, how it was found)."""
        import warnings

        frame = self.daft.from_arrow(data)
        files: list[str] = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                written = frame.write_deltalake(
                    spec.table_uri, io_config=self.io_config(spec), **self.call_arguments(spec)
                ).to_pydict()
                files = [
                    name
                    for name, op in zip(written["file_name"], written["operation"])
                    if op == "ADD"
                ]
            finally:
                keep_write_record(spec, files, _daft_warnings(caught))
        read_from = sorted(
            {int(name.split("-", 1)[0]) - 1 for name in files if name.split("-", 1)[0].isdigit()}
        )
        basis = (
            f"; Daft read v{read_from[0]} when it wrote (its data file is named {read_from[0] + 1}-...)"
            if len(read_from) == 1
            else ""
        )
        version = self.find_commit(spec, after=self._snapshot_version)
        if version is None:
            return (
                None,
                "Daft returned without error, but no commit with this writer's tag is in the log"
                + basis,
            )
        return (
            version,
            f"this writer's commit found in the log by its {WRITER_TAG} tag (Daft returns no version){basis}",
        )

    def find_commit(self, spec: WriterSpec, after: int = -1) -> int | None:
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
            body = files.open_input_file(delta_log.commit_file(version)).read().decode("utf-8")
            for line in body.splitlines():
                info = json.loads(line).get("commitInfo") if line.strip() else None
                if info and commit_tags(info) == writer_tags(spec):
                    return version
        return None


WRITE_RECORD_SUFFIX = ".daft-write.json"


def write_record_path(result_path: str | os.PathLike, writer_id: str) -> Path:
    """Where a Daft writer keeps what Daft's write returned and warned: beside its result JSON."""
    return Path(result_path).with_name(f"{writer_id}{WRITE_RECORD_SUFFIX}")


def keep_write_record(spec: WriterSpec, files: list[str], warned: list[str]) -> None:
    """Record the data files Daft's ``write_deltalake`` returned (operation ``ADD``; [] if it raised)
    and the warnings Daft gave, for this writer."""
    path = write_record_path(spec.result_path, spec.writer_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"files": files, "warnings": warned}))


def _write_records(run) -> dict[str, dict]:
    folder = Path(getattr(run, "run_dir", run)) / "results"
    return {
        path.name[: -len(WRITE_RECORD_SUFFIX)]: json.loads(path.read_text())
        for path in sorted(folder.glob(f"*{WRITE_RECORD_SUFFIX}"))
    }


def returned_files(run) -> dict[str, list[str]]:
    """The data files Daft's write returned to each writer of a run (a :class:`helpers.runs.run_result.RunResult`
    or its run folder), by writer id; writers that never called Daft's write are absent."""
    return {writer: record["files"] for writer, record in _write_records(run).items()}


def daft_warnings(run) -> dict[str, list[str]]:
    """The warnings Daft's ``write_deltalake`` gave each writer of a run, by writer id."""
    return {writer: record["warnings"] for writer, record in _write_records(run).items()}


def _daft_warnings(caught) -> list[str]:
    return sorted(
        {f"{w.category.__name__}: {w.message}" for w in caught if "daft" in (w.filename or "")}
    )


def io_config_for(table_uri: str, storage_options: dict[str, str]):
    """The ``daft.io.IOConfig`` Daft is given for a table and the workbook's storage options."""
    spec = WriterSpec(
        writer_id="first",
        era="-",
        table_uri=table_uri,
        landing_file="-",
        result_path="-",
        storage_options=dict(storage_options),
        engine="daft",
        hold_snapshot=False,
    )
    return DaftEngine.io_config(spec)


def first_write(
    table_uri: str, storage_options: dict[str, str], landing_file: str, writer_id: str
) -> dict:
    """Append a landing file with Daft's public ``write_deltalake`` to a table that does not exist
    yet, so Daft creates it; no ``dynamo_table_name``, no ``allow_unsafe_rename``. Returns what
    happened (never raises for a storage error): ``{"writer_id", "daft", "deltalake", "outcome",
    "files", "warnings", "error", "message"}``; ``files`` are the data files Daft returned,
    ``warnings`` what Daft warned. The commit carries the writer's ``workbook.writer`` tag."""
    import warnings

    import daft
    import deltalake

    from helpers.delta import landing

    report = {
        "writer_id": writer_id,
        "daft": daft.__version__,
        "deltalake": deltalake.__version__,
        "outcome": "failed",
        "files": [],
        "warnings": [],
        "error": None,
        "message": None,
    }
    data = landing.read_landing_file(landing_file)
    tags = {
        WRITER_TAG: writer_id,
        "workbook.batch": str(landing.batch_of_id(data.column("id")[0].as_py())),
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            written = (
                daft.from_arrow(data)
                .write_deltalake(
                    table_uri,
                    mode="append",
                    io_config=io_config_for(table_uri, storage_options),
                    custom_metadata=tags,
                )
                .to_pydict()
            )
            report["files"] = [
                name for name, op in zip(written["file_name"], written["operation"]) if op == "ADD"
            ]
            report["outcome"] = "committed"
        except Exception as error:  # the report is the record
            from helpers.writers.protocol import one_line

            report["error"], report["message"] = type(error).__name__, one_line(str(error), 600)
    report["warnings"] = _daft_warnings(caught)
    return report


def main(argv: list[str]) -> int:
    """``python -m helpers.writers.daft_engine --first-write URI OPTIONS_JSON LANDING_FILE WRITER_ID``:
    :func:`first_write` in this environment's Daft, its report printed as one JSON line."""
    if len(argv) != 5 or argv[0] != "--first-write":
        print(main.__doc__, file=sys.stderr)
        return 2
    print(json.dumps(first_write(argv[1], json.loads(argv[2]), argv[3], argv[4])))
    return 0


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


ENGINE = DaftEngine


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown, where deltalake sometimes aborts
