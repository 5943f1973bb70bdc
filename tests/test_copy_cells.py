"""The call to copy: each notebook that races writers has, before its race, a code cell that writes out
the call one writer makes (``def one_writer(...)``, defined and never called), and it is the call the
writer process makes.

For each notebook the race's arguments are named here (:data:`RACES`), and the cell is compared with
what the writer runs for them (:func:`helpers.runs.runner.writer_code`, which ``tests/test_writers.py``
holds to the spec a run uses): the same functions, the same keyword arguments with the same constant
values, the same ``storage_options`` keys, or for Spark the conf keys that choose the jars, the
catalog, the store and the log store, and the same ``df.write`` chain. The cell imports nothing from
``helpers``, names no secret, holds no line of the experiment (``update_incremental = lambda``), and
calls nothing at the top level but imports and ``def``; notebook 11's benchmark worker makes the same
calls too. Each check is shown failing on a crafted cell below.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
from dataclasses import dataclass, field

import pytest

from helpers.bench import worker as bench_worker
from helpers.ground import config, eras
from helpers.page import retry_advice
from helpers.runs import runner
from helpers.stores import tables

S3_URI, AZ_URI = "s3://bucket/t", "az://container/t"
SPARK_CONF_KEYS = re.compile(
    r"spark\.jars\.packages$|spark\.sql\.extensions$|spark\.sql\.catalog\.|spark\.hadoop\.fs\.s3a\."
    r"|spark\.delta\.|spark\.io\.delta\."
)
"""Spark conf keys a copied job needs as the writer has them (the rest only size the session here)."""
CALLS = ("DeltaTable", "write_deltalake", "CommitProperties", "update_incremental")


@dataclass(frozen=True)
class Race:
    """The race a notebook's copy cell stands for: :func:`helpers.runs.runner.writer_code`'s arguments, and
    text the race's own cell must hold (so that a race changed in the notebook fails here too)."""

    notebook: str
    options: str  # an expression of helpers.stores.tables
    race_text: str
    arguments: dict = field(default_factory=dict)


RACES = (
    Race(
        "03_concurrent_writers_azure.ipynb",
        "tables.azure_storage_options()",
        "runner.run_writers(table_uri, options, n=n_writers, era=eras.CURRENT, max_commit_retries=0)",
        {"era": eras.CURRENT, "max_commit_retries": 0},
    ),
    Race(
        "04_s3_needs_a_lock.ipynb",
        "tables.s3_storage_options(unsafe_rename=True)",
        "runner.run_writers(table_uri, tables.s3_storage_options(unsafe_rename=True), n=1, era=era,",
        {"era": eras.SEEDS},
    ),
    Race(
        "05_unsafe_rename_data_loss.ipynb",
        "tables.s3_storage_options(unsafe_rename=True)",
        "runner.run_writers(table_uri, gate.route(unsafe), n=n_writers, era=era)",
        {"era": eras.SEEDS},
    ),
    Race(
        "06_dynamodb_lock.ipynb",
        'tables.s3_storage_options(locking_provider="dynamodb")',
        "runner.run_writers(table_uri, locked, n=n_writers, era=era, max_commit_retries=0)",
        {"era": eras.SEEDS, "max_commit_retries": 0},
    ),
    Race(
        "07_transaction_retries.ipynb",
        'tables.s3_storage_options(locking_provider="dynamodb")',
        "n=n_writers, era=era, max_commit_retries=None",
        # the copy cell: the race's call with the retries the answer page advises for the lock
        {
            "era": eras.SEEDS,
            "max_commit_retries": retry_advice.advised_retries("s3-dynamodb-lock"),
        },
    ),
    Race(
        "08_s3_conditional_writes_today.ipynb",
        "tables.s3_storage_options()",
        "runner.run_writers(table_uri, options, n=n_writers, era=eras.CURRENT, max_commit_retries=0)",
        {"era": eras.CURRENT, "max_commit_retries": 0},
    ),
    Race(
        "09_spark_multi_cluster_s3.ipynb",
        "tables.s3_storage_options()",
        "runner.run_writers(several_uri, gate.route(options), n=n_spark_writers",
        {"engine": "spark"},
    ),
    Race(
        "11_commit_throughput.ipynb",
        "tables.s3_storage_options()",
        "small = bench.benchmark(",
        {
            "era": eras.CURRENT,
            "hold_snapshot": False,
            "max_commit_retries": retry_advice.advised_retries("s3-conditional-put"),
        },
    ),
)


def _notebook(name: str) -> dict:
    return json.loads((config.NOTEBOOKS_DIR / name).read_text(encoding="utf-8"))


