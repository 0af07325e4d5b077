"""Model-independent work that torch repeats on every lowering, done once.

`to_edge_transform_and_lower` calls `ExportedProgram.run_decompositions` three
times per case, and each call walks every operator namespace to list the
CompositeImplicitAutograd ops that may be preserved
(`torch._export.utils._collect_all_valid_cia_ops`): ~0.1 s a call, the same
answer every time. torch does not cache it because a custom op registered
later would change the answer, so the cache here is keyed on exactly that:
the registered namespaces and the number of CIA registrations in the C++
dispatcher. Any new registration invalidates it.

Set HARNESS_NO_SPEEDUPS=1 to run without; tests/test_speedups.py checks that
the lowered flatbuffers are byte-identical either way.
"""

from __future__ import annotations

import os

_INSTALLED = False


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
    _INSTALLED = True
