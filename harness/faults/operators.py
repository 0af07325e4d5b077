"""Mutants of a Python source file by the standard operators, inside function bodies only.

Read with `ast` from the source text (no import), so a sweep's parent can list
them. Each mutant changes one node of one function or method, so it can be
loaded by swapping that function's code object (`harness.faults.load`):

* `const`: an integer constant n -> n + 1 and n - 1 (indices, axes, offsets)
* `compare`: < <=, > >=, == !=, is / is not, in / not in, each to its partner
* `bool`: and <-> or
* `arith`: + <-> -, * <-> //
* `swap`: the operands of a non-commutative binary operation, or of a two-element tuple or list
* `negate`: the condition of an if / while / ternary
* `drop-arg`: the last positional argument, or a keyword argument, of a call
* `drop-stmt`: an expression statement, an assignment to an attribute or subscript, or an augmented assignment

Then the operator classes of the two well-kept Python mutation tools that the list above lacks, listed after
all of the above so that adding them moved no earlier mutant's index:

* `arith` (more rows, mutmut's operator table): * -> /, / -> *, // -> /, % -> /, ** -> *, << <-> >>, & <-> |, ^ -> &
* `compare` (more rows, cosmic-ray's comparison replacement): < <-> >, <= <-> >=
* `unary` (cosmic-ray's unary replacement, never a deletion): -x -> ~x, ~x -> -x, +x -> -x
* `keyword` (mutmut's keyword mutation): True <-> False, break <-> continue
* `zero-iteration` (cosmic-ray's ZeroIterationForLoop): `for x in xs` -> `for x in []`
* `except` (cosmic-ray's exception replacer): the handler catches nothing (`except ():`)
* `string` (mutmut's string mutation): "s" -> "XXsXX", except a message (see `messages`)
* `arg-none` (mutmut 3's argument mutation): one positional argument of a call -> None (a keyword argument is
  dropped by `drop-arg`, which gives its default: None for most, so `kw=None` would repeat that mutant)

Then the deletions, listed after all of the above for the same reason:

* `delete-operand` (PIT's arithmetic operator deletion, AOD; Major's operator deletion): `a op b` -> `a` and -> `b`,
  for every binary operator. A pass's arithmetic often survives an operand's loss on the cases that run it (a
  `* dilation` at dilation 1, a `- 1` that only matters at one remainder): measured, one such mutant of a conv pass
  outlived the whole smoke tier, which an earlier version of this list assumed it never would.
* `delete-unary` (unary and boolean operator deletion): `-x`, `+x`, `~x`, `not x` -> `x`.

Neither touches a message (see `messages`). Left out on purpose: replacing a return value or a lambda's body,
and an assignment -> None (mutmut), which remove a computation whole and say nothing `drop-stmt`, `arg-none` and
the deletions do not; removing a decorator (cosmic-ray), which acts when the class is built, not in a body whose
code object `harness.faults.load` can swap.

Type expressions (annotations, `cast`'s type) are not mutated: no change there can be observed.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
from dataclasses import dataclass

from harness.faults import syntax

_COMPARE = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_ARITH = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.FloorDiv: ast.Mult}
_ARITH_MORE = {
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Div,
    ast.Mod: ast.Div,
    ast.Pow: ast.Mult,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.BitXor: ast.BitAnd,
}
_COMPARE_FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
_UNARY = {ast.USub: ast.Invert, ast.Invert: ast.USub, ast.UAdd: ast.USub}
_NON_COMMUTATIVE = (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift, ast.RShift)


@dataclass(frozen=True)
class Mutant:
    file: str  # the source file
    function: str  # qualified name of the function whose body changes, e.g. "RewriteConvPass.call"
    index: int  # which mutation of that file (in listing order)
    line: int
    operator: str
    description: str
    diff: str  # unified diff of the function's source
    lines: tuple[int, int] = (0, 0)  # first and last line of the code that runs the change (see `_span`)
    column: int = 0  # 1-based column of the changed node: tells apart the same change made twice on one line


def _changes(node: ast.AST, parent_body_has: bool) -> list[tuple[str, str]]:
    """(operator, what) pairs applicable at `node`."""
    out = []
    if isinstance(node, ast.Constant) and type(node.value) is int:
        out += [("const", f"{node.value} -> {node.value + 1}"), ("const", f"{node.value} -> {node.value - 1}")]
    elif isinstance(node, ast.Compare):
        out += [
            ("compare", f"{type(op).__name__} -> {_COMPARE[type(op)].__name__}")
            for op in node.ops
            if type(op) in _COMPARE
        ]
    elif isinstance(node, ast.BoolOp):
        out.append(("bool", "and -> or" if isinstance(node.op, ast.And) else "or -> and"))
    elif isinstance(node, ast.BinOp):
        if type(node.op) in _ARITH:
            out.append(("arith", f"{type(node.op).__name__} -> {_ARITH[type(node.op)].__name__}"))
        if isinstance(node.op, _NON_COMMUTATIVE):
            out.append(("swap", "operands"))
    elif isinstance(node, (ast.Tuple, ast.List)) and len(node.elts) == 2 and isinstance(node.ctx, ast.Load):
        out.append(("swap", "elements"))
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
        out.append(("negate", "condition"))
    elif isinstance(node, ast.Call):
        if len(node.args) > 1:
            out.append(("drop-arg", "last positional"))
        out += [("drop-arg", f"{kw.arg}=") for kw in node.keywords if kw.arg]
    if parent_body_has and (
        isinstance(node, (ast.Expr, ast.AugAssign))
        or (isinstance(node, ast.Assign) and all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in node.targets))
    ):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):  # not a docstring
            out.append(("drop-stmt", type(node).__name__))
    return out


def _more_changes(node: ast.AST, messages: set[int]) -> list[tuple[str, str]]:
    """(operator, what) pairs of the classes taken from mutmut and cosmic-ray, applicable at `node`."""
    out = []
    name = lambda op: type(op).__name__  # noqa: E731
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH_MORE:
        out.append(("arith", f"{name(node.op)} -> {_ARITH_MORE[type(node.op)].__name__}"))
    elif isinstance(node, ast.Compare):
        out += [
            ("compare", f"{name(op)} -> {_COMPARE_FLIP[type(op)].__name__}")
            for op in node.ops
            if type(op) in _COMPARE_FLIP
        ]
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        out.append(("unary", f"{name(node.op)} -> {_UNARY[type(node.op)].__name__}"))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append(("keyword", f"{node.value} -> {not node.value}"))
    elif isinstance(node, (ast.Break, ast.Continue)):
        out.append(("keyword", "break -> continue" if isinstance(node, ast.Break) else "continue -> break"))
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        out.append(("zero-iteration", "for over []"))
    elif isinstance(node, ast.ExceptHandler) and node.type is not None:
        out.append(("except", "catches nothing"))
    elif isinstance(node, ast.Constant) and type(node.value) is str and id(node) not in messages:
        out.append(("string", f"{node.value!r} -> {'XX' + node.value + 'XX'!r}"))
    elif isinstance(node, ast.Call):
        cast = getattr(node.func, "id", getattr(node.func, "attr", None)) == "cast"  # its type: see type_expressions
        out += [
            ("arg-none", f"arg {i} -> None")
            for i, a in enumerate(node.args)
            if not isinstance(a, ast.Starred)
            and not (isinstance(a, ast.Constant) and a.value is None)
            and not (cast and i == 0)
        ]
    return out


def _deletions(node: ast.AST, messages: set[int]) -> list[tuple[str, str]]:
    """(operator, what) pairs of the deletion classes applicable at `node` (never inside a message)."""
    if id(node) in messages:
        return []
    if isinstance(node, ast.BinOp):
        op = type(node.op).__name__
        return [("delete-operand", f"a {op} b -> a"), ("delete-operand", f"a {op} b -> b")]
    if isinstance(node, ast.UnaryOp):
        return [("delete-unary", f"{type(node.op).__name__} x -> x")]
    return []


def _apply(node: ast.AST, operator: str, what: str) -> ast.AST:
    """The mutated replacement of `node` (a new node or the node changed in place)."""
    if operator == "const":
        node.value = int(what.split(" -> ")[1])
    elif operator == "compare":
        old, new = what.split(" -> ")
        node.ops = [getattr(ast, new)() if type(op).__name__ == old else op for op in node.ops]
    elif operator == "bool":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif operator in ("arith", "unary"):
        node.op = getattr(ast, what.split(" -> ")[1])()
    elif operator == "swap" and what == "operands":
        node.left, node.right = node.right, node.left
    elif operator == "swap":
        node.elts = node.elts[::-1]
    elif operator == "negate":
        node.test = ast.UnaryOp(ast.Not(), node.test)
    elif operator == "drop-arg" and what == "last positional":
        node.args = node.args[:-1]
    elif operator == "drop-arg":
        node.keywords = [kw for kw in node.keywords if f"{kw.arg}=" != what]
    elif operator == "drop-stmt":
        return ast.copy_location(ast.Pass(), node)
    elif operator == "keyword" and what in ("break -> continue", "continue -> break"):
        return ast.copy_location(ast.Continue() if what.startswith("break") else ast.Break(), node)
    elif operator == "keyword":
        node.value = not node.value
    elif operator == "zero-iteration":
        node.iter = ast.copy_location(ast.List([], ast.Load()), node.iter)
    elif operator == "except":
        node.type = ast.copy_location(ast.Tuple([], ast.Load()), node.type)
    elif operator == "string":
        node.value = "XX" + node.value + "XX"
    elif operator == "arg-none":
        i = int(what.split()[1])
        node.args = [ast.copy_location(ast.Constant(None), a) if j == i else a for j, a in enumerate(node.args)]
    elif operator == "delete-operand":
        return node.left if what.endswith("-> a") else node.right
    elif operator == "delete-unary":
        return node.operand
    return node


def _points(tree: ast.Module) -> list[tuple[str, int, str, str, int, tuple[int, int], int]]:
    """(function, node number in walk order, operator, what, line, lines that run it, column) for every mutation
    point."""
    out = []
    functions = [
        (name, fn, syntax.statements(fn), syntax.spans(fn), syntax.type_expressions(fn), syntax.messages(fn))
        for name, fn in syntax.functions(tree)
    ]  # each function read once for both passes below
    for kind in ("standard", "more", "deletion"):  # each class list after all earlier ones: no index moves
        for name, fn, statements, spans, types, messages in functions:
            for number, node in enumerate(syntax.body_nodes(fn)):
                if id(node) in types:
                    continue
                if kind == "standard":
                    changes = _changes(node, id(node) in statements)
                else:
                    changes = _more_changes(node, messages) if kind == "more" else _deletions(node, messages)
                for operator, what in changes:
                    line = getattr(node, "lineno", fn.lineno)
                    out.append(
                        (
                            name,
                            number,
                            operator,
                            what,
                            line,
                            spans.get(id(node), (line, line)),
                            getattr(node, "col_offset", -1) + 1,
                        )
                    )
    return out


def _holders(fn: ast.AST) -> dict[int, list]:
    """id of each node of `fn` -> what holds it: the statement lists (body, orelse, finalbody) for a statement,
    else the list (a call's arguments, a tuple's elements) or the (parent, field) it sits in: where `_replace`
    puts a node that takes another's place (a dropped statement's `pass`, a deleted operator's operand)."""
    held: dict[int, list] = {}
    for node in ast.walk(fn):
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list):
                for s in stmts:
                    held.setdefault(id(s), []).append(stmts)
        for field, value in ast.iter_fields(node):
            if isinstance(value, ast.AST):
                held.setdefault(id(value), []).append((node, field))
            elif isinstance(value, list) and field not in ("body", "orelse", "finalbody"):
                for item in value:
                    if isinstance(item, ast.AST):
                        held.setdefault(id(item), []).append(value)
    return held


