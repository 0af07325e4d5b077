"""During the lowering, a pass that would hand every node back as it is does not retrace the graph.

An `ExportPass` rewrites a graph by retracing it: each node is replayed
through the pass's `call_operator` with fake tensors, and a new graph is built
from what comes back. Most of the lowering's passes look for a few operators
and pass every other node on: measured on a packed a8w8 pack of ten cases,
three quarters of the retrace time (20 of 29 retraces) rebuilt a graph with the
same nodes, names, arguments and values.

The skip is taken only where the retrace is known to reproduce its input:

- the graph is the untouched output of an earlier retrace (its nodes, names,
  arguments and value objects are those that retrace made: `_fingerprint`),
  so replaying it names each node and computes each value as before;
- it is static, holds no control flow, constants or lowered modules;
- the pass's class changes nothing of the retrace but `call_operator`
  (`_qualifies`: no `call`, `placeholder`, `output`, `call_getitem`, ...);
- a dry run of that `call_operator` over the nodes, on their recorded values,
  ends, for every node, in the base `call_operator` with the node's own
  operator, arguments and metadata, and returns what it returned
  (`_PassThrough`); anything else (another operator, changed metadata, a new
  node of any kind, an exception) stops the dry run and the pass retraces as
  it would have. The pass's own attributes are put back first.

Probe: the names it relies on exist, and on a small edge program a
pass-through pass is skipped and a rewriting one is not. The flatbuffers are
byte-identical either way (tests/speedups/test_passthrough_retrace.py, and the
end-to-end proof every environment runs once: `harness.speedups.state`).
"""

from __future__ import annotations

import copy
import operator
import weakref

from harness.speedups.base import Undo, need, patch, undo_all

SKIPPED = [0]  # retraces skipped in this process (tests, benchmarks)
# What a pass class may not override and still be replayed by a dry run of its call_operator: the hooks a
# retrace of a static graph without control flow or delegates calls (`_static_plain`); `call` itself is the
# pass's own work around the retrace (an edit in place shows in the graph's fingerprint).
_RETRACE_HOOKS = frozenset(
    {"call_submodule", "placeholder", "output", "call_getitem", "inputs", "on_attr", "_fx"}
    | {"ExportTracer", "ExportInterpreter"}
)
_MARKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # graph module -> fingerprint after its retrace
_DRY: list = []  # the node whose dry run is under way, with its expected call, while one is


class _NotPassThrough(Exception):
    """The dry run met something a pass-through would not do."""


def probe() -> str:
    need("executorch.exir.pass_base", "ExportPass.call")
    need("executorch.exir.pass_base", "_ExportPassBase.call_operator")
    need("executorch.exir.pass_base", "_ExportPassBase._fx")
    need("executorch.exir.pass_base", "ProxyValue")
    need("executorch.exir.pass_base", "NodeMetadata")
    need("executorch.exir.dialects.edge._ops", "EdgeOpOverload")
    return _behaves()


def _arm_pass_hooks() -> dict:
    """ArmPass's own overrides the dry run knows: `call_operator` (replayed) and `call_submodule` (at depth 1,
    the base's)."""
    try:
        from executorch.backends.arm._passes.arm_pass import ArmPass
    except ImportError:
        return {}
    return {ArmPass: {"call_operator", "call_submodule"}}


def _qualifies(cls) -> bool:
    from executorch.exir.pass_base import ExportPass

    known = _arm_pass_hooks()
    below = set(ExportPass.__mro__)  # ExportPass and what it builds on: the retrace itself
    for base in cls.__mro__:
        if base in below:
            continue
        hooks = _RETRACE_HOOKS & set(vars(base))
        if hooks - known.get(base, set()):
            return False
    return issubclass(cls, ExportPass)


def _shallow(value):
    """Arguments as a comparable structure that holds no node or tensor (a mark must not keep its graph
    alive): nodes and tensors by identity, containers by their items, scalars by type and value (a pass that
    quantizes a clamp's bounds in place turns 0.0 into 0, and the retrace after it makes the clamp's value an
    integer tensor)."""
    from torch.fx import Node

    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_shallow(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, _shallow(v)) for k, v in value.items()))
    if isinstance(value, Node) or hasattr(value, "__torch_function__"):
        return ("object", id(value))
    return (type(value), value)  # 0 == 0.0 == False: an edit that only changes a scalar's type is an edit