def copy_cell(notebook: dict) -> tuple[int, str]:
    """The index and source of the notebook's one code cell that defines ``one_writer``."""
    found = [
        (i, "".join(c["source"]))
        for i, c in enumerate(notebook["cells"])
        if c["cell_type"] == "code" and re.search(r"^def one_writer\(", "".join(c["source"]), re.M)
    ]
    assert len(found) == 1, f"{len(found)} cells define one_writer"
    return found[0]


def _constant(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return "<computed>"


def calls_of(source: str) -> dict:
    """What a piece of code calls: for each of :data:`CALLS`, its keyword names and constant values
    (``custom_metadata``: its keys); the keys of the dicts assigned to ``storage_options`` and ``conf``
    (with the values of the conf keys :data:`SPARK_CONF_KEYS` picks that are constants); and the
    ``df.write`` chain (method, constant arguments)."""
    tree = ast.parse(source)
    found: dict = {"calls": {}, "storage_options": None, "conf": None, "write": None}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and isinstance(node.targets[0], ast.Name)
        ):
            name = node.targets[0].id
            if name in ("storage_options", "conf"):
                pairs = {
                    _constant(k): _constant(v) for k, v in zip(node.value.keys, node.value.values)
                }
                found[name] = (
                    set(pairs)
                    if name == "storage_options"
                    else {k: v for k, v in pairs.items() if SPARK_CONF_KEYS.match(k)}
                )
        if not isinstance(node, ast.Call):
            continue
        func = (
            node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        )
        if func in CALLS:
            keywords = {}
            for kw in node.keywords:
                value = kw.value
                if kw.arg == "custom_metadata" and isinstance(value, ast.Dict):
                    keywords[kw.arg] = sorted(_constant(k) for k in value.keys)
                elif kw.arg == "commit_properties":
                    keywords[kw.arg] = "<CommitProperties>"
                else:
                    keywords[kw.arg] = (
                        _constant(value) if kw.arg not in ("storage_options",) else "<options>"
                    )
            found["calls"][func] = (len(node.args), keywords)
        if func == "save":
            chain, call = [], node
            while isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
                chain.append(
                    (
                        call.func.attr,
                        [
                            a.value if isinstance(a, ast.Constant) else "<computed>"
                            for a in call.args
                        ],
                    )
                )
                call = call.func.value
                call = (
                    call.value if isinstance(call, ast.Attribute) and call.attr == "write" else call
                )
            found["write"] = list(reversed(chain))
    return found


def writer_runs(race: Race) -> str:
    """What the race's writer ``w1`` runs, as :func:`helpers.runs.runner.writer_code` renders it."""
    uri = (
        S3_URI.replace("s3://", "s3a://")
        if race.arguments.get("engine") == "spark"
        else AZ_URI
        if "azure" in race.options
        else S3_URI
    )
    options = eval(race.options, {"tables": tables})  # noqa: S307  (an expression written above)
    return runner.writer_code(uri, options, batch=2, **race.arguments)


def assert_same_call(cell: str, shown: str) -> None:
    """The cell makes the call the writer makes (see the module docstring), and nothing else."""
    tree = ast.parse(cell)
    for node in tree.body:
        assert isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef)), (
            f"line {node.lineno}: the cell must only import and define one_writer, so that running it writes nothing"
        )
        if isinstance(node, ast.ImportFrom):
            assert not (node.module or "").startswith("helpers"), (
                f"line {node.lineno}: imports from helpers"
            )
    assert "lambda" not in cell, (
        "a line of the experiment (update_incremental = lambda: None) is in the cell"
    )
    assert (
        config.MASKED not in cell
        and config.EMULATOR_AWS_SECRET_ACCESS_KEY not in cell
        and config.AZURITE_ACCOUNT_KEY not in cell
    ), "a secret is written out: read it from the environment"
    mine, theirs = calls_of(cell), calls_of(shown)
    assert mine["calls"] == theirs["calls"], (
        f"the calls differ: the cell {mine['calls']}, the writer {theirs['calls']}"
    )
    assert mine["storage_options"] == theirs["storage_options"], (
        f"storage_options keys differ: the cell {mine['storage_options']}, the writer {theirs['storage_options']}"
    )
    if theirs["conf"] is not None:
        cell_conf, writer_conf = mine["conf"] or {}, theirs["conf"]
        assert set(cell_conf) == set(writer_conf), (
            f"Spark conf keys differ: {set(cell_conf) ^ set(writer_conf)}"
        )
        differing = {
            k
            for k, v in cell_conf.items()
            if v != "<computed>" and writer_conf[k] != "<masked>" and v != writer_conf[k]
        }
        assert not differing, f"Spark conf values differ for {sorted(differing)}"
        same = (
            mine["write"]
            and [m for m, _ in mine["write"]] == [m for m, _ in theirs["write"]]
            and all(
                a == b
                for (_, mine_args), (_, their_args) in zip(mine["write"], theirs["write"])
                for a, b in zip(mine_args, their_args)
                if "<computed>" not in (a, b) and not str(b).startswith(("s3", "{"))
            )
        )
        assert same, f"the df.write chain differs: {mine['write']} / {theirs['write']}"


