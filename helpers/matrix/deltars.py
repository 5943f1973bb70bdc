"""delta-rs as a conflict-matrix engine, in whichever era's Python imports it.

One class for every era: the differences between releases are met here, by asking the installed
``deltalake`` what it has (never by a table of versions), and an operation a release lacks is
reported by :meth:`DeltaRs.unavailable`, not attempted.

The stale snapshot is delta-rs's public one: a ``DeltaTable`` loaded before the other writer
committed. Every operation runs from that handle, with one exception met below: deltalake 0.x's
``write_deltalake(table, ...)`` reloads the table (``update_incremental``) before it writes, then
hands the handle's snapshot to its Rust writer. Called through ``write_deltalake`` the race could
not be forced; so for 0.x the matrix calls that same Rust writer (``write_to_deltalake``) with the
stale handle, which is the state a 0.x write is in when the other commit lands while it writes
its files. deltalake 1.x's ``write_deltalake`` writes from the handle as it is.

Its own races write B's data files after A commits (B runs from its stale handle once A is done).
The variant ``<era>+b-files-first`` writes them before: B runs in a thread and is held at the call
that would make its commit file (:mod:`helpers.matrix.commit_hold`) while A commits.

``python -m helpers.matrix.worker deltalake-1.6.6 ...`` builds this engine (:func:`engine`).
"""

from __future__ import annotations

import inspect

import deltalake
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from helpers.matrix import engines
from helpers.matrix import layouts
from helpers.matrix import operations as ops

RELEASE = tuple(int(part) for part in deltalake.__version__.split(".")[:3])
HOLD_TIMEOUT_S = 240.0
"""A bound against a hang only: how long B may take to reach its commit before the pair fails."""


def _arrow(rows, columns: tuple[str, ...] = ops.COLUMNS) -> pa.Table:
    return pa.table(
        {
            column: pa.array(
                [row[i] for row in rows], pa.string() if column == "part" else pa.int64()
            )
            for i, column in enumerate(columns)
        }
    )


def _has(owner, attribute: str) -> bool:
    return getattr(owner, attribute, None) is not None


