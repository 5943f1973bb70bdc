"""One era's deltalake trials of a lost commit answer: for each table of the spec, create it
(one row, version 0), then append three rows the way the spec's remedy says, and record what the
job was told and each step it took. Whether the append is in the table is decided afterwards from
storage (:mod:`helpers.lost_answer.trials`), never from this record.

Started by :mod:`helpers.lost_answer.deltalake_paths` in the era's Python, from the workbook's folder::

    <era python> -m helpers.lost_answer.deltalake_worker SPEC_JSON_FILE RESULT_JSON_FILE

The spec: ``storage_options``, and ``trials``, a list of ``{"table_uri", "remedy", "app_id"}``,
each with ``storage_options`` of its own to add (the seeds' lease names its lock per table).
Standard library, pyarrow and deltalake only: this module runs in the writer eras.
"""

from __future__ import annotations

import json
import sys

from helpers.lost_answer.trials import APPENDED_ROWS, LATER_ROWS
from helpers.writers.deltalake_engine import (
    has_commit_properties,
    landed_version,
    max_commit_retries_for,
)
from helpers.writers.protocol import one_line, write_json_atomically

APP_VERSION = 1
"""The append's place in its job's sequence (the table was created by version 0 of nothing)."""


def _rows(first: int, count: int):
    import pyarrow as pa

    return pa.table({"id": pa.array(range(first, first + count), pa.int64())})


class Job:
    """One trial's append, with ``remedy`` (:data:`helpers.lost_answer.trials.REMEDIES`)."""

    def __init__(self, uri: str, options: dict, remedy: str, app_id: str) -> None:
        import deltalake

        self.uri, self.options, self.remedy, self.app_id = uri, options, remedy, app_id
        self.version = deltalake.__version__
        self.steps: list[str] = []

    def _append(self) -> bool:
        """One call of ``write_deltalake``; its answer is one step. True if it returned."""
        from deltalake import write_deltalake

        kwargs = {"mode": "append", "storage_options": dict(self.options)}
        if self.remedy != "none":
            from deltalake import CommitProperties, Transaction

            retries = 0 if self.remedy == "app-transaction-no-retries" else None
            kwargs["commit_properties"] = CommitProperties(
                max_commit_retries=max_commit_retries_for(self.version, retries),
                app_transactions=[Transaction(app_id=self.app_id, version=APP_VERSION)],
            )
        try:
            write_deltalake(self.uri, _rows(1, APPENDED_ROWS), **kwargs)
        except Exception as error:  # noqa: BLE001 - what the job is told is the measurement
            self.steps.append(f"append: {type(error).__name__}: {one_line(str(error), 160)}")
            return False
        self.steps.append("append: returned")
        return True

    def _landed(self) -> bool:
        """Reload the table and ask whether it holds this job's app transaction."""
        from deltalake import DeltaTable

        landed = landed_version(
            DeltaTable(self.uri, storage_options=dict(self.options)), self.app_id
        )
        self.steps.append(f"check: transaction_version={landed}")
        return landed is not None and landed >= APP_VERSION

    def later(self) -> None:
        """The next plain append to the table, after the procedure: its answer is one step (whether
        it committed is read from storage)."""
        from deltalake import write_deltalake

        try:
            write_deltalake(
                self.uri, _rows(10, LATER_ROWS), mode="append", storage_options=dict(self.options)
            )
            self.steps.append("later append: returned")
        except Exception as error:  # noqa: BLE001 - the table may refuse every later write
            self.steps.append(f"later append: {type(error).__name__}: {one_line(str(error), 160)}")

    def run(self) -> str:
        """The whole procedure; returns what it concluded: ``success`` or ``failed``."""
        if self._append():
            return "success"
        if self.remedy == "none":
            return "failed"
        if self._landed() or self._append():  # the check, then one rerun
            return "success"
        return "failed"


def main(spec_path: str, result_path: str) -> None:
    from deltalake import write_deltalake

    import deltalake

    with open(spec_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    results = []
    for trial in spec["trials"]:
        options = {**spec["storage_options"], **trial.get("storage_options", {})}
        if trial["remedy"] != "none" and not has_commit_properties(deltalake.__version__):
            raise SystemExit(
                f"deltalake {deltalake.__version__} has no app transactions: no remedy to try"
            )
        write_deltalake(
            trial["table_uri"], _rows(0, 1), mode="error", storage_options=dict(options)
        )
        job = Job(trial["table_uri"], options, trial["remedy"], trial["app_id"])
        told = job.run()
        job.later()
        results.append(
            {"table_uri": trial["table_uri"], "told": told, "steps": "; ".join(job.steps)}
        )
    write_json_atomically({"deltalake": deltalake.__version__, "trials": results}, result_path)


if __name__ == "__main__":
    main(*sys.argv[1:3])
