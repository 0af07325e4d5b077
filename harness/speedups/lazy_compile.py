"""Compile the lowering's graph modules to Python only when something runs them.

Every pass of the lowering hands its graph to a new `torch.fx.GraphModule`,
whose constructor generates and compiles the graph's Python code: about 350
times for a pack of 16 a8w8 cases, 18% of its lowering. The passes walk the
graph node by node (`ExportPass` is an interpreter) and almost never call that
code. The quantizer's annotation pipeline is the same: ~55 passes, each
followed by a `recompile()` of the captured module, 110 compiles a case.
torch's own `_LazyGraphModule` defers the compile until the module is
called or its code read; during `lower` and `quantize` (and only there) a
plain `GraphModule(...)` is built as one, and during `quantize` so is the
module `ExportedProgram.module()` builds (not while lowering: see `enable`). Unlike `_LazyGraphModule`, `recompile()`
still sets the pytree specs at once (torch.export reads `_out_spec` without
calling the module).

Probe: torch's lazy graph module has the hooks used here, and a graph
module built lazily computes what the eager one does, with its source
compiled on first call and its forward's signature restored by
`compile_now`. The contexts work with it off too (they then only mark
where the lowering runs, for `skip_retrace`).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager

from harness.speedups.base import Undo, need, patch

_ENABLED = False  # installed in this process
_ACTIVE = False
_LOWERING = False


def probe() -> str:
    need("torch.fx._lazy_graph_module", "_LazyGraphModule._lazy_forward")
    need("torch.fx._lazy_graph_module", "_LazyGraphModule.real_recompile")
    need("torch.fx.graph", "_PyTreeCodeGen")
    need("torch.export._unlift", "_StatefulGraphModule")

    import torch
    from torch.fx._lazy_graph_module import _LazyGraphModule

    def f(x, y):
        return torch.relu(x) * y + 1

    eager = torch.fx.symbolic_trace(f)
    x, y = torch.randn(3), torch.randn(3)
    undo = install() if not _ENABLED else (lambda: None)
    try:
        with during_quantization():
            lazy, called = (torch.fx.GraphModule(eager, eager.graph) for _ in range(2))
        if not isinstance(lazy, _LazyGraphModule):
            return "a GraphModule built inside the context is not a lazy one"
        compile_now(lazy)
        if list(inspect.signature(lazy.forward).parameters) != ["x", "y"]:
            return "compile_now does not restore the forward's signature"
        if not torch.equal(called(x, y), eager(x, y)):
            return "a lazily compiled graph module computes another value"
    finally:
        undo()
    return ""


def install() -> Undo:
    """Patch `GraphModule.__new__` so that `during_lowering` can take effect."""
    global _ENABLED
    import torch.fx.graph_module as graph_module
    from torch.fx._lazy_graph_module import _LazyGraphModule
    from torch.fx.graph import _PyTreeCodeGen

    class LazyCompiledGraphModule(_LazyGraphModule):
        def recompile(self) -> None:  # type: ignore[override]
            codegen = self._graph._codegen
            if isinstance(codegen, _PyTreeCodeGen):
                self._in_spec = codegen.pytree_info.in_spec
                self._out_spec = codegen.pytree_info.out_spec
            type(self).forward = _LazyGraphModule._lazy_forward

    from torch.export._unlift import _StatefulGraphModule

    class LazyCompiledStatefulGraphModule(LazyCompiledGraphModule, _StatefulGraphModule):
        """What `ExportedProgram.module()` builds (a GraphModule with input checks), compiled lazily."""

    plain = graph_module.GraphModule
    original_new = plain.__new__
    # Not while lowering: torch.export retraces the stateful module `ExportedProgram.module()` builds, and
    # takes the placeholders' names from its forward's signature (a lazy forward has only `*args`).
    lazy = {plain: LazyCompiledGraphModule}
    lazy_outside_lowering = {**lazy, _StatefulGraphModule: LazyCompiledStatefulGraphModule}

    def __new__(cls, *args, **kwargs):
        if _ACTIVE:
            cls = (lazy if _LOWERING else lazy_outside_lowering).get(cls, cls)
        return original_new(cls, *args, **kwargs)

    undo_new = patch(plain, "__new__", __new__)
    _ENABLED = True

    def undo() -> None:
        global _ENABLED
        undo_new()
        _ENABLED = False

    return undo


def lowering() -> bool:
    """Whether this process is inside `during_lowering` (the other speed-ups that apply only there ask)."""
    return _LOWERING


@contextmanager
def _context(lowering: bool) -> Iterator[None]:
    global _ACTIVE, _LOWERING
    saved = _ACTIVE, _LOWERING
    _ACTIVE, _LOWERING = _ENABLED, lowering or _LOWERING
    try:
        yield
    finally:
        _ACTIVE, _LOWERING = saved


def during_lowering():
    """Graph modules built inside compile lazily (if enabled); `lowering()` is true inside."""
    return _context(lowering=True)


def during_quantization():
    """Graph modules built inside compile lazily (if enabled); `lowering()` is unchanged."""
    return _context(lowering=False)


def compile_now(module) -> None:
    """Compile each lazily compiled graph module in `module` (itself included) that is not yet compiled.

    A module that leaves the context must look like any other: torch.export binds inputs and
    dynamic shapes to the argument names of `forward`, and a lazy forward has only `*args`.
    """
    from torch.fx._lazy_graph_module import _LazyGraphModule

    for m in module.modules():
        if isinstance(m, _LazyGraphModule):
            m.real_recompile()