def _replace(fn: ast.AST, number: int, operator: str, what: str, nodes=None, held=None) -> None:
    """Mutate `fn` in place. `nodes` (its body_nodes) and `held` (its `_holders`), when given, save walking it."""
    nodes = syntax.body_nodes(fn) if nodes is None else nodes
    target = nodes[number]
    new = _apply(target, operator, what)
    if new is target:
        return
    for holder in (_holders(fn) if held is None else held).get(id(target), [])[:1]:
        if isinstance(holder, tuple):
            setattr(holder[0], holder[1], new)  # the operand where its operator was
        else:
            holder[[id(s) for s in holder].index(id(target))] = new  # the replacement where the old node was


@contextlib.contextmanager
def _applied(fn: ast.AST, number: int, operator: str, what: str, nodes: list, held: dict[int, list]):
    """`fn` with one mutation applied while the block runs, as it was after it (a deep copy of a long function
    per mutant cost ~90% of listing a pass's mutants). `_apply` only rebinds the node's fields and `_replace`
    only puts a node in its holder's place, so saving those is enough; for the same reason `nodes` and `held`,
    taken once per function, stay true from one mutant to the next."""
    target = nodes[number]
    fields = dict(target.__dict__)
    holders = held.get(id(target), [])
    saved = [(h, h[:]) for h in holders if isinstance(h, list)]
    parents = [(h[0], h[1], getattr(h[0], h[1])) for h in holders if isinstance(h, tuple)]
    try:
        _replace(fn, number, operator, what, nodes, held)
        yield fn
    finally:
        target.__dict__.clear()
        target.__dict__.update(fields)
        for items, before in saved:
            items[:] = before
        for parent, field, value in parents:
            setattr(parent, field, value)


