"""The auditor's record: one commit as the auditor reads it, the verdict it gives each writer, and
the :class:`Audit` a notebook shows, with its plain-text summary and its HTML tables.

:mod:`helpers.runs.audit` reads the store and fills these in; nothing here reads a store.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

from helpers.ground import config

# verdicts, one per writer
OK_COMMITTED = "committed, rows present"
OK_FAILED = "failed, rows absent"
SILENT_LOSS = "reported success but absent"
PHANTOM = "reported failure but present"
PARTIAL = "rows partly present"


@dataclass
class Commit:
    """One commit file as the auditor reads it (:func:`helpers.runs.audit.parse_commit`)."""

    version: int
    operation: str | None
    engine: str | None
    writer_id: str | None
    batch: int | None
    timestamp_ms: int | None
    num_retries: int | None
    added: list[str]
    rows_added: int | None


@dataclass
class Audit:
    """Storage's account of a table, and of a run's writers when a run was given."""

    table_uri: str
    store: str
    version_before: int | None
    version_after: int
    rows_before: int
    rows_expected: int | None
    """rows_before + the rows of every writer that reported success (None without writer results)."""
    rows_actual: int
    rows_lost: int | None
    """Rows of writers that reported success and are absent from the table, summed per writer
    (gross: a phantom elsewhere does not make up for them; 0 when nothing was lost)."""
    rows_unexpected: int | None
    """Rows the table holds beyond what writers reported committed (net, over the whole table)."""
    writers: object  # DataFrame, one row per writer
    commits: object  # DataFrame, one row per commit file
    orphan_files: list[str]
    data_files: list[str]
    object_versions: object | None  # DataFrame, one row per S3 object version of a commit file
    versions_per_commit: dict[int, int] | None
    """Object versions of each commit file (versioned S3 only)."""
    commits_per_file: dict[int, int] | None
    """Distinct commits (different bodies) among those versions: more than one means a commit was
    overwritten by another writer's; a second identical version is a harmless re-copy."""
    silent_losses: list[str] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)
    rows_phantom: int | None = None
    """Rows of writers that reported failure and are in the table (the phantoms' rows), counted
    apart from :attr:`rows_lost`."""

    @property
    def orphans(self) -> int:
        """Data files in the table's folder that no commit references."""
        return len(self.orphan_files)

    @property
    def commit_versions(self) -> list[int]:
        return [int(v) for v in self.commits["version"]]

    @property
    def commits_in_run(self) -> int:
        """Commit files written after ``version_before``."""
        start = -1 if self.version_before is None else self.version_before
        return sum(v > start for v in self.commit_versions)

    @property
    def versions_consecutive(self) -> bool:
        """True if the commit files are 0, 1, 2, ... with no gap."""
        return self.commit_versions == list(range(len(self.commit_versions)))

    @property
    def max_versions_per_commit(self) -> int | None:
        """The most object versions any commit file has (1 = never overwritten); None when the
        store keeps no object versions (not a versioned S3 bucket)."""
        if self.versions_per_commit is None:
            return None
        return max(self.versions_per_commit.values(), default=0)

    @property
    def max_commits_per_file(self) -> int | None:
        """The most distinct commits written under one commit file name (1 = none overwritten by
        another writer); None when the store keeps no object versions."""
        if self.commits_per_file is None:
            return None
        return max(self.commits_per_file.values(), default=0)

    @property
    def overwritten_commits(self) -> dict[int, int]:
        """Commit versions whose file holds more than one distinct commit, with how many."""
        return {v: k for v, k in (self.commits_per_file or {}).items() if k > 1}

    @property
    def overwrites(self) -> list[str]:
        """Per commit file with several object versions, the writers in the order they wrote it,
        e.g. ``commit 00001.json: w3 -> w1 -> w7 (last one kept)``."""
        if self.object_versions is None:
            return []
        lines = []
        for version, group in self.object_versions.groupby("commit_version", sort=True):
            if len(group) > 1:
                chain = " -> ".join(str(w) for w in group["writer_id"])
                kind = (
                    "last one kept"
                    if group["content"].nunique() > 1
                    else "same commit written again, nothing lost"
                )
                lines.append(f"commit {version:05d}.json: {chain} ({kind})")
        return lines

    def summary(self) -> str:
        """A few lines of plain text: rows, verdicts, commits, orphans, object versions."""
        lines = [
            f"Audit of {config.without_machine_paths(self.table_uri)} ({self.store}): v{self.version_before} -> v{self.version_after}."
        ]
        if self.rows_expected is not None:
            lines.append(
                f"Rows: {self.rows_before} before + writers' reported rows = {self.rows_expected} expected; "
                f"{self.rows_actual} in the table; lost {self.rows_lost}, unexpected {self.rows_unexpected}."
            )
            lines.append(
                f"Writers: {len(self.silent_losses)} reported success but their rows are absent"
                + (f" ({', '.join(self.silent_losses)})" if self.silent_losses else "")
                + f"; {len(self.phantoms)} reported failure but their rows are present"
                + (f" ({', '.join(self.phantoms)})" if self.phantoms else "")
                + "."
            )
        else:
            lines.append(
                f"Rows: {self.rows_actual} in the table ({self.rows_before} at v{self.version_before})."
            )
        lines.append(
            f"Commits: {len(self.commit_versions)} files (versions {_ranges(self.commit_versions)}), "
            f"{self.commits_in_run} in this run, {'consecutive' if self.versions_consecutive else 'WITH GAPS'}."
        )
        lines.append(
            f"Data files: {len(self.data_files)}, of which {self.orphans} referenced by no commit (orphans)."
        )
        if self.versions_per_commit is None:
            lines.append("Object versions: not kept by this store.")
        else:
            lines.append(
                f"Object versions: at most {self.max_versions_per_commit} per commit file, holding at most "
                f"{self.max_commits_per_file} distinct commit(s)"
                + (
                    f"; overwritten by another writer: {', '.join(f'{v} ({k} commits)' for v, k in self.overwritten_commits.items())}"
                    if self.overwritten_commits
                    else ""
                )
                + "."
            )
            lines += ["  " + line for line in self.overwrites]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        parts = [f"<pre>{html.escape(self.summary())}</pre>"]
        if self.writers is not None and len(self.writers):
            parts.append("<b>Writers: reported vs stored</b>" + self.writers.to_html(index=False))
        parts.append("<b>Commits in _delta_log</b>" + self.commits.to_html(index=False))
        if self.object_versions is not None:
            parts.append(
                "<b>Object versions of the commit files</b>"
                + self.object_versions.to_html(index=False)
            )
        return "".join(parts)


def _ranges(values: list[int]) -> str:
    if not values:
        return "none"
    return (
        f"{values[0]}-{values[-1]}"
        if values == list(range(values[0], values[-1] + 1))
        else ", ".join(map(str, values))
    )
