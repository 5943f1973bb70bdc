"""Execute the notebooks, render them, and keep the committed ones tidy.

Command line (the Makefile calls these)::

    python -m helpers.jupyter.workbook run      # every notebook in order -> build/executed/ (+ HTML, index.html)
    python -m helpers.jupyter.workbook run 03 -p n_writers=4
    python -m helpers.jupyter.workbook refresh  # re-execute in place: the committed outputs readers see on GitHub
    python -m helpers.jupyter.workbook check    # the output policy: fails on anything a reviewer should not see
    python -m helpers.jupyter.workbook kernel   # register the workbook's kernel in .venv (make install does)

A notebook that fails because an emulator stopped answering is said so in the command's last
lines, in the words of the notebook's own cell (:func:`stopped_services`), not only by the client's
connection error; ``make test`` says it the same way (tests/conftest.py).

Output policy: notebooks are committed *with* outputs (they render for readers), normalised:
execution counts renumbered 1..N as a clean Run All gives them (nbval needs counts, and these
never change a diff), no papermill or timing metadata, no machine paths. ``pytest --nbval``
re-executes each one and compares every output not tagged ``nbval-ignore-output`` (after the
sanitizers in tests/nbval_sanitize.cfg), so a committed output is a checked claim.
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import html
import json
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from helpers.ground import config
from helpers.jupyter import kernels

EXECUTED_DIR = config.BUILD_DIR / "executed"
CELL_TIMEOUT_S = 1200
KERNEL_NAME = "delta-lake-workbook"
KERNELSPEC = {
    "name": KERNEL_NAME,
    "display_name": "Delta Lake workbook (Python 3.11)",
    "language": "python",
}
"""The kernel JupyterLab shows for every notebook, so a learner can tell it from other
environments: .venv's Python, registered inside .venv by :func:`install_kernel`."""
IGNORE_OUTPUT_TAG = "nbval-ignore-output"


class NotebookError(RuntimeError):
    """A notebook is missing, or broke the output policy; the message names it."""


def notebooks(selection: Sequence[str] = ()) -> list[Path]:
    """The notebooks in order (``NN_topic.ipynb``); ``selection`` filters by number or name prefix."""
    found = sorted(p for p in config.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
    if not selection:
        return found
    chosen = [p for p in found if any(p.name.startswith(s) or p.stem == s for s in selection)]
    if not chosen:
        names = ", ".join(p.stem for p in found)
        raise NotebookError(
            f"No notebook matches {', '.join(selection)}; the workbook has {names}."
        )
    return chosen


def parse_parameters(pairs: Sequence[str]) -> dict[str, Any]:
    """``["n_writers=4", "era='x'"]`` -> ``{"n_writers": 4, "era": "x"}`` (values are Python literals,
    bare words are taken as strings)."""
    result = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name.isidentifier():
            raise NotebookError(f"Parameter {pair!r} is not NAME=VALUE.")
        try:
            result[name] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            result[name] = raw
    return result


def check_parameters(path: Path, parameters: dict[str, Any]) -> None:
    """Raise NotebookError if a parameter is not declared in the notebook's ``parameters`` cell
    (papermill would silently add it, and a misspelt knob would change nothing)."""
    import papermill

    declared = papermill.inspect_notebook(str(path))
    unknown = sorted(set(parameters) - set(declared))
    if unknown:
        raise NotebookError(
            f"{path.name} has no parameter {', '.join(unknown)}; its parameters are {', '.join(declared) or 'none'}."
        )


@dataclass
class Execution:
    notebook: Path
    output: Path
    seconds: float
    error: str | None = None
    failed_cell: str | None = None
    """e.g. ``cell 12 (In [7])``: the cell's position in the notebook and its execution count."""
    parameters: dict[str, Any] = field(default_factory=dict)
    stopped: list[str] = field(default_factory=list)
    """The service watch's sentence for each emulator the failure points at
    (:func:`stopped_services`)."""

    @property
    def ok(self) -> bool:
        return self.error is None


ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def stopped_services(failure: str) -> list[str]:
    """The service watch's sentence (``moto (S3 + DynamoDB, 127.0.0.1:5050) stopped answering. Start
    it again with `make services` ...``) for each emulator a failure points at: one whose sentence
    is in ``failure`` (a notebook's cell said it), or one whose address the failure names (a
    client's error names the URL it could not reach) and that does not answer now."""
    from helpers.stores import service_watch, services

    text = ANSI.sub("", failure)
    said = []
    for service in services.active():
        endpoint = services.endpoint(service)
        sentence = service_watch.stopped_message(endpoint)
        address = re.compile(rf"(?<![\w.]){re.escape(endpoint.host)}:{endpoint.port}(?!\d)")
        if sentence in text or (address.search(text) and service_watch.refused(endpoint)):
            said.append(sentence)
    return said


def _outputs(notebook: Path) -> str:
    """Every text output of an executed notebook's cells, errors' tracebacks included."""
    if not notebook.exists():
        return ""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n".join(
        "".join(output.get("text", "")) + "\n".join(output.get("traceback", []))
        for cell in cells
        for output in cell.get("outputs", [])
    )


