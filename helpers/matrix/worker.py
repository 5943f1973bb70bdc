"""The process that runs one or more engines' pairs, streaming one JSON line per pair.

    python -m helpers.matrix.worker ENGINE[,ENGINE...] FOLDER PAIRS

``ENGINE`` are names from :data:`helpers.matrix.engines.ENGINES` that share one process (the
process must be their era's Python: :mod:`helpers.matrix.run` starts it with
:func:`helpers.ground.eras.start_in_era`); ``FOLDER`` is where their tables go,
``FOLDER/<engine>`` each (replaced), or for an engine on S3 a prefix of the emulator's bucket named
after ``FOLDER`` (:func:`s3_root`); ``PAIRS`` a JSON object giving each engine its list of
``[first, second]``. Lines on stdout,
per engine in order: ``{"event": "start", "engine", "version", "base", "pairs"}``, one
``{"event": "pair", ...}`` per pair (:meth:`helpers.matrix.pairs.Runner.run_pair`'s record),
``{"event": "done"}``; or ``{"event": "fatal", "engine", "error"}`` if that engine cannot run at
all (the next one still runs). One process per group, so an era's interpreter, its deltalake and
a Spark session load once, not once per pair or engine. Up to
:attr:`~helpers.matrix.engines.EngineSpec.threads` engines run side by side (:class:`Schedule`), one
thread each, their lines interleaved (each names its engine).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path

SAMPLE_EVERY = 4
"""A confirming engine with ``sample=True`` re-runs every pair the confirmed engine did not refuse,
every retry, and one in this many of the pairs it refused (the 1st, 5th, 9th... in pair order)."""


_EMITTING = threading.Lock()


def emit(event: str, **fields) -> None:
    line = json.dumps({"event": event, **fields}, default=str)
    with _EMITTING:  # engines may run in threads: one whole line at a time
        print(line, flush=True)


def s3_root(folder: str, name: str) -> str:
    """``s3://<bucket>/conflict-matrix/<digest of FOLDER>/<engine>``: one prefix per run and engine."""
    from helpers.stores import tables

    digest = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:12]
    return tables.s3_uri(f"conflict-matrix/{digest}/{name.replace('@', '-at-')}")


def confirmation_pairs(
    records: list[dict], base: dict, every: int = SAMPLE_EVERY
) -> list[tuple[str, str]]:
    """The pairs a sampling confirmation re-runs: every pair the confirmed engine did not refuse
    (committed, anomalies, errors, not available), every retry, and every ``every``-th of the other
    pairs it refused."""
    from helpers.matrix import classify
    from helpers.matrix import operations as ops

    chosen, refused = [], 0
    for record in records:
        retry = ops.OPERATIONS[record["second"]].is_retry
        if not retry and classify.classify(record, base).outcome == classify.REFUSED:
            refused += 1
            if (refused - 1) % every:
                continue
        chosen.append((record["first"], record["second"]))
    return chosen


def _engines(names: list[str]) -> dict:
    """Build each single engine these entries need, once (the two mixed pairs share theirs)."""
    from helpers.matrix import engines

    built = {}
    for name in names:
        for part in engines.ENGINES[name].parts or (name,):
            if part not in built:
                built[part] = engines.build(part)
    return built


def _prepare_s3() -> None:
    """The emulator up, the bucket there, and delta-rs pointed at it through the variables it reads."""
    from helpers.ground import config
    from helpers.stores import services, storage, tables

    if config.profile() == "local":
        services.up(["moto"], quiet=True)
    storage.ensure_bucket()
    os.environ.update(tables.s3_storage_options())


def run_pair_or_error(runner, a: str, b: str) -> dict:
    """The pair's record; a harness failure is an ``error`` record, so that one broken pair does not
    stop the others."""
    try:
        return runner.run_pair(a, b)
    except Exception as error:  # noqa: BLE001
        return {
            "first": a,
            "second": b,
            "status": "error",
            "reason": f"the harness failed: {type(error).__name__}: {error}",
        }


