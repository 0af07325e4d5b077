"""The `crossed` strategy: every per-axis structural class crossed with every group kind and with bias.

`structural` lets each axis setting meet one group kind and one bias; a fault
that shows only when bias is off on a depthwise conv, or when a pad reaches
past the kernel on a grouped one, has nowhere to show there. Here, per conv
kind, every axis class (`harness.cases.classes`: kernel, stride, padding,
dilation or output padding, and the remainder kind the input size gives)
meets every group kind and both biases, at every position:

* conv1d and conv2d: kernels 1-5, strides 1-4, dilations 1-3, padding 0..k
  (a pad equal to the kernel is one the pass must trim or keep whole) and,
  for a dilated kernel, the dilated extent minus one and the extent itself
  (the last pad whose rows still meet a tap, and the first whose border rows
  see only padding). 1D on its axis; 2D on H alone, W alone (the other axis a
  plain k3 s1 p1 d1) and on both.
* tconv2d: kernels 1-5, strides 1-4, padding 0..k-1, output padding 0..s-1,
  on H alone, W alone and both.
* conv3d: kernels 1-3, the same strides, dilations and pads, on D, H and W
  alone and on all three.

Group kinds (`GROUP_KINDS`): dense, depthwise with multiplier 1 and 2, and a
grouped conv (two groups); a 3D depthwise conv is decomposed like any grouped
one, and a transposed one is never depthwise. Each case runs in one graph
scheme, taken in turn so that every (group kind, bias) meets every scheme.
What the crossing leaves out on purpose is `LEFT_OUT`, with why; `python -m
harness list --classes` reports both.
"""

from __future__ import annotations

import functools

from harness.cases.structural import sizes
from harness.config import ConvConfig
from harness.policy.schemes import GRAPH_SCHEMES

KERNELS, STRIDES, DILATIONS = range(1, 6), range(1, 5), range(1, 4)
KERNELS_3D = range(1, 4)
# (in channels, out channels, groups) of each group kind; 4 channels keep a case cheap, the classes are the point
GROUP_KINDS = {"dense": (4, 4, 1), "depthwise-m1": (4, 4, 4), "depthwise-m2": (4, 8, 4), "grouped": (4, 4, 2)}
BIASES = (1, 0)
PLAIN = (3, 1, 1, 1)  # k, s, p, d of an axis not under test: windows fit, nothing to adjust
PLAIN_SIZE = {1: 8, 2: 8, 3: 5}
TRANSPOSED_PLAIN, TRANSPOSED_SIZE = (3, 1, 1, 0), 5

LEFT_OUT = {
    "dilation of a 1-tap kernel": "a kernel of 1 has a dilated extent of 1 whatever its dilation: one class",
    "a pad past the dilated extent": "every further pad row adds an output row that sees only padding, as the "
    "extent's own does, and each remainder kind the passes branch on is reached "
    "with pads up to the extent",
    "a transposed conv's dilation": "the backend documents it as unsupported (a rejection case in smoke)",
    "a transposed conv's pad of k or more": "a transposed conv's pad crops its full output (TOSA's out_pad is "
    "-pad): at stride 1 a pad of k leaves a 5-wide input 4 - k output "
    "rows, none for k of 4 or 5, and each row past k-1 crops one more row "
    "by the same arithmetic",
    "a transposed or 3D depthwise conv": "no TOSA op takes it: a transposed one with groups is a grouped "
    "conv, a 3D one is decomposed (both crossed as groups=channels)",
}


def pads(k: int, d: int) -> list[int]:
    """0..k, and for a dilated kernel its extent minus one and its extent."""
    extent = d * (k - 1) + 1
    return sorted(set(range(k + 1)) | ({extent - 1, extent} if d > 1 else set()))


def axis_settings(kernels=KERNELS) -> list[tuple[int, int, int, int, int]]:
    """(k, s, p, d, size) of one axis: every setting at the smallest size of each remainder kind it can have."""
    out = []
    for k in kernels:
        for s in STRIDES:
            for d in DILATIONS if k > 1 else (1,):
                for p in pads(k, d):
                    out += [(k, s, p, d, n) for n in sizes(k, s, p, d).values()]
    return out


