"""The `structural` strategy: every structural class of a small 1D and 2D forward conv, one case each.

Per spatial axis a setting is a kernel 1-5 (even ones too), stride 1-4,
padding 0..k-1 and dilation 1-3, and its remainder kind (`harness.cases.classes`:
none, trim1, trim>1, slice) follows from the input size, so each setting gets
the smallest sizes that give each kind it can have. 1D convs take every
setting; 2D convs take each setting on H alone and on W alone (the other axis
at a plain k3 s1 p1 d1) and on both axes jointly. Each case runs in one scheme,
taken in turn from the graph schemes, so every scheme meets every kind of
setting without multiplying the tier by six. Channels stay small (4 -> 4,
bias): the classes, not the sizes, are the point.

Transposed 2D convs get the same treatment (`transposed`): per axis kernel
1-5, stride 1-4, padding 0..k-1 and output padding 0..s-1 (dilation is a
documented rejection), on H alone, W alone and jointly, the group kind and
bias taking turns (ungrouped with bias, two groups, no bias) as the schemes do.
"""

from __future__ import annotations

from harness.cases.classes import remainder_kind
from harness.config import ConvConfig, parse_descriptor
from harness.policy.schemes import GRAPH_SCHEMES

KERNELS, STRIDES, DILATIONS = range(1, 6), range(1, 5), range(1, 4)
PLAIN = (3, 1, 1, 1, 8)  # k, s, p, d, size of the axis not under test: windows fit, nothing to adjust


def settings() -> list[tuple[int, int, int, int]]:
    """Every (kernel, stride, padding, dilation) of one axis."""
    return [(k, s, p, d) for k in KERNELS for s in STRIDES for p in range(k) for d in DILATIONS]


def sizes(k: int, s: int, p: int, d: int) -> dict[str, int]:
    """Remainder kind -> the smallest input size (at least the dilated kernel, and 5) that gives it."""
    smallest = max(5, d * (k - 1) + 1 - 2 * p)
    out: dict[str, int] = {}
    for size in range(smallest, smallest + s):  # one period of the remainder covers every kind
        out.setdefault(remainder_kind((size + 2 * p - d * (k - 1) - 1) % s, p), size)
    return out


def _axes() -> list[tuple[int, int, int, int, int]]:
    """(k, s, p, d, size) of one axis: every setting at each of its remainder kinds' sizes."""
    return [(k, s, p, d, n) for k, s, p, d in settings() for n in sizes(k, s, p, d).values()]


def _descriptor(axes: list[tuple[int, int, int, int, int]], scheme: str) -> str:
    rank = len(axes)

    def field(i: int) -> str:
        return "x".join(str(a[i]) for a in axes)

    return (
        f"conv{rank}d_n1_ic4_oc4_g1_i{field(4)}_k{field(0)}_s{field(1)}_p{field(2)}_d{field(3)}_b1"
        f"_pmzeros_q{scheme}_dsnormal_cxnone"
    )


def structural(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    """1D: every setting and kind; 2D: on H alone, on W alone, jointly; schemes in turn."""
    axes = _axes()
    shapes = [[a] for a in axes] + [[a, PLAIN] for a in axes] + [[PLAIN, a] for a in axes] + [[a, a] for a in axes]
    return [parse_descriptor(_descriptor(axes, schemes[i % len(schemes)])) for i, axes in enumerate(shapes)]


def transposed_settings() -> list[tuple[int, int, int, int]]:
    """Every (kernel, stride, padding, output padding) of one axis of a transposed conv."""
    return [(k, s, p, op) for k in KERNELS for s in STRIDES for p in range(k) for op in range(s)]


TRANSPOSED_PLAIN = (3, 1, 1, 0)
TRANSPOSED_SIZE = 5
TRANSPOSED_TURNS = ((1, 1), (2, 1), (1, 0))  # (groups, bias) in turn


def transposed(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    """tconv2d: each axis setting on H alone, on W alone and jointly; schemes, groups and bias in turn."""
    axes = transposed_settings()
    shapes = [(a, TRANSPOSED_PLAIN) for a in axes] + [(TRANSPOSED_PLAIN, a) for a in axes] + [(a, a) for a in axes]
    out = []
    for i, (h, w) in enumerate(shapes):
        groups, bias = TRANSPOSED_TURNS[(i // len(schemes)) % len(TRANSPOSED_TURNS)]  # not in step with the schemes
        out.append(
            parse_descriptor(
                f"tconv2d_n1_ic4_oc4_g{groups}_i{TRANSPOSED_SIZE}x{TRANSPOSED_SIZE}_k{h[0]}x{w[0]}_s{h[1]}x{w[1]}"
                f"_p{h[2]}x{w[2]}_d1x1_op{h[3]}x{w[3]}_b{bias}_pmzeros_q{schemes[i % len(schemes)]}_dsnormal_cxnone"
            )
        )
    return out
