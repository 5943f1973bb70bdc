"""The delta-rs engine: appends with the deltalake Python package of the running era."""

from __future__ import annotations

from pathlib import Path

from helpers.writers.protocol import (
    READ_LANDING,
    Engine,
    TableNotFoundError,
    WriterSpec,
    literal,
    one_line,
    writer_tags,
)


def open_delta_table(table_uri: str, storage_options: dict[str, str]):
    """A deltalake ``DeltaTable``; a missing table raises TableNotFoundError naming the URI."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError as NotFound

    try:
        return DeltaTable(table_uri, storage_options=dict(storage_options))
    except NotFound as error:
        raise TableNotFoundError(
            f"No Delta table at {table_uri} ({one_line(str(error), 300)}); create it before starting writers."
        ) from None


class DeltalakeEngine(Engine):
    """Appends with the deltalake (delta-rs) Python package of the running environment.

    Era differences handled here:

    * ``write_deltalake(<DeltaTable>, ...)`` in deltalake < 1.0 refreshes the table
      (``update_incremental``) before and after writing; 1.x writes against the object's snapshot
      and leaves it at the version it committed. With ``hold_snapshot`` the pre-write refresh is
      suppressed, so both eras commit against the snapshot loaded before the barrier.
    * ``max_commit_retries``: in 1.x it counts retries after the first attempt (0 = one attempt);
      in 0.22.3 the same parameter counts attempts (0 = the commit is never even tried, and fails
      with "Failed to commit transaction: 0" on an idle table). The spec always means retries, so
      0.22.3 is passed ``max_commit_retries + 1``.
    * retries in 0.22.3 try ``snapshot + 1``, ``snapshot + 2``, ... one version per attempt; 1.x
      lists the log first and jumps to the latest version + 1 (and records ``num_retries`` in
      its commitInfo ``operationMetrics``).
    * ``reported_version``: 1.x, ``table.version()`` after the write is the writer's own commit;
      0.22.3, the library does not say which version it wrote, so the writer reports the latest
      version its table sees right after the write (what the seeds' program printed).
    * deltalake 0.14.0 (the seeds' lock table shape) has no ``CommitProperties``: no retry setting
      (its commit retries a conflict up to 15 times, fixed) and no custom commitInfo, so its
      commits carry no writer tags (the auditor then tells writers apart by their rows only). A
      spec with ``max_commit_retries`` set is refused there with :class:`UnsupportedSetting`.
    * the idempotent-write id (:func:`idempotent_id`): every other era's append carries it, and
      asks its table first which version of it the table holds (1.x ``transaction_version``,
      0.x ``transaction_versions()``): a rerun of a landing file that landed appends nothing.
    """

    name = "deltalake"

    def __init__(self) -> None:
        import deltalake

        self.version = deltalake.__version__
        self.major = int(self.version.split(".")[0])
        self.has_commit_properties = has_commit_properties(self.version)

    def load(self, spec: WriterSpec):
        """Open the table (:func:`open_delta_table`)."""
        return open_delta_table(spec.table_uri, spec.storage_options)

    @staticmethod
    def snapshot_version(table) -> int:
        return int(table.version())

    def library_max_commit_retries(self, retries: int | None) -> int | None:
        """The value to pass as ``max_commit_retries`` so that it means retries in every era."""
        return max_commit_retries_for(self.version, retries)

    @staticmethod
    def commit_properties(spec: WriterSpec, version: str) -> dict:
        """The ``CommitProperties`` arguments of this writer's append with deltalake ``version``."""
        return {
            "max_commit_retries": max_commit_retries_for(version, spec.max_commit_retries),
            "custom_metadata": writer_tags(spec),
        }

    @classmethod
    def code(cls, spec: WriterSpec) -> str:
        """What the writer process runs for ``spec`` with its era's deltalake (:meth:`append` builds
        its call from the same :meth:`commit_properties`), as Python to copy; credentials masked."""
        from helpers.ground import config, eras

        version = eras.era(spec.era).deltalake_version
        has_properties = has_commit_properties(version)
        lines = [
            (
                f"from deltalake import {'CommitProperties, ' if has_properties else ''}DeltaTable, "
                f"{'Transaction, ' if has_properties else ''}write_deltalake"
            ),
            "",
            "from helpers.delta import landing",
            "",
            f"storage_options = {literal(config.masked(spec.storage_options))}",
            READ_LANDING,
            f"table = DeltaTable({literal(spec.table_uri)}, storage_options=storage_options)"
            + (
                "  # before the barrier: every writer holds this snapshot"
                if spec.hold_snapshot
                else ""
            ),
        ]
        if not spec.hold_snapshot:
            lines.append("table.update_incremental()  # after the barrier: the latest version")
        elif int(version.split(".")[0]) < 1:
            lines += [
                f"# deltalake {version}'s write_deltalake refreshes the table first; the race switches that off so",
                "# that every writer commits from the snapshot above (leave this line out of a real job):",
                "table.update_incremental = lambda: None",
            ]
        if not has_properties:
            lines.append(
                'write_deltalake(table, data, mode="append")  # no CommitProperties: no tags, 15 retries, fixed'
            )
            return "\n".join(lines)
        arguments = cls.commit_properties(spec, version)
        app_id, app_version = idempotent_id(spec)
        retries = arguments["max_commit_retries"]
        meaning = (
            "the library's default"
            if retries is None
            else "one attempt, no retry"
            if retries == spec.max_commit_retries == 0
            else f"{spec.max_commit_retries} retries"
        )
        if retries is not None and retries != spec.max_commit_retries:
            meaning += f": deltalake {version} counts attempts"
        lines += [
            "# the idempotent-write id: app_id names one source of files committed in order (here each landing",
            "# file is a job of its own: its name), version its place in that source (the file's number). Jobs",
            "# that run at once must not share an app_id: of two commits carrying one, the later is refused.",
            f"app_id, version = {literal(app_id)}, {app_version}",
            "properties = CommitProperties(",
            f"    max_commit_retries={retries!r},  # {meaning}",
            f"    custom_metadata={literal(arguments['custom_metadata'], wrap=False)},  # tags in commitInfo: whose commit it is",
            "    app_transactions=[Transaction(app_id=app_id, version=version)],",
            ")",
            f"landed = {LANDED_1 if int(version.split('.')[0]) >= 1 else LANDED_0}  # a rerun finds its own commit",
            "if landed is None or landed < version:",
            '    write_deltalake(table, data, mode="append", commit_properties=properties)',
        ]
        return "\n".join(lines)

    def append(self, table, data, spec: WriterSpec) -> tuple[int, str]:
        """Append ``data`` to ``table``; return (reported_version, how it was observed)."""
        from deltalake import write_deltalake

        if not self.has_commit_properties:
            return self._append_without_commit_properties(table, data, spec)
        from deltalake import CommitProperties, Transaction

        app_id, app_version = idempotent_id(spec)
        properties = CommitProperties(
            **self.commit_properties(spec, self.version),
            app_transactions=[Transaction(app_id=app_id, version=app_version)],
        )
        if not spec.hold_snapshot:
            table.update_incremental()
        landed = landed_version(table, app_id)
        if landed is not None and landed >= app_version:
            told = f"landed already: the table holds {app_id} {landed}; nothing appended"
            return int(table.version()), told
        if self.major >= 1:
            write_deltalake(table, data, mode="append", commit_properties=properties)
            return int(table.version()), "table.version() after write (the commit this writer made)"
        if spec.hold_snapshot:
            table.update_incremental = lambda: None  # keep the snapshot loaded before the barrier
        try:
            write_deltalake(table, data, mode="append", commit_properties=properties)
        finally:
            table.__dict__.pop("update_incremental", None)
        table.update_incremental()
        return int(
            table.version()
        ), "table.version() refreshed after write (latest version, not necessarily this writer's)"

    def _append_without_commit_properties(self, table, data, spec: WriterSpec) -> tuple[int, str]:
        """deltalake < 0.15 (no ``CommitProperties``): the library's own retries, no tags."""
        from deltalake import write_deltalake

        if spec.max_commit_retries is not None:
            raise UnsupportedSetting(
                f"deltalake {self.version} has no max_commit_retries setting (its commit retries a conflict "
                "up to 15 times); leave max_commit_retries=None for this era."
            )
        if not spec.hold_snapshot:
            table.update_incremental()
        else:
            table.update_incremental = lambda: None  # keep the snapshot loaded before the barrier
        try:
            write_deltalake(table, data, mode="append")
        finally:
            table.__dict__.pop("update_incremental", None)
        table.update_incremental()
        return int(
            table.version()
        ), "table.version() refreshed after write (latest version, not necessarily this writer's)"


LANDED_1 = "table.transaction_version(app_id)"
LANDED_0 = 'getattr(table.transaction_versions().get(app_id), "version", None)'
"""How a writer asks its table which version of its id it holds, as shown: 1.x, 0.x."""


def idempotent_id(spec: WriterSpec) -> tuple[str, int]:
    """The idempotent-write id of a writer's append: ``app_id`` the landing file's name (each landing
    file is a job of its own), ``version`` its batch number."""
    return Path(spec.landing_file).name, int(spec.batch or 0)


def landed_version(table, app_id: str) -> int | None:
    """The version of ``app_id`` that ``table``'s snapshot holds (None: none), in any era."""
    if hasattr(table, "transaction_version"):
        return table.transaction_version(app_id)
    return getattr(table.transaction_versions().get(app_id), "version", None)


def has_commit_properties(version: str) -> bool:
    """Does deltalake ``version`` have ``CommitProperties``? (Of the eras installed, 0.14.0 does not.)"""
    return tuple(int(part) for part in version.split(".")[:2]) >= (0, 18)


def max_commit_retries_for(version: str, retries: int | None) -> int | None:
    """The ``max_commit_retries`` to pass deltalake ``version`` so that it means retries: 1.x counts
    retries after the first attempt; 0.x counts attempts, so it is given one more."""
    if retries is None or int(version.split(".")[0]) >= 1 or not has_commit_properties(version):
        return retries
    return retries + 1


class UnsupportedSetting(ValueError):
    """The spec asks for a setting this era's deltalake does not have; the message says which."""


ENGINE = DeltalakeEngine
