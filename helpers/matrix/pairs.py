"""The pair runner: race A and B deterministically, then run them serially on fresh copies.

For a pair (A, B) on the base table::

    race       copy the base; open two snapshots at its version; A commits from the first;
               B runs from the second, now stale. The order is forced by construction.
    serial A→B A alone on a fresh copy, then B from a snapshot loaded after A.
    serial B→A the other way round (not for a retry: a retry only follows its original).

Each leaves a table whose contents (:meth:`Engine.read`), log (:func:`helpers.integrity.check_table`)
and, for the race, B's commits are recorded. :mod:`helpers.matrix.classify` then compares them.
"A alone" and "B alone" are computed once per operation (:class:`Runner`) and copied, so a serial
run costs one operation, not two.

Engine-neutral and local-disk only: it runs inside the engine's process
(:mod:`helpers.matrix.worker`), with any object that has the methods of
:class:`helpers.matrix.engines.Engine`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import delta_log, integrity
from helpers.matrix import operations as ops


def error_record(error: BaseException, table: Path | None = None) -> dict:
    """``{"class": "CommitFailedError", "message": "<first line>"}`` for an exception; the table's
    folder, where the message names it, is written ``<table>``."""
    text = str(error)
    if table is not None:
        folder = str(Path(table).resolve())
        text = text.replace(folder, "<table>").replace(folder.lstrip("/"), "<table>")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return {"class": type(error).__name__, "message": (lines[0] if lines else "")[:300]}


def commit_versions(path: Path) -> list[int]:
    """The commit versions in a local table's ``_delta_log``."""
    log = path / "_delta_log"
    versions = [delta_log.commit_version(f"_delta_log/{p.name}") for p in log.iterdir()] if log.is_dir() else []
    return sorted(v for v in versions if v is not None)


def commit_infos(path: Path, versions: list[int]) -> list[dict]:
    """The ``commitInfo`` of each of these commits (``{}`` where a commit has none)."""
    infos = []
    for version in versions:
        info = {}
        for line in (path / delta_log.commit_file(version)).read_text().splitlines():
            if line.strip().startswith('{"commitInfo"'):
                info = json.loads(line)["commitInfo"]
        infos.append(info)
    return infos


def problems(path: Path) -> list[dict]:
    """What :func:`helpers.integrity.check_table` finds wrong with the table's log, as dicts."""
    check = integrity.check_table(str(path))
    return [{"kind": p.kind, "file": p.file, "version": p.version, "detail": p.detail} for p in check.problems]


class Runner:
    """Runs pairs for one engine (or, for a mixed pair, two) under ``root``; each table is a folder."""

    def __init__(self, first, second=None, root: str | Path = "build/matrix/tables") -> None:
        self.first, self.second = first, second or first
        self.root = Path(root)
        self.base = self.root / "base"
        self._alone: dict[tuple[str, str], dict] = {}

    def prepare(self) -> dict:
        """Create the base table (by the first engine) and return its contents."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True)
        self.first.create_base(str(self.base))
        return self.first.read(str(self.base))

    def unavailable(self, a: str, b: str) -> str | None:
        """Why this pair cannot run (an engine lacks one of its operations), or None."""
        for engine, op in ((self.first, a), (self.second, b)):
            reason = engine.unavailable(op)
            if reason:
                return f"{engine.name}: {op}: {reason}"
        return None

    def alone(self, engine, op: str) -> dict:
        """``op`` on a fresh copy of the base, once per engine and operation: its folder, state, error."""
        key = (engine.name, op)
        if key not in self._alone:
            folder = self.root / "alone" / f"{engine.name}--{op}"
            result = self._step(engine, op, self._copy(self.base, folder), fresh=True)
            self._alone[key] = {"folder": folder, **result}
        return self._alone[key]

    def run_pair(self, a: str, b: str) -> dict:
        """Race ``a`` then stale ``b``, and run the serial orders; every result as plain data."""
        record = {"first": a, "second": b, "engine_first": self.first.name, "engine_second": self.second.name}
        reason = self.unavailable(a, b)
        if reason:
            return {**record, "status": "not available", "reason": reason}
        alone_a = self.alone(self.first, a)
        if alone_a["error"]:
            return {**record, "status": "error", "reason": f"{a} fails on the base table: {alone_a['error']['message']}"}
        folder = self.root / "pairs" / f"{a}--{b}"
        record.update(status="ran", folder=str(folder), alone_a=alone_a["state"], race=self._race(a, b, folder / "race"))
        record["serial_ab"] = self._step(self.second, b, self._copy(alone_a["folder"], folder / "a-then-b"), fresh=True)
        if not ops.OPERATIONS[b].is_retry:
            alone_b = self.alone(self.second, b)
            record["alone_b_error"] = alone_b["error"]
            record["serial_ba"] = self._step(self.first, a, self._copy(alone_b["folder"], folder / "b-then-a"), fresh=True)
        return record

    def _race(self, a: str, b: str, path: Path) -> dict:
        self._copy(self.base, path)
        handle_a, handle_b = self.first.open(str(path)), self.second.open(str(path))
        start = commit_versions(path)[-1]
        race = {"base_version": start, "a_error": None}
        try:
            self.first.run(a, handle_a, str(path))
        except Exception as error:  # noqa: BLE001  (reported: A must commit for the pair to mean anything)
            race["a_error"] = error_record(error, path)
        after_a = commit_versions(path)[-1]
        step = self._step(self.second, b, path, handle=handle_b)
        b_versions = [v for v in commit_versions(path) if v > after_a]
        infos = commit_infos(path, b_versions)
        race.update(step, a_versions=list(range(start + 1, after_a + 1)), b_versions=b_versions,
                    b_operations=[info.get("operation") for info in infos],
                    b_read_version=next((i["readVersion"] for i in infos if i.get("readVersion") is not None), None))
        return race

    def _step(self, engine, op: str, path: Path, *, handle=None, fresh: bool = False) -> dict:
        """Run ``op`` on the table at ``path`` (from ``handle``, or a snapshot loaded now), then read it."""
        result = {"error": None, "note": None}
        try:
            result["note"] = engine.run(op, engine.open(str(path)) if fresh else handle, str(path))
        except Exception as error:  # noqa: BLE001  (a refusal is a result)
            result["error"] = error_record(error, path)
        try:
            result["state"] = engine.read(str(path))
        except Exception as error:  # noqa: BLE001  (an unreadable table is a result too)
            result["state"] = {"unreadable": error_record(error, path)}
        result["problems"] = problems(path)
        return result

    @staticmethod
    def _copy(source: Path, target: Path) -> Path:
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        return target
