"""FakeTensor's dispatch cache admits the PT2E flow's quantize and dequantize operators.

Every pass that retraces a graph (each ExportPass of the Arm pipeline, each
`run_decompositions`) runs every node again on fake tensors. FakeTensorMode
caches an operator's output metadata by its inputs' metadata, but bypasses
every operator outside aten/prim/prims ("non-builtin"): a custom operator may
mutate or alias its inputs, or make shapes from data. The Q/DQ operators of a
quantized graph (`quantized_decomposed.quantize_per_tensor`,
`dequantize_per_tensor`, `dequantize_per_channel`, ...) are most of its nodes
and do none of that: their schemas are functional and their meta kernels make
`empty_like(input, dtype=<an argument>)`, raising only on metadata the key
holds (a dtype, an axis, a range). Measured on a pack of ten a8w8 cases:
1,390 bypasses, each a Python meta kernel run, about a fifth of the pack.

Here `_validate_cache_key` lets through an operator of that namespace whose
schema is functional (no argument or return aliased or written) and which is
not a view; torch's other checks stay as they are (the tags for data-dependent
or dynamic output shapes come before the namespace test; the key holds every
tensor argument's metadata and every other argument's value; an output that
aliases an input is refused when the entry is made). The cache also keeps
negative entries ("bypass this key"), and its entries outlive a mode, so it is
emptied when the wrapper goes in and when it comes out: a run with the
speed-ups undone computes every Q/DQ as torch alone would.

Probe: the method and the bypass signal exist; with the wrapper in place, a
fake `quantize_per_tensor` is a cache hit the second time, with the output
metadata the uncached path gives, and an aten operator's answer is torch's.
End to end the flatbuffers are byte-identical (`harness.speedups.state`).
"""

from __future__ import annotations

from harness.speedups.base import Undo, need, patch

NAMESPACE = "quantized_decomposed"
_ADMITTED: dict = {}  # op -> whether its schema lets it be cached (decided once per op)


def admitted(func) -> bool:
    """Whether `func` is an operator of NAMESPACE with a functional, non-view schema."""
    try:
        return _ADMITTED[func]
    except (KeyError, TypeError):
        pass
    import torch

    ok = (
        isinstance(func, torch._ops.OpOverload)
        and func.namespace == NAMESPACE
        and not func.is_view
        and not func._schema.is_mutable
        and all(a.alias_info is None for a in func._schema.arguments)
        and all(r.alias_info is None for r in func._schema.returns)
    )
    _ADMITTED[func] = ok
    return ok


def _wrap(original):
    from torch._subclasses.fake_tensor import _BypassDispatchCache

    def _validate_cache_key(self, func, args, kwargs):
        try:
            return original(self, func, args, kwargs)
        except _BypassDispatchCache as e:
            if e.reason == "non-builtin" and admitted(func):
                return None
            raise

    _validate_cache_key.__wrapped__ = original
    return _validate_cache_key


def _metadata(t) -> tuple:
    return (tuple(t.shape), t.dtype, tuple(t.stride()), t.device.type)


def _check(validate) -> list[tuple[list[tuple], int]]:
    """Run a Q/DQ chain and an aten op twice in a fresh fake mode with `validate` in place of torch's method: each
    time, the outputs' metadata and the cache hits it made."""
    import torch
    import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers the quantized_decomposed operators
    from torch._subclasses.fake_tensor import FakeTensorMode

    q, dq = torch.ops.quantized_decomposed.quantize_per_tensor, torch.ops.quantized_decomposed.dequantize_per_tensor
    saved = FakeTensorMode._validate_cache_key
    FakeTensorMode._validate_cache_key = validate
    FakeTensorMode.cache.clear()  # no entry of an earlier check (nor a negative one) answers for this one
    try:
        with FakeTensorMode() as mode:
            x = mode.from_tensor(torch.randn(2, 3, 5, 5))
            outs = []
            for _ in range(2):
                before = FakeTensorMode.cache_hits
                codes = q.default(x, 0.05, 3, -128, 127, torch.int8)
                back = dq.default(codes, 0.05, 3, -128, 127, torch.int8)
                summed = torch.ops.aten.add.Tensor(back, x)
                outs.append(([_metadata(t) for t in (codes, back, summed)], FakeTensorMode.cache_hits - before))
    finally:
        FakeTensorMode._validate_cache_key = saved
        FakeTensorMode.cache.clear()
    return outs


def probe() -> str:
    fake = need("torch._subclasses.fake_tensor")
    need("torch._subclasses.fake_tensor", "FakeTensorMode._validate_cache_key")
    need("torch._subclasses.fake_tensor", "_BypassDispatchCache")
    need("torch.ao.quantization.fx._decomposed")
    original = fake.FakeTensorMode._validate_cache_key
    (plain, _), (plain_again, _) = _check(original)
    (first, _), (cached, hits) = _check(_wrap(original))
    if not first == cached == plain == plain_again:
        return f"fake Q/DQ outputs differ with the cache: {plain} against {cached}"
    if hits < 3:
        return f"the second fake Q/DQ/add made {hits} cache hit(s), not 3: torch's cache key is not what it reads"
    return ""


def install() -> Undo:
    from torch._subclasses.fake_tensor import FakeTensorMode

    FakeTensorMode.cache.clear()  # negative entries made without the wrapper would still bypass
    unpatch = patch(FakeTensorMode, "_validate_cache_key", _wrap(FakeTensorMode._validate_cache_key))

    def undo() -> None:
        unpatch()
        FakeTensorMode.cache.clear()  # entries made with the wrapper would still answer

    return undo
