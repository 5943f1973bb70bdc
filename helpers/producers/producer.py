"""A producer: writes its Parquet data files into the table's folder and hands each over with a
ready marker (:mod:`helpers.producers.layout`); it never commits.

    <python> -m helpers.producers.producer SPEC_JSON_FILE

A producer started again after a crash does not make a file twice: it skips each of its files
that a ready marker or the table already holds, and writes the others afresh (a new token, so
a half-written file of a killed attempt is never handed over; clean-up deletes it).
``die_after_data`` in the spec (a file number) SIGKILLs the producer after that file's data is
written and before its marker: a producer killed mid-file, at the same point on every run.

Standard library, pyarrow and deltalake only (runs in the current era's Python).
"""

from __future__ import annotations

import os
import signal
import time

from helpers.producers import layout
from helpers.writers import processes
from helpers.writers.protocol import T_PROCESS_START, spec_process_main


def handed_over(table_uri: str, storage_options: dict, fs, producer: int) -> set[int]:
    """This producer's file numbers the queue or the table already holds."""
    from deltalake import DeltaTable

    done = {s.seq for s in layout.ready(fs) if s.producer == producer}
    paths = (
        DeltaTable(table_uri, storage_options=dict(storage_options))
        .get_add_actions(flatten=True)
        .column("path")
    )
    found = (layout.producer_and_seq(str(p)) for p in paths.to_pylist())
    return done | {seq for owner, seq in (f for f in found if f) if owner == producer}


def produce(
    fs, producer: int, seq: int, rows: int, die_after_data: int | None = None
) -> layout.Staged:
    """Write one data file, then its ready marker; return what was handed over."""
    import pyarrow.parquet as pq

    token = layout.new_token()
    path = layout.data_path(producer, seq, token)
    pq.write_table(layout.file_rows(producer, seq, rows), path, filesystem=fs)
    if die_after_data == seq:
        os.kill(os.getpid(), signal.SIGKILL)
    staged = layout.Staged(producer, seq, token, rows, fs.get_file_info(path).size)
    layout.touch(fs, staged.marker_path)
    return staged


def run(spec: dict) -> dict:
    result = {
        "process": spec["process"],
        "pid": os.getpid(),
        "t_process_start": T_PROCESS_START,
        "files": [],
        "error": None,
    }

    def prepare():
        producer, rows = int(spec["producer"]), int(spec["rows"])
        fs = layout.filesystem(spec["table_uri"], spec["storage_options"])
        skip = (
            handed_over(spec["table_uri"], spec["storage_options"], fs, producer)
            if spec.get("resume")
            else set()
        )
        result["skipped"] = sorted(skip)
        return fs, skip, producer, rows

    def work(state) -> None:
        fs, skip, producer, rows = state
        for seq in range(1, int(spec["files"]) + 1):
            if seq not in skip:
                produce(fs, producer, seq, rows, spec.get("die_after_data"))
                result["files"].append({"seq": seq, "t_done": time.time()})
        result["cpu_s"] = sum(os.times()[:2])

    return processes.run_at_barrier(spec, result, prepare, work)


if __name__ == "__main__":
    spec_process_main("helpers.producers.producer", run)
