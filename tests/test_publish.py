"""``make publish``: a run of this machine made the committed one, and every page rendered from
``data/`` written again; and no run command writes under ``data/`` or publishes by itself.

Publishing runs in a scratch copy of the workbook (:data:`SCRATCH_PARTS`), each kind's run built
from its committed copy in ``data/``: the real ``data/``, ``docs/`` and ``build/`` are never written.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from helpers.bench import one_run
from helpers.ground import config
from helpers.matrix import mixed, outputs
from helpers.matrix import run as matrix_run
from helpers.producers import run as producers_run
from helpers.publish import __main__ as publish
from helpers.publish import kinds
from helpers.torture import run as torture_run

SCRATCH_PARTS = ("helpers", "data", "docs", "notebooks", "findings")
"""What publishing and the page commands read and write, copied into the scratch workbook."""
PAGES = ("docs/answer.md", "docs/disagreements.md", "docs/answer.html")
PAGE_COMMANDS = ("helpers.page.markdown_page", "helpers.page.html_page")
RUNS = {
    "bench": "build/bench/full",
    "torture": "build/torture/full",
    "producers": "build/producers/full",
    "matrix": "build/matrix/full",
    "matrix-mixed": "build/matrix/mixed-dynamodb",
}
"""Where each kind's command writes its full run (the committed copies name the same folders)."""


