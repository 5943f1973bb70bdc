"""A commit whose snapshot predates a concurrent OPTIMIZE removes files the OPTIMIZE already removed,
and deltalake 1.6.4 to 1.6.6 let it commit.

Run it::

    pip install deltalake==1.6.6 pyarrow
    python repro.py

For each case, a fresh table on the local disk (6 appends of 10 rows, one Parquet file each,
version 5) is opened twice at version 5. Handle 1 compacts (version 6 removes the 6 files and adds
one, all with dataChange false). Handle 2, still at version 5, then runs the second operation,
which removes the same 6 files: a compaction, a Z-order, an overwrite, a DELETE of every row.
Each must be refused ("a concurrent transaction deleted the same data your transaction
deletes"), or leave what a serial order leaves. No threads and no timing.

Exit codes: 1 the bug is present (at least one case committed and the table then holds rows no
serial order leaves), 0 every case was refused or correct, 2 the script could not run.
"""

from __future__ import annotations

import os
import sys
import tempfile
import traceback

try:
    import deltalake
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError
except ImportError as missing:
    print(f"cannot run: {missing}. Install the packages first: pip install deltalake pyarrow", file=sys.stderr)
    sys.exit(2)

NEW_ROWS = pa.table({"batch": [100, 100, 100], "row": [0, 1, 2]})

# the second operation, run from the handle opened before the compaction; the rows any serial order leaves
CASES = {
    "optimize.compact()": (lambda table: table.optimize.compact(), 60),
    "optimize.z_order(['row'])": (lambda table: table.optimize.z_order(["row"]), 60),
    "write_deltalake(mode='overwrite'), 3 rows": (lambda table: write_deltalake(table, NEW_ROWS, mode="overwrite"), 3),
    "delete() (no predicate)": (lambda table: table.delete(), 0),
}


def run_case(path: str, second_operation) -> tuple[object, Exception | None]:
    for batch in range(6):
        write_deltalake(path, pa.table({"batch": [batch] * 10, "row": list(range(10))}), mode="append")
    first, second = DeltaTable(path), DeltaTable(path)  # both at version 5
    first.optimize.compact()  # commits version 6
    try:
        return second_operation(second), None
    except Exception as error:  # the refusal is the expected outcome
        return None, error


def main() -> int:
    print(f"deltalake {deltalake.__version__}, pyarrow {pa.__version__}, Python {sys.version.split()[0]}")
    print("each case: a table of 60 rows in 6 files at version 5, two handles opened at version 5, "
          "handle 1 runs optimize.compact() (version 6), then handle 2 runs:")
    bugs = 0
    for name, (operation, serial_rows) in CASES.items():
        with tempfile.TemporaryDirectory() as path:
            result, error = run_case(path, operation)
            table = DeltaTable(path)
            rows = table.to_pyarrow_table().num_rows
        if error is not None:
            if not isinstance(error, CommitFailedError):
                print(f"cannot run: {name} failed, but not with a commit conflict: {error!r}", file=sys.stderr)
                return 2
            print(f"  {name}: refused: {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        said = f", returned {dict((k, v) for k, v in result.items() if k in ('num_deleted_rows', 'numFilesRemoved', 'numFilesAdded'))}" \
            if isinstance(result, dict) else ""
        wrong = rows != serial_rows
        bugs += wrong
        print(f"  {name}: committed version {table.version()}{said}; the table holds {rows} rows "
              f"(any serial order leaves {serial_rows}){'  <-- wrong' if wrong else ''}")
    if bugs:
        print(f"BUG PRESENT: {bugs} of {len(CASES)} operations removed files a concurrent OPTIMIZE had already removed, "
              "committed, and left rows no serial order leaves.")
        return 1
    print("OK: every operation was refused as a conflict (or left what a serial order leaves).")
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        code = 2
    # Leave without Python's shutdown: deltalake's native threads have, once on a loaded machine,
    # aborted the interpreter's teardown after the verdict was printed. The exit code is the verdict.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
