"""VACUUM with full=True and the default retention (7 days) deletes files the retention must keep:
deltalake 1.0.0 to 1.1.4 delete a concurrent writer's data file written seconds before (its commit
then lands and the table cannot be read), and 1.0.0 to 1.5.0 delete the files a recent OPTIMIZE
removed when they were written more than 7 days ago (time travel inside the retention fails).

Run it::

    pip install deltalake==1.1.4 pyarrow
    python repro.py

Case 1, a concurrent writer: a table of one file (version 0). Writer B opens it, writes its data
file into the table folder as deltalake's writers do (``part-00001-<uuid>-c000.snappy.parquet``)
and has not committed yet. Job A then runs ``vacuum(dry_run=False, full=True)`` with no retention
arguments. B then commits an add action for its file (``create_write_transaction``) and the table
is read.

Case 2, a recent OPTIMIZE: a table of three files, each written 8 days ago (their modification
time is set back with ``os.utime``, as a long-lived table's files are). ``optimize.compact()``
removes them now (version 3); ``vacuum(dry_run=False, full=True)`` with no retention arguments
follows, and version 2 is read (time travel well inside the 7 days).

No threads and no timing: each step runs after the one before.

Exit codes: 1 the bug is present (a case lost a file the retention keeps), 0 both cases kept their
files, 2 the script could not run, 3 not applicable (this release's vacuum() has no full mode).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
import uuid

try:
    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake
except ImportError as missing:
    print(f"cannot run: {missing}. Install the packages first: pip install deltalake pyarrow", file=sys.stderr)
    sys.exit(2)

SCHEMA = pa.schema([("id", pa.int64())])
EIGHT_DAYS = 8 * 24 * 3600


def parquet_files(path: str) -> set[str]:
    return {name for name in os.listdir(path) if name.endswith(".parquet")}


def read_rows(path: str, version: int | None = None) -> str:
    try:
        table = DeltaTable(path) if version is None else DeltaTable(path, version=version)
        return f"{table.to_pyarrow_table().num_rows} rows"
    except Exception as error:  # the failed read is the consequence shown
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"


def concurrent_writer(path: str) -> bool:
    """Case 1; True when the writer's file was deleted."""
    write_deltalake(path, pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    writer = DeltaTable(path)  # B's snapshot, version 0
    name = f"part-00001-{uuid.uuid4()}-c000.snappy.parquet"
    pq.write_table(pa.table({"id": [4, 5, 6]}, schema=SCHEMA), os.path.join(path, name), compression="snappy")
    size = os.path.getsize(os.path.join(path, name))
    print(f"  B wrote {name} ({size} bytes), not committed yet")
    deleted = DeltaTable(path).vacuum(dry_run=False, full=True)
    lost = not os.path.exists(os.path.join(path, name))
    print(f"  A: vacuum(dry_run=False, full=True) deleted {len(deleted)} file(s): {sorted(deleted)}")
    print(f"  B's file {'is GONE' if lost else 'is still there'}")
    stats = {"numRecords": 3, "minValues": {"id": 4}, "maxValues": {"id": 6}, "nullCount": {"id": 0}}
    add = deltalake.transaction.AddAction(name, size, {}, int(time.time() * 1000), True, json.dumps(stats))
    writer.create_write_transaction([add], mode="append", schema=SCHEMA)
    print(f"  B commits its add action: version {DeltaTable(path).version()}; reading the table: {read_rows(path)}"
          f"{'  <-- wrong' if lost else ''}")
    return lost


def recent_optimize(path: str) -> bool:
    """Case 2; True when a file the OPTIMIZE removed was deleted."""
    for batch in range(3):
        write_deltalake(path, pa.table({"id": [batch]}, schema=SCHEMA), mode="append")
    written = parquet_files(path)
    eight_days_ago = time.time() - EIGHT_DAYS
    for name in written:
        os.utime(os.path.join(path, name), (eight_days_ago, eight_days_ago))
    DeltaTable(path).optimize.compact()
    table = DeltaTable(path)
    print(f"  3 files written 8 days ago, removed by optimize.compact() now (version {table.version()}); "
          f"the lite mode, vacuum(dry_run=True), would delete {len(table.vacuum(dry_run=True))}")
    deleted = table.vacuum(dry_run=False, full=True)
    lost = written - parquet_files(path)
    print(f"  vacuum(dry_run=False, full=True) deleted {len(deleted)} file(s); "
          f"{len(lost)} of the 3 removed files are gone")
    print(f"  reading version 2: {read_rows(path, version=2)}{'  <-- wrong' if lost else ''}")
    return bool(lost)


def main() -> int:
    print(f"deltalake {deltalake.__version__}, pyarrow {pa.__version__}, Python {sys.version.split()[0]}")
    if "full" not in DeltaTable.vacuum.__code__.co_varnames:
        print("not applicable: this release's DeltaTable.vacuum() has no full= parameter (no full mode)")
        return 3
    print("retention: the default (delta.deletedFileRetentionDuration unset: 7 days); no retention argument given")
    lost = []
    print("case 1: a concurrent writer's data file, written seconds before, not yet committed")
    with tempfile.TemporaryDirectory() as path:
        if concurrent_writer(path):
            lost.append("a concurrent writer's uncommitted data file")
    print("case 2: files a recent OPTIMIZE removed, written more than 7 days ago")
    with tempfile.TemporaryDirectory() as path:
        if recent_optimize(path):
            lost.append("the files a recent OPTIMIZE removed")
    if lost:
        print(f"BUG PRESENT: vacuum(full=True) with the default 7-day retention deleted {' and '.join(lost)}.")
        return 1
    print("OK: vacuum(full=True) kept every file the 7-day retention keeps.")
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        code = 2
    # Leave without Python's shutdown: deltalake's native threads can abort the interpreter's
    # teardown after the verdict was printed. The exit code is the verdict.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
