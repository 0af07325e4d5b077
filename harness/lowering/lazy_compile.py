"""Compile the lowering's graph modules to Python only when something runs them.

Every pass of the lowering hands its graph to a new `torch.fx.GraphModule`,
whose constructor generates and compiles the graph's Python code: about 350
times for a pack of 16 a8w8 cases, 18% of its lowering. The passes walk the
graph node by node (`ExportPass` is an interpreter) and almost never call that
code. torch's own `_LazyGraphModule` defers the compile until the module is
called or its code read; during `lower` (and only there) a plain
`GraphModule(...)` is built as one. Unlike `_LazyGraphModule`, `recompile()`
still sets the pytree specs at once (torch.export reads `_out_spec` without
calling the module).

Installed by `harness.run.process.install` with the other speed-ups, so it
is off on another torch and with HARNESS_NO_SPEEDUPS=1; tests/test_process.py
checks that the flatbuffers are byte-identical either way.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_ENABLED = False
_ACTIVE = False
_LOWERING = False


def enable() -> None:
    """Patch `GraphModule.__new__` (once) so that `during_lowering` can take effect."""
    global _ENABLED
    if _ENABLED:
        return
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

    plain = graph_module.GraphModule
    original_new = plain.__new__

    def __new__(cls, *args, **kwargs):
        return original_new(LazyCompiledGraphModule if _ACTIVE and cls is plain else cls, *args, **kwargs)

    plain.__new__ = __new__
    _ENABLED = True


def lowering() -> bool:
    """Whether this process is inside `during_lowering` (the other speed-ups that apply only there ask)."""
    return _LOWERING


@contextmanager
def during_lowering() -> Iterator[None]:
    """Graph modules built inside compile lazily (if enabled); a no-op otherwise."""
    global _ACTIVE, _LOWERING
    saved = _ACTIVE, _LOWERING
    _ACTIVE, _LOWERING = _ENABLED, True
    try:
        yield
    finally:
        _ACTIVE, _LOWERING = saved
