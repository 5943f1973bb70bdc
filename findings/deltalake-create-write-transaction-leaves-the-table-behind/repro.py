"""DeltaTable.create_write_transaction commits but leaves the DeltaTable object at the version it had
read: its next commit with an app transaction is refused as concurrent with its own previous commit.

Run it::

    pip install deltalake==1.6.6 pyarrow
    python repro.py
    python repro.py --timing   # also: 100 commits of 10 files, with and without update_incremental()

A new table on the local disk (version 0) is opened once, as ``dt``. An idempotent append loop, the
pattern ``Transaction`` exists for, commits one Parquet file per batch through
``dt.create_write_transaction(..., commit_properties=CommitProperties(app_transactions=[
Transaction(APP_ID, n)]))``. After each call the script prints what ``dt`` says (``version()``,
``transaction_version(APP_ID)``) and what a DeltaTable opened afresh on the same path says. Then the
same two batches through ``write_deltalake(dt2, ...)`` on a second table, for contrast, and the
workaround (``update_incremental()`` before the retry). No threads and no other writer: nothing
depends on timing.

Exit codes: 1 the bug is present (after create_write_transaction the object is still at the version
it had read), 0 it is fixed (the object is at the version it committed, and the next batch commits),
2 the script could not run or saw an outcome it does not know, 3 not applicable (the release has no
``deltalake.transaction`` or no ``DeltaTable.create_write_transaction``).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import traceback

try:
    import deltalake
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake
    from deltalake.exceptions import CommitFailedError
except ImportError as missing:
    print(
        f"cannot run: {missing}. Install the packages first: pip install deltalake pyarrow",
        file=sys.stderr,
    )
    sys.exit(2)

APP_ID = "nightly-ingest"
SCHEMA = pa.schema([("id", pa.int64())])


def versions_line() -> str:
    return f"deltalake {deltalake.__version__}, pyarrow {pa.__version__}, Python {sys.version.split()[0]}"


def add_action(AddAction, path: str, name: str, ids: list[int]):
    """Write one Parquet file into the table's folder; the AddAction that commits it."""
    pq.write_table(pa.table({"id": ids}, schema=SCHEMA), os.path.join(path, name))
    stats = {
        "numRecords": len(ids),
        "minValues": {"id": min(ids)},
        "maxValues": {"id": max(ids)},
        "nullCount": {"id": 0},
    }
    return AddAction(
        name,
        os.path.getsize(os.path.join(path, name)),
        {},
        int(time.time() * 1000),
        True,
        json.dumps(stats),
    )


def says(table) -> str:
    return f"version() = {table.version()}, transaction_version({APP_ID!r}) = {table.transaction_version(APP_ID)}"


def commit_batch(api, dt, path: str, n: int):
    """create_write_transaction of batch n (file batch-n.parquet, ids 10n..10n+9) with Transaction(APP_ID, n)."""
    action = add_action(
        api["AddAction"], path, f"batch-{n}.parquet", list(range(10 * n, 10 * n + 10))
    )
    dt.create_write_transaction(
        [action],
        mode="append",
        schema=dt.schema(),
        commit_properties=api["CommitProperties"](app_transactions=[api["Transaction"](APP_ID, n)]),
    )


def attempt(call) -> Exception | None:
    try:
        call()
    except CommitFailedError as error:
        return error
    return None


