"""Integer arithmetic of the TOSA 1.0 specification that the oracles reproduce.

Written from the specification's pseudocode (RESCALE, apply_scale_32 and
apply_scale_16, precision scaling), not from any implementation, so that the
integer-exact oracle is an independent witness of what a conforming
lowering must output.
"""

from __future__ import annotations

import math

import numpy as np


def multiplier_shift(scale: float, bits: int) -> tuple[int, int]:
    """(multiplier, shift) with scale ~= multiplier * 2**-shift (TOSA precision scaling).

    The multiplier is normalized to `bits - 1` fraction bits:
    2**(bits-2) <= multiplier < 2**(bits-1) (32-bit: [2**30, 2**31); 16-bit:
    [2**14, 2**15)), rounded to nearest, a tie upwards (`multiplier_shifts` gives
    both). Shifts above 62 give up multiplier bits (tiny scales); a shift below 2
    cannot be represented.
    """
    return multiplier_shifts(scale, bits)[0]


def multiplier_shifts(scale: float, bits: int) -> tuple[tuple[int, int], ...]:
    """Every (multiplier, shift) the specification allows for `scale`: the nearest one, or, when `scale` lies
    exactly halfway between two (a scale with few significant bits, as a16w8's 16-bit multiplier meets), both,
    the upper first. The specification asks multiplier * 2**-shift = scale and says nothing of a tie; ExecuTorch
    rounds it half to even (Python's round), the oracle rounded it up, and a conforming lowering may do either."""
    if bits not in (16, 32):
        raise ValueError(f"scale width must be 16 or 32 bits, got {bits}")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    one = 1 << (bits - 1)
    mantissa, exponent = math.frexp(scale)  # scale = mantissa * 2**exponent, 0.5 <= mantissa < 1
    scaled = mantissa * one  # exact: a power-of-two product of a double
    lower = math.floor(scaled)
    rounded = (lower + 1, lower) if scaled - lower == 0.5 else (math.floor(scaled + 0.5),)
    return tuple(_normalized(m, exponent, bits, scale) for m in rounded)


def _normalized(multiplier: int, exponent: int, bits: int, scale: float) -> tuple[int, int]:
    one = 1 << (bits - 1)
    if multiplier == one:
        multiplier //= 2
        exponent += 1
    shift = (bits - 1) - exponent
    if shift > 62:
        multiplier >>= min(bits - 1, shift - 62)
        shift = 62
    if shift < 2:
        raise ValueError(f"scale {scale} needs shift {shift} < 2: not representable in TOSA RESCALE")
    return multiplier, shift


def apply_scale(value: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """TOSA apply_scale_32 / apply_scale_16 with SINGLE_ROUND, elementwise on int64.

    result = (value * multiplier + 2**(shift-1)) >> shift, an arithmetic shift,
    so a tie (fraction exactly 1/2) rounds towards +infinity.
    `multiplier` and `shift` broadcast against `value` (per channel).
    """
    value = np.asarray(value, dtype=np.int64)
    multiplier = np.asarray(multiplier, dtype=np.int64)
    shift = np.asarray(shift, dtype=np.int64)
    rounding = np.left_shift(np.int64(1), shift - 1)
    return np.right_shift(value * multiplier + rounding, shift)


def rescale(
    value: np.ndarray,
    scales: list[float],
    input_zp: int,
    output_zp: int,
    qmin: int,
    qmax: int,
    bits: int,
    channel_axis: int = 1,
    tie_down: bool = False,
) -> tuple[np.ndarray, list[int], list[int]]:
    """TOSA RESCALE of an accumulator to the output type, per channel on `channel_axis`.

    Returns (codes, multipliers, shifts). `bits` is 32 for a 32-bit
    accumulator and 16 for INT48, where the specification requires a
    16-bit multiplier (scale32 = false). `tie_down`: a scale halfway between two
    multipliers takes the lower one (`multiplier_shifts`).
    """
    pairs = [multiplier_shifts(s, bits)[-1 if tie_down else 0] for s in scales]
    shape = [1] * np.ndim(value)
    if len(pairs) > 1:
        shape[channel_axis] = len(pairs)
    mult = np.array([m for m, _ in pairs], dtype=np.int64).reshape(shape)
    shift = np.array([s for _, s in pairs], dtype=np.int64).reshape(shape)
    scaled = apply_scale(np.asarray(value, dtype=np.int64) - input_zp, mult, shift)
    codes = np.clip(scaled + output_zp, qmin, qmax)
    return codes, [m for m, _ in pairs], [s for _, s in pairs]
