"""Deterministic weights and inputs for a case, from (descriptor, seed) alone.

Every tensor comes from its own torch CPU generator seeded by a SHA-256 of the
descriptor, the seed and the tensor's purpose, so it is identical in every
process (pytest -n 0 or -n auto, the CLI, a repro next month) and independent
of the order in which cases run.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

from harness.config import ConvConfig


@dataclass(frozen=True)
class CaseTensors:
    """Model parameters and the sample input of one case (all fp32)."""

    inputs: tuple[torch.Tensor, ...]
    weight: torch.Tensor
    bias: torch.Tensor | None


def generator(descriptor: str, seed: int, purpose: str) -> torch.Generator:
    digest = hashlib.sha256(f"{descriptor}|{seed}|{purpose}".encode()).digest()
    g = torch.Generator(device="cpu")
    g.manual_seed(int.from_bytes(digest[:8], "little") & ((1 << 63) - 1))
    return g


def weight_shape(c: ConvConfig) -> tuple[int, ...]:
    if c.transposed:
        return (c.in_channels, c.out_channels // c.groups, *c.kernel)
    return (c.out_channels, c.in_channels // c.groups, *c.kernel)


def input_shape(c: ConvConfig) -> tuple[int, ...]:
    return (c.batch, c.in_channels, *c.input_size)


def fan_in(c: ConvConfig) -> int:
    """Products summed into one output: the dot-product length KS."""
    k = 1
    for v in c.kernel:
        k *= v
    return k * (c.in_channels // c.groups)


def make_tensors(c: ConvConfig, seed: int) -> CaseTensors:
    """Tensors for data set `c.dataset`; weights scaled so outputs are O(1)."""
    d = c.descriptor
    if c.dataset != "normal":  # config validation keeps this unreachable
        raise ValueError(f"unknown data set {c.dataset!r}")
    x = torch.randn(input_shape(c), generator=generator(d, seed, "input"))
    w = torch.randn(weight_shape(c), generator=generator(d, seed, "weight"))
    w = w / fan_in(c) ** 0.5
    b = None
    if c.bias:
        b = 0.5 * torch.randn((c.out_channels,), generator=generator(d, seed, "bias"))
    return CaseTensors(inputs=(x,), weight=w, bias=b)