def execute(path: Path, output: Path, parameters: dict[str, Any] | None = None) -> Execution:
    """Run one notebook with papermill (cwd = notebooks/) into ``output``; never raises for a failing cell."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    parameters = parameters or {}
    check_parameters(path, parameters)
    output.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    error, failed_cell, stopped = None, None, []
    try:
        with kernels.socket_folder() as sockets:
            papermill.execute_notebook(
                str(path),
                str(output),
                parameters=parameters,
                kernel_name=KERNEL_NAME,
                kernel_manager_class=kernels.papermill_kernel_manager(sockets),
                cwd=str(config.NOTEBOOKS_DIR),
                execution_timeout=CELL_TIMEOUT_S,
                progress_bar=False,
                log_output=False,
            )
    except PapermillExecutionError as failure:
        error = f"{failure.ename}: {failure.evalue}"
        failed_cell = f"cell {failure.cell_index} (In [{failure.exec_count}])"
        stopped = stopped_services(_outputs(output) + "\n" + "\n".join(failure.traceback))
    return Execution(
        path, output, time.monotonic() - started, error, failed_cell, parameters, stopped
    )


def render_html(executed: Path) -> Path:
    """Render an executed notebook to HTML next to it."""
    import nbformat
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_notebook_node(nbformat.read(executed, as_version=4))
    target = executed.with_suffix(".html")
    target.write_text(body, encoding="utf-8")
    return target


def write_index(executions: list[Execution], target: Path) -> Path:
    """``index.html``: each notebook, its status, its duration, a link to its rendering."""
    rows = []
    for run in executions:
        status = "passed" if run.ok else f"FAILED at {run.failed_cell}: {run.error}"
        rows.append(
            "<tr class='{cls}'><td><a href='{href}'>{name}</a></td><td>{status}</td><td>{secs:.0f} s</td><td>{params}</td></tr>".format(
                cls="ok" if run.ok else "failed",
                href=html.escape(run.output.with_suffix(".html").name),
                name=html.escape(run.notebook.stem),
                status=html.escape(status[:500]),
                secs=run.seconds,
                params=html.escape(json.dumps(run.parameters) if run.parameters else "defaults"),
            )
        )
    total = sum(r.seconds for r in executions)
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>Delta Lake workbook: executed notebooks</title>
<style>body{{font-family:sans-serif;margin:2em}} td,th{{padding:.3em .8em;text-align:left}}
tr.ok td:nth-child(2){{color:#1a7f37}} tr.failed td:nth-child(2){{color:#cf222e;font-weight:bold}}</style></head>
<body><h1>Delta Lake workbook: executed notebooks</h1>
<p>Executed {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; {sum(r.ok for r in executions)} of {len(executions)} passed; {total:.0f} s in all.</p>
<table><tr><th>notebook</th><th>status</th><th>duration</th><th>parameters</th></tr>
{"".join(rows)}
</table></body></html>
"""
    target.write_text(page, encoding="utf-8")
    return target


