"""The vocabulary of a conv config and the rules it must meet.

Validation follows torch's own rules and the facts of the scheme table and the
graph contexts, and refuses an impossible config with one line naming the
field, the value and the rule. Every function takes a `harness.config.ConvConfig`
(which calls `validate` when it is made); none imports torch.
"""

from __future__ import annotations

import math

from harness.contexts.names import CONTEXTS, context_error
from harness.descriptor import ConfigError
from harness.policy.limits import BYTES_PER_ELEMENT, MAX_CASE_ELEMENTS
from harness.policy.schemes import SCHEME_NAMES, SCHEMES

RANKS = (1, 2, 3)
PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
PADDING_STRINGS = ("same", "valid")
DATASETS = ("normal", "full-range", "exact", "channel-skew", "offset", "special")  # drawn from (descriptor, seed)
# Data sets aimed at one mechanism: run by the cases that name them, never drawn by a strategy, so adding one
# leaves every generated tier as it was.
NAMED_DATASETS = ("silent",)
CAPTURED = "captured"  # read from a file a model run wrote (harness.build.captured)
# Which dims are exported as torch.export.Dim: none; the batch; the spatial
# dims over a narrow range (the backend enumerates each size's remainder);
# the spatial dims over a range too wide to enumerate (truly symbolic); all.
# `spatial-even`: each spatial dim 2*k for a symbolic k, as a model that takes
# even sizes only declares it: remainders mod a stride of 2 are then constant.
# These lower for TOSA 1.1 with the shape extension; the `-tosa10` kinds lower
# for TOSA 1.0, which has no shape operators (what an Ethos-U target takes).
DYNAMICS = (
    "none",
    "batch",
    "spatial",
    "spatial-wide",
    "all",
    "batch-tosa10",
    "spatial-tosa10",
    "all-tosa10",
    "spatial-even",
    "spatial-even-tosa10",
)