def _accepts(function, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


class DeltaRs:
    """The matrix's engine interface (:mod:`helpers.matrix.engines`) on the installed deltalake."""

    def __init__(self, name: str) -> None:
        spec = engines.ENGINES.get(name)
        self.name = name
        self.version = deltalake.__version__
        self.layout = layouts.LAYOUTS[spec.layout if spec else layouts.SHARED_FILES.name]
        self.results_name = spec.base_of if spec and spec.held_interleaving else name
        """Whose "alone" and serial results this engine's are (its other interleaving's: the same)."""
        self._hold = None
        if spec and spec.held_interleaving:
            self.run_held = self._run_held

    # -- what this release has ------------------------------------------------------------
    def _missing(self) -> dict[str, str]:
        """The operations this release lacks, with the API each one needs."""
        from deltalake import table

        missing: dict[str, str] = {}
        if not _accepts(write_deltalake, "predicate"):
            missing["replace_where"] = "write_deltalake(..., predicate=) is missing"
        if not _has(DeltaTable, "merge"):
            missing["merge"] = "DeltaTable.merge is missing"
        if not _has(getattr(table, "TableOptimizer", None), "z_order"):
            missing["zorder"] = "optimize.z_order is missing"
        if not _accepts(DeltaTable.vacuum, "enforce_retention_duration"):
            missing["vacuum"] = "vacuum(enforce_retention_duration=) is missing"
        alterer = getattr(table, "TableAlterer", None)
        if not _has(alterer, "add_columns"):
            missing["add_column"] = "alter.add_columns is missing"
        if not _has(alterer, "set_table_properties"):
            missing["set_property"] = "alter.set_table_properties is missing"
        if not (_has(deltalake, "CommitProperties") and _has(deltalake, "Transaction")):
            for name in ("append_txn", "retry_txn", "retry_checked", "retry_checked_stale"):
                missing[name] = "CommitProperties(app_transactions=[Transaction(...)]) is missing"
        elif not _has(DeltaTable, "transaction_version"):
            for name in ("retry_checked", "retry_checked_stale"):
                missing[name] = (
                    "DeltaTable.transaction_version is missing: a writer cannot ask what landed"
                )
        return missing

    def unavailable(self, op: str) -> str | None:
        if hasattr(self, "run_held"):
            from helpers.matrix import commit_hold

            why = commit_hold.unavailable()
            if why:
                return f"B cannot be held at its commit: {why}"
        return self._missing().get(op)

    # -- the interface ----------------------------------------------------------------------
    def create_base(self, path: str) -> None:
        layout = self.layout
        for batch in layout.base:
            write_deltalake(
                path,
                _arrow(batch, layout.columns),
                mode="append",
                partition_by=list(layout.partition_by) or None,
            )
        DeltaTable(path).delete(layout.base_delete)

    def open(self, path: str) -> DeltaTable:
        return DeltaTable(path)

    def read(self, path: str) -> dict:
        return read_table(path)

    def run(self, op: str, handle: DeltaTable, path: str) -> str | None:
        """Run ``op`` from ``handle``'s snapshot; raises what delta-rs raises. Returns a note when
        the operation chose to do nothing (a checked retry that skipped)."""
        layout, op = self.layout.for_op(
            op
        )  # a second job on a part of its own: its rows and predicates
        if op in ("append", "retry"):
            self._write(handle, path, layout.append_rows, "append")
        elif op in ("append_txn", "retry_txn"):
            self._write(handle, path, layout.append_rows, "append", app_transaction=True)
        elif op == "retry_checked":
            latest = DeltaTable(path)  # the check must read the table as it is now
            return self._checked_retry(latest, path)
        elif op == "retry_checked_stale":
            return self._checked_retry(handle, path)
        elif op == "overwrite":
            self._write(handle, path, layout.overwrite_rows, "overwrite")
        elif op == "replace_where":
            self._write(
                handle, path, layout.replace_rows, "overwrite", predicate=layout.replace_predicate
            )
        elif op == "delete":
            handle.delete(layout.delete_predicate)
        elif op == "delete_all":
            handle.delete()
        elif op == "update":
            handle.update(updates=dict(ops.UPDATE_SET), predicate=layout.update_predicate)
        elif op == "merge":
            inserted = {column: f"s.{column}" for column in layout.columns}
            (
                handle.merge(
                    source=_arrow(layout.merge_source, layout.columns),
                    predicate=layout.merge_condition,
                    source_alias="s",
                    target_alias="t",
                )
                .when_matched_update(updates={"value": "s.value"})
                .when_not_matched_insert(updates=inserted)
                .execute()
            )
        elif op == "optimize":
            handle.optimize.compact()
        elif op == "zorder":
            handle.optimize.z_order(list(ops.ZORDER_COLUMNS))
        elif op in ("vacuum", "vacuum_retained"):
            handle.optimize.compact()  # then the handle is at the latest version (optimize reloads it)
            full = (
                {"full": True} if _accepts(DeltaTable.vacuum, "full") else {}
            )  # as Delta Spark's: see operations
            retention = (  # vacuum_retained: the table's default retention, its check on
                {"retention_hours": ops.VACUUM_RETENTION_HOURS, "enforce_retention_duration": False}
                if op == "vacuum"
                else {}
            )
            handle.vacuum(dry_run=False, **retention, **full)
        elif op == "add_column":
            from deltalake import Field

            name, kind = ops.ADDED_COLUMN
            handle.alter.add_columns([Field(name, kind, nullable=True)])
        elif op == "set_property":
            key, value = ops.PROPERTY
            handle.alter.set_table_properties({key: value})
        else:
            raise ValueError(f"unknown operation {op!r}")
        return None

    # -- helpers ----------------------------------------------------------------------------
    def _checked_retry(self, table: DeltaTable, path: str) -> str | None:
        landed = table.transaction_version(ops.APP_ID)
        if landed is not None and landed >= ops.APP_VERSION:
            return f"skipped: transaction_version({ops.APP_ID!r}) = {landed}"
        self._write(table, path, self.layout.append_rows, "append", app_transaction=True)
        return f"appended: transaction_version({ops.APP_ID!r}) = {landed}"

    def _write(
        self,
        handle: DeltaTable,
        path: str,
        rows,
        mode: str,
        *,
        predicate: str | None = None,
        app_transaction: bool = False,
    ) -> None:
        properties = None
        if app_transaction:
            properties = deltalake.CommitProperties(
                app_transactions=[deltalake.Transaction(ops.APP_ID, ops.APP_VERSION)]
            )
        data = _arrow(rows, self.layout.columns)
        partition_by = list(self.layout.partition_by) or None
        if RELEASE >= (1, 0, 0):
            write_deltalake(
                handle,
                data,
                mode=mode,
                predicate=predicate,
                commit_properties=properties,
                partition_by=partition_by,
            )
            return
        # 0.x: write_deltalake would reload the handle first (see the module's text)
        from deltalake._internal import write_to_deltalake

        reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
        if "table" not in inspect.signature(write_to_deltalake).parameters:
            # 0.25: the Rust writer is the handle's own method (write_deltalake calls it after reloading)
            handle._table.write(
                data=reader,
                mode=mode,
                predicate=predicate,
                commit_properties=properties,
                partition_by=partition_by,
            )
            return
        write_to_deltalake(
            table_uri=path,
            data=reader,
            mode=mode,
            table=handle._table,
            predicate=predicate,
            commit_properties=properties,
            partition_by=partition_by,
        )

    def _run_held(self, op: str, path: str, first) -> dict:
        """B of a race with its data files written first: B runs from a snapshot opened now, in a
        thread, and is held at the call that would make its commit file; ``first()`` (A) runs to its
        commit; B is released and delta-rs's conflict checker decides. Returns B's ``note``,
        ``held_at`` (None if B ended without reaching a commit; ``first()`` then ran after it) and
        ``error``, as :meth:`helpers.matrix.spark.DeltaSpark.run_held` does."""
        from helpers.matrix import commit_hold

        if self._hold is None:
            self._hold = commit_hold.Hold()
        hold, handle = self._hold, self.open(path)
        hold.arm(path)
        return engines.race_held(
            op,
            lambda: self.run(op, handle, path),
            lambda: hold.wait_held(HOLD_TIMEOUT_S),
            hold.release,
            hold.abandon,
            first,
        )


def read_table(path: str) -> dict:
    """A table's contents as the oracle compares them: its version, columns, properties and rows,
    read with this environment's deltalake (every engine's tables are read this way)."""
    table = DeltaTable(path)
    data = table.to_pyarrow_table()
    columns = list(data.column_names)
    return {
        "version": table.version(),
        "columns": columns,
        "properties": dict(table.metadata().configuration),
        "rows": [[row[c] for c in columns] for row in data.to_pylist()],
    }


def engine(name: str) -> DeltaRs:
    """The engine for era ``name``, on the deltalake this process imports."""
    return DeltaRs(name)
