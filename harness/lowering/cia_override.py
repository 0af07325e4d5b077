"""torch.export's CompositeImplicitAutograd override, with each op's kernel entries built once.

Each `run_decompositions` (three per lowering) overrides the Python kernels
of the ~560 CIA ops it may preserve and restores them afterwards
(`torch.export.exported_program._override_composite_implicit_decomp`). torch
builds every op's entries one `py_impl` call at a time, ~12,000 calls that
each build and check a closure, plus a new `autograd_not_implemented` wrapper
per op and key: measured 0.09 s a call inside a case, 0.26 s a lowering,
a quarter of a static fp32 case alone (the allocations also wake the
collector). What it installs depends only on the op, the keys it already has
and the callable asked for, so here the stateless wrappers and the original
CIA kernel are made once per op and each op's table is swapped in with one
dict update. The tables come out with the same keys in the same order and
the same values, but for the identity of those stateless wrappers; the fake
rules are registered and dropped exactly as torch does.

Installed by `harness.run.process.install` with the other speed-ups (torch
2.13.0 only); tests/test_process.py checks that the flatbuffers are
byte-identical without them and tests/test_cia_override.py that the tables are
the ones torch builds.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Callable, Iterator

_TEMPLATES: dict = {}  # op -> (its table's items then, entries before CIA, entries after CIA, original CIA kernel)


def _force_dispatch_to_orig_cia_callable(fake_tensor_mode, op, *args, **kwargs):
    """The fake rule torch registers for an overridden op: run the original CIA kernel."""
    original_callable = kwargs.pop("original_callable")
    with fake_tensor_mode:
        return original_callable(*args, **kwargs)


def _template(op, kernels: dict) -> tuple:
    """What torch's override puts around the CIA entry of `op`, given its table `kernels`; built once per table.

    Order as torch leaves it: the op's keys but CIA, the autograd keys it lacked, (CIA), the backend keys it
    lacked, which get the original CIA kernel (`torch._export.utils._get_decomp_for_cia`).
    """
    items = tuple(kernels.items())
    cached = _TEMPLATES.get(op)
    if cached is not None and cached[0] == items:
        return cached
    import torch
    import torch.export.exported_program as ep
    from torch._export.utils import _get_decomp_for_cia
    from torch._higher_order_ops.utils import autograd_not_implemented

    cia = torch._C.DispatchKey.CompositeImplicitAutograd
    original = _get_decomp_for_cia(op)
    before = {k: v for k, v in items if k != cia}
    for key in ep._AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE:
        if key not in kernels:
            before[key] = autograd_not_implemented(op, deferred_error=True)
    after = {key: original for key in ep._BACKEND_KEYS_TO_OVERRIDE if key not in before and key != cia}
    _TEMPLATES[op] = cached = (items, before, after, original)
    return cached


def patched_kernels(op, kernels: dict, decomp_callable: Callable) -> tuple[dict, Callable]:
    """The table torch's override leaves on `op` (its py_kernels `kernels`), and the original CIA kernel."""
    import torch

    _, before, after, original = _template(op, kernels)
    return {**before, torch._C.DispatchKey.CompositeImplicitAutograd: decomp_callable, **after}, original


@contextmanager
def override_composite_implicit_decomp(cia_ops_to_callable: dict) -> Iterator[None]:
    """Drop-in for torch's context manager of the same name (torch 2.13.0)."""
    from torch._subclasses.fake_impls import _deregister_op_impl, _is_op_registered_to_fake_rule, register_op_impl

    saved: dict = {}
    try:
        for op, decomp_callable in cia_ops_to_callable.items():
            kernels = op.py_kernels
            saved[op] = kernels.copy()
            table, original = patched_kernels(op, kernels, decomp_callable)
            kernels.clear()
            kernels.update(table)
            op._dispatch_cache.clear()
            if not _is_op_registered_to_fake_rule(op):
                register_op_impl(op)(functools.partial(_force_dispatch_to_orig_cia_callable, original_callable=original))
        yield
    finally:
        for op, kernels in saved.items():
            op.py_kernels.clear()
            op.py_kernels.update(kernels)
            op._dispatch_cache.clear()
            _deregister_op_impl(op)


def install() -> None:
    """Use it wherever torch.export looks the override up (a module global)."""
    import torch.export.exported_program as ep

    ep._override_composite_implicit_decomp = override_composite_implicit_decomp
