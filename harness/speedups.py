"""Model-independent work that torch repeats on every lowering, done once.

`to_edge_transform_and_lower` calls `ExportedProgram.run_decompositions` three
times per case, and each call walks every operator namespace to list the
CompositeImplicitAutograd ops that may be preserved
(`torch._export.utils._collect_all_valid_cia_ops`): ~0.1 s a call, the same
answer every time. torch does not cache it because a custom op registered
later would change the answer, so the cache here is keyed on exactly that:
the registered namespaces and the number of CIA registrations in the C++
dispatcher. Any new registration invalidates it.

Each run_decompositions also overrides the kernels of ~1,800 preservable CIA
ops and restores them, 12,000 `OperatorBase.py_impl` calls; each call defines
a closure annotated `Callable[_P, _T]`, and `collections.abc.Callable[...]`
is not cached, so 60% of that time goes to building annotation objects
nobody reads. torch._ops gets a `Callable` whose subscriptions are cached
(and whose isinstance checks are unchanged).

Every node created by a pass records its provenance: `NodeSource.__init__`
deep-copies the whole `from_node` history of the node it comes from, so the
cost grows with the square of the number of passes (10% of a case). Those
histories are only ever read after creation (ExecuTorch's and torchao's
debug-handle walkers), so sharing them instead of copying is equivalent.

Set HARNESS_NO_SPEEDUPS=1 to run without; tests/test_speedups.py checks that
the lowered flatbuffers are byte-identical either way.
"""

from __future__ import annotations

import collections.abc
import os

_INSTALLED = False


class _CachedCallableMeta(type):
    """`Callable[...]` with memoized subscriptions; isinstance as before."""

    _cache: dict = {}

    def __getitem__(cls, params):
        try:
            return cls._cache[params]
        except KeyError:
            alias = cls._cache[params] = collections.abc.Callable[params]
            return alias
        except TypeError:  # unhashable parameters: no caching
            return collections.abc.Callable[params]

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, collections.abc.Callable)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, collections.abc.Callable)


class CachedCallable(metaclass=_CachedCallableMeta):
    pass


def enabled() -> bool:
    return os.environ.get("HARNESS_NO_SPEEDUPS", "") in ("", "0")


def install() -> None:
    global _INSTALLED
    if _INSTALLED or not enabled():
        return
    import torch
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    original = export_utils._collect_all_valid_cia_ops
    cache: dict[tuple, frozenset] = {}

    def collect_all_valid_cia_ops_cached() -> set:
        key = (
            tuple(torch.ops._dir),
            len(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")),
        )
        if key not in cache:
            cache.clear()
            cache[key] = frozenset(original())
        return set(cache[key])  # callers mutate their copy

    exported_program._collect_all_valid_cia_ops = collect_all_valid_cia_ops_cached
    decomp_utils._collect_all_valid_cia_ops = collect_all_valid_cia_ops_cached

    import torch._ops

    if torch._ops.Callable is collections.abc.Callable:
        torch._ops.Callable = CachedCallable

    _share_node_source_history()
    _INSTALLED = True


def _share_node_source_history() -> None:
    from torch.fx import traceback as fx_traceback

    NodeSource = fx_traceback.NodeSource
    Action = fx_traceback.NodeSourceAction

    def __init__(self, node, pass_name: str = "", action=None) -> None:
        self.pass_name = pass_name
        if action is None:
            action = []
        elif not isinstance(action, list):
            action = [action]
        for a in action:
            if not isinstance(a, Action):
                raise AssertionError(f"Expected NodeSourceAction, got {type(a)}")
        self.action = action
        if node:
            self.node_info = self.NodeInfo(name=node.name, target=str(node.target), graph_id=id(node.graph))
            # The one change: a new list sharing the (never mutated) history.
            self.from_node = list(node.meta["from_node"]) if "from_node" in node.meta else []
        else:
            self.node_info = None
            self.from_node = []
        self._action_string = None
        self._dict = None

    NodeSource.__init__ = __init__