def committed_run(kind: str, data: Path, root: Path) -> Path:
    """A run's folder ``root/build/<kind>/<name>/`` as its command leaves it, made from its committed
    copy in ``data``: the full runs' tables gunzipped, the matrices' CSV and meta named back."""
    run = root / RUNS[kind]
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    if kind in ("bench", "torture", "producers"):
        for path in (data / "full_runs" / kind).iterdir():
            if path.suffix == ".gz":
                (run / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
            else:
                shutil.copyfile(path, run / path.name)
        return run
    stem = "conflict_matrix" if kind == "matrix" else "conflict_matrix_mixed_dynamodb"
    shutil.copyfile(data / f"{stem}.csv", run / "matrix.csv")
    shutil.copyfile(data / f"{stem}_meta.json", run / "meta.json")
    (run / outputs.SUMMARY).write_text("every pair came back\n")
    return run


def files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def python(root: Path, *args: str) -> subprocess.CompletedProcess:
    """``python *args`` in the scratch workbook ``root``: its own ``helpers``, so ``config.ROOT`` is ``root``."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("workbook")
    for part in SCRATCH_PARTS:
        shutil.copytree(
            config.ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


def stale(root: Path) -> None:
    for page in PAGES:
        (root / page).write_text("stale\n")


def test_publishing_each_kind_of_run_writes_its_data_and_every_page_fresh(scratch):
    data = files(scratch / "data")
    for kind in RUNS:
        committed_run(kind, scratch / "data", scratch)
    stale(scratch)
    published = python(
        scratch, "-m", "helpers.publish", *RUNS.values()
    )  # each kind from its folder
    assert published.returncode == 0, published.stderr
    for kind, run in RUNS.items():
        assert f"published the {kind} run {run} to " in published.stdout
    assert files(scratch / "data") == data  # the same runs published again: no change to commit
    assert [page for page in PAGES if (scratch / page).read_text() == "stale\n"] == []

    run = committed_run("producers", scratch / "data", scratch)  # a new run: new data, fresh pages
    meta = json.loads((run / "meta.json").read_text())
    (run / "meta.json").write_text(json.dumps({**meta, "date": "2027-01-04T09:00:00+00:00"}))
    stale(scratch)
    assert python(scratch, "-m", "helpers.publish", RUNS["producers"]).returncode == 0
    published = json.loads((scratch / "data/full_runs/producers/meta.json").read_text())
    assert published["date"] == "2027-01-04T09:00:00+00:00"
    for command in PAGE_COMMANDS:
        checked = python(scratch, "-m", command, "--check")
        assert checked.returncode == 0, checked.stderr
    for run in RUNS.values():
        shutil.rmtree(scratch / run)


def test_a_bad_run_is_refused_with_what_to_do(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        publish.main(["--kind", "bnech", str(tmp_path)])
    assert exited.value.code == 2 and "invalid choice: 'bnech'" in capsys.readouterr().err
    assert publish.main([str(config.BUILD_DIR / "bench" / "no-such-run")]) == 2
    assert (
        "publish: no folder build/bench/no-such-run: `make bench` makes a bench run under build/ "
        "first, then publish its folder" in capsys.readouterr().err
    )
    assert publish.main([str(tmp_path)]) == 2
    assert "is not a run's folder of a known kind, build/<kind>/<name>: name its kind" in (
        capsys.readouterr().err
    )
    assert publish.main(["--kind", "bench", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "two runs of one kind" in capsys.readouterr().err


def test_a_run_whose_checks_fail_is_refused_and_nothing_changes(scratch):
    before = {part: files(scratch / part) for part in ("data", "docs")}
    run = committed_run("bench", scratch / "data", scratch)
    runs = pd.read_csv(run / "runs.csv")
    runs.loc[0, "lost"] = 1  # an acknowledged commit the run lost
    runs.to_csv(run / "runs.csv", index=False)
    refused = python(scratch, "-m", "helpers.publish", RUNS["bench"])
    assert refused.returncode == 2
    assert "build/bench/full is not published, nothing in data/ changed" in refused.stderr
    assert (
        "acknowledged commits lost (from the commit files): expected 0, found 1" in refused.stderr
    )
    assert "Publish a run whose checks pass (`make bench` makes one)." in refused.stderr
    shutil.rmtree(run)
    assert {part: files(scratch / part) for part in ("data", "docs")} == before


def refused(kind: str, folder: Path) -> str:
    """Why ``make publish`` refuses ``folder`` as a run of ``kind`` (checked here; nothing is copied)."""
    with pytest.raises(kinds.PublishError) as error:
        kinds.check(kinds.KINDS[kind], folder)
    return str(error.value)


def test_each_kind_is_held_to_its_own_command_s_checks(tmp_path):
    run = {kind: committed_run(kind, config.DATA_DIR, tmp_path) for kind in RUNS}
    for kind, folder in run.items():
        kinds.check(kinds.KINDS[kind], folder)  # the committed runs pass

    protocols = pd.read_csv(run["torture"] / "protocols.csv")
    protocols.loc[protocols.safe, "lost"] = 1
    protocols.to_csv(run["torture"] / "protocols.csv", index=False)
    assert "s3-conditional-put: acknowledged operations lost: expected 0, found 1" in refused(
        "torture", run["torture"]
    )

    producers = pd.read_csv(run["producers"] / "runs.csv")
    producers.loc[0, "exactly_once"] = False
    producers.to_csv(run["producers"] / "runs.csv", index=False)
    assert "runs: a run lost or duplicated rows" in refused("producers", run["producers"])
    (run["producers"] / "meta.json").unlink()
    assert "no meta.json in " in refused("producers", run["producers"])

    rows = (run["matrix"] / "matrix.csv").read_text().splitlines()
    (run["matrix"] / "matrix.csv").write_text("\n".join(rows[:-1]) + "\n")  # one cell left out
    assert "the run leaves out 1 cell(s) of the committed matrix" in refused(
        "matrix", run["matrix"]
    )
    (run["matrix"] / outputs.SUMMARY).unlink()  # what a run stopped by an engine's error leaves
    assert "no summary.txt in " in refused("matrix", run["matrix"])

    meta = json.loads((run["matrix-mixed"] / "meta.json").read_text())
    other = {**meta, "engines": {"spark-dynamodb-then-deltalake-1.6.0": "", "x": ""}}
    (run["matrix-mixed"] / "meta.json").write_text(json.dumps(other))
    assert "only deltalake 1.5.1's run is committed" in refused("matrix-mixed", run["matrix-mixed"])
    one_order = {**meta, "pairs": {**meta["pairs"], "deltalake-first": 3}}
    (run["matrix-mixed"] / "meta.json").write_text(json.dumps(one_order))
    assert f"deltalake-first raced 3 of {meta['pairs_per_order']} pairs" in refused(
        "matrix-mixed", run["matrix-mixed"]
    )


def test_a_matrix_run_of_new_pairs_only_is_added_to_the_committed_one(tmp_path, monkeypatch):
    for name in ("DATA_CSV", "DATA_META"):  # the committed files, copied: these are written
        copy = tmp_path / getattr(outputs, name).name
        shutil.copyfile(getattr(outputs, name), copy)
        monkeypatch.setattr(outputs, name, copy)
    before = outputs.DATA_CSV.read_text()
    committed = pd.read_csv(outputs.DATA_CSV, dtype=str, keep_default_na=False)
    run = tmp_path / "build" / "matrix" / "new"
    run.mkdir(parents=True)
    new = committed[committed.engine == "deltalake-1.6.6"].assign(engine="deltalake-9.9.9")
    new.to_csv(run / "matrix.csv", index=False)
    meta = {"engines": {"deltalake-9.9.9": "9.9.9"}, "run_on": "2027-01-04", "wall_seconds": 1.0}
    (run / "meta.json").write_text(json.dumps(meta))
    (run / outputs.SUMMARY).write_text("every pair came back\n")
    kinds.check(kinds.KINDS["matrix"], run)
    assert kinds.KINDS["matrix"].copy(run) == [outputs.DATA_CSV, outputs.DATA_META]
    after = outputs.DATA_CSV.read_text()
    assert after.startswith(before)  # every committed row kept, byte for byte
    assert len(after.splitlines()) == len(before.splitlines()) + len(new)
    merged = json.loads(outputs.DATA_META.read_text())
    assert merged["engines"]["deltalake-9.9.9"] == "9.9.9"
    assert merged["merged"][-1] == {"run_on": "2027-01-04", "wall_seconds": 1.0, "pairs": len(new)}
    # the same engine again, whole: its rows replace its own, every other row stays as it was
    kinds.check(kinds.KINDS["matrix"], run)
    kinds.KINDS["matrix"].copy(run)
    assert outputs.DATA_CSV.read_text() == after
    # again, but only some of its cells: refused, nothing written
    new.iloc[:-1].to_csv(run / "matrix.csv", index=False)
    assert f"races {len(new) - 1} of them again" in refused("matrix", run)
    assert outputs.DATA_CSV.read_text() == after


# --- no run publishes: the Makefile's run targets and the run commands, read -----------------

RUN_COMMAND = re.compile(r"-m helpers\.(bench|torture|producers|matrix)\b")
PUBLISHING = re.compile(r"data/|publish|helpers\.page\.")
RULE = re.compile(r"^([a-z][\w.-]*):(?!=)([^#]*)")


def recipes(makefile: str) -> dict[str, tuple[str, list[str]]]:
    """Each rule's target -> (its prerequisites, its recipe's lines)."""
    found: dict[str, tuple[str, list[str]]] = {}
    target = None
    for line in makefile.splitlines():
        if line.startswith("\t") and target:
            found[target][1].append(line.strip())
        elif rule := RULE.match(line):
            target = rule.group(1)
            found[target] = (rule.group(2), [])
        elif line.strip() and not line.startswith("#"):
            target = None  # a variable or another kind of rule
    return found


def run_targets_that_publish(makefile: str) -> tuple[list[str], list[str]]:
    """The targets that run a measurement (their recipe starts a run command), and each of their
    lines, or prerequisites, that writes under data/, publishes or writes a page."""
    runs, breaks = [], []
    for target, (prerequisites, lines) in recipes(makefile).items():
        if not any(RUN_COMMAND.search(line) for line in lines):
            continue
        runs.append(target)
        if "publish" in prerequisites.split():
            breaks.append(f"make {target} depends on publish")
        breaks += [f"make {target}: {line}" for line in lines if PUBLISHING.search(line)]
    return runs, breaks


def test_no_run_target_writes_under_data_or_publishes():
    makefile = (config.ROOT / "Makefile").read_text()
    runs, breaks = run_targets_that_publish(makefile)
    assert breaks == []
    assert {"bench", "bench-servers", "matrix", "matrix-mixed", "producers", "torture"} <= set(runs)
    (publish,) = recipes(makefile)["publish"][1][-1:]
    assert "-m helpers.publish" in publish


def test_a_run_target_that_publishes_is_found():
    crafted = (
        "matrix: install ## the conflict matrix\n"
        "\t$(PY) -m helpers.matrix --name full\n"
        "\tcp build/matrix/full/matrix.csv data/conflict_matrix.csv\n"
        "\t$(PY) -m helpers.page.markdown_page\n"
        "X ?= 1\n"
        "producers: versitygw ## results in build/producers/full/, published to data/\n"
        "\t$(PY) -m helpers.producers --name full --publish\n"
        "bench: install publish ## the benchmark\n"
        "\t$(PY) -m helpers.bench --name full\n"
        "publish: ## the one command that may\n"
        "\t$(PY) -m helpers.publish $(RUN)\n"
    )
    assert run_targets_that_publish(crafted) == (
        ["matrix", "producers", "bench"],
        [
            "make matrix: cp build/matrix/full/matrix.csv data/conflict_matrix.csv",
            "make matrix: $(PY) -m helpers.page.markdown_page",
            "make producers: $(PY) -m helpers.producers --name full --publish",
            "make bench depends on publish",
        ],
    )


RUN_MODULES = (
    "helpers/bench/__main__.py",
    "helpers/torture/__main__.py",
    "helpers/producers/__main__.py",
    "helpers/matrix/__main__.py",
    "helpers/matrix/mixed.py",
)
"""The run commands ``make bench``, ``torture``, ``producers``, ``matrix`` and ``matrix-mixed`` start."""
PUBLISHERS = {"publish", "problems"}
"""A run module's functions that ``make publish`` calls (and only it)."""


