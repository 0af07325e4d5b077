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

Probe: every name it reads exists, and on a sample of ops (preserved and
decomposed) the tables inside and after the override, and the fake rules,
are the ones torch's own override leaves (`differs_from_torch`, also what
tests/speedups/test_cia_override.py checks on every op).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from harness.speedups.base import Undo, need, patch

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
                register_op_impl(op)(
                    functools.partial(_force_dispatch_to_orig_cia_callable, original_callable=original)
                )
        yield
    finally:
        for op, kernels in saved.items():
            op.py_kernels.clear()
            op.py_kernels.update(kernels)
            op._dispatch_cache.clear()
            _deregister_op_impl(op)


NAMES = (
    ("torch.export.exported_program", "_override_composite_implicit_decomp"),
    ("torch.export.exported_program", "_AUTOGRAD_ALIAS_BACKEND_KEYS_TO_OVERRIDE"),
    ("torch.export.exported_program", "_BACKEND_KEYS_TO_OVERRIDE"),
    ("torch.export.exported_program", "_collect_all_valid_cia_ops"),
    ("torch.export.exported_program", "_special_op_to_preserve_cia"),
    ("torch.export.exported_program", "_split_decomp_table_to_cia_and_python_decomp"),
    ("torch._export.utils", "_get_decomp_for_cia"),
    ("torch._higher_order_ops.utils", "autograd_not_implemented"),
    ("torch._subclasses.fake_impls", "_deregister_op_impl"),
    ("torch._subclasses.fake_impls", "_is_op_registered_to_fake_rule"),
    ("torch._subclasses.fake_impls", "register_op_impl"),
    ("torch._subclasses.fake_impls", "op_implementations_dict"),
)
_TORCHS: list = []  # torch's own context manager, once replaced


def torchs_override() -> Callable:
    """torch's own `_override_composite_implicit_decomp`, installed here or not."""
    import torch.export.exported_program as ep

    return _TORCHS[0] if _TORCHS else ep._override_composite_implicit_decomp


def snapshot(ops) -> dict:
    """Each op's table, an autograd wrapper named by the op it wraps; and its fake rule, if any."""
    from torch._subclasses import fake_impls

    out = {}
    for op in ops:
        rows = []
        for key, fn in op.py_kernels.items():
            if getattr(fn, "__qualname__", "") == "autograd_not_implemented.<locals>.inner":
                cell = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
                fn = ("autograd_not_implemented", cell.get("op"), cell.get("deferred_error"))
            elif (
                getattr(fn, "func", None) is not None
                and getattr(fn.func, "__name__", "") == "_special_op_to_decompose_cia"
            ):
                fn = ("decompose_cia", fn.keywords.get("kernel"))
            rows.append((key, fn))
        rule = fake_impls.op_implementations_dict.get(op)
        if rule is not None and isinstance(rule, functools.partial):
            original = rule.keywords.get("original_callable")
            if getattr(original, "func", None) is not None:
                original = ("decompose_cia", original.keywords.get("kernel"))
            rule = (rule.func.__name__, original)
        out[op] = (rows, rule)
    return out


def differs_from_torch(cia: dict) -> str:
    """'' if ours leaves the tables (inside and after) and fake rules torch's leaves on these ops; else the first
    op that differs. Both start from the same fake-rule state, restored afterwards."""
    from torch._subclasses import fake_impls

    rules, checks = dict(fake_impls.op_implementations_dict), list(fake_impls.op_implementations_checks)

    def restore_fake_rules() -> None:
        fake_impls.op_implementations_dict.clear()
        fake_impls.op_implementations_dict.update(rules)
        fake_impls.op_implementations_checks[:] = checks

    try:
        with torchs_override()(cia):
            inside_torch = snapshot(cia)
        after_torch = snapshot(cia)
        restore_fake_rules()
        with override_composite_implicit_decomp(cia):
            inside_ours = snapshot(cia)
        after_ours = snapshot(cia)
    finally:
        restore_fake_rules()
    for when, ours, torchs in (("inside", inside_ours, inside_torch), ("after", after_ours, after_torch)):
        for op in cia:
            if ours[op] != torchs[op]:
                return f"{op}'s kernel table {when} the override differs from torch's"
    return ""


def probe(sample: int = 24) -> str:
    for module, name in NAMES:
        need(module, name)
    import torch
    import torch.export.exported_program as ep

    preserved = {op: ep._special_op_to_preserve_cia for op in sorted(ep._collect_all_valid_cia_ops(), key=str)[:sample]}
    decomposed = ep._split_decomp_table_to_cia_and_python_decomp(dict(torch.export.default_decompositions()))[0]
    decomposed = dict(sorted(decomposed.items(), key=lambda kv: str(kv[0]))[:sample])
    return differs_from_torch(preserved) or differs_from_torch(decomposed)


def install() -> Undo:
    """Use it wherever torch.export looks the override up (a module global)."""
    import torch.export.exported_program as ep

    if not _TORCHS:
        _TORCHS.append(ep._override_composite_implicit_decomp)
    return patch(ep, "_override_composite_implicit_decomp", override_composite_implicit_decomp)