def output_size(c) -> tuple[int, ...]:
    """The conv's output size per spatial dim, as torch computes it."""
    pads = c.explicit_padding()
    sizes = []
    for i in range(c.rank):
        L, k, s, d = c.input_size[i], c.kernel[i], c.stride[i], c.dilation[i]
        before, after = pads[i]
        if c.transposed:
            sizes.append((L - 1) * s - before - after + d * (k - 1) + c.output_padding[i] + 1)
        else:
            sizes.append((L + before + after - d * (k - 1) - 1) // s + 1)
    return tuple(sizes)


# -- validation ------------------------------------------------------------
def _fail(field: str, value, rule: str) -> None:
    raise ConfigError(f"invalid {field}={_show(value)}: {rule}")


def _show(value) -> str:
    if isinstance(value, tuple):
        return "x".join(str(v) for v in value) if value else "()"
    return str(value)


def _check_choice(field: str, value, allowed) -> None:
    if value not in allowed:
        _fail(field, value, f"must be one of {', '.join(map(str, allowed))}")


def _check_int(field: str, value, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        _fail(field, value, f"must be an integer >= {minimum}")


def _check_dims(c, field: str, minimum: int) -> None:
    value = getattr(c, field)
    if not isinstance(value, tuple) or len(value) != c.rank:
        _fail(field, value, f"needs {c.rank} value(s), one per spatial dim of a rank-{c.rank} conv")
    for v in value:
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            _fail(field, value, f"every entry must be an integer >= {minimum}")


def validate(c) -> None:
    """Raise ConfigError naming the first broken rule (torch's own rules)."""
    _check_choice("rank", c.rank, RANKS)
    _check_int("batch", c.batch, 1)
    _check_int("in_channels", c.in_channels, 1)
    _check_int("out_channels", c.out_channels, 1)
    _check_int("groups", c.groups, 1)
    _check_dims(c, "input_size", 1)
    _check_dims(c, "kernel", 1)
    _check_dims(c, "stride", 1)
    _check_dims(c, "dilation", 1)
    _check_dims(c, "output_padding", 0)
    if isinstance(c.padding, str):
        _check_choice("padding", c.padding, PADDING_STRINGS)
    else:
        _check_dims(c, "padding", 0)
    _check_choice("padding_mode", c.padding_mode, PADDING_MODES)
    _check_choice("scheme", c.scheme, SCHEME_NAMES)
    _check_choice("dataset", c.dataset, DATASETS + NAMED_DATASETS + (CAPTURED,))
    if c.dataset == CAPTURED and (c.context != "none" or c.dynamic != "none"):
        _fail(
            "dataset",
            c.dataset,
            f"captured tensors are one conv's own: cx none and dy none, not cx {c.context} dy {c.dynamic}",
        )
    why = context_error(c.context)
    if why:
        raise ConfigError(why)
    _check_choice("dynamic", c.dynamic, DYNAMICS)
    context = CONTEXTS[c.context]
    if not SCHEMES[c.scheme].in_graphs and (c.context != "none" or c.dynamic != "none"):
        _fail(
            "scheme",
            c.scheme,
            f"scheme {c.scheme} runs the conv alone and static (cx none, dy none), not cx {c.context} dy {c.dynamic}",
        )
    if c.dynamic != "none" and not context.dynamic:
        dynamic_contexts = ", ".join(name for name, cx in CONTEXTS.items() if cx.dynamic)
        _fail("dynamic", c.dynamic, f"dynamic dims need a context of {dynamic_contexts}, not {c.context}")
    least = 5 if context.pools else 2  # a 3x3/2 pool of 5 gives 2
    if c.dynamic_spatial and min(output_size(c)) < least:
        _fail(
            "dynamic",
            c.dynamic,
            f"dynamic spatial dims need every conv output size >= {least} in context "
            f"{c.context}, not {output_size(c)} (torch.export specializes a dim whose example size is 1)",
        )
    if c.size_step > 1 and any(size % c.size_step for size in c.input_size):
        _fail("dynamic", c.dynamic, f"needs every input size a multiple of {c.size_step}, not {c.input_size}")
    if c.dynamic_batch and c.batch < 2:
        _fail(
            "dynamic", c.dynamic, "a dynamic batch needs an example batch >= 2 (torch.export specializes a size-1 dim)"
        )
    if not isinstance(c.bias, bool):
        _fail("bias", c.bias, "must be a bool")
    if not isinstance(c.transposed, bool):
        _fail("transposed", c.transposed, "must be a bool")

    if c.in_channels % c.groups:
        _fail("groups", c.groups, f"must divide in_channels={c.in_channels}")
    if c.out_channels % c.groups:
        _fail("groups", c.groups, f"must divide out_channels={c.out_channels}")

    if c.transposed:
        if isinstance(c.padding, str):
            _fail("padding", c.padding, "a transposed conv takes integer padding only")
        if c.padding_mode != "zeros":
            _fail("padding_mode", c.padding_mode, "a transposed conv supports only zeros")
        for op, s, d in zip(c.output_padding, c.stride, c.dilation):
            if op >= max(s, d):
                _fail(
                    "output_padding",
                    c.output_padding,
                    "each entry must be smaller than max(stride, dilation) of its dim",
                )
    elif any(c.output_padding):
        _fail("output_padding", c.output_padding, "only a transposed conv has output padding")

    if c.padding == "same" and any(s != 1 for s in c.stride):
        _fail("padding", c.padding, "'same' requires stride 1 in every dim")

    if c.padding_mode in ("reflect", "circular"):
        for (before, after), L in zip(c.explicit_padding(), c.input_size):
            limit = L - 1 if c.padding_mode == "reflect" else L
            if max(before, after) > limit:
                _fail(
                    "padding",
                    c.padding,
                    f"padding_mode={c.padding_mode} needs padding <= {limit} for input size {L}",
                )

    for i, (size, L) in enumerate(zip(output_size(c), c.input_size)):
        if size < 1:
            _fail(
                "kernel",
                c.kernel,
                f"output size in dim {i} would be {size}; it must be >= 1 "
                f"(input {L}, padding {c.explicit_padding()[i]}, dilation {c.dilation[i]})",
            )

    moved = elements(c)
    if moved > MAX_CASE_ELEMENTS:
        raise ConfigError(
            f"invalid config {c.batch}x{c.in_channels}->{c.out_channels} channels at "
            f"{'x'.join(map(str, c.input_size))}: it moves {moved:,} elements (input, weight, output; about "
            f"{moved * BYTES_PER_ELEMENT / 2**30:,.0f} GiB in a worker), over the limit of {MAX_CASE_ELEMENTS:,} "
            "(harness/policy/limits.py)"
        )

    rule = context.check(c)
    if rule:
        _fail("context", c.context, rule)


def elements(c) -> int:
    """Elements a case moves: its input, weight and output tensors (from the config alone, nothing allocated)."""
    weights = c.out_channels * (c.in_channels // c.groups) * math.prod(c.kernel)
    return (
        c.batch * c.in_channels * math.prod(c.input_size)
        + weights
        + c.batch * c.out_channels * math.prod(output_size(c))
    )