def transposed_settings() -> list[tuple[int, int, int, int]]:
    return [(k, s, p, op) for k in KERNELS for s in STRIDES for p in range(k) for op in range(s)]


def positions(axes: list, rank: int, plain: tuple) -> list[list]:
    """Each axis setting alone on each axis (the others plain), and on every axis at once."""
    if rank == 1:
        return [[a] for a in axes]
    alone = [[a if i == j else plain for j in range(rank)] for i in range(rank) for a in axes]
    return alone + [[a] * rank for a in axes]


def _turns(shapes: list, schemes) -> list[tuple[list, str, tuple[int, int, int], int]]:
    """Each shape with every group kind and bias; schemes in turn, shifted by one every len(schemes) cases so
    that a scheme count equal to the turn count does not tie each (group kind, bias) to one scheme."""
    out = []
    for shape in shapes:
        for channels in GROUP_KINDS.values():
            for bias in BIASES:
                i = len(out)
                out.append((shape, schemes[(i + i // len(schemes)) % len(schemes)], channels, bias))
    return out


def forward(rank: int, schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    """Built as configs, not parsed from descriptors (a third of the time; the same validation)."""
    kernels = KERNELS_3D if rank == 3 else KERNELS
    plain = (*PLAIN, PLAIN_SIZE[rank])

    def axis(shape, i):
        return tuple(a[i] for a in shape)

    return [
        ConvConfig(
            rank,
            ic,
            oc,
            axis(shape, 4),
            axis(shape, 0),
            axis(shape, 1),
            axis(shape, 2),
            axis(shape, 3),
            groups=g,
            bias=bool(bias),
            scheme=scheme,
        )
        for shape, scheme, (ic, oc, g), bias in _turns(positions(axis_settings(kernels), rank, plain), schemes)
    ]


def transposed(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    return [
        ConvConfig(
            2,
            ic,
            oc,
            (TRANSPOSED_SIZE,) * 2,
            (h[0], w[0]),
            (h[1], w[1]),
            (h[2], w[2]),
            (1, 1),
            (h[3], w[3]),
            transposed=True,
            groups=g,
            bias=bool(bias),
            scheme=scheme,
        )
        for (h, w), scheme, (ic, oc, g), bias in _turns(positions(transposed_settings(), 2, TRANSPOSED_PLAIN), schemes)
    ]


def crossed(schemes=GRAPH_SCHEMES) -> list[ConvConfig]:
    return list(_crossed(tuple(schemes)))


@functools.lru_cache(maxsize=4)
def _crossed(schemes: tuple[str, ...]) -> tuple[ConvConfig, ...]:
    """32k frozen configs, parsed once a process (2 s)."""
    return tuple(forward(1, schemes) + forward(2, schemes) + transposed(schemes) + forward(3, schemes))


def group_label(c: ConvConfig) -> str:
    """The crossing's group kind of a config: dense, depthwise-m<multiplier> (groups = in channels) or grouped."""
    if c.groups == 1:
        return "dense"
    if c.groups == c.in_channels and c.out_channels % c.in_channels == 0:
        return f"depthwise-m{c.out_channels // c.in_channels}"
    return "grouped"


def _axis_class(k: int, s: int, p: int, d_or_op: int, kind: str, transposed: bool) -> str:
    return f"k{k}s{s}p{p}op{d_or_op}:-" if transposed else f"k{k}s{s}p{p}d{d_or_op}:{kind}"


@functools.lru_cache(maxsize=1)
def universe() -> dict[tuple[str, str], frozenset[tuple[str, str, int]]]:
    """(conv kind, position) -> every (axis class, group kind, bias) the crossing asks for."""
    out: dict[tuple[str, str], set] = {}
    labels = list(GROUP_KINDS)  # the names group_label gives their channels (tests check they agree)
    for rank, kernels in ((1, KERNELS), (2, KERNELS), (3, KERNELS_3D)):
        classes = {
            _axis_class(k, s, p, d, kind, False)
            for k in kernels
            for s in STRIDES
            for d in (DILATIONS if k > 1 else (1,))
            for p in pads(k, d)
            for kind in sizes(k, s, p, d)
        }
        for position in _position_names(rank):
            out[(f"conv{rank}d", position)] = frozenset((a, g, b) for a in classes for g in labels for b in BIASES)
    t_classes = {_axis_class(k, s, p, op, "-", True) for k, s, p, op in transposed_settings()}
    for position in _position_names(2):
        out[("tconv2d", position)] = frozenset((a, g, b) for a in t_classes for g in labels for b in BIASES)
    return out


def _position_names(rank: int) -> tuple[str, ...]:
    return {1: ("axis",), 2: ("H", "W", "both"), 3: ("D", "H", "W", "all")}[rank]


def _positions_of(c: ConvConfig, axes: tuple[str, ...]) -> list[tuple[str, str]]:
    """(position, axis class) pairs a config counts for: an axis alone with the others plain, or all alike."""
    names = _position_names(c.rank)
    if c.rank == 1:
        return [(names[0], axes[0])]
    plain = _axis_class(*TRANSPOSED_PLAIN, "-", True) if c.transposed else None
    out = []
    for i, a in enumerate(axes):
        others = [b for j, b in enumerate(axes) if j != i]
        if all(
            (b == plain) if plain else b.startswith(f"k{PLAIN[0]}s{PLAIN[1]}p{PLAIN[2]}d{PLAIN[3]}:") for b in others
        ):
            out.append((names[i], a))
    if len(set(axes)) == 1:
        out.append((names[-1], axes[0]))
    return out


def _seen(configs: list[ConvConfig]) -> dict[tuple[str, str], set[tuple[str, str, int]]]:
    """(conv kind, position) -> the (axis class, group kind, bias) the configs hold there."""
    from harness.cases.classes import axis_classes

    seen: dict[tuple[str, str], set] = {key: set() for key in universe()}
    for c in configs:
        if c.padding_mode != "zeros" or isinstance(c.padding, str):
            continue
        kind = f"{'t' if c.transposed else ''}conv{c.rank}d"
        axes = tuple(a.replace("d1op", "op") if c.transposed else a for a in axis_classes(c))
        for position, a in _positions_of(c, axes):
            if (kind, position) in seen:
                seen[(kind, position)].add((a, group_label(c), int(c.bias)))
    return seen


def coverage(configs: list[ConvConfig]) -> list[dict]:
    """Per (conv kind, position): how much of the crossing the configs cover, and a few triples they miss."""
    seen = _seen(configs)
    rows = []
    for (kind, position), triples in universe().items():
        missing = sorted(triples - seen[(kind, position)])
        rows.append(
            {
                "kind": kind,
                "position": position,
                "covered": len(triples) - len(missing),
                "expected": len(triples),
                "missing": missing[:3],
            }
        )
    return rows


def grid(configs: list[ConvConfig]) -> list[dict]:
    """The crossing as tables a reviewer can scan: per (conv kind, position), one row per kernel, stride and
    dilation (output padding for a transposed conv), one column per group kind and bias; each cell counts the
    axis classes (pads and remainder kinds) the configs cover of those the crossing asks for."""
    want, seen = universe(), _seen(configs)
    columns = [(g, b) for g in GROUP_KINDS for b in BIASES]
    tables = []
    for (kind, position), triples in want.items():
        rows: dict[str, dict[tuple[str, int], list[int]]] = {}
        for a, g, b in sorted(triples):
            key = _row_key(a)
            cell = rows.setdefault(key, {col: [0, 0] for col in columns})[(g, b)]
            cell[1] += 1
            cell[0] += (a, g, b) in seen[(kind, position)]
        tables.append(
            {
                "kind": kind,
                "position": position,
                "columns": columns,
                "rows": [(key, [tuple(cells[col]) for col in columns]) for key, cells in rows.items()],
            }
        )
    return tables


def _row_key(axis_class: str) -> str:
    """'k3s2p1d2:trim1' -> 'k3 s2 d2'; 'k3s2p1op1:-' -> 'k3 s2 op1': the row; pads and remainders fill it."""
    facts = axis_class.split(":")[0]
    k, rest = facts[1:].split("s", 1)
    s, rest = rest.split("p", 1)
    last = "op" + rest.split("op")[1] if "op" in rest else "d" + rest.split("d")[1]
    return f"k{k} s{s} {last}"
