"""The house by its layers: which part of ``helpers/`` may import which, no import circle, and no
module or function too long to read (docs/maintainers.md draws the layers).

Each check is a function of a folder, so each is also shown failing on a crafted break.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers.ground import config

HELPERS = config.ROOT / "helpers"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("machine",),
    ("jupyter",),
    ("publish",),
    ("page",),
    ("lost_answer",),
    ("producers", "catalog", "matrix"),
    ("torture", "probe"),
    ("bench",),
    ("runs",),
    ("writers",),
    ("spark",),
    ("delta",),
    ("stores",),
    ("ground",),
)
"""From the top down: a package may import itself and any package on a lower line, never one on
its own line or above."""

ALLOWED: dict[tuple[str, str], str] = {}
"""(importing module, imported module) pairs that break the rule, each with its reason."""

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
LONG_REASON = re.compile(r"\bLong because\b")
"""How a function over :data:`MAX_FUNCTION_LINES` says why it stays one function, in its docstring."""


def modules(root: Path) -> dict[str, Path]:
    """Every module under ``root`` (a ``helpers`` folder), by its dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of ``root`` it imports, anywhere in its code (a function's import too)."""
    known = modules(root)
    top = root.name
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                wanted = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            else:
                continue
            for target in wanted:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != top and target != name and target.startswith(top):
                    targets.add(target)
        graph[name] = targets
    return graph


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LEVEL) else None


LEVEL = {package: len(LAYERS) - i for i, line in enumerate(LAYERS) for package in line}


def layer_breaks(root: Path) -> list[str]:
    """Every import that runs up or sideways, and every module that sits in no layer."""
    graph = imports(root)
    breaks = []
    for module, targets in sorted(graph.items()):
        if module == root.name:
            continue
        source = package_of(module)
        if source not in LEVEL:
            breaks.append(f"{module} is in no layer: put it in a package of LAYERS")
            continue
        for target in sorted(targets):
            wanted = package_of(target)
            if wanted == source or (module, target) in ALLOWED:
                continue
            if wanted not in LEVEL or LEVEL[wanted] >= LEVEL[source]:
                breaks.append(f"{module} imports {target}: {source} may not import {wanted}")
    return breaks


def circles(root: Path) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a circle (Tarjan's SCCs)."""
    graph = imports(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def long_modules(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root.parent)}: {lines} lines"
        for path in sorted(root.rglob("*.py"))
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    ]


def long_functions(root: Path) -> list[str]:
    """Functions over :data:`MAX_FUNCTION_LINES` whose docstring does not say why."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and not LONG_REASON.search(
                    ast.get_docstring(node) or ""
                ):
                    found.append(
                        f"{path.relative_to(root.parent)}:{node.lineno} {node.name}: {lines} lines"
                    )
    return found


def test_every_import_runs_down_the_layers():
    assert layer_breaks(HELPERS) == []


def test_no_import_circle():
    assert circles(HELPERS) == []


def test_no_module_over_500_lines():
    assert long_modules(HELPERS) == []


def test_no_function_over_80_lines_without_its_reason():
    assert long_functions(HELPERS) == []


def test_each_package_says_what_it_holds_and_may_import():
    for package in LEVEL:
        doc = ast.get_docstring(ast.parse((HELPERS / package / "__init__.py").read_text())) or ""
        assert doc and "Imports:" in doc, (
            f"helpers/{package}/__init__.py: say what it holds and may import"
        )


def test_maintainers_page_draws_the_same_layers():
    page = (config.ROOT / "docs" / "maintainers.md").read_text()
    drawn = re.search(r"<!-- layers -->\n```\n(.*?)```", page, re.S)
    assert drawn, "docs/maintainers.md has no drawing of the layers"
    lines = [line.split("#")[0].strip() for line in drawn.group(1).splitlines() if line.strip()]
    assert [tuple(line.split()) for line in lines if line] == [tuple(line) for line in LAYERS]


def test_maintainers_page_lists_every_module_in_its_folder():
    page = (config.ROOT / "docs" / "maintainers.md").read_text()
    listed = {
        row.group(1): set(re.findall(r"`(\w+)`", row.group(2)))
        for row in re.finditer(r"^\| `(\w+)/` \| (.*) \|$", page.split("<!-- modules -->")[1], re.M)
    }
    assert listed == {
        package: {path.stem for path in (HELPERS / package).glob("*.py") if path.stem != "__init__"}
        for package in LEVEL
    }


# --- each check, failing on a crafted break ---------------------------------------------------


def _house(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "helpers"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_an_import_up_the_layers_is_caught(tmp_path):
    root = _house(
        tmp_path,
        {
            "ground/__init__.py": "",
            "ground/config.py": "",
            "stores/__init__.py": "",
            "stores/storage.py": "from helpers.ground import config\n",
            "page/__init__.py": "",
            "page/decision.py": "from helpers.stores import storage\n",
        },
    )
    assert layer_breaks(root) == []
    (root / "stores" / "storage.py").write_text("def f():\n    from helpers.page import decision\n")
    assert layer_breaks(root) == [
        "helpers.stores.storage imports helpers.page.decision: stores may not import page"
    ]


def test_an_import_sideways_and_a_module_in_no_layer_are_caught(tmp_path):
    root = _house(
        tmp_path,
        {
            "torture/__init__.py": "",
            "torture/run.py": "from helpers.probe import cli\n",
            "probe/__init__.py": "",
            "probe/cli.py": "",
            "loose.py": "",
        },
    )
    assert layer_breaks(root) == [
        "helpers.loose is in no layer: put it in a package of LAYERS",
        "helpers.torture.run imports helpers.probe.cli: torture may not import probe",
    ]


def test_a_circle_is_caught_even_through_a_function_import(tmp_path):
    root = _house(
        tmp_path,
        {
            "spark/__init__.py": "",
            "spark/sessions.py": "from helpers.spark import spark_start\n",
            "spark/spark_start.py": "def f():\n    from helpers.spark import sessions\n",
        },
    )
    assert circles(root) == [["helpers.spark.sessions", "helpers.spark.spark_start"]]


def test_a_long_module_and_a_long_function_are_caught(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    root = _house(tmp_path, {"ground/__init__.py": "", "ground/big.py": "def f():\n" + body})
    assert long_functions(root) == [f"helpers/ground/big.py:1 f: {MAX_FUNCTION_LINES + 1} lines"]
    (root / "ground" / "big.py").write_text(
        'def f():\n    """Long because a crafted test says so."""\n' + body
    )
    assert long_functions(root) == []
    (root / "ground" / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert long_modules(root) == [f"helpers/ground/big.py: {MAX_MODULE_LINES + 1} lines"]