def _squash(code: str) -> str:
    """Code without its layout: the formatter may spread a call over lines and add a comma."""
    return re.sub(r"\s+", "", code).replace(",)", ")")


@pytest.mark.parametrize("race", RACES, ids=lambda race: race.notebook[:2])
def test_the_copy_cell_is_the_call_the_writer_makes(race):
    notebook = _notebook(race.notebook)
    index, cell = copy_cell(notebook)
    sources = ["".join(c["source"]) for c in notebook["cells"]]
    race_at = next(
        (i for i, s in enumerate(sources) if _squash(race.race_text) in _squash(s)), None
    )
    assert race_at is not None, (
        f"{race.notebook}: no cell runs the race {race.race_text!r}: update RACES"
    )
    assert index < race_at, (
        f"{race.notebook}: the copy cell ({index}) comes after the race ({race_at})"
    )
    assert not any(re.search(r"\bone_writer\(", s) for i, s in enumerate(sources) if i != index), (
        "one_writer is called"
    )
    assert_same_call(cell, writer_runs(race))


BENCH_LEAVES_OUT = {"app_transactions"}
"""What notebook 11's cell adds to the benchmark worker's call: the idempotent-write id (the benchmark
never runs an append again, and measures the commit protocol, not a job's rerun)."""


def test_the_benchmark_worker_makes_the_same_calls_as_notebook_11s_cell():
    _, cell = copy_cell(_notebook("11_commit_throughput.ipynb"))
    worker = textwrap.dedent(inspect.getsource(bench_worker.DeltalakeAppender.append))
    mine, theirs = calls_of(cell)["calls"], calls_of(worker)["calls"]
    assert {k: set(v[1]) - BENCH_LEAVES_OUT for k, v in mine.items() if k != "DeltaTable"} == {
        k: set(v[1]) for k, v in theirs.items()
    }


def _cell(name: str) -> str:
    return copy_cell(_notebook(name))[1]


@pytest.mark.parametrize(
    "break_, message",
    [
        (lambda c: c.replace("max_commit_retries=0", "max_commit_retries=3"), "the calls differ"),
        (lambda c: c.replace('mode="append", ', 'mode="overwrite", '), "the calls differ"),
        (lambda c: re.sub(r'\n\s*"allow_http": .*', "", c), "storage_options keys differ"),
        (
            lambda c: c + '\none_writer("az://x/t", None)\n',
            "must only import and define one_writer",
        ),
        (
            lambda c: c.replace(
                "import pyarrow as pa", "import pyarrow as pa\nfrom helpers.delta import landing"
            ),
            "imports from helpers",
        ),
        (
            lambda c: c.replace(
                'os.environ["AZURE_STORAGE_ACCOUNT_KEY"]', json.dumps(config.AZURITE_ACCOUNT_KEY)
            ),
            "a secret",
        ),
    ],
)
def test_a_copy_cell_that_drifts_is_caught(break_, message):
    race = RACES[0]
    with pytest.raises(AssertionError, match=message):
        assert_same_call(break_(_cell(race.notebook)), writer_runs(race))


def test_a_spark_copy_cell_that_drifts_is_caught():
    race = next(r for r in RACES if r.arguments.get("engine") == "spark")
    cell = _cell(race.notebook)
    with pytest.raises(AssertionError, match="Spark conf keys differ"):
        assert_same_call(re.sub(r'\n\s*"spark.sql.extensions": .*', "", cell), writer_runs(race))
    with pytest.raises(AssertionError, match=r"values differ for \['spark.jars.packages'\]"):
        assert_same_call(
            cell.replace("delta-spark_4.2_2.13:4.4.0", "delta-spark_4.2_2.13:4.3.0"),
            writer_runs(race),
        )
    with pytest.raises(AssertionError, match="the df.write chain differs"):
        assert_same_call(cell.replace('.mode("append")', '.mode("overwrite")'), writer_runs(race))


def test_a_line_of_the_experiment_in_a_copy_cell_is_caught():
    race = next(r for r in RACES if r.notebook.startswith("06"))
    cell = _cell(race.notebook).replace(
        "    properties = CommitProperties(",
        "    table.update_incremental = lambda: None\n    properties = CommitProperties(",
    )
    with pytest.raises(AssertionError, match="a line of the experiment"):
        assert_same_call(cell, writer_runs(race))
