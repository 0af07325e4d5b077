"""The parts of the context grammar that carry numbers: its activations and its pools.

Each activation and each pool holds what the judge's rules need of it (see
`harness.contexts.grammar` for the rules): an activation its Lipschitz
constant, the magnitude of its result and the roundings of its lowering; a
pool its window, the output size torch gives and the bound of its output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.contexts.base import F, torch

CLAMP = (-1.0, 2.0)  # a clamp that is neither relu nor relu6 nor hardtanh: both bounds bite on unit data


@dataclass(frozen=True)
class Activation:
    """An activation and what the judge needs of it (see the module docstring).

    `lipschitz`: max |f'| over the reals (silu 1.0998 at y = 2.40, gelu 1.1290 at y = 1.41 and its tanh form
    within 1e-3 of it, hardswish 1.5 at y = 3, checked against the functions in tests). `cap`: None when
    |f(y)| <= |y|, else the constant its rounded results are measured against. `roundings`: rounded results
    of its lowering in the output's format, each a unit of the rule: an inexact constant (1/6, 0.01, 1/sqrt(2))
    is one more. `aten`: the op the quantized model keeps for it (its own output quantization); None for a
    clamp the quantizer fuses into the conv's output."""

    lipschitz: float = 1.0
    cap: float | None = None
    roundings: int = 0
    aten: str | None = None
    kwargs: tuple = ()

    def __call__(self, name: str, y):
        if name == "clamp":
            return torch.clamp(y, *CLAMP)
        fn = {
            "sigmoid": torch.sigmoid,
            "tanh": torch.tanh,
            "lrelu": F.leaky_relu,
            "lrelu01": F.leaky_relu,
            "gelutanh": F.gelu,
        }.get(name) or getattr(F, name)
        return fn(y, **dict(self.kwargs))

    def bound(self, b):
        return self.lipschitz * b + (self.cap or 0.0)

    @property
    def units(self) -> int:
        return self.roundings if self.cap is not None else math.ceil(self.roundings / self.lipschitz)


ACTIVATIONS = {
    "relu": Activation(),
    "relu6": Activation(),
    "hardtanh": Activation(),
    "clamp": Activation(),
    "sigmoid": Activation(0.25, 1.0, 1, "sigmoid"),  # its evaluation: a few half-ulps of a result in (0, 1)
    "silu": Activation(1.0998, None, 2, "silu"),  # y * sigmoid(y): the sigmoid, the product
    "hardswish": Activation(1.5, None, 4, "hardswish"),  # y * relu6(y + 3) / 6: the add, the product, 1/6 twice
    "hardsigmoid": Activation(1 / 6, 1.0, 3, "hardsigmoid"),  # relu6(y + 3) / 6: the add, 1/6 twice
    "lrelu": Activation(1.0, None, 2, "leaky_relu"),  # 0.01 * y: the constant, the product
    "lrelu01": Activation(1.0, None, 2, "leaky_relu", (("negative_slope", 0.1),)),
    "gelu": Activation(1.1290, None, 5, "gelu"),  # y/2 (1 + erf(y/sqrt 2)): 1/sqrt 2 twice, erf, the add, product
    # y/2 (1 + tanh(a)), a = sqrt(2/pi) (y + 0.044715 y^3): a's five roundings reach the output through
    # y/2 sech^2(a) a, at most 0.23 |y| per unit of a, so two units; tanh, the add, the product
    "gelutanh": Activation(1.1290, None, 5, "gelu", (("approximate", "tanh"),)),
    "tanh": Activation(1.0, None, 1, "tanh"),
    "elu": Activation(1.0, 1.0, 2, "elu"),  # exp(y) - 1 for y < 0: exp's rounding is absolute after the subtraction
}


@dataclass(frozen=True)
class Pool:
    """A pooling as real networks use it; the parameters SizeAdjustInputPass reads (padding, ceil_mode,
    the argument count of the edge op) differ between them."""

    max: bool
    kernel: int
    stride: int
    padding: int = 0
    ceil: bool = False
    defaults: bool = False  # an average pool called with torch's defaults (count_include_pad), as DenseNet does
    stride_given: bool = True  # False: called without a stride, which then defaults to the kernel (VGG's pools)

    def __call__(self, y):
        if not self.stride_given:
            return (F.max_pool2d if self.max else F.avg_pool2d)(y, self.kernel)
        if self.max:
            return F.max_pool2d(y, self.kernel, self.stride, self.padding, ceil_mode=self.ceil)
        if self.defaults:
            return F.avg_pool2d(y, self.kernel, self.stride, self.padding)
        return F.avg_pool2d(y, self.kernel, self.stride, self.padding, ceil_mode=self.ceil, count_include_pad=False)

    def bound(self, y):
        """A max of the bounds over the same windows bounds a max and an average of the values."""
        return F.max_pool2d(y, self.kernel, self.stride, self.padding, ceil_mode=self.ceil)

    @property
    def keeps_size(self) -> bool:
        """Stride 1 and a pad of half the (odd) kernel: the output has the input's size."""
        return self.stride == 1 and self.kernel == 2 * self.padding + 1 and self.stride_given

    @property
    def least(self) -> int:
        """The smallest input it takes: one whole window, and at least 3x3 as the contexts always asked."""
        return max(3, self.kernel - 2 * self.padding)

    def size(self, n: int) -> int:
        """torch's output size (with ceil_mode, a window must start inside the input or its left pad)."""
        span = n + 2 * self.padding - self.kernel
        out = (-(-span // self.stride) if self.ceil else span // self.stride) + 1
        return out - 1 if self.ceil and (out - 1) * self.stride >= n + self.padding else out

    def window(self, spatial) -> int:
        """The most elements one output averages (0 for a max pool: it rounds nothing)."""
        return 0 if self.max else self.kernel * self.kernel


@dataclass(frozen=True)
class GlobalPool:
    """A global average pool to 1x1: `adaptive_avg_pool2d(1)`, or `mean((2, 3), keepdim=True)` (`mean`)."""

    mean: bool = False
    max: bool = False
    ceil: bool = False
    stride: int = 1
    keeps_size: bool = False
    least: int = 1

    def __call__(self, y):
        return y.mean((2, 3), keepdim=True) if self.mean else F.adaptive_avg_pool2d(y, 1)

    def bound(self, y):
        """|mean(y)| <= mean(|y|) <= mean(bound), and the mean of the errors is within the mean of their limits."""
        return F.adaptive_avg_pool2d(y, 1)

    def size(self, n: int) -> int:
        return 1

    def window(self, spatial) -> int:
        return math.prod(spatial)


POOLS = {
    "gap": GlobalPool(),
    "gapmean": GlobalPool(mean=True),
    "maxpool": Pool(True, 3, 2),
    "avgpool": Pool(False, 3, 2),
    "maxpool3p1": Pool(True, 3, 2, 1),
    "maxpool3ceil": Pool(True, 3, 2, 0, True),
    "avgpool2": Pool(False, 2, 2, defaults=True),
    "maxpool5p2": Pool(True, 5, 1, 2),
    "avgpool2ceil": Pool(False, 2, 2, 0, True),
    "avgpool5s3": Pool(False, 5, 3, defaults=True),
    "maxpool3s3p1": Pool(True, 3, 3, 1),
    "maxpool2": Pool(True, 2, 2, stride_given=False),
    "avgpool3s1p1": Pool(False, 3, 1, 1, defaults=True),
}
