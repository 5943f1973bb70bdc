"""The pair runner: race A and B deterministically, then run them serially on fresh copies.

For a pair (A, B) on the base table::

    race       copy the base; open two snapshots at its version; A commits from the first;
               B runs from the second, now stale. The order is forced by construction.
    serial A→B A alone on a fresh copy, then B from a snapshot loaded after A.
    serial B→A the other way round (not for a retry: a retry only follows its original).

An engine that cannot hold a snapshot (Delta Spark reads the latest one when an operation starts)
runs its B with ``run_held`` instead: B starts first, reads the base version, writes its files and is
held just before its commit file; A then runs to its commit; then B goes on from the snapshot it
read, now stale (:mod:`helpers.matrix.spark`). Either way both read the base version and A's commit
lands first.

Each leaves a table whose contents (:meth:`Engine.read`), log (:func:`helpers.delta.integrity.check_table`)
and, for the race, B's commits are recorded. :mod:`helpers.matrix.classify` then compares them.
"A alone" and "B alone" are computed once per operation (:class:`Runner`) and copied, so a serial
run costs one operation, not two; and a serial order is run once: with one engine, A→B of the pair
(A, B) is B→A of the pair (B, A), the same two operations on the same table.

Engine-neutral: it runs inside the engine's process (:mod:`helpers.matrix.worker`), with any object
that has the methods of :class:`helpers.matrix.engines.Engine`, on tables in a local folder or under
an ``s3://`` prefix (:mod:`helpers.matrix.stores`).
"""

from __future__ import annotations

from pathlib import Path

from helpers.matrix import operations as ops
from helpers.matrix import stores


def error_record(error: BaseException, table: str | Path | None = None) -> dict:
    """``{"class": "CommitFailedError", "message": "<first line>"}`` for an exception; the table's
    folder (or URI), where the message names it, is written ``<table>``."""
    text = str(error)
    if table is not None:
        for shown in stores.for_location(str(table)).shown(str(table)):
            text = text.replace(shown, "<table>")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return {"class": type(error).__name__, "message": (lines[0] if lines else "")[:300]}


def commit_versions(path: str | Path) -> list[int]:
    """The commit versions in a table's ``_delta_log``."""
    return stores.for_location(str(path)).versions(str(path))


def commit_infos(path: str | Path, versions: list[int]) -> list[dict]:
    """The ``commitInfo`` of each of these commits (``{}`` where a commit has none)."""
    store = stores.for_location(str(path))
    return [store.commit_info(str(path), version) for version in versions]


def problems(path: str | Path) -> list[dict]:
    """What :func:`helpers.delta.integrity.check_table` finds wrong with the table's log, as dicts."""
    return stores.problems(str(path))


def _results(engine) -> str:
    """The name an engine's "alone" and serial results are kept under: its own, or, for an engine
    that races another's other interleaving, that engine's (a serial run has no interleaving)."""
    return getattr(engine, "results_name", engine.name)


