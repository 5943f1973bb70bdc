"""Two OPTIMIZEs built on one snapshot, in one era's deltalake: does the second one commit?

Two jobs that compact a table at the same time both read version N and both rewrite the same
small files into one. The first commits N+1. The second must then fail: N+1 removed the files it
removes. deltalake 0.22.3, 1.5.1, 1.6.0 and 1.6.3 refuse it ("a concurrent transaction deleted
the same data your transaction deletes"); 1.6.4, 1.6.5 and 1.6.6 commit it as N+2, so every
compacted row is in the table twice. Two table handles loaded at one version make the race deterministic, with no threads and
no timing: the first compacts, then the second, whose snapshot is still version N::

    compaction_race.race_in_era("deltalake-1.6.6", "build/tables/two-optimizes")
    # {"deltalake": "1.6.6", "batches": 6, "first_version": 6, "second_version": 7, "second_error": None}

``python -m helpers.torture.compaction_race PATH`` runs it in the environment it is started in
and prints that report as one JSON line. The checker's ``removed twice``
(:mod:`helpers.delta.integrity`) names what the second commit leaves in the log.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

BATCHES = 6
"""Appends before the race: one small file each, all of them compacted by both OPTIMIZEs."""


class CompactionRaceError(RuntimeError):
    """The race could not be run (its process gave no report); the message has the process's error."""


def race(path: str) -> dict:
    """Create a fresh local table at ``path`` with :data:`BATCHES` appends of landing batches,
    load it twice, compact with each handle in turn; report the versions and the second's error."""
    import deltalake
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    from helpers.delta import landing

    shutil.rmtree(path, ignore_errors=True)
    for batch in range(1, BATCHES + 1):
        write_deltalake(
            path,
            pa.Table.from_pylist(landing.landing_rows(batch), schema=landing.landing_schema()),
            mode="append",
        )
    first, second = DeltaTable(path), DeltaTable(path)
    first.optimize.compact()
    report = {
        "deltalake": deltalake.__version__,
        "batches": BATCHES,
        "first_version": DeltaTable(path).version(),
        "second_version": None,
        "second_error": None,
    }
    try:
        second.optimize.compact()
    except Exception as error:  # the refusal is the result
        report["second_error"] = f"{type(error).__name__}: {error}".splitlines()[0]
    else:
        report["second_version"] = DeltaTable(path).version()
    return report


def race_in_era(era: str, path: str | Path) -> dict:
    """:func:`race` in a process of ``era`` (raises EraError if the era is not installed)."""
    from helpers.ground import eras

    done = eras.run_in_era(era, ["-m", __name__, str(path)], timeout=180)
    reports = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not reports:
        raise CompactionRaceError(
            f"The compaction race in {era} gave no report (exit {done.returncode}): "
            f"{done.stderr.strip()[-400:]}"
        )
    return json.loads(reports[-1])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(
            "usage: python -m helpers.torture.compaction_race PATH (a local folder; it is replaced)"
        )
    print(json.dumps(race(sys.argv[1])))
