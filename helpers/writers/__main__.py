"""One writer process: load a landing file, load the table, wait at a barrier, append, report.

It plays the seeds' function that a landing file triggers (an AWS Lambda or an Azure Function):
each instance is its own OS process, loads one JSON-lines or CSV file with pyarrow, and appends
it to a Delta table. :mod:`helpers.runs.runner` starts several at once, in the Python environment of
a delta-rs era (:mod:`helpers.ground.eras`), from the workbook's folder::

    <era python> -m helpers.writers SPEC             # SPEC: a JSON file, or inline JSON
    <era python> -m helpers.writers --make-landing DIR [--batches 1-8]
    <era python> -m helpers.writers --create-table URI OPTIONS_JSON [LANDING_FILE]

The steps, each timestamped in the result (:class:`helpers.writers.protocol.WriterResult`):

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

The engines (``deltalake`` in every era; ``daft`` in the kernel's and the seeds' eras; ``spark`` in the kernel's only) are the
modules :data:`helpers.writers.protocol.ENGINE_MODULES` names.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

from helpers.delta import landing
from helpers.writers.protocol import (
    COMMITTED,
    SpecError,
    WriterResult,
    WriterSpec,
    engine_class,
    gone_file,
    one_line,
    wait_at_barrier,
    write_result,
)


def run(spec: WriterSpec) -> WriterResult:
    """Do the four steps of the module docstring and return the result (never raises for a
    storage or engine error: that becomes ``outcome="failed"`` with the error recorded)."""
    result = WriterResult(
        writer_id=spec.writer_id,
        era=spec.era,
        engine=spec.engine,
        table_uri=spec.table_uri,
        batch=spec.batch,
        landing_file=spec.landing_file,
        max_commit_retries=spec.max_commit_retries,
        t_start=time.time(),
    )
    try:
        result.stage = "landing"
        engine = engine_class(spec.engine)()
        result.deltalake_version = engine.version
        result.library_max_commit_retries = engine.library_max_commit_retries(
            spec.max_commit_retries
        )
        import pyarrow  # noqa: F401  (imported here so that reading the file is timed on its own)

        result.t_imported = time.time()
        data = landing.read_landing_file(spec.landing_file)
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
            result.t_barrier_released = wait_at_barrier(
                spec.barrier_dir, spec.writer_id, spec.barrier_timeout_s, spec.runner_pid
            )
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
            gone_file(spec.barrier_dir, spec.writer_id).touch()
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
        raise landing.LandingError(f"--batches takes N or FIRST-LAST, not {text!r}") from None


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

    report = {
        "deltalake": __version__,
        "created": False,
        "appended": False,
        "version": None,
        "error": None,
        "message": None,
    }
    try:
        table = DeltaTable.create(
            table_uri,
            schema=landing.landing_schema(),
            mode="error",
            storage_options=storage_options,
        )
        report["created"], report["version"] = True, table.version()
        if landing_file:
            write_deltalake(
                table_uri,
                landing.read_landing_file(landing_file),
                mode="append",
                storage_options=storage_options,
            )
            report["appended"], report["version"] = (
                True,
                DeltaTable(table_uri, storage_options=storage_options).version(),
            )
    except Exception as error:  # the report is the record
        report["error"], report["message"] = type(error).__name__, one_line(str(error), 600)
    return report


def main(argv: list[str]) -> None:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        _exit(0 if argv else 2)
    if argv[0] == "--make-landing":
        if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--batches"):
            print(
                "usage: python -m helpers.writers --make-landing DIR [--batches FIRST-LAST]",
                file=sys.stderr,
            )
            _exit(2)
        for batch in _parse_batches(argv[3] if len(argv) == 4 else "1-8"):
            print(landing.write_landing_file(batch, argv[1]))
        _exit(0)
    if argv[0] == "--create-table":
        if len(argv) not in (3, 4):
            print(
                "usage: python -m helpers.writers --create-table URI OPTIONS_JSON [LANDING_FILE]",
                file=sys.stderr,
            )
            _exit(2)
        print(
            json.dumps(
                create_table(argv[1], json.loads(argv[2]), argv[3] if len(argv) == 4 else None)
            )
        )
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
    print(
        f"{result.writer_id}: {result.outcome}"
        + (
            f" v{result.reported_version}"
            if result.outcome == COMMITTED
            else f" ({result.error_class}: {result.error_message})"
        )
    )
    _exit(0 if result.outcome == COMMITTED else 1)


def _report_bad_spec(argument: str, error: SpecError) -> None:
    """Print the problem; also leave a failed result if the spec at least names where to put it."""
    print(f"writer: unusable spec: {error}", file=sys.stderr)
    try:
        data = json.loads(
            argument if argument.lstrip().startswith("{") else Path(argument).read_text()
        )
        result = WriterResult(
            writer_id=str(data.get("writer_id", "?")),
            era=str(data.get("era", "?")),
            engine=str(data.get("engine", "?")),
            table_uri=str(data.get("table_uri", "?")),
            batch=None,
            landing_file=str(data.get("landing_file", "?")),
            stage="spec",
        )
        result.fail(error)
        write_result(result, data["result_path"])
    except Exception:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
