"""A commit that deltalake's DynamoDB log store cannot finish: its writer killed between the copy
and the cleanup.

deltalake's S3 DynamoDB log store commits version N in four steps: stage the commit in
``_delta_log/_commit_<uuid>.json.tmp``, claim N with a conditional PutItem (``complete`` false),
move the staged file to ``N.json`` (a copy, then a delete of the staged file), and mark the item
complete. Whoever opens the table next finishes an incomplete item ("repair"): it moves the staged
file again and marks the item. deltalake 1.5.1's repair takes a refused move for "already done"
only when the staged file is gone. A writer that dies after the copy and before the delete leaves
both files; the repair's copy is then refused because ``N.json`` exists, it reports "version N
already exists", and so does every later attempt to open or write the table with that deltalake,
until someone steps in. Delta Spark's log store (Delta's class and the workbook's) looks for
``N.json`` before copying and is not caught; deltalake 1.6.1 and later (the kernel's 1.6.6), which
no longer read DynamoDB, read the table as its files stand. The way out needs no data: the commit
is already in ``N.json``, so delete the staged file, and the next open finishes the item.

The demonstration kills one writer at exactly that point, through a :class:`~helpers.torture.faults.KillGate`
armed with ``before-cleanup`` (the delete of the staged file, held back and the writer killed),
so it is deterministic::

    wedge.wedge_in_era("deltalake-1.5.1", "s3://delta-root/12/wedge")
    # {"deltalake": "1.5.1", "killed": {...}, "commit_file": True, "staged_left": ["_delta_log/_commit_....json.tmp"],
    #  "item_complete": "false", "opens_while_wedged": [{"error": "DeltaError: ... version 2 already exists."}, ...],
    #  "append_while_wedged": {...}, "current_reads": {"version": 2, "rows": 20, ...},
    #  "after_cleanup": {"version": 2, "rows": 20, ...}, "item_complete_after_cleanup": "true"}

``python -m helpers.torture.wedge append|open URI OPTIONS_JSON [BATCH]`` is the era side: one
append of a landing batch, or one open of the table, reported as one JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys

OPENS = 3
"""How many times the wedged table is opened with the era's deltalake (each fails the same way)."""


class WedgeError(RuntimeError):
    """The demonstration could not be set up (a process gave no report, the kill did not happen)."""


def _report(done_stdout: str, what: str, stderr: str, code) -> dict:
    reports = [line for line in done_stdout.splitlines() if line.startswith("{")]
    if not reports:
        raise WedgeError(f"{what} gave no report (exit {code}): {stderr.strip()[-400:]}")
    return json.loads(reports[-1])


def _in_era(era: str, action: str, table_uri: str, options: dict, *extra: str) -> dict:
    from helpers.ground import eras

    done = eras.run_in_era(
        era, ["-m", __name__, action, table_uri, json.dumps(options), *extra], timeout=180
    )
    return _report(done.stdout, f"{action} of {table_uri} in {era}", done.stderr, done.returncode)


def wedge_in_era(era: str, table_uri: str) -> dict:
    """Create the table with ``era``'s deltalake through the DynamoDB lock (version 0, then batch 1
    as version 1), kill a writer of batch 2 between its copy to ``2.json`` and its cleanup, then
    read the storage and open the table: with the era's deltalake (:data:`OPENS` times, then an
    append of batch 3), with the kernel's (1.6.6, no DynamoDB), and with the era's again after the
    staged file is deleted."""
    from helpers.ground import config, eras
    from helpers.runs import runner
    from helpers.stores import storage, tables
    from helpers.torture import faults

    storage.remove_table(table_uri)
    options = tables.s3_storage_options(locking_provider="dynamodb")
    created = runner.create_table_in_era(table_uri, options, era=era, first_batch=1)
    if created["error"]:
        raise WedgeError(
            f"Creating {table_uri} in {era} failed: {created['error']}: {created['message']}"
        )
    gate = faults.KillGate(config.s3_emulator_endpoint(), claim_style="dynamodb")
    try:
        gate.arm(faults.BEFORE_CLEANUP)
        routed = gate.route(options, dynamodb=True)
        writer = eras.start_in_era(
            era,
            ["-m", __name__, "append", table_uri, json.dumps(routed), "2"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        gate.pgid = writer.pid
        out, err = writer.communicate(timeout=180)
    finally:
        gate.close()
    if gate.killed is None:
        raise WedgeError(
            f"The writer of batch 2 was not killed before its cleanup (exit {writer.returncode}): "
            f"{(out + err).strip()[-400:]}"
        )
    log = [name for name in storage.list_table(table_uri) if name.startswith("_delta_log/")]
    items = {item["fileName"]: item for item in storage.lock_entries(table_uri)}
    version_file = "00000000000000000002.json"
    report = {
        "deltalake": created["deltalake"],
        "killed": gate.killed,
        "commit_file": f"_delta_log/{version_file}" in log,
        "staged_left": [name for name in log if name.endswith(".json.tmp")],
        "item_complete": items.get(version_file, {}).get("complete"),
        "opens_while_wedged": [_in_era(era, "open", table_uri, options) for _ in range(OPENS)],
        "append_while_wedged": _in_era(era, "append", table_uri, options, "3"),
        "current_reads": _in_era(
            eras.CURRENT, "open", table_uri, tables.kernel_storage_options(options)
        ),
    }
    store = storage.table_store(table_uri)
    for staged in report["staged_left"]:
        store.client.delete_object(Bucket=store.bucket, Key=store.prefix + staged)
    report["after_cleanup"] = _in_era(era, "open", table_uri, options)
    report["item_complete_after_cleanup"] = {
        item["fileName"]: item for item in storage.lock_entries(table_uri)
    }.get(version_file, {}).get("complete")
    return report


def append(table_uri: str, options: dict, batch: int) -> dict:
    """Era side: append landing batch ``batch``; report the version or the error."""
    import deltalake
    from deltalake import DeltaTable, write_deltalake

    from helpers.delta import landing

    report = {"deltalake": deltalake.__version__, "version": None, "error": None}
    try:
        write_deltalake(
            table_uri,
            landing.read_landing_file(landing.landing_file(batch)),
            mode="append",
            storage_options=options,
        )
        report["version"] = DeltaTable(table_uri, storage_options=options).version()
    except Exception as error:  # the report is the record
        report["error"] = f"{type(error).__name__}: {error}".splitlines()[0]
    return report


def open_table(table_uri: str, options: dict) -> dict:
    """Era side: open the table; report its version and rows, or the error."""
    import deltalake
    from deltalake import DeltaTable

    report = {"deltalake": deltalake.__version__, "version": None, "rows": None, "error": None}
    try:
        table = DeltaTable(table_uri, storage_options=options)
        report["version"], report["rows"] = table.version(), table.to_pyarrow_table().num_rows
    except Exception as error:  # the report is the record
        report["error"] = f"{type(error).__name__}: {error}".splitlines()[0]
    return report


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] not in ("append", "open"):
        sys.exit("usage: python -m helpers.torture.wedge append|open URI OPTIONS_JSON [BATCH]")
    action, uri, given = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    print(
        json.dumps(
            append(uri, given, int(sys.argv[4])) if action == "append" else open_table(uri, given)
        ),
        flush=True,
    )