def _value(val) -> tuple:
    """The object holding a node's value, and what it is (an identity alone could be a later object's)."""
    shape, dtype = getattr(val, "shape", None), getattr(val, "dtype", None)
    return (id(val), tuple(shape) if shape is not None else None, dtype)


def _fingerprint(graph_module) -> tuple:
    """What a retrace made: every node (identity, name, target, arguments) and the object holding its value."""
    return tuple(
        (id(n), n.name, n.op, n.target, _shallow(n.args), _shallow(n.kwargs), _value(n.meta.get("val")))
        for n in graph_module.graph.nodes
    )


def _static_plain(graph_module) -> bool:
    """No symbolic size, no control flow, constant attribute or lowered module: a graph the dry run can replay."""
    import torch
    from executorch.exir.dialects.edge._ops import EdgeOpOverload
    from torch._subclasses.fake_tensor import FakeTensor

    for n in graph_module.graph.nodes:
        if n.op == "placeholder":
            val = n.meta.get("val")
            if not isinstance(val, FakeTensor) or getattr(val, "constant", None) is not None:
                return False
            if any(not isinstance(s, int) for s in val.shape):
                return False
        elif n.op == "call_function":
            if n.target is not operator.getitem and not isinstance(
                n.target, (EdgeOpOverload, torch._ops.OpOverload, torch._ops.OpOverloadPacket)
            ):
                return False
        elif n.op != "output":
            return False
    return True


class _Refuse:
    """The tracer a pass sees during a dry run: building anything is not a pass-through."""

    def __getattr__(self, name):
        raise _NotPassThrough(f"the pass used its tracer ({name})")


def _dry_run(pass_, graph_module) -> bool:
    """True when `pass_.call_operator` hands back every node of `graph_module` as it is."""
    from executorch.exir.pass_base import NodeMetadata, ProxyValue

    values: dict = {}
    saved = {k: copy.copy(v) if isinstance(v, (list, dict, set)) else v for k, v in vars(pass_).items()}
    pass_.tracer = _Refuse()

    def value(arg):
        if isinstance(arg, (list, tuple)):
            return type(arg)(value(a) for a in arg)
        if isinstance(arg, dict):
            return {k: value(v) for k, v in arg.items()}
        return values[arg] if arg in values else arg

    try:
        for n in graph_module.graph.nodes:
            if n.op == "output":
                continue
            if n.op == "placeholder" or n.target is operator.getitem:
                values[n] = ProxyValue(n.meta["val"], n)
                continue
            args, kwargs = value(n.args), value(n.kwargs)
            _DRY.append((n, args, kwargs))
            try:
                out = pass_.call_operator(n.target, args, kwargs, NodeMetadata(n.meta))
            finally:
                expected = _DRY.pop()
            if len(expected) != 4 or out is not expected[3]:
                raise _NotPassThrough("the pass returned something else")
            values[n] = out
    except Exception:  # noqa: BLE001 - whatever stopped the dry run, the pass retraces as it was
        vars(pass_).clear()
        vars(pass_).update(saved)
        return False
    if "tracer" in saved:  # what the pass kept of its calls stays, as a retrace would leave it; not the stand-in
        pass_.tracer = saved["tracer"]
    else:
        del pass_.tracer
    return True


def _same(got, want) -> bool:
    """Arguments as the node has them: its own ProxyValues by identity, everything else equal and of one type."""
    if isinstance(want, (list, tuple)):
        return type(got) is type(want) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    if isinstance(want, dict):
        return isinstance(got, dict) and got.keys() == want.keys() and all(_same(got[k], want[k]) for k in want)
    if hasattr(want, "__torch_function__") or hasattr(got, "__torch_function__"):
        return got is want
    from executorch.exir.pass_base import ProxyValue

    if isinstance(want, ProxyValue) or isinstance(got, ProxyValue):
        return got is want
    return type(got) is type(want) and got == want


def _meta_kept(meta, node) -> bool:
    data = getattr(meta, "data", None)
    return isinstance(data, dict) and data.keys() == node.meta.keys() and all(data[k] is node.meta[k] for k in data)