class Runner:
    """Runs pairs for one engine (or, for a mixed pair, two) under ``root`` (a folder or an
    ``s3://`` prefix); each table is a folder under it."""

    def __init__(
        self,
        first,
        second=None,
        root: str | Path = "build/matrix/tables",
        *,
        shares: Runner | None = None,
    ) -> None:
        """``shares``: a runner (prepared, of the same store) whose base table, "alone" tables and
        serial results this one reuses: its cached results are keyed by engine and operation, so
        the mixed pair (X, Y) reuses what the mixed pair (Y, X) ran."""
        self.first, self.second = first, second or first
        self.root = str(root)
        self.store = stores.for_location(self.root)
        self.shares = shares
        self.base = shares.base if shares else self.store.join(self.root, "base")
        self._alone: dict[tuple[str, str], dict] = shares._alone if shares else {}
        self._serial: dict[tuple[str, str, str, str], dict] = shares._serial if shares else {}

    def prepare(self) -> dict:
        """Create the base table (by the first engine; or take the shared runner's) and return its contents."""
        self.store.reset(self.root)
        if self.shares is None:
            self.first.create_base(self.base)
        return self.first.read(self.base)

    def unavailable(self, a: str, b: str) -> str | None:
        """Why this pair cannot run (an engine lacks one of its operations), or None."""
        for engine, op in ((self.first, a), (self.second, b)):
            reason = engine.unavailable(op)
            if reason:
                return f"{engine.name}: {op}: {reason}"
        return None

    def alone(self, engine, op: str) -> dict:
        """``op`` on a fresh copy of the base, once per engine and operation: its folder, state, error."""
        key = (_results(engine), op)
        if key not in self._alone:
            folder = self.store.join(self.root, "alone", f"{_results(engine)}--{op}")
            result = self._step(engine, op, self.store.copy(self.base, folder), fresh=True)
            self._alone[key] = {"folder": folder, **result}
        return self._alone[key]

    def serial(self, engine_x, x: str, engine_y, y: str, folder: str) -> dict:
        """``x`` alone (by ``engine_x``), then ``y`` (by ``engine_y``) from a snapshot loaded after
        it, in ``folder``; once per engines and operations (a later pair gets the same result)."""
        key = (_results(engine_x), x, _results(engine_y), y)
        if key not in self._serial:
            self._serial[key] = self._step(
                engine_y, y, self.store.copy(self.alone(engine_x, x)["folder"], folder), fresh=True
            )
        return self._serial[key]

    def run_pair(self, a: str, b: str) -> dict:
        """Race ``a`` then stale ``b``, and run the serial orders; every result as plain data."""
        record = {
            "first": a,
            "second": b,
            "engine_first": self.first.name,
            "engine_second": self.second.name,
        }
        reason = self.unavailable(a, b)
        if reason:
            return {**record, "status": "not available", "reason": reason}
        alone_a = self.alone(self.first, a)
        if alone_a["error"]:
            return {
                **record,
                "status": "error",
                "reason": f"{a} fails on the base table: {alone_a['error']['message']}",
            }
        folder = self.store.join(self.root, "pairs", f"{a}--{b}")
        record.update(
            status="ran",
            folder=folder,
            alone_a=alone_a["state"],
            race=self._race(a, b, self.store.join(folder, "race")),
        )
        record["serial_ab"] = self.serial(
            self.first, a, self.second, b, self.store.join(folder, "a-then-b")
        )
        if not ops.OPERATIONS[b].is_retry:
            alone_b = self.alone(self.second, b)
            record["alone_b_error"] = alone_b["error"]
            record["serial_ba"] = self.serial(
                self.second, b, self.first, a, self.store.join(folder, "b-then-a")
            )
        return record

    def _race(self, a: str, b: str, path: str) -> dict:
        self.store.copy(self.base, path)
        held = getattr(self.second, "run_held", None)
        handle_a = self.first.open(path)
        handle_b = None if held else self.second.open(path)
        start = commit_versions(path)[-1]
        race = {"base_version": start, "a_error": None}
        after: dict = {}

        def run_a() -> None:
            try:
                self.first.run(a, handle_a, path)
            except Exception as error:  # noqa: BLE001  (reported: A must commit for the pair to mean anything)
                race["a_error"] = error_record(error, path)
            after["a"] = commit_versions(path)[-1]

        if held:  # B starts first and is held before its commit while A runs (the module's text)
            step = self._step(self.second, b, path, before_commit=run_a)
        else:
            run_a()
            step = self._step(self.second, b, path, handle=handle_b)
        if (
            held and step.get("held_at") is None
        ):  # B ended before any commit of its own: no race took place
            why = (step["error"] or {}).get("message") or "it committed nothing"
            race["a_error"] = {
                "class": "NotRaced",
                "message": f"B reached no commit to hold it at ({why})",
            }
        after_a = after.get("a", start)
        b_versions = [v for v in commit_versions(path) if v > after_a]
        infos = commit_infos(path, b_versions)
        race.update(
            step,
            a_versions=list(range(start + 1, after_a + 1)),
            b_versions=b_versions,
            b_operations=[info.get("operation") for info in infos],
            b_read_version=next(
                (i["readVersion"] for i in infos if i.get("readVersion") is not None), None
            ),
        )
        return race

    def _step(
        self, engine, op: str, path: str, *, handle=None, fresh: bool = False, before_commit=None
    ) -> dict:
        """Run ``op`` on the table at ``path`` (from ``handle``, or a snapshot loaded now; or, with
        ``before_commit``, held before its commit while that runs), then read it."""
        result = {"error": None, "note": None}
        try:
            if before_commit is not None:
                held = engine.run_held(op, path, before_commit)
                result.update(note=held["note"], held_at=held["held_at"])
                if held["error"] is not None:
                    raise held["error"]
            else:
                result["note"] = engine.run(op, engine.open(path) if fresh else handle, path)
        except Exception as error:  # noqa: BLE001  (a refusal is a result)
            result["error"] = error_record(error, path)
        try:
            result["state"] = engine.read(path)
        except Exception as error:  # noqa: BLE001  (an unreadable table is a result too)
            result["state"] = {"unreadable": error_record(error, path)}
        result["problems"] = problems(path)
        return result
