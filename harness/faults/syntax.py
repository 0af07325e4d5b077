"""Where in a function a mutant may go, read from its syntax tree: its functions, the statements and lines
around a node, and the nodes a change cannot be observed in (messages, type expressions).

Pure `ast` facts, no mutation: `harness.faults.operators` makes the mutants from them.
"""

from __future__ import annotations

import ast

LOG_CALLS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """(qualname, node) of every top-level function and method of a top-level class."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            out.extend(
                (f"{node.name}.{m.name}", m)
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            )
    return out


def body_nodes(fn: ast.AST) -> list[ast.AST]:
    """Nodes of the function's body (not its signature, decorators or nested defs' own lists)."""
    nodes = []
    for stmt in fn.body:
        nodes.extend(ast.walk(stmt))
    return nodes


def messages(fn: ast.AST) -> set[int]:
    """ids of the string constants that only make a message: a docstring or other bare string statement, the
    parts of an f-string, and any string inside a `raise`, an `assert`'s message or a logging/warnings call.
    A message changes what a person reads, not what the pass computes, so `string` leaves them alone."""
    ids: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            ids.add(id(node.value))
        elif isinstance(node, ast.JoinedStr) or isinstance(node, ast.Raise):
            ids |= {id(n) for n in ast.walk(node)}
        elif isinstance(node, ast.Assert) and node.msg is not None:
            ids |= {id(n) for n in ast.walk(node.msg)}
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) in LOG_CALLS:
            ids |= {id(n) for a in [*node.args, *(k.value for k in node.keywords)] for n in ast.walk(a)}
    return ids


def statements(fn: ast.AST) -> set[int]:
    """ids of the nodes that sit directly in a statement list inside the function."""
    ids = set()
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            for stmt in stmts if isinstance(stmts, list) else []:
                if isinstance(stmt, ast.stmt):
                    ids.add(id(stmt))
    return ids


_COMPOUND = (ast.If, ast.While, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.Try, ast.Match)


def spans(fn: ast.AST) -> dict[int, tuple[int, int]]:
    """id(node) -> the lines of the innermost statement around it: a simple statement whole, a compound
    one's header only (an `if`'s test, not its body). A mutant changes behaviour only if one of those
    lines runs: the sound test of whether a case reaches it (a constant folded into a tuple on another
    line of the statement, a multi-line call, still count)."""
    spans: dict[int, tuple[int, int]] = {}

    def visit(node: ast.AST, span: tuple[int, int]) -> None:
        if isinstance(node, ast.stmt):
            end = node.end_lineno or node.lineno
            if isinstance(node, _COMPOUND):
                inner = getattr(node, "body", None) or [c.pattern for c in getattr(node, "cases", [])]
                first = min((s.lineno for s in inner), default=end + 1)
                end = max(node.lineno, first - 1)
            span = (node.lineno, end)
        elif isinstance(node, ast.ExceptHandler):  # its `except` line runs only when the try body raises
            span = (node.lineno, max(node.lineno, node.body[0].lineno - 1))
        spans[id(node)] = span
        for child in ast.iter_child_nodes(node):
            visit(child, span)

    for stmt in fn.body:
        visit(stmt, (stmt.lineno, stmt.end_lineno or stmt.lineno))
    return spans


def type_expressions(fn: ast.AST) -> set[int]:
    """ids of the nodes that only name a type: a local variable's annotation and `cast`'s first argument.
    Python never evaluates the one and `cast` returns its value unchanged, so a change there is
    equivalent by construction: not a mutant."""
    ids: set[int] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.AnnAssign):
            ids |= {id(n) for n in ast.walk(node.annotation)}
        elif (
            isinstance(node, ast.Call)
            and node.args
            and (getattr(node.func, "id", None) == "cast" or getattr(node.func, "attr", None) == "cast")
        ):
            ids |= {id(n) for n in ast.walk(node.args[0])}
    return ids
