"""Only safe settings are offered to copy, and every call offered to copy runs.

A code cell offered "to copy into a job of your own" names, in its metadata (``workbook_copy``: the
answer page's row keys, each with the races the cell is for), the settings it stands for; the test
holds each to the answer's data: every race it is for must be safe in that row (a rerun append:
safe with the row's remedy), and its source holds none of the settings the workbook shows losing
data or failing jobs. Every deltalake append offered to copy carries an idempotent-write id (asked for
before it writes) and at least the ``max_commit_retries`` the answer page advises for its store, and
no cell sets an option that the releases it names ("with deltalake X to Y") ignore. A race's own call
that is not safe says so in its first line ("unsafe: do not copy") and names where the call to copy
stands. Each check is shown failing on a crafted cell, and the retry advice in the notebooks' prose is
held to the figures of notebook 11's run.

Then each copy cell runs once against the emulators, given their environment, importing nothing
from the workbook, and what it wrote is read back from storage: the rows, the lock table's items,
the idempotent-write id that stopped a second append.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import uuid

import pytest

from helpers.ground import config, eras
from helpers.page import boundaries as b
from helpers.page import decision, retry_advice, table_rows
from helpers.stores import tables

COPY_OFFER = re.compile(
    r"copy(?:[\s#]+(?:it|this))?[\s#]+into[\s#]+(?:a|your)[\s#]+(?:job|own)", re.I
)
"""The offer, however a comment wraps it ("to copy\n# into a job of your own")."""
UNSAFE_SETTINGS = {
    "the unsafe rename": re.compile(r"ALLOW_UNSAFE_RENAME", re.I),
    "no retries": re.compile(r"max_commit_retries\s*=\s*[01]\b"),
}
SEVERAL_CLUSTERS = '"spark.delta.logStore.s3a.impl": "io.delta.storage.S3DynamoDBLogStore"'
"""What a Spark cell for several clusters must set: without it, Delta's default S3 log store loses commits."""
UNSAFE_MARK = "(unsafe: do not copy)"
RETRIES_OF_ROW = {
    "rs-put-today": "s3-conditional-put",
    "rs-azure": "azure",
    "rs-lock-seeds": "s3-dynamodb-lock",
    "rs-lock-interop": "s3-dynamodb-lock",
}
"""The benchmark protocol (notebook 11) whose figures size the retries of an answer row's deltalake jobs."""
ONE_COMMITTER = {
    "14_many_producers.ipynb": "one committer commits every batch of its table, and asks the table before "
    "it tries a batch again: no other job's append races it"
}
"""Copy cells whose appends no other job's append races, so the retry figure for jobs at once does not apply."""
IGNORED_FROM = {
    "AWS_S3_LOCKING_PROVIDER": b.DYNAMODB_LOG_STORE_REMOVED,
    "DELTA_DYNAMO_TABLE_NAME": b.DYNAMODB_LOG_STORE_REMOVED,
}
"""Options deltalake ignores from a release on: a cell that sets one must name releases before it."""
RELEASES = re.compile(r"\bwith deltalake (\d+\.\d+\.\d+)(?: to (\d+\.\d+\.\d+))?")
"""The releases a copy cell is for, as its opening comment names them."""
IDEMPOTENT = re.compile(r"app_transactions\s*=\s*\[\s*Transaction\(")
RETRIES = re.compile(r"max_commit_retries\s*=\s*(\d+)")


def _notebooks() -> dict[str, dict]:
    return {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in sorted(config.NOTEBOOKS_DIR.glob("*.ipynb"))
    }


def copy_cells(notebooks: dict[str, dict]) -> list[tuple[str, int, dict, str]]:
    """(notebook, index, its ``workbook_copy`` metadata or {}, source) of every cell offered to copy."""
    found = []
    for name, notebook in notebooks.items():
        for index, cell in enumerate(notebook["cells"]):
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and (
                COPY_OFFER.search(source) or "workbook_copy" in cell["metadata"]
            ):
                found.append((name, index, cell["metadata"].get("workbook_copy", {}), source))
    return found