def run_engine(
    name: str, folder: str, todo: list[tuple[str, str]], built: dict, done: dict
) -> None:
    """Run one engine's pairs (``done``: the engines of this process that finished, by name: their
    runner, records and base, for a confirmation's sample and for :attr:`EngineSpec.base_of`)."""
    from helpers.matrix import engines, pairs

    spec = engines.ENGINES[name]
    try:
        first, second = (
            (built[part] for part in spec.parts) if spec.parts else (built[name], built[name])
        )
        root = s3_root(folder, name) if spec.store == "s3" else str(Path(folder) / name)
        shares = done[spec.base_of]["runner"] if spec.base_of in done else None
        runner = pairs.Runner(first, second, root=root, shares=shares)
        base = runner.prepare()
        if spec.sample and spec.confirms in done:
            todo = confirmation_pairs(done[spec.confirms]["records"], done[spec.confirms]["base"])
    except Exception as error:  # noqa: BLE001  (reported to the parent, which names the engine)
        emit(
            "fatal",
            engine=name,
            error=f"{type(error).__name__}: {error}",
            traceback=traceback.format_exc()[-2000:],
        )
        return
    version = first.version if first is second else f"{first.version} / {second.version}"
    emit("start", engine=name, version=version, base=base, pairs=len(todo))
    records = []
    for a, b in todo:
        started = time.perf_counter()
        record = run_pair_or_error(runner, a, b)
        records.append(record)
        emit("pair", engine=name, seconds=round(time.perf_counter() - started, 3), **record)
    done[name] = {"runner": runner, "records": records, "base": base}
    emit("done", engine=name)


class Schedule:
    """The order a process's engines run in: each in turn, once the engines it needs
    (:meth:`~helpers.matrix.engines.EngineSpec.after`, those of this process) have finished;
    :attr:`~helpers.matrix.engines.EngineSpec.threads` of them at once."""

    def __init__(self, names: list[str]) -> None:
        from helpers.matrix import engines

        self.pending = list(names)
        self.needs = {
            name: [n for n in engines.ENGINES[name].after() if n in names] for name in names
        }
        self.finished: set[str] = set()
        self.ready = threading.Condition()

    def next(self) -> str | None:
        """The next engine to run (waiting until one may start), or None when none is left."""
        with self.ready:
            while self.pending:
                name = next(
                    (n for n in self.pending if all(d in self.finished for d in self.needs[n])),
                    None,
                )
                if name is not None:
                    self.pending.remove(name)
                    return name
                self.ready.wait()
            return None

    def finish(self, name: str) -> None:
        with self.ready:
            self.finished.add(name)
            self.ready.notify_all()


def run_thread(
    schedule: Schedule, folder: str, todo: dict[str, list[tuple[str, str]]], built: dict, done: dict
) -> None:
    while (name := schedule.next()) is not None:
        try:
            run_engine(name, folder, list(todo[name]), built, done)
        finally:
            schedule.finish(name)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    names, folder, pairs_json = argv[0].split(","), argv[1], argv[2]
    todo = {name: [tuple(pair) for pair in pairs] for name, pairs in json.loads(pairs_json).items()}
    if sorted(todo) != sorted(names):
        print(f"PAIRS names {sorted(todo)}, the engines are {sorted(names)}", file=sys.stderr)
        return 2
    try:
        from helpers.matrix import engines

        engines.pairs_in_this_process = sum(map(len, todo.values()))
        engines.this_process = engines.ENGINES[names[0]].process_key
        if any(engines.ENGINES[name].store == "s3" for name in names):
            _prepare_s3()
        built = _engines(names)
    except Exception as error:  # noqa: BLE001  (every engine of the process is lost)
        for name in names:
            emit(
                "fatal",
                engine=name,
                error=f"{type(error).__name__}: {error}",
                traceback=traceback.format_exc()[-2000:],
            )
        return 1
    schedule, done = Schedule(names), {}
    count = max(engines.ENGINES[name].threads for name in names)
    threads = [
        threading.Thread(
            target=run_thread, args=(schedule, folder, todo, built, done), name=f"matrix-{i}"
        )
        for i in range(min(count, len(names)))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
