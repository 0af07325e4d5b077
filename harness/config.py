"""The conv configuration and its validation.

A `ConvConfig` names one convolution case completely; its one-line descriptor
(`harness.descriptor`) is the case's identity everywhere. Validation follows
torch's own rules and the facts of the scheme table and the graph contexts,
and refuses an impossible config with one line naming the field, the value
and the rule.

This module imports neither torch nor executorch (the context table it reads
loads torch only when a graph is built).
"""

from __future__ import annotations

import functools

import dataclasses
import math
from dataclasses import dataclass
from typing import Union

from harness.contexts.grammar import POOLS
from harness.contexts.names import CONTEXTS, context_error
from harness.descriptor import ConfigError, format_descriptor, parse_fields
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
DYNAMICS = ("none", "batch", "spatial", "spatial-wide", "all", "batch-tosa10", "spatial-tosa10", "all-tosa10",
            "spatial-even", "spatial-even-tosa10")

Padding = Union[tuple[int, ...], str]


@dataclass(frozen=True)
class ConvConfig:
    """One convolution case; every tuple field has one entry per spatial dim."""

    rank: int
    in_channels: int
    out_channels: int
    input_size: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...] = ()
    padding: Padding = ()
    dilation: tuple[int, ...] = ()
    output_padding: tuple[int, ...] = ()
    transposed: bool = False
    batch: int = 1
    groups: int = 1
    bias: bool = True
    padding_mode: str = "zeros"
    scheme: str = "fp32"
    dataset: str = "normal"
    context: str = "none"
    dynamic: str = "none"

    def __post_init__(self) -> None:
        # Fill per-dim defaults so `ConvConfig(rank=2, ..., kernel=(3, 3))` is
        # complete; an explicit empty tuple means "default" (1, 0, 1, 0).
        for name, default in (
            ("stride", 1),
            ("padding", 0),
            ("dilation", 1),
            ("output_padding", 0),
        ):
            value = getattr(self, name)
            if value == ():
                object.__setattr__(self, name, (default,) * self.rank)
            elif isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        for name in ("input_size", "kernel"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        validate(self)

    # -- derived facts -----------------------------------------------------
    @property
    def is_quantized(self) -> bool:
        return SCHEMES[self.scheme].quantized

    @property
    def fan_in(self) -> int:
        """Products summed into one output: the dot-product length KS (KH*KW*IC per group, x KD in 3D)."""
        k = 1
        for v in self.kernel:
            k *= v
        return k * (self.in_channels // self.groups)

    @property
    def is_depthwise(self) -> bool:
        """As RewriteConvPass decides: groups == in_channels and a whole channel
        multiplier, rank 1 or 2 (a single input channel counts too)."""
        return (
            not self.transposed
            and self.rank < 3
            and self.groups == self.in_channels
            and self.out_channels % self.in_channels == 0
        )

    @property
    def asymmetric_padding(self) -> bool:
        """Torch pads some dim more after than before ('same' with an odd total)."""
        return any(before != after for before, after in self.explicit_padding())

    @property
    def dynamic_spatial(self) -> bool:
        return self.dynamic in ("spatial", "spatial-wide", "all", "spatial-tosa10", "all-tosa10", "spatial-even",
                                "spatial-even-tosa10")

    @property
    def size_step(self) -> int:
        """The step between the sizes a dynamic spatial dim may take."""
        return 2 if self.dynamic.startswith("spatial-even") else 1

    @property
    def dynamic_batch(self) -> bool:
        return self.dynamic in ("batch", "all", "batch-tosa10", "all-tosa10")

    @property
    def shape_extension(self) -> bool:
        """Lowered for TOSA 1.1 with the shape extension (dynamic kinds but `-tosa10`)."""
        return self.dynamic != "none" and not self.dynamic.endswith("-tosa10")

    @property
    def runtime_trim(self) -> bool:
        """A dynamic spatial dim whose stride does not divide the size step:
        how much of the input the strided windows leave over depends on the
        run's size, so the backend computes the conv's pad and input slice in
        the graph (shape ops)."""
        return self.dynamic_spatial and any(self.size_step % s for s in self.stride)

    @property
    def runtime_pad(self) -> bool:
        """`runtime_trim` on a dim that is also padded: the backend inserts a
        PAD whose amount is computed at run time."""
        return self.dynamic_spatial and any(
            self.size_step % s and before + after > 0 for s, (before, after) in zip(self.stride, self.explicit_padding())
        )

    @property
    def symbolic_slice(self) -> bool:
        """A dynamic spatial dim whose leftover (constant: the stride divides
        the size step) exceeds the padding: SizeAdjustInputPass slices a
        fixed amount off a symbolic size."""
        if not self.dynamic_spatial or self.transposed or isinstance(self.padding, str):
            return False
        return any(s > 1 and not self.size_step % s and r > p for s, (r, p) in zip(self.stride, self.remainders()))

    @property
    def output_steps(self) -> tuple[int, ...]:
        """Per spatial axis, the step between the sizes the conv's output takes over a dynamic run: the size
        step over the stride, or 1 where the stride does not divide it (no steady step: counted as 1)."""
        return tuple(self.size_step // s if self.size_step % s == 0 else 1 for s in self.stride)

    @property
    def pool_slice(self) -> bool:
        """With dynamic spatial dims, the pool after the conv needs SizeAdjustInputPass to slice or pad its
        symbolic input: on some axis the rows its windows leave over, (n + 2p - k) % s for a pool input of
        size n, either change with the run's size (the conv's `output_steps` are not a multiple of the pool's
        stride) or, constant, exceed the pool's pad. A ceil_mode pool counts too: the partitioner's check
        (get_slices_pooling) does not read ceil_mode, so it refuses such a pool on TOSA 1.0 although
        SizeAdjustInputPass never slices one (is_valid_operator)."""
        if not self.dynamic_spatial or not CONTEXTS[self.context].pools:
            return False
        pool = POOLS[CONTEXTS[self.context].pool]
        # An average pool with torch's defaults counts its pad: DecomposeAvgPool2dPass pads the input instead.
        pad = 0 if pool.defaults else pool.padding
        for n, step in zip(_output_size(self), self.output_steps):
            if step % pool.stride or (n + 2 * pad - pool.kernel) % pool.stride > pad:
                return True
        return False

    @property
    def depth_multiplier(self) -> int:
        return self.out_channels // self.in_channels if self.is_depthwise else 0

    def explicit_padding(self) -> tuple[tuple[int, int], ...]:
        """(before, after) padding per spatial dim, as torch applies it."""
        if self.padding == "valid":
            return tuple((0, 0) for _ in range(self.rank))
        if self.padding == "same":
            pads = []
            for k, d in zip(self.kernel, self.dilation):
                total = d * (k - 1)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        return tuple((p, p) for p in self.padding)  # type: ignore[union-attr]

    def output_size(self) -> tuple[int, ...]:
        return _output_size(self)

    def remainders(self) -> tuple[tuple[int, int], ...]:
        """(remainder, pad) per spatial dim of a forward conv with integer padding
        (empty otherwise): TOSA needs (L + 2p - d(k-1) - 1) % s == 0, and the
        backend trims the trailing pad when 0 < remainder <= pad
        (RewriteConvPass) or slices the input when remainder > pad
        (SizeAdjustInputPass)."""
        if self.transposed or isinstance(self.padding, str):
            return ()
        return tuple(((L + 2 * p - d * (k - 1) - 1) % s, p)
                     for L, p, d, k, s in zip(self.input_size, self.padding, self.dilation, self.kernel, self.stride))

    def size_adjustments(self) -> tuple[str, ...]:
        """Per spatial dim, what the backend does to make the windows fit:
        'none', 'trim' (the trailing pad) or 'slice' (the input); empty as for `remainders`."""
        return tuple("trim" if 0 < r <= p else "slice" if r > p else "none" for r, p in self.remainders())

    @functools.cached_property
    def descriptor(self) -> str:
        """The canonical descriptor, formatted once per config (tiers format it ~20 times a case)."""
        return format_descriptor(self)

    def replace(self, **changes) -> "ConvConfig":
        return dataclasses.replace(self, **changes)

    def fields_dict(self) -> dict:
        """Plain JSON-ready dict of the fields (tuples as lists)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


def _output_size(c: ConvConfig) -> tuple[int, ...]:
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


def _check_dims(c: ConvConfig, field: str, minimum: int) -> None:
    value = getattr(c, field)
    if not isinstance(value, tuple) or len(value) != c.rank:
        _fail(field, value, f"needs {c.rank} value(s), one per spatial dim of a rank-{c.rank} conv")
    for v in value:
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            _fail(field, value, f"every entry must be an integer >= {minimum}")


def validate(c: ConvConfig) -> None:
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
        _fail("dataset", c.dataset, f"captured tensors are one conv's own: cx none and dy none, not cx {c.context} "
              f"dy {c.dynamic}")
    why = context_error(c.context)
    if why:
        raise ConfigError(why)
    _check_choice("dynamic", c.dynamic, DYNAMICS)
    context = CONTEXTS[c.context]
    if not SCHEMES[c.scheme].in_graphs and (c.context != "none" or c.dynamic != "none"):
        _fail("scheme", c.scheme, f"scheme {c.scheme} runs the conv alone and static (cx none, dy none), "
              f"not cx {c.context} dy {c.dynamic}")
    if c.dynamic != "none" and not context.dynamic:
        dynamic_contexts = ", ".join(name for name, cx in CONTEXTS.items() if cx.dynamic)
        _fail("dynamic", c.dynamic, f"dynamic dims need a context of {dynamic_contexts}, not {c.context}")
    least = 5 if context.pools else 2  # a 3x3/2 pool of 5 gives 2
    if c.dynamic_spatial and min(_output_size(c)) < least:
        _fail("dynamic", c.dynamic, f"dynamic spatial dims need every conv output size >= {least} in context "
              f"{c.context}, not {_output_size(c)} (torch.export specializes a dim whose example size is 1)")
    if c.size_step > 1 and any(size % c.size_step for size in c.input_size):
        _fail("dynamic", c.dynamic, f"needs every input size a multiple of {c.size_step}, not {c.input_size}")
    if c.dynamic_batch and c.batch < 2:
        _fail("dynamic", c.dynamic, "a dynamic batch needs an example batch >= 2 (torch.export specializes a size-1 dim)")
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

    for i, (size, L) in enumerate(zip(_output_size(c), c.input_size)):
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
            "(harness/policy/limits.py)")

    rule = context.check(c)
    if rule:
        _fail("context", c.context, rule)


def elements(c: ConvConfig) -> int:
    """Elements a case moves: its input, weight and output tensors (from the config alone, nothing allocated)."""
    weights = c.out_channels * (c.in_channels // c.groups) * math.prod(c.kernel)
    return c.batch * c.in_channels * math.prod(c.input_size) + weights + \
        c.batch * c.out_channels * math.prod(_output_size(c))


def parse_descriptor(text: str) -> ConvConfig:
    """Parse a descriptor back to its config; ConfigError names the bad token or rule."""
    return ConvConfig(**parse_fields(text))  # type: ignore[arg-type]
