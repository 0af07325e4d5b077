"""The package's shape, read from its source: the import graph has no circle,
judging depends on neither the lowering nor any target, and no module grows
past what one screen of responsibilities needs."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "harness"
MAX_LINES = 400
# What judging must never reach, directly or through anything it imports.
NOT_FROM_JUDGING = ("harness.lowering", "harness.targets", "harness.runners", "harness.run")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _type_checking_only(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _imports(name: str) -> tuple[set[str], set[str]]:
    """(harness modules, external top-level packages) that module `name` imports, anywhere in its body."""
    path = MODULES[name]
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node, parents):
            continue
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
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


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("harness.judging")))
def test_judging_reaches_neither_lowering_nor_targets_nor_executorch(module):
    reached = _reach(module) | {module}
    bad = sorted(m for m in reached if m.startswith(NOT_FROM_JUDGING))
    assert not bad, f"{module} imports {bad}"
    externals = set().union(*(GRAPH[m][1] for m in reached))
    assert "executorch" not in externals, f"{module} reaches executorch through {sorted(reached)}"


TORCH_FREE = """
import sys
from harness.tiers.selection import select
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


def test_what_a_sweeps_parent_does_loads_no_torch(tmp_path):
    """Listing, selecting, checking a request, the registry, the history and diffs: the parent of a sweep and
    the pytest controller do these, and must not pay torch's 3 s and 220 MB for them."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", TORCH_FREE, str(tmp_path / "h.sqlite")], cwd=ROOT.parent,
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_is_too_long(module):
    lines = len(MODULES[module].read_text().splitlines())
    assert lines <= MAX_LINES, f"{module} has {lines} lines: split it by responsibility"
