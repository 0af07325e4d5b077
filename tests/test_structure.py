"""The package's shape, read from its source: its packages stack in the layers below, every import (at module
level or inside a function) goes down them, judging depends on neither the lowering nor any target, and no
module grows past what one screen of responsibilities needs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness.layers import LAYERS

ROOT = Path(__file__).resolve().parents[1] / "harness"
MAX_LINES = 400
# What judging must never reach, directly or through anything it imports.
NOT_FROM_JUDGING = ("harness.lowering", "harness.targets", "harness.runners", "harness.run")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under an `if TYPE_CHECKING:` (imports for annotations, never run)."""
    return {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for stmt in node.body
        for n in ast.walk(stmt)
    }


def _imports(name: str) -> tuple[set[str], set[str]]:
    """(harness modules, external top-level packages) that module `name` imports, anywhere in its body."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    annotation_only = _type_checking_only(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in annotation_only:
            continue
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets |= {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}
    internal, external = set(), set()
    for t in targets:
        if t == "harness" or t.startswith("harness."):
            while t not in MODULES:
                t = t.rpartition(".")[0]
            # importing a module runs its packages' __init__ too
            parts = t.split(".")
            internal |= {".".join(parts[:i]) for i in range(2, len(parts) + 1)} - {name}
        else:
            external.add(t.split(".")[0])
    return internal, external


GRAPH = {name: _imports(name) for name in MODULES}


def _reach(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for dep in GRAPH[todo.pop()][0]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_the_import_graph_has_no_circle():
    circles = sorted({tuple(sorted((a, b))) for a in GRAPH for b in _reach(a) if a != b and a in _reach(b)})
    assert not circles, f"modules importing each other (directly or not): {circles}"


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_every_import_goes_down_the_layers(capsys):
    rank = {name: i for i, (name, _) in enumerate(LAYERS)}
    packages = {_layer(m) for m in MODULES if m != "harness"}
    assert packages == set(rank), (
        f"packages without a layer: {sorted(packages - set(rank))}; "
        f"layers without a package: {sorted(set(rank) - packages)}"
    )
    upward = sorted(
        f"{m} imports {d} ({_layer(m)} is below {_layer(d)})"
        for m, (internal, _) in GRAPH.items()
        for d in internal
        if m != "harness" and d != "harness" and rank[_layer(d)] > rank[_layer(m)]
    )
    with capsys.disabled():
        print("\nlayers checked, bottom first:")
        for i, (name, role) in enumerate(LAYERS):
            print(f"  {i:2d} {name:13s} {role}")
    assert not upward, "imports that go up the layers:\n" + "\n".join(upward)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("harness.judging")))
def test_judging_reaches_neither_lowering_nor_targets_nor_executorch(module):
    reached = _reach(module) | {module}
    bad = sorted(m for m in reached if m.startswith(NOT_FROM_JUDGING))
    assert not bad, f"{module} imports {bad}"
    externals = set().union(*(GRAPH[m][1] for m in reached))
    assert "executorch" not in externals, f"{module} reaches executorch through {sorted(reached)}"


TORCH_FREE = """
import sys
from harness.cases.selection import select
from harness.expectations.known_issues import registry
from harness.history.db import History
from harness.history.diff import diff
from harness.report.diff_format import to_text
from harness.schedule.sweep import SweepRequest, check
cases = select("nightly", 5, 1, "_qa8w8_", "2/3")
check(SweepRequest("smoke", canary="pad-off-by-one", filter="conv1d"))
registry()
with History(sys.argv[1]) as h:
    pass
to_text(diff([], []))
print(sorted(m for m in ("torch", "executorch", "torchao", "numpy") if m in sys.modules))
"""


@pytest.mark.processes
def test_what_a_sweeps_parent_does_loads_no_torch(tmp_path):
    """Listing, selecting, checking a request, the registry, the history and diffs: the parent of a sweep and
    the pytest controller do these, and must not pay torch's 3 s and 220 MB for them."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", TORCH_FREE, str(tmp_path / "h.sqlite")],
        cwd=ROOT.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.strip() == "[]"


MAX_FUNCTION_LINES = 60
LONG_FUNCTIONS_WHERE = ("harness.run", "harness.schedule", "harness.cli", "harness.report")


def test_no_function_of_the_run_path_is_long_without_saying_why():
    """A function over ~60 lines in run/, schedule/, cli/ or report/ says why in its docstring ('Long because')."""
    long = []
    for name, path in MODULES.items():
        if not name.startswith(LONG_FUNCTIONS_WHERE):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES and "Long because" not in (ast.get_docstring(node) or ""):
                    long.append(f"{name}.{node.name}: {lines} lines")
    assert not long, long


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_too_long(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines: split it by responsibility"


def test_no_package_folder_is_ignored_by_git():
    """A file added to any folder of the package is seen by git (a 'build/' pattern once hid harness/build/)."""
    import subprocess

    folders = sorted(p for p in ROOT.rglob("*") if p.is_dir() and "__pycache__" not in p.parts)
    ignored = [
        str(f.relative_to(ROOT.parent))
        for f in folders
        if subprocess.run(
            [
                "git",
                "-C",
                str(ROOT.parent),
                "check-ignore",
                "-q",
                "--no-index",
                str(f.relative_to(ROOT.parent) / "new.py"),
            ]
        ).returncode
        == 0
    ]
    assert not ignored, f"git ignores new files in {ignored}: anchor the .gitignore pattern"


# The design card fixes the project's top level; the case space lives in harness/cases/, the executors in
# harness/runners/, a run's output under reports/.
CARD = {
    "harness": "dir",
    "harness/cases": "package",
    "harness/runners": "package",
    "reports": "dir",
    "conftest.py": "file",
    "tox.ini": "file",
}


@pytest.mark.parametrize("path,kind", CARD.items())
def test_the_design_cards_top_level_is_there(path, kind):
    where = ROOT.parent / path
    assert where.is_file() if kind == "file" else where.is_dir(), f"the design card's {path} is gone"
    if kind == "package":
        assert (where / "__init__.py").is_file() and len(list(where.glob("*.py"))) > 1, f"{path} holds no modules"