PUBLISHING_CALLS = {"publish", "merge"}
"""What writes a run into ``data/``: the ``publish`` of :mod:`helpers.runs.full_runs`,
:mod:`helpers.producers.results`, :mod:`helpers.matrix.outputs` and ``mixed``, and ``tidy.merge``."""


def publishing_in(source: str) -> list[str]:
    """Calls of a function that writes a run into ``data/``, and options named for one
    (``--publish``, ``--merge``), in a module's code outside the functions ``make publish`` calls."""
    found = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef) and node.name in PUBLISHERS:
            return
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in PUBLISHING_CALLS:
                found.append(f"line {node.lineno}: calls {name}")
        if isinstance(node, ast.Constant) and node.value in ("--publish", "--merge"):
            found.append(f"line {node.lineno}: a {node.value} option")
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def test_the_run_commands_write_under_build_and_never_publish():
    for where in (
        one_run.RESULTS_DIR,
        torture_run.RESULTS_DIR,
        producers_run.RESULTS_DIR,
        matrix_run.DEFAULT_OUT,
        mixed.OUT,
    ):
        assert where.is_relative_to(config.BUILD_DIR), where
    for module in RUN_MODULES:
        assert publishing_in((config.ROOT / module).read_text()) == [], module


def test_a_run_command_that_publishes_is_found():
    crafted = (
        "def publish(folder):\n"
        "    return outputs.replace(folder, DATA_CSV, DATA_META)\n"
        "def main(argv):\n"
        '    parser.add_argument("--publish", action="store_true")\n'
        '    parser.add_argument("--merge", nargs="+")\n'
        "    if args.publish:\n"
        "        results.publish(found.folder)\n"
        "    if args.merge:\n"
        "        tidy.merge(args.merge, outputs.DATA_CSV, outputs.DATA_META)\n"
    )
    assert publishing_in(crafted) == [
        "line 4: a --publish option",
        "line 5: a --merge option",
        "line 7: calls publish",
        "line 9: calls merge",
    ]
