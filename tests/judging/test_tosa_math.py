"""The TOSA RESCALE arithmetic against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from harness.judging.oracles import IntReference
from harness.judging.spec_math import apply_scale, multiplier_shift, multiplier_shifts, rescale


@pytest.mark.parametrize(
    "scale, bits, expected",
    [
        (0.5, 32, (1 << 30, 31)),  # 2^30 * 2^-31
        (1.0, 32, (1 << 30, 30)),
        (0.75, 16, (24576, 15)),  # 0.75 * 2^15, shift 15
        (0.1, 32, (1717986918, 34)),  # round(0.8 * 2^31) * 2^-34
        (1 - 2.0**-40, 32, (1 << 30, 30)),  # mantissa rounds up to 1.0: renormalized
        (2.0**-40, 32, (1 << 22, 62)),  # shift 70 capped at 62: the multiplier gives up 8 bits
    ],
)
def test_multiplier_shift(scale, bits, expected):
    m, s = multiplier_shift(scale, bits)
    assert (m, s) == expected
    assert abs(m * 2.0**-s - scale) <= scale * 2.0 ** -(bits - 2)


def test_unrepresentable_scale_is_refused():
    with pytest.raises(ValueError, match="shift"):
        multiplier_shift(2.0**31, 32)
    with pytest.raises(ValueError, match="positive"):
        multiplier_shift(0.0, 32)


def test_single_round_ties_go_towards_plus_infinity():
    half = (1 << 30, 31)  # x * 0.5
    got = apply_scale(np.array([3, -3, 5, -5, 2, -2, 1, -1]), *half)
    assert got.tolist() == [2, -1, 3, -2, 1, -1, 1, 0]


def test_apply_scale_matches_exact_rounding_off_ties():
    rng = np.random.default_rng(0)
    values = rng.integers(-(1 << 24), 1 << 24, 10_000)
    m, s = multiplier_shift(0.0123, 32)
    got = apply_scale(values, m, s)
    exact = np.floor(values * (m / 2.0**s) + 0.5)
    assert np.array_equal(got, exact.astype(np.int64))


def test_rescale_saturates_and_offsets_per_channel():
    acc = np.array([[[1000], [-1000], [10]], [[-7], [7], [0]]])  # (N=2, C=3, W=1)
    codes, mult, shift = rescale(acc, [1.0, 1.0, 0.5], 0, -3, -128, 127, 32)
    assert codes[:, :, 0].tolist() == [[127, -128, 2], [-10, 4, -3]]
    assert (mult, shift) == ([1 << 30] * 3, [30, 30, 31])


def test_int48_uses_16_bit_multipliers():
    codes, mult, shift = rescale(np.array([[[123456789]]]), [2.0**-12], 0, 0, -32767, 32767, 16)
    assert mult == [1 << 14] and shift == [26] and codes.item() == 30141  # 123456789 / 4096 = 30140.8


def test_a_scale_halfway_between_two_multipliers_allows_both():
    """Seen on the 1.5.1 nightly (an a16w8 depthwise conv1d): in and out scales 2**-12 and a float32 weight
    scale of 16 significant bits put channel 3's 16-bit multiplier exactly at 22422.5; ExecuTorch rounds it to
    even (22422), the oracle rounded up (22423), and one output element differed by one LSB."""
    tie = 0.005345940589904785  # 44845 * 2**-23: the weight scale the quantizer chose
    assert multiplier_shifts(tie, 16) == ((22423, 22), (22422, 22))
    assert round(tie * 2**22) == 22422  # Python's round, as ExecuTorch computes it: half to even
    assert multiplier_shift(tie, 16) == (22423, 22)
    assert multiplier_shifts(0.0123, 32) == (multiplier_shift(0.0123, 32),)  # off a tie: one answer
    acc = np.array([[[1 << 22]]])  # one unit of 2**-22: the two multipliers themselves
    up, _, _ = rescale(acc, [tie], 0, 0, -32767, 32767, 16)
    down, mult, _ = rescale(acc, [tie], 0, 0, -32767, 32767, 16, tie_down=True)
    assert mult == [22422] and (up.item(), down.item()) == (22423, 22422)


def test_a_tied_channel_is_judged_against_the_choice_its_output_made_and_no_other_channel_is():
    codes = np.array([[[10, 11], [20, 21]]])  # (N=1, C=2, W=2)
    lower = np.array([[[10, 11], [20, 20]]])  # channel 1 with the lower of its two multipliers
    ref = IntReference(codes, codes, (1, 1), (2, 2), 16, lower, (1,))
    assert ref.for_output(lower).tolist() == lower.tolist()  # the lower choice, all through channel 1
    assert ref.for_output(codes).tolist() == codes.tolist()
    off = np.array([[[9, 11], [20, 20]]])  # channel 0 is not tied: one LSB there stays off
    assert ref.for_output(off)[0, 0].tolist() == [10, 11]
    assert IntReference(codes, codes, (1, 1), (2, 2), 16).for_output(lower) is codes
    one_scale = IntReference(codes, codes, (1,), (2,), 16, lower, ())  # per tensor: one choice for all channels
    assert one_scale.for_output(lower).tolist() == lower.tolist()
    assert one_scale.for_output(np.array([[[10, 11], [21, 20]]])).tolist() == codes.tolist()  # nearer to up