def sample_graph():
    """An edge graph built by hand (relu, then add): not yet the output of a retrace."""
    import torch
    from executorch.exir.dialects._ops import ops as exir_ops
    from torch._subclasses.fake_tensor import FakeTensorMode

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    with FakeTensorMode() as mode:
        x.meta["val"] = mode.from_tensor(torch.zeros(2, 3))
    relu = graph.call_function(exir_ops.edge.aten.relu.default, (x,))
    graph.output((graph.call_function(exir_ops.edge.aten.add.Tensor, (relu, x)),))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _behaves() -> str:
    """On a small edge program: a pass-through pass is skipped with the same graph, a rewriting one retraces."""
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.pass_base import ExportPass

    from harness.speedups import lazy_compile

    class _Nothing(ExportPass):
        def call_operator(self, op, args, kwargs, meta):
            return super().call_operator(op, args, kwargs, meta)

    class _Negate(ExportPass):
        def call_operator(self, op, args, kwargs, meta):
            if op == exir_ops.edge.aten.relu.default:
                return super().call_operator(exir_ops.edge.aten.neg.default, args, kwargs, meta)
            return super().call_operator(op, args, kwargs, meta)

    gm = sample_graph()
    undo = install()
    try:
        with lazy_compile.during_lowering():
            first = _Nothing().call(gm).graph_module  # not yet the output of a retrace: retraced
            skipped = SKIPPED[0]
            again = _Nothing().call(first).graph_module
            rewritten = _Negate().call(first).graph_module
            done = SKIPPED[0] - skipped
    finally:
        undo()
    if again is not first or done != 1:
        return f"a pass-through pass was not skipped on a retraced graph ({done} skipped)"
    if rewritten is first or not any(n.target == exir_ops.edge.aten.neg.default for n in rewritten.graph.nodes):
        return "a rewriting pass was skipped"
    return ""


def install() -> Undo:
    """Wrap `ExportPass.call` (skip or retrace, then remember the graph a retrace made) and the base
    `call_operator` and `_fx` (what a dry run compares against)."""
    from executorch.exir.pass_base import ExportPass, _ExportPassBase
    from torch.fx.passes.infra.pass_base import PassResult

    from harness.speedups import lazy_compile

    call, call_operator, fx = ExportPass.call, _ExportPassBase.call_operator, _ExportPassBase._fx
    qualifies: dict[type, bool] = {}

    def retrace(self, graph_module):
        if not lazy_compile.lowering():
            return call(self, graph_module)
        cls = type(self)
        if cls not in qualifies:
            qualifies[cls] = _qualifies(cls)
        mark = _MARKS.get(graph_module)
        if (
            qualifies[cls]
            and mark is not None
            and mark == _fingerprint(graph_module)
            and _static_plain(graph_module)
            and _dry_run(self, graph_module)
        ):
            SKIPPED[0] += 1
            return PassResult(graph_module, True)
        result = call(self, graph_module)
        if result is not None:
            _MARKS[result.graph_module] = _fingerprint(result.graph_module)
        return result

    def base_call_operator(self, op, args, kwargs, meta):
        if not _DRY:
            return call_operator(self, op, args, kwargs, meta)
        node, want_args, want_kwargs = _DRY[-1][:3]
        if len(_DRY[-1]) != 3 or op is not node.target or not _meta_kept(meta, node):
            raise _NotPassThrough(f"{op} is not the node's own call")
        if not (_same(args, want_args) and _same(kwargs or {}, want_kwargs or {})):
            raise _NotPassThrough("the node's arguments were changed")
        from executorch.exir.pass_base import ProxyValue

        out = ProxyValue(node.meta["val"], node)
        _DRY[-1] = (*_DRY[-1], out)
        return out

    def base_fx(self, *args, **kwargs):
        if _DRY:
            raise _NotPassThrough("the pass built a node")
        return fx(self, *args, **kwargs)

    retrace.__wrapped__ = call
    return undo_all(
        [
            patch(ExportPass, "call", retrace),
            patch(_ExportPassBase, "call_operator", base_call_operator),
            patch(_ExportPassBase, "_fx", base_fx),
        ]
    )