def main() -> int:
    print(versions_line())
    try:
        from deltalake.transaction import AddAction, CommitProperties, Transaction
    except ImportError as missing:
        print(f"NOT APPLICABLE: this release lacks the deltalake.transaction API ({missing}).")
        return 3
    if not hasattr(DeltaTable, "create_write_transaction"):
        print("NOT APPLICABLE: this release has no DeltaTable.create_write_transaction.")
        return 3
    api = {"AddAction": AddAction, "CommitProperties": CommitProperties, "Transaction": Transaction}

    with tempfile.TemporaryDirectory() as path, tempfile.TemporaryDirectory() as path2:
        DeltaTable.create(path, SCHEMA)
        dt = DeltaTable(path)
        print(f"a new table at version 0, opened once as dt: {says(dt)}")
        print(
            f"each batch: one Parquet file of 10 rows, committed with "
            f"CommitProperties(app_transactions=[Transaction({APP_ID!r}, n)]), mode='append'"
        )

        commit_batch(api, dt, path, 1)
        fresh = DeltaTable(path)
        committed, left_at = fresh.version(), dt.version()
        stale = left_at != committed
        print(f"1. dt.create_write_transaction(batch 1, Transaction({APP_ID!r}, 1)) returned")
        print(f"   dt says:                 {says(dt)}")
        print(f"   a new DeltaTable says:   {says(fresh)}")
        log_entry = os.path.join(path, "_delta_log", f"{committed:020d}.json")
        with open(log_entry) as entry:
            has_txn = any('"txn"' in line for line in entry)
        if not has_txn:
            print(
                f"   (this release did not write the app transaction at all: {committed:020d}.json "
                "has no 'txn' action)"
            )

        error = attempt(lambda: commit_batch(api, dt, path, 2))
        second_refused = error is not None
        if second_refused:
            first_line = str(error).splitlines()[0]
            print(
                f"2. dt.create_write_transaction(batch 2, Transaction({APP_ID!r}, 2)): refused: "
                f"{type(error).__name__}: {first_line}"
            )
            print(
                f"   nothing else wrote to the table: the 'concurrent' transaction is dt's own batch 1 "
                f"(a new DeltaTable says: {says(DeltaTable(path))})"
            )
        else:
            print(
                f"2. dt.create_write_transaction(batch 2, Transaction({APP_ID!r}, 2)): committed; "
                f"dt says: {says(dt)}; a new DeltaTable says: {says(DeltaTable(path))}"
            )

        DeltaTable.create(path2, SCHEMA)
        dt2 = DeltaTable(path2)
        for step, n in ((3, 1), (4, 2)):
            rows = pa.table({"id": list(range(10 * n, 10 * n + 10))}, schema=SCHEMA)
            write_deltalake(
                dt2,
                rows,
                mode="append",
                commit_properties=CommitProperties(app_transactions=[Transaction(APP_ID, n)]),
            )
            print(
                f"{step}. contrast, a second table opened as dt2: write_deltalake(dt2, batch {n}, "
                f"Transaction({APP_ID!r}, {n})) returned; dt2 says: {says(dt2)}"
            )

        if second_refused:
            dt.update_incremental()
            print(f"5. workaround: dt.update_incremental(): dt says: {says(dt)}")
            error = attempt(lambda: commit_batch(api, dt, path, 2))
            outcome = f"refused: {type(error).__name__}" if error else "committed"
            print(
                f"   then batch 2 again: {outcome}; a new DeltaTable says: {says(DeltaTable(path))}"
            )

        if stale:
            unseen = " (its transaction_version says the batch is not there)" if has_txn else ""
            also = (
                " The next batch from the same object was refused as a concurrent transaction: the "
                "conflict check meets the object's own previous commit, which carries the same app id."
                if second_refused
                else ""
            )
            print(
                f"BUG PRESENT: create_write_transaction committed version {committed} and left the "
                f"DeltaTable at version {left_at}{unseen}.{also}"
            )
            return 1
        if not second_refused and dt.version() == DeltaTable(path).version():
            print(
                f"FIXED: the DeltaTable is at the version each create_write_transaction committed, and "
                f"the next batch with the same app id commits (dt says: {says(dt)})."
            )
            return 0
        print(
            "cannot run: the object follows its commits but the next batch was refused; an outcome this "
            "script does not know",
            file=sys.stderr,
        )
        return 2


def timing(commits: int = 100, files: int = 10, rounds: int = 3) -> None:
    """The cost of the workaround: the same loop of commits with update_incremental() after each, and
    without it (the object stays at version 0; each commit then checks every version since)."""
    from deltalake.transaction import AddAction

    def loop(refresh: bool) -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as path:
            DeltaTable.create(path, SCHEMA)
            batches = [
                [
                    add_action(AddAction, path, f"c{c:03d}-f{f:02d}.parquet", [c * files + f])
                    for f in range(files)
                ]
                for c in range(commits)
            ]
            dt = DeltaTable(path)
            schema = dt.schema()
            in_commit = in_refresh = 0.0
            for actions in batches:
                started = time.perf_counter()
                dt.create_write_transaction(actions, mode="append", schema=schema)
                committed = time.perf_counter()
                if refresh:
                    dt.update_incremental()
                in_commit += committed - started
                in_refresh += time.perf_counter() - committed
            assert DeltaTable(path).version() == commits
            return in_commit, in_refresh

    print(
        f"timing: {commits} create_write_transaction calls of {files} add actions each, local disk, "
        f"median of {rounds} rounds (the Parquet files are written before the clock starts)"
    )
    for refresh in (True, False):
        runs = [loop(refresh) for _ in range(rounds)]
        commit_s = statistics.median(r[0] for r in runs)
        refresh_s = statistics.median(r[1] for r in runs)
        total = statistics.median(r[0] + r[1] for r in runs)
        label = (
            "with update_incremental() after each"
            if refresh
            else "without it (object left at version 0)"
        )
        share = (
            f", of which update_incremental() {refresh_s:.2f} s ({100 * refresh_s / total:.0f} %)"
            if refresh
            else ""
        )
        print(f"  {label}: {total:.2f} s in all{share}; the commits alone {commit_s:.2f} s")


if __name__ == "__main__":
    try:
        code = main()
        if code in (0, 1) and "--timing" in sys.argv[1:]:
            timing()
    except Exception:  # anything unforeseen is "could not run", never taken for the bug
        traceback.print_exc()
        print("cannot run: unexpected error (above)", file=sys.stderr)
        code = 2
    # Leave without Python's shutdown: deltalake's native threads can abort the interpreter's
    # teardown after the verdict was printed. The exit code is the verdict.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
