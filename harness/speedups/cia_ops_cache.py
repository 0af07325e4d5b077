"""The list of preservable CompositeImplicitAutograd ops, computed once per set of registrations.

`to_edge_transform_and_lower` calls `ExportedProgram.run_decompositions`
three times per case, and each call walks every operator namespace to list
the CIA ops that may be preserved (`torch._export.utils._collect_all_valid_cia_ops`):
~0.1 s a call, the same answer every time. torch does not cache it because a
custom op registered later would change the answer, so the cache here is keyed
on exactly that: the registered namespaces and the number of CIA registrations
in the C++ dispatcher. Any new registration invalidates it.

Probe: the function and the two modules that bind it exist, the key's inputs
can be read, and the cached answer is torch's.
"""

from __future__ import annotations

import importlib

from harness.speedups.base import Undo, need, patch, undo_all

BOUND_IN = ("torch.export.exported_program", "torch.export.decomp_utils")  # modules that import it by name


def _key() -> tuple:
    import torch

    return (
        tuple(torch.ops._dir),
        len(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")),
    )


def cached(original):
    """`original` behind a cache keyed on the registrations."""
    cache: dict[tuple, frozenset] = {}

    def collect_all_valid_cia_ops() -> set:
        key = _key()
        if key not in cache:
            cache.clear()
            cache[key] = frozenset(original())
        return set(cache[key])  # callers mutate their copy

    collect_all_valid_cia_ops.__wrapped__ = original
    return collect_all_valid_cia_ops


def probe() -> str:
    original = need("torch._export.utils", "_collect_all_valid_cia_ops")
    for module in BOUND_IN:
        need(module, "_collect_all_valid_cia_ops")
    need("torch", "ops._dir")
    need("torch", "_C._dispatch_get_registrations_for_dispatch_key")
    original = getattr(original, "__wrapped__", original)
    fn = cached(original)
    if fn() != set(original()) or fn() != set(original()):
        return "the cached list of CIA ops is not torch's"
    return ""


def install() -> Undo:
    import torch._export.utils as export_utils

    fn = cached(export_utils._collect_all_valid_cia_ops)
    return undo_all([patch(importlib.import_module(m), "_collect_all_valid_cia_ops", fn) for m in BOUND_IN])