def run(
    selection: Sequence[str] = (),
    parameters: dict[str, Any] | None = None,
    into: Path | None = None,
) -> list[Execution]:
    """Execute the selected notebooks in order into ``into`` (default build/executed/), render each, write the index."""
    into = into or EXECUTED_DIR
    selected = notebooks(selection)
    if parameters:
        import papermill

        declared = set().union(*(papermill.inspect_notebook(str(p)) for p in selected))
        unknown = sorted(set(parameters) - declared)
        if unknown:
            raise NotebookError(
                f"No selected notebook has a parameter {', '.join(unknown)}; they have {', '.join(sorted(declared))}."
            )
    executions = []
    for path in selected:
        print(f"{path.stem}: running", flush=True)
        done = execute(path, into / path.name, _parameters_for(path, parameters))
        render_html(done.output)
        verdict = "passed" if done.ok else f"FAILED at {done.failed_cell}: {done.error}"
        print(f"{path.stem}: {verdict} ({done.seconds:.0f} s)", flush=True)
        executions.append(done)
    index = write_index(executions, into / "index.html")
    print(f"index: {config.shown(index)}")
    return executions


def _parameters_for(path: Path, parameters: dict[str, Any] | None) -> dict[str, Any]:
    """With several notebooks, pass each only the parameters it declares."""
    if not parameters:
        return {}
    import papermill

    declared = papermill.inspect_notebook(str(path))
    return {k: v for k, v in parameters.items() if k in declared}


# ---------------------------------------------------------------------------------------------
# Output policy
# ---------------------------------------------------------------------------------------------


def normalise(nb: dict) -> dict:
    """Strip what differs between runs and machines: papermill/timing metadata; execution counts
    become 1..N in cell order, exactly what a clean Run All produces."""
    nb.setdefault("metadata", {})
    for key in ("papermill", "widgets", "vscode"):
        nb["metadata"].pop(key, None)
    nb["metadata"]["kernelspec"] = dict(KERNELSPEC)
    nb["metadata"]["language_info"] = {"name": "python"}
    count = 0
    for cell in nb["cells"]:
        cell.pop("id", None)
        meta = cell.setdefault("metadata", {})
        for key in ("papermill", "execution", "collapsed", "scrolled", "ExecuteTime"):
            meta.pop(key, None)
        if cell["cell_type"] == "code":
            count += 1
            cell["execution_count"] = count
            for out in cell.get("outputs", []):
                if "execution_count" in out:
                    out["execution_count"] = count
        if "injected-parameters" in meta.get("tags", []):
            raise NotebookError("a papermill 'injected-parameters' cell must not be committed")
    nb["nbformat"], nb["nbformat_minor"] = 4, 4
    return nb