def mutated_function(
    source: str, mutant_function: str, number: int, operator: str, what: str
) -> tuple[ast.Module, str, str]:
    """(the mutated module tree, the function's source before, after)."""
    tree = ast.parse(source)
    fn = dict(syntax.functions(tree))[mutant_function]
    before = ast.unparse(fn)
    _replace(fn, number, operator, what)
    ast.fix_missing_locations(tree)
    return tree, before, ast.unparse(fn)


def mutants(source: str, file: str) -> list[Mutant]:
    """Every mutant of `source` (the text of `file`), in a stable order; a mutation point whose change
    leaves the source as it was is skipped (its index stays unused)."""
    tree = ast.parse(source)
    functions = dict(syntax.functions(tree))
    out = []
    befores: dict[str, str] = {}
    walked: dict[str, tuple[list, dict]] = {}
    for index, (function, number, operator, what, line, lines, column) in enumerate(_points(tree)):
        fn = functions[function]
        before = befores.setdefault(function, ast.unparse(fn))
        if function not in walked:
            walked[function] = (syntax.body_nodes(fn), _holders(fn))
        with _applied(fn, number, operator, what, *walked[function]):
            after = ast.unparse(ast.fix_missing_locations(fn))
        if after == before:  # e.g. swapping two equal elements: the same program, not a mutant
            continue
        diff = "".join(
            difflib.unified_diff(
                before.splitlines(True),
                after.splitlines(True),
                f"{file}:{function}",
                f"{file}:{function} (mutant {index})",
                n=1,
            )
        )
        out.append(Mutant(file, function, index, line, operator, what, diff, lines, column))
    return out


def count(source: str) -> int:
    """How many mutation points `source` has (without building them): the bound of mutant indices."""
    return len(_points(ast.parse(source)))


def mutant_tree(source: str, index: int) -> tuple[ast.Module, str]:
    """The module tree with mutant `index` applied, and the mutated function's qualified name."""
    points = _points(ast.parse(source))
    if not 0 <= index < len(points):
        raise IndexError(f"mutant {index} out of range: the file has {len(points)}")
    function, number, operator, what, _, _, _ = points[index]
    return mutated_function(source, function, number, operator, what)[0], function