def copy_problems(notebooks: dict[str, dict]) -> list[str]:
    grid = decision.grid_of(results := decision.Results.load())
    rows = {row.key: row for row in table_rows.ROWS}
    problems = []
    for name, index, settings, source in copy_cells(notebooks):
        where = f"{name} cell {index}"
        if not settings:
            problems.append(
                f"{where}: offered to copy, but names no setting of the answer (metadata workbook_copy)"
            )
        for row_key, races in settings.items():
            if row_key not in rows:
                problems.append(f"{where}: no answer row {row_key!r}")
                continue
            for race in races:
                if race == "retry":
                    verdict, _ = decision.remedy(rows[row_key], results)
                    ok = verdict in (
                        decision.SAFE,
                        decision.REFUSED,
                    )  # REFUSED: Delta Spark skips a fresh rerun
                else:
                    verdict = grid[row_key, race].verdict
                    ok = verdict == decision.SAFE
                if not ok:
                    problems.append(
                        f"{where}: offered to copy for {race} in {row_key}, whose verdict is {verdict!r}"
                    )
        for what, pattern in UNSAFE_SETTINGS.items():
            if pattern.search(source):
                problems.append(f"{where}: offered to copy, and holds {what}")
        if (
            "spark-dynamodb" in settings
            and "SparkSession" in source
            and SEVERAL_CLUSTERS not in source
        ):
            problems.append(
                f"{where}: offered to copy for several Spark clusters without Delta's DynamoDB log store"
            )
        if UNSAFE_MARK in source:
            problems.append(f"{where}: both offered to copy and marked unsafe")
        problems += deltalake_problems(where, name, settings, source)
    for name, notebook in notebooks.items():
        for index, cell in enumerate(notebook["cells"]):
            source = "".join(cell["source"])
            if (
                cell["cell_type"] != "code"
                or not re.search(r"^def one_writer\(", source, re.M)
                or COPY_OFFER.search(source)
            ):
                continue
            first = source.split("\n", 2)
            if UNSAFE_MARK not in first[0] or "The call to copy" not in "\n".join(first[:2]):
                problems.append(
                    f"{name} cell {index}: a race's call not offered to copy must say {UNSAFE_MARK!r} in its "
                    "first line and where the call to copy is in its second"
                )
    return problems


