"""Clean-up: delete what was staged and is no longer needed, never a file the table holds.

* a ready marker whose data file the table holds (its batch landed);
* with ``orphans_older_than_s`` set: a data file under ``produced/`` that neither the table nor a
  ready marker names, written at least that long ago (a producer killed mid-file; run it with 0
  only once the producers are stopped, or give a producer's longest write as the age).

The table's files are read after the queue is listed, so a batch that lands meanwhile only leaves
its markers for the next clean-up; a file the table holds is never deleted.
"""

from __future__ import annotations

import time

from helpers.producers import layout
from helpers.producers.committer import table_files


def clean_up(
    table_uri: str, storage_options: dict[str, str], *, orphans_older_than_s: float | None = None
) -> dict[str, int]:
    """Delete landed markers (and orphaned data files); return how many of each went."""
    from deltalake import DeltaTable

    fs = layout.filesystem(table_uri, storage_options)
    queued = layout.ready(fs)
    produced = layout.listed(fs, layout.PRODUCED_DIR) if orphans_older_than_s is not None else []
    held = table_files(DeltaTable(table_uri, storage_options=dict(storage_options)))
    landed = [s for s in queued if s.data_path in held]
    for staged in landed:
        fs.delete_file(staged.marker_path)
    named = {s.data_path for s in queued} | held
    orphans = []
    if produced:
        cutoff = time.time() - orphans_older_than_s
        orphans = [
            p
            for p, info in zip(produced, fs.get_file_info(produced))
            if p not in named and info.mtime is not None and info.mtime.timestamp() <= cutoff
        ]
        for path in orphans:
            fs.delete_file(path)
    return {
        "markers": len(landed),
        "orphaned data files": len(orphans),
        "waiting": len(queued) - len(landed),
    }
