"""The conv configuration.

A `ConvConfig` names one convolution case completely; its one-line descriptor
(`harness.descriptor`) is the case's identity everywhere. A config is valid
when it is made (`harness.validation`).

This module imports neither torch nor executorch (the context table it reads
loads torch only when a graph is built).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from harness.contexts.grammar import POOLS
from harness.contexts.names import CONTEXTS
from harness.descriptor import ConfigError, format_descriptor, parse_fields
from harness.policy.schemes import SCHEMES
from harness.validation import CAPTURED, elements, output_size, validate

__all__ = ["CAPTURED", "ConfigError", "ConvConfig", "Padding", "elements", "parse_descriptor"]

Padding = tuple[int, ...] | str


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
        return self.dynamic in (
            "spatial",
            "spatial-wide",
            "all",
            "spatial-tosa10",
            "all-tosa10",
            "spatial-even",
            "spatial-even-tosa10",
        )

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
            self.size_step % s and before + after > 0
            for s, (before, after) in zip(self.stride, self.explicit_padding())
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
        for n, step in zip(output_size(self), self.output_steps):
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
        return output_size(self)

    def remainders(self) -> tuple[tuple[int, int], ...]:
        """(remainder, pad) per spatial dim of a forward conv with integer padding
        (empty otherwise): TOSA needs (L + 2p - d(k-1) - 1) % s == 0, and the
        backend trims the trailing pad when 0 < remainder <= pad
        (RewriteConvPass) or slices the input when remainder > pad
        (SizeAdjustInputPass)."""
        if self.transposed or isinstance(self.padding, str):
            return ()
        return tuple(
            ((L + 2 * p - d * (k - 1) - 1) % s, p)
            for L, p, d, k, s in zip(self.input_size, self.padding, self.dilation, self.kernel, self.stride)
        )

    def size_adjustments(self) -> tuple[str, ...]:
        """Per spatial dim, what the backend does to make the windows fit:
        'none', 'trim' (the trailing pad) or 'slice' (the input); empty as for `remainders`."""
        return tuple("trim" if 0 < r <= p else "slice" if r > p else "none" for r, p in self.remainders())

    @functools.cached_property
    def descriptor(self) -> str:
        """The canonical descriptor, formatted once per config (tiers format it ~20 times a case)."""
        return format_descriptor(self)

    def replace(self, **changes) -> ConvConfig:
        return dataclasses.replace(self, **changes)

    def fields_dict(self) -> dict:
        """Plain JSON-ready dict of the fields (tuples as lists)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


def parse_descriptor(text: str) -> ConvConfig:
    """Parse a descriptor back to its config; ConfigError names the bad token or rule."""
    return ConvConfig(**parse_fields(text))  # type: ignore[arg-type]