def refresh(selection: Sequence[str] = ()) -> list[Execution]:
    """Re-execute notebooks and write their outputs back into notebooks/ (normalised)."""
    executions = []
    for path in notebooks(selection):
        print(f"{path.stem}: refreshing outputs", flush=True)
        scratch = config.BUILD_DIR / "refresh" / path.name
        done = execute(path, scratch)
        if not done.ok:
            print(
                f"{path.stem}: FAILED at {done.failed_cell}: {done.error}; outputs left as they were"
            )
            for sentence in done.stopped:
                print(sentence)
        else:
            nb = json.loads(scratch.read_text(encoding="utf-8"))
            path.write_text(
                json.dumps(normalise(nb), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            print(f"{path.stem}: outputs refreshed ({done.seconds:.0f} s)")
        executions.append(done)
    return executions


def policy_problems(path: Path) -> list[str]:
    """What a committed notebook does wrong under the output policy (empty list: nothing)."""
    text = path.read_text(encoding="utf-8")
    nb = json.loads(text)
    problems = []
    cells = nb.get("cells", [])
    tags = [t for c in cells for t in c.get("metadata", {}).get("tags", [])]
    if tags.count("parameters") != 1:
        problems.append("needs exactly one cell tagged 'parameters'")
    if not any(
        c["cell_type"] == "code" and re.search(r"^\s*assert\b", "".join(c["source"]), re.M)
        for c in cells
    ):
        problems.append("has no cell that asserts what it claims")
    code_cells = [c for c in cells if c["cell_type"] == "code"]
    if [c.get("execution_count") for c in code_cells] != list(range(1, len(code_cells) + 1)):
        problems.append(
            "execution counts are not 1..N in order (commit a clean Run All: `make outputs`)"
        )
    for i, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        if any(k in cell.get("metadata", {}) for k in ("papermill", "execution")):
            problems.append(f"cell {i} keeps papermill/timing metadata")
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            problems.append(f"cell {i} has an error output committed")
    if "papermill" in nb.get("metadata", {}):
        problems.append("notebook metadata keeps papermill data")
    if nb.get("metadata", {}).get("kernelspec") != KERNELSPEC:
        problems.append(
            f"its kernel is not the workbook's ({KERNEL_NAME}): run `make outputs NB=...` or normalise it"
        )
    if not any(c.get("outputs") for c in cells if c["cell_type"] == "code"):
        problems.append("has no outputs committed (run `make outputs`)")
    for needle in {str(config.ROOT), str(Path.home())} - {"/"}:
        if needle + "/" in text:
            problems.append(f"mentions a machine path ({needle})")
    return problems


def install_kernel() -> Path:
    """Register :data:`KERNELSPEC` for this environment's Python under its own prefix
    (``.venv/share/jupyter/kernels/delta-lake-workbook/``), where JupyterLab and papermill started
    from .venv find it; nothing is written outside the workbook's folder. The kernel runs with
    :data:`config.NO_TELEMETRY` in its environment. Returns the spec's folder."""
    from ipykernel.kernelspec import install

    return Path(
        install(
            kernel_name=KERNEL_NAME,
            display_name=KERNELSPEC["display_name"],
            prefix=sys.prefix,
            env=dict(config.NO_TELEMETRY),
        )
    )


def check(selection: Sequence[str] = ()) -> int:
    """Print the policy problems of each notebook; return how many notebooks have any."""
    bad = 0
    for path in notebooks(selection):
        problems = policy_problems(path)
        for problem in problems:
            print(f"{config.shown(path)}: {problem}")
        bad += bool(problems)
    return bad


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.jupyter.workbook", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("action", choices=["run", "refresh", "check", "kernel"])
    parser.add_argument("notebooks", nargs="*", help="numbers or names (default: all, in order)")
    parser.add_argument("-p", "--parameter", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--into",
        type=Path,
        help="run: the folder for the executed copies (default build/executed/)",
    )
    args = parser.parse_intermixed_args(argv)  # options may follow the action: run --into DIR 04 05
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    try:
        if args.action == "run":
            executions = run(args.notebooks, parse_parameters(args.parameter), args.into)
            failed = [e for e in executions if not e.ok]
            for e in failed:
                print(
                    f"error: {config.shown(e.notebook)} failed at {e.failed_cell}: {e.error}",
                    file=sys.stderr,
                )
            for sentence in dict.fromkeys(s for e in failed for s in e.stopped):
                print(f"error: {sentence}", file=sys.stderr)  # last: what the notebook said
            return 1 if failed else 0
        if args.action == "kernel":
            print(
                f"kernel {KERNELSPEC['display_name']!r} registered in {config.shown(install_kernel())}"
            )
            return 0
        if args.action == "refresh":
            return 1 if any(not e.ok for e in refresh(args.notebooks)) else 0
        return 1 if check(args.notebooks) else 0
    except NotebookError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
