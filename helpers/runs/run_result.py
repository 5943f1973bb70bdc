"""What a run of writers leaves (:func:`helpers.runs.runner.run_writers`): :class:`RunResult`, its
summary and its table, and the DataFrame of the writers' rows (:data:`RESULT_COLUMNS`, one row
per writer) it holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from helpers import writers
from helpers.ground import config

RESULT_COLUMNS = [
    "writer_id",
    "batch",
    "outcome",
    "snapshot_version",
    "reported_version",
    "rows",
    "error_class",
    "error_message",
    "era",
    "deltalake_version",
    "stage",
    "exit_code",
    "id_min",
    "id_max",
    "reported_version_source",
    "t_launched",
    "t_process_start",
    "t_start",
    "t_imported",
    "t_landing_loaded",
    "t_snapshot_loaded",
    "t_barrier_released",
    "t_write_finished",
    "t_exited",
    "pid",
    "stderr_tail",
    "engine",
]


@dataclass
class RunResult:
    """What the writers of one run reported, one row per writer in ``results`` (sorted by writer)."""

    table_uri: str
    storage_options: dict[str, str] = field(repr=False)
    era: str
    engine: str
    n: int
    max_commit_retries: int | None
    hold_snapshot: bool | None
    """None: each writer held its snapshot if its engine can (see run_writers)."""
    version_before: int
    rows_before: int
    batches: list[int]
    run_dir: Path
    results: "object"  # pandas.DataFrame
    t_launched: float
    t_released: float | None
    t_finished: float
    timed_out: list[str] = field(default_factory=list)

    @property
    def outcomes(self) -> dict[str, int]:
        """``{"committed": k, "failed": m}`` as the writers reported it."""
        counts = Counter(self.results["outcome"])
        return {
            writers.COMMITTED: counts.get(writers.COMMITTED, 0),
            writers.FAILED: counts.get(writers.FAILED, 0),
        }

    @property
    def committed(self) -> int:
        return self.outcomes[writers.COMMITTED]

    @property
    def failed(self) -> int:
        return self.outcomes[writers.FAILED]

    @property
    def error_classes(self) -> dict[str, int]:
        """How often each error class was reported, e.g. ``{"CommitFailedError": 7}``."""
        return dict(Counter(e for e in self.results["error_class"] if isinstance(e, str)))

    @property
    def snapshot_versions(self) -> list[int]:
        """Distinct snapshot versions the writers loaded before the barrier (one value when the race was fair)."""
        return sorted({int(v) for v in self.results["snapshot_version"].dropna()})

    @property
    def same_snapshot(self) -> bool:
        """True if every writer that reached the barrier held the same snapshot version."""
        return len(self.snapshot_versions) == 1

    @property
    def reported_versions(self) -> list[int]:
        """The versions committed writers reported, in writer order (repeats are telling)."""
        return [int(v) for v in self.results["reported_version"].dropna()]

    @property
    def wall_time_s(self) -> float:
        return self.t_finished - self.t_launched

    def summary(self) -> str:
        """One paragraph: who committed, who failed and why, how long it took."""
        errors = ", ".join(f"{k} x{v}" for k, v in sorted(self.error_classes.items())) or "none"
        retries = "library default" if self.max_commit_retries is None else self.max_commit_retries
        return (
            f"{self.n} {self.engine} writers ({self.era}, max_commit_retries={retries}) on {config.without_machine_paths(self.table_uri)}: "
            f"{self.committed} reported committed, {self.failed} failed (errors: {errors}). "
            f"Snapshot version(s) held at the barrier: {self.snapshot_versions}; reported versions: "
            f"{self.reported_versions}. Table was at v{self.version_before} with {self.rows_before} rows. "
            f"Wall time {self.wall_time_s:.1f} s"
            + (f"; timed out: {', '.join(self.timed_out)}" if self.timed_out else "")
            + "."
        )

    def __repr__(self) -> str:
        return self.summary()

    def table(self):
        """The columns worth showing, one row per writer (a pandas DataFrame)."""
        shown = RESULT_COLUMNS[: RESULT_COLUMNS.index("error_message") + 1]  # a new list
        if self.results["engine"].nunique() > 1 or self.results["era"].nunique() > 1:
            shown[1:1] = ["engine", "era"]
        frame = self.results[shown].copy()
        frame["ms_after_go"] = (
            (self.results["t_write_finished"] - (self.t_released or 0)) * 1000
        ).round(0)
        return frame.set_index("writer_id")

    def _repr_html_(self) -> str:
        import html

        return f"<p>{html.escape(self.summary())}</p>" + self.table().to_html()

    def timeline(self, title: str | None = None, *, audit=None, ax=None):
        """The writers' timeline as a matplotlib Figure (see :func:`helpers.runs.plots.timeline`)."""
        from helpers.runs import plots

        return plots.timeline(self, title=title, audit=audit, ax=ax)


def results_frame(rows: list[dict]):
    """The writers' rows as a pandas DataFrame of :data:`RESULT_COLUMNS`, sorted by writer number."""
    import pandas as pd

    frame = pd.DataFrame(rows).reindex(columns=RESULT_COLUMNS)
    frame["writer_number"] = frame["writer_id"].str.lstrip("w").astype(int)
    frame = frame.sort_values("writer_number").drop(columns="writer_number").reset_index(drop=True)
    for column in (
        "snapshot_version",
        "reported_version",
        "rows",
        "exit_code",
        "batch",
        "id_min",
        "id_max",
    ):
        frame[column] = frame[column].astype("Int64")
    return frame
