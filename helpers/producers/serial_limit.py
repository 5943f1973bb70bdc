"""The committer at the serial limit, in each way it may keep its refresh short: the committer
alone on staged files against one writer appending alone (:func:`scenarios.at_the_limit`), once
per variant of :data:`VARIANTS` on the same store, each on fresh tables, in one run.

* deltalake 1.6.6 as released, refreshing before each commit (``create_write_transaction`` leaves
  the ``DeltaTable`` at the version it read): the refresh reads every commit since the last
  checkpoint, one each 100 commits by the table's default;
* the same, with the committer's own checkpoint every K commits, which bounds that read;
* 1.6.6 as released with no refresh after an answered commit: each next commit meets the last
  one, with the same ``txn``, as a concurrent transaction, and is tried again after a refresh
  (its ``errors``: the finding, shown in the same run);
* with the fix built (``make deltalake-fix``, :mod:`helpers.producers.deltalake_fix`): no refresh
  after an answered commit, and, as the control on the same build, a refresh before each.

``make producers`` runs them all (the rows of ``limit_variants``); its ``limit`` row is the variant
the committer runs by default (:data:`helpers.producers.committer.CHECKPOINT_EVERY`).
"""

from __future__ import annotations

import os

from helpers.producers import committer, deltalake_fix
from helpers.producers.run import Table
from helpers.producers.scenarios import at_the_limit, limit_files_per_producer

RELEASED = "1.6.6"
FIXED = "1.6.6 + fix"
VARIANTS: dict[str, dict] = {
    "refresh before each commit": {"build": RELEASED, "refresh": True, "checkpoint_every": None},
    "checkpoint every 10": {"build": RELEASED, "refresh": True, "checkpoint_every": 10},
    "checkpoint every 25": {"build": RELEASED, "refresh": True, "checkpoint_every": 25},
    "checkpoint every 50": {"build": RELEASED, "refresh": True, "checkpoint_every": 50},
    "no refresh": {"build": RELEASED, "refresh": False, "checkpoint_every": None},
    "fix, no refresh": {"build": FIXED, "refresh": False, "checkpoint_every": None},
    "fix, refresh before each commit": {"build": FIXED, "refresh": True, "checkpoint_every": None},
}
"""Each way the committer runs at the limit: the deltalake build, whether it refreshes after an
answered commit, its own checkpoint interval (None: the table's)."""


def default_variant() -> str:
    """The variant the committer runs as it is (released deltalake, its default checkpoints)."""
    (name,) = [
        name
        for name, v in VARIANTS.items()
        if v["build"] == RELEASED
        and v["refresh"]
        and v["checkpoint_every"] == committer.CHECKPOINT_EVERY
    ]
    return name


MEASURED = (
    "refresh before each commit",
    "checkpoint every 10",
    "checkpoint every 25",
    "checkpoint every 50",
    "fix, no refresh",
)
"""The variants ``make producers`` measures: 1.6.6 as released, with each bound on its refresh,
and with the fix. The other two of :data:`VARIANTS` ("no refresh" on 1.6.6 as released, and the
fix's build with the refresh kept) are the finding's and the build's controls: the tests run the
first, and :func:`variant_rows` runs either when named."""


def variants(with_all: bool = True) -> list[str]:
    """The variants a run measures: :data:`MEASURED` (the fix's only when built), or the default
    alone."""
    if not with_all:
        return [default_variant()]
    return [n for n in MEASURED if VARIANTS[n]["build"] == RELEASED or deltalake_fix.built()]


def variant_rows(
    backend: str,
    store: str,
    where: str,
    *,
    producers: int,
    max_files: int,
    rounds: int,
    block: int,
    names: list[str],
) -> list[dict]:
    """One row per variant of ``names`` on ``backend`` (``store`` names it in the rows), each on
    a fresh staged table and a fresh table for the plain appends under ``where``."""
    rows = []
    for name in names:
        variant = VARIANTS[name]
        slug = name.replace(" ", "-").replace(",", "")
        table = Table.fresh(backend, f"{where}-{slug}-staged")
        appended = Table.fresh(backend, f"{where}-{slug}-append")
        row = at_the_limit(
            table,
            appended,
            producers=producers,
            files=limit_files_per_producer(producers, max_files, rounds, block),
            max_files=max_files,
            rounds=rounds,
            committer={
                "refresh": variant["refresh"],
                "checkpoint_every": variant["checkpoint_every"],
            },
            deltalake_from=deltalake_fix.where() if variant["build"] == FIXED else None,
        )
        rows.append(
            {
                **row,
                "backend": store,
                "variant": name,
                "build": variant["build"],
                "checkpoint_every": variant["checkpoint_every"] or 0,
                "refresh": variant["refresh"],
                "load_1min": os.getloadavg()[0],
            }
        )
        table.remove()
        appended.remove()
    return rows