def _release(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def deltalake_problems(where: str, name: str, settings: dict, source: str) -> list[str]:
    """A deltalake append offered to copy: its idempotent-write id, its retries, the options its
    releases honour."""
    problems = []
    prose = " ".join(re.sub(r"^\s*#", "", line) for line in source.splitlines())
    for option, boundary in IGNORED_FROM.items():
        if f'"{option}"' not in source:
            continue
        named = RELEASES.search(" ".join(prose.split()))
        if not named:
            problems.append(
                f'{where}: sets {option} and names no release ("with deltalake X to Y")'
            )
        elif _release(named.group(2) or named.group(1)) >= _release(boundary.version):
            problems.append(
                f"{where}: sets {option}, which deltalake {named.group(2) or named.group(1)} ignores "
                f"({boundary.version} and later)"
            )
    if not (re.search(r"^from deltalake import", source, re.M) and 'mode="append"' in source):
        return problems
    if not (IDEMPOTENT.search(source) and "transaction_version" in source):
        problems.append(
            f"{where}: a deltalake append offered to copy without an idempotent-write id "
            "(CommitProperties(app_transactions=[Transaction(...)]), asked for with transaction_version first)"
        )
    stores = {RETRIES_OF_ROW[row] for row in settings if row in RETRIES_OF_ROW}
    if stores and name not in ONE_COMMITTER:
        advised = max(retry_advice.advised_retries(store) for store in stores)
        set_to = [int(value) for value in RETRIES.findall(source)]
        if not set_to or min(set_to) < advised:
            problems.append(
                f"{where}: max_commit_retries {set_to or 'not set'}, below the answer page's {advised} "
                f"for {', '.join(sorted(stores))}"
            )
    return problems


def test_only_safe_settings_are_offered_to_copy():
    assert copy_problems(_notebooks()) == []


def test_every_setting_a_learner_needs_has_a_copy_cell():
    offered = {row for _, _, settings, _ in copy_cells(_notebooks()) for row in settings}
    assert {"rs-put-today", "rs-azure", "rs-lock-seeds", "spark-dynamodb"} <= offered


def _crafted(change, notebook: str = "08") -> dict[str, dict]:
    notebooks = _notebooks()
    name, index, _, _ = next(c for c in copy_cells(notebooks) if c[0].startswith(notebook))
    change(notebooks[name]["cells"][index])
    return notebooks


def _source_replace(old: str, new: str):
    def change(cell):
        source = "".join(cell["source"])
        assert old in source
        cell["source"] = [source.replace(old, new, 1)]

    return change


@pytest.mark.parametrize(
    "change, message",
    [
        (
            _source_replace(
                '"AWS_REGION": os.environ["AWS_REGION"],',
                '"AWS_REGION": os.environ["AWS_REGION"], "AWS_S3_ALLOW_UNSAFE_RENAME": "true",',
            ),
            "holds the unsafe rename",
        ),
        (
            _source_replace("max_commit_retries=120,", "max_commit_retries=0,"),
            "holds no retries",
        ),
        (
            _source_replace("max_commit_retries=120,", "max_commit_retries=15,"),
            r"max_commit_retries \[15\], below the answer page's 120 for s3-conditional-put",
        ),
        (
            _source_replace(", app_transactions=[Transaction(app_id=app_id, version=version)]", ""),
            "without an idempotent-write id",
        ),
        (
            lambda cell: cell["metadata"]["workbook_copy"].update(
                {"rs-put-today": ["append", "optimize"]}
            ),
            r"for optimize in rs-put-today, whose verdict is 'duplicates data'",
        ),
        (lambda cell: cell["metadata"].pop("workbook_copy"), "names no setting of the answer"),
    ],
)
def test_an_unsafe_copy_cell_is_caught(change, message):
    found = [p for p in copy_problems(_crafted(change)) if re.search(message, p)]
    assert found, copy_problems(_crafted(change))


@pytest.mark.parametrize(
    "old, new, message",
    [
        (
            "with deltalake 0.22.3,",
            "with deltalake 0.22.3 to 1.6.6,",
            "which deltalake 1.6.6 ignores",
        ),
        ("with deltalake 0.22.3,", "with today's deltalake,", "names no release"),
    ],
)
def test_a_copy_cell_setting_an_option_its_release_ignores_is_caught(old, new, message):
    notebooks = _crafted(_source_replace(old, new), notebook="07")
    assert [p for p in copy_problems(notebooks) if message in p], copy_problems(notebooks)


# --- the retry advice in prose is notebook 11's run --------------------------------------------


RETRY_PROSE = {
    "notebooks/solutions/07.md": ("s3-dynamodb-lock",),
    "notebooks/solutions/11.md": ("s3-conditional-put", "s3-dynamodb-lock", "azure"),
    "notebooks/11_commit_throughput.ipynb": ("s3-conditional-put", "s3-dynamodb-lock", "azure"),
}
"""Where the workbook advises retries in prose, and for which of the benchmark's protocols."""


def _prose(path: str) -> str:
    text = (config.ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return " ".join(text.split())


def retry_prose_problems(texts: dict[str, str]) -> list[str]:
    """Each text must quote, for each of its protocols, what notebook 11's run measured
    (:func:`helpers.page.retry_advice.retry_figures`), the bound for its most writers with its
    arithmetic, and the figure the page advises."""
    problems = []
    for path, protocols in RETRY_PROSE.items():
        for protocol in protocols:
            most = retry_advice.retry_runs(protocol)[-1]
            for quoted in (
                retry_advice.retry_figures(protocol),
                f"{most.writers - 1} × {most.appends} = {most.bound}",
                f"max_commit_retries={retry_advice.advised_retries(protocol)}",
            ):
                if quoted not in texts[path]:
                    problems.append(f"{path}: does not say {quoted!r} ({protocol})")
    return problems


def test_the_retry_advice_in_prose_is_notebook_11s_run():
    assert retry_prose_problems({path: _prose(path) for path in RETRY_PROSE}) == []


def test_the_retries_a_run_needed_are_read_from_its_commits():
    """Where no append gave up, the most retries one took; where some did, the bound: every other
    writer's appends."""
    from helpers.bench import stats

    def commit(writers, writer, outcome, attempts):
        return dict(
            protocol="p", writers=writers, writer=writer, outcome=outcome, attempts=attempts
        )

    runs = stats.retries_needed(
        [commit(2, "w1", "committed", 1), commit(2, "w2", "committed", 3)]
        + [commit(2, "w1", "committed", 1), commit(2, "w2", "committed", 2)]
        + [commit(3, f"w{n}", "committed", n) for n in (1, 2)]
        + [commit(3, "w3", "failed", 16)]
    )
    assert [(r.writers, r.appends, r.needed, r.bound, r.advised) for r in runs] == [
        (2, 2, 2, 2, 2),
        (3, 1, None, 2, 2),
    ]
    assert stats.retry_words(runs) == (
        "the most retries an append needed was 2 with 2 writers; "
        "1 of 3 appends by 3 writers gave up after 15"
    )


def test_retry_advice_that_drifted_from_the_run_is_caught():
    texts = {path: _prose(path) for path in RETRY_PROSE}
    texts["notebooks/solutions/11.md"] = texts["notebooks/solutions/11.md"].replace(
        "10 with 4 writers", "9 with 4 writers"
    )
    texts["notebooks/solutions/07.md"] = texts["notebooks/solutions/07.md"].replace(
        "max_commit_retries=120", "max_commit_retries=60"
    )
    problems = retry_prose_problems(texts)
    assert any(
        p.startswith("notebooks/solutions/11.md") and "s3-conditional-put" in p for p in problems
    )
    assert any(
        p.startswith("notebooks/solutions/07.md") and "max_commit_retries=120" in p
        for p in problems
    )


def test_a_race_call_that_is_not_marked_unsafe_is_caught():
    notebooks = _notebooks()
    name = next(n for n in notebooks if n.startswith("05"))
    cell = next(
        c
        for c in notebooks[name]["cells"]
        if c["cell_type"] == "code" and "def one_writer(" in "".join(c["source"])
    )
    cell["source"] = ["".join(cell["source"]).replace(UNSAFE_MARK, "(the call)")]
    assert any("must say" in p for p in copy_problems(notebooks))


# --- each copy cell runs against the emulators ---------------------------------------------------


def emulator_environment() -> dict[str, str]:
    """The environment a copy cell reads, pointing at the emulators (never a secret of a real account)."""
    azure = tables.azure_storage_options()
    return {
        "AWS_REGION": config.EMULATOR_AWS_REGION,
        "AWS_ACCESS_KEY_ID": config.EMULATOR_AWS_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": config.EMULATOR_AWS_SECRET_ACCESS_KEY,
        "AWS_ENDPOINT_URL": config.aws_endpoint("s3"),
        "AWS_ENDPOINT_URL_DYNAMODB": config.aws_endpoint("dynamodb"),
        "AZURE_STORAGE_ACCOUNT_NAME": azure["account_name"],
        "AZURE_STORAGE_ACCOUNT_KEY": azure["account_key"],
        "AZURE_STORAGE_ENDPOINT": azure["azure_storage_endpoint"],
    }


def _cell_of(prefix: str) -> str:
    return next(
        source
        for name, _, settings, source in copy_cells(_notebooks())
        if name.startswith(prefix) and settings
    )


def run_cell(
    source: str, calls: str, python: str = sys.executable, endpoints: dict | None = None
) -> str:
    """Run a copy cell, then ``calls``, in a fresh interpreter given only the emulators' environment
    (``endpoints`` replacing some of its variables) and the machine's PATH; its printed last line
    is returned."""
    env = {
        **config.without_telemetry({"PATH": os.environ.get("PATH", "")}),
        **emulator_environment(),
        **(endpoints or {}),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    done = subprocess.run(
        [python, "-c", source + "\n" + textwrap.dedent(calls)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=config.BUILD_DIR if config.BUILD_DIR.exists() else None,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def _rows(uri: str, options: dict) -> int:
    from deltalake import DeltaTable

    return (
        DeltaTable(uri, storage_options=tables.kernel_storage_options(options))
        .to_pyarrow_table()
        .num_rows
    )


DATA = "import pyarrow as pa\ndata = pa.table({'id': list(range(10))})\n"


@pytest.mark.services
def test_the_s3_copy_cell_appends(stores):
    uri = tables.s3_uri(f"copy-cells/s3-{uuid.uuid4().hex[:8]}")
    told = run_cell(
        _cell_of("08"),
        DATA + f"first = append_to_s3({uri!r}, data, 'batch-001.jsonl', 1)\n"
        f"second = append_to_s3({uri!r}, data, 'batch-002.csv', 2)\n"
        f"rerun = append_to_s3({uri!r}, data, 'batch-001.jsonl', 1)\nprint(first, second, rerun)",
    )
    assert told == "True True False"
    assert _rows(uri, tables.s3_storage_options()) == 20


@pytest.mark.services
def test_the_azure_copy_cell_appends(stores):
    uri = tables.azure_uri(f"copy-cells/az-{uuid.uuid4().hex[:8]}")
    told = run_cell(
        _cell_of("03"),
        DATA + f"first = append_to_azure({uri!r}, data, 'batch-001.jsonl', 1)\n"
        f"rerun = append_to_azure({uri!r}, data, 'batch-001.jsonl', 1)\nprint(first, rerun)",
    )
    assert told == "True False"
    assert _rows(uri, tables.azure_storage_options()) == 10


def lock_append_only(source: str) -> str:
    """Notebook 06's copy cell without ``create_lock_table``: its append alone, for deltalake's era
    environment, which has no boto3."""
    tree = ast.parse(source)
    functions = [
        ast.get_source_segment(source, node)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name in ("landed_version", "append_with_lock")
    ]
    return "\n".join(
        [
            "import os",
            "import pyarrow as pa",
            "from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake",
            "from deltalake.exceptions import TableNotFoundError",
            *functions,
        ]
    )


@pytest.mark.services
def test_the_lock_copy_cell_creates_the_table_and_commits_through_it(stores):
    """``create_lock_table`` runs in the kernel's environment (boto3); ``append_with_lock`` in
    deltalake 1.5.1's, the era whose log store takes the lock (its environment has no boto3, so the
    function alone runs there, taken from the cell as written)."""
    from helpers.stores import storage

    source = _cell_of("06")
    lock = f"copy_cells_{uuid.uuid4().hex[:8]}"
    run_cell(source, f"create_lock_table({lock!r})\ncreate_lock_table({lock!r})\nprint('ok')")
    described = storage.dynamodb_client().describe_table(TableName=lock)["Table"]
    assert {(k["AttributeName"], k["KeyType"]) for k in described["KeySchema"]} == {
        ("tablePath", "HASH"),
        ("fileName", "RANGE"),
    }
    ttl = storage.dynamodb_client().describe_time_to_live(TableName=lock)["TimeToLiveDescription"]
    assert ttl.get("AttributeName") == "expireTime"
    only = lock_append_only(source)
    uri = tables.s3_uri(f"copy-cells/lock-{uuid.uuid4().hex[:8]}")
    python = str(config.ENVS_DIR / eras.DYNAMODB_INTEROP / "bin" / "python")
    told = run_cell(
        only,
        DATA + f"first = append_with_lock({uri!r}, data, {lock!r}, 'batch-001.jsonl', 1)\n"
        f"second = append_with_lock({uri!r}, data, {lock!r}, 'batch-002.csv', 2)\n"
        f"rerun = append_with_lock({uri!r}, data, {lock!r}, 'batch-002.csv', 2)\nprint(first, second, rerun)",
        python=python,
    )
    assert told == "True True False"
    assert _rows(uri, tables.s3_storage_options()) == 20
    items = storage.lock_entries(uri, lock)
    assert {item["fileName"] for item in items} >= {
        "00000000000000000000.json",
        "00000000000000000001.json",
    }, items


@pytest.mark.services
@pytest.mark.parametrize(
    "notebook, era, locked", [("07", eras.SEEDS, True), ("11", eras.CURRENT, False)]
)
def test_a_race_call_offered_to_copy_appends(stores, notebook, era, locked):
    """The race calls offered to copy (``one_writer``, the writer's own call), each in its era's
    environment, on a table the same era created: two appends land, and the first, run again,
    finds its idempotent-write id and appends nothing."""
    uri = tables.s3_uri(f"copy-cells/writer-{notebook}-{uuid.uuid4().hex[:8]}")
    options = tables.s3_storage_options(locking_provider="dynamodb" if locked else None)
    python = (
        str(config.ENVS_DIR / era / "bin" / "python") if era != eras.CURRENT else sys.executable
    )
    run_cell(
        _cell_of(notebook),
        DATA + f"write_deltalake({uri!r}, data, storage_options={options!r})\n"
        f"one_writer({uri!r}, data, 'w1', 2, 'batch-002.csv')\n"
        f"one_writer({uri!r}, data, 'w2', 3, 'batch-003.jsonl')\n"
        f"one_writer({uri!r}, data, 'w1', 2, 'batch-002.csv')\nprint('ok')",
        python=python,
    )
    assert _rows(uri, options) == 30


@pytest.mark.services
def test_the_rerun_copy_cell_appends_once(stores):
    uri = tables.s3_uri(f"copy-cells/once-{uuid.uuid4().hex[:8]}")
    options = tables.s3_storage_options()
    told = run_cell(
        _cell_of("13"),
        DATA
        + f"""
import os
options = {{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}
options["AWS_ALLOW_HTTP"] = "true"
first = append_once({uri!r}, data, "nightly-load", 7, options)
rerun = append_once({uri!r}, data, "nightly-load", 7, options)
print(first, rerun)""",
    )
    assert told == "True False"
    from deltalake import DeltaTable

    table = DeltaTable(uri, storage_options=options)
    assert (
        table.to_pyarrow_table().num_rows == 10 and table.transaction_version("nightly-load") == 7
    )


SPARK_RUN = """
import ast, json, os, sys
from helpers.spark import sessions

cells = json.loads(sys.argv[1])
several, once = {}, {}
exec(cells["09"], several)
exec(cells["13"], once)
lock, uri, once_uri = sys.argv[2:5]
several["create_lock_table"](lock)
# the cell's own settings, read from its source; two are this machine's: Delta's class has no DynamoDB
# endpoint, so the workbook's class of the same protocol stands in for it, and the jars come from
# the workbook's cache (Delta's storage module is not downloadable here)
function = next(n for n in ast.parse(cells["09"]).body if isinstance(n, ast.FunctionDef) and n.name == "spark_for_several_clusters")
conf_node = next(n.value for n in function.body if isinstance(n, ast.Assign) and n.targets[0].id == "conf")
conf = eval(compile(ast.Expression(conf_node), "cell", "eval"), {"os": os, "lock_table": lock, "PACKAGES": ""})
assert conf["spark.delta.logStore.s3a.impl"] == sessions.DELTA_DYNAMODB_LOG_STORE
here = sessions.dynamodb_log_store_conf()
conf.pop("spark.jars.packages")
conf.update({k: v for k, v in here.items() if not k.startswith(sessions.DYNAMODB_LOG_STORE_PREFIX)})
spark = sessions.spark_session("s3", app_name="copy-cells", extra_conf=conf)
rows = [{"id": i} for i in range(10)]
several["append_from_a_cluster"](spark, rows, uri)
several["append_from_a_cluster"](spark, rows, uri)
df = spark.createDataFrame(rows)
once["append_once_spark"](df, once_uri, "nightly-load", 3)
once["append_once_spark"](df, once_uri, "nightly-load", 3)
print(json.dumps({"rows": spark.read.format("delta").load(uri).count(),
                  "once": spark.read.format("delta").load(once_uri).count()}))
"""


@pytest.mark.services
@pytest.mark.spark
def test_the_spark_copy_cells_commit_through_the_lock_table_and_once(stores):
    """Notebook 09's cell (several clusters) and the Spark half of notebook 13's (a rerun append), in
    one driver against the emulators; the commits are read back from storage and the lock table."""
    from helpers.stores import storage

    lock = f"copy_cells_spark_{uuid.uuid4().hex[:8]}"
    uri = tables.s3_uri(f"copy-cells/spark-{uuid.uuid4().hex[:8]}", "s3a")
    once_uri = tables.s3_uri(f"copy-cells/spark-once-{uuid.uuid4().hex[:8]}", "s3a")
    cells = json.dumps({"09": _cell_of("09"), "13": _cell_of("13")})
    env = {**os.environ, **emulator_environment()}
    done = subprocess.run(
        [sys.executable, "-c", SPARK_RUN, cells, lock, uri, once_uri],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=config.ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    counted = json.loads(done.stdout.strip().splitlines()[-1])
    assert counted == {"rows": 20, "once": 10}, counted
    items = storage.lock_entries(uri, lock)
    assert {item["fileName"] for item in items} >= {
        "00000000000000000000.json",
        "00000000000000000001.json",
    }, items
    assert all(item.get("complete") in ("true", True) for item in items), items


@pytest.mark.services
def test_the_committers_copy_cell_commits_a_batch_once(stores):
    """Notebook 14's committer call: a Parquet file already in the table's folder, committed as batch 1
    with its idempotent-write id; asked again, it finds the batch landed and commits nothing."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    uri = tables.s3_uri(f"copy-cells/committer-{uuid.uuid4().hex[:8]}")
    options = tables.s3_storage_options()
    write_deltalake(uri, pa.table({"id": pa.array([0], pa.int64())}), storage_options=options)
    path = f"produced-{uuid.uuid4().hex[:8]}.parquet"
    told = run_cell(
        _cell_of("14"),
        f"""
import io
import boto3
import pyarrow as pa
import pyarrow.parquet as pq
buffer = io.BytesIO()
pq.write_table(pa.table({{"id": pa.array(range(1, 11), pa.int64())}}), buffer)
bucket, _, key = {uri!r}.removeprefix("s3://").partition("/")
boto3.client("s3", region_name=os.environ["AWS_REGION"], endpoint_url=os.environ["AWS_ENDPOINT_URL"]).put_object(
    Bucket=bucket, Key=f"{{key}}/{path}", Body=buffer.getvalue())
table = open_table({uri!r})
first = commit_batch(table, "committer", 1, [({path!r}, len(buffer.getvalue()), 10)])
again = commit_batch(open_table({uri!r}), "committer", 1, [({path!r}, len(buffer.getvalue()), 10)])
print(first, "/", again)""",
    )
    assert told == "committed / landed already"
    table = DeltaTable(uri, storage_options=options)
    assert table.to_pyarrow_table().num_rows == 11 and table.transaction_version("committer") == 1


def test_an_offer_wrapped_over_two_comment_lines_is_found():
    wrapped = "# The call below, to copy\n# into a job of your own.\nprint(1)\n"
    notebooks = {
        "99_crafted.ipynb": {"cells": [{"cell_type": "code", "metadata": {}, "source": [wrapped]}]}
    }
    assert copy_problems(notebooks) == [
        "99_crafted.ipynb cell 0: offered to copy, but names no setting of the answer (metadata workbook_copy)"
    ]
