"""The process that runs one engine's pairs, streaming one JSON line per pair.

    python -m helpers.matrix.worker ENGINE FOLDER PAIRS

``ENGINE`` is a name from :data:`helpers.matrix.engines.ENGINES` (the process must be that
engine's Python: :mod:`helpers.matrix.run` starts it with :func:`helpers.eras.start_in_era`),
``FOLDER`` where its tables go (replaced), ``PAIRS`` a JSON list of ``[first, second]``. Lines
on stdout, in order: ``{"event": "start", "engine", "version", "base", "pairs"}``, one
``{"event": "pair", ...}`` per pair (:meth:`helpers.matrix.pairs.Runner.run_pair`'s record),
``{"event": "done"}``; or ``{"event": "fatal", "error"}`` if the engine cannot run at all. One
process per engine, so an era's interpreter and its deltalake load once, not once per pair.
"""

from __future__ import annotations

import json
import sys
import time
import traceback


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}, default=str), flush=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    name, folder, pairs_json = argv
    try:
        from helpers.matrix import engines, pairs

        engine = engines.build(name)
        runner = pairs.Runner(engine, root=folder)
        base = runner.prepare()
    except Exception as error:  # noqa: BLE001  (reported to the parent, which names the engine)
        emit("fatal", engine=name, error=f"{type(error).__name__}: {error}", traceback=traceback.format_exc()[-2000:])
        return 1
    todo = [tuple(pair) for pair in json.loads(pairs_json)]
    emit("start", engine=name, version=engine.version, base=base, pairs=len(todo))
    for first, second in todo:
        started = time.perf_counter()
        try:
            record = runner.run_pair(first, second)
        except Exception as error:  # noqa: BLE001  (one broken pair must not stop the others)
            record = {"first": first, "second": second, "status": "error",
                      "reason": f"the harness failed: {type(error).__name__}: {error}"}
        emit("pair", engine=name, seconds=round(time.perf_counter() - started, 3), **record)
    emit("done", engine=name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
