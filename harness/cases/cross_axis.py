"""The `cross-axis` strategy: the axes of one conv in different classes at once, as a strength-2 covering array.

The crossing (`harness.cases.crossed`) varies one axis with the others plain, or
every axis alike: no two axes of a case ever differ in class, so a fault that
reads one axis's value for another's (H's stride in W's remainder, `shape[2]`
for `shape[3]`) has nowhere to show. Here each spatial axis is five facts -
kernel 1-7, stride 1 up to the kernel, dilation 1-3 while the dilated extent is
at most 13, the pad's class against the kernel (`PAD_CLASSES`) and the
remainder kind its input size gives (`harness.cases.classes`) - and a case is
one setting per axis with a group kind (dense, depthwise with multiplier 1, 2
or 3, grouped), a bias and a scheme. The array holds, for every two axes,
every pair of values of any fact of the one and any fact of the other (a
kernel of 7 on H with a slice on W, a stride of 5 on D with a dilation of 3 on
W, ...), and every value of every axis fact with every group kind, bias and
scheme: a strength-2 covering array over the axes' facts, built greedily from
a fixed seed (a pure function: the same cases in the same order everywhere).
Pairs of whole axis classes would be the full product of the 1,141 classes a
2D axis takes at those ranges (1.3 million cases); pairs of facts are the faults that read one
axis's fact for another's.

* conv2d over (H, W); conv3d over (D, H), (D, W) and (H, W), kernels 1-5 and
  extents up to 9 (a 7x7x7 kernel at its extents is hundreds of times a
  case's cost, and the 2D array already pairs kernels 6 and 7);
* tconv2d over (H, W): kernel, stride, the pad's class (0, inside, k-1) and
  the output padding's (0, s-1), dense or grouped (a transposed conv is never
  depthwise), at the crossing's 5x5 input.

`smoke_picks` takes from the array one case per cross-axis family: each pair of
remainder kinds on two axes (conv2d, conv3d), each pair of output-padding
classes (tconv2d).
"""

from __future__ import annotations

import functools
import itertools
import random
from dataclasses import dataclass

from harness.cases.classes import remainder_kind
from harness.cases.structural import sizes
from harness.config import ConfigError, ConvConfig
from harness.policy.schemes import GRAPH_SCHEMES

FACTS = ("kernel", "stride", "dilation", "pad", "remainder")
T_FACTS = ("kernel", "stride", "pad", "output_padding")
GROUP_KINDS = {  # (in channels, out channels, groups)
    "dense": (4, 4, 1),
    "depthwise-m1": (4, 4, 4),
    "depthwise-m2": (4, 8, 4),
    "depthwise-m3": (4, 12, 4),
    "grouped": (4, 4, 2),
}
T_GROUP_KINDS = ("dense", "grouped")
KERNELS = {2: range(1, 8), 3: range(1, 6)}
MAX_EXTENT = {2: 13, 3: 9}
T_KERNELS, T_SIZE = range(1, 8), 5
AXES = {2: ("H", "W"), 3: ("D", "H", "W")}
SEED = 0
CANDIDATES = 48  # random rows weighed per row chosen, beside one built for a pair still missing


def pad_classes(k: int, d: int) -> dict[str, int]:
    """A pad's class against its kernel -> the pad: none, inside the kernel, the kernel's size, and for a dilated
    kernel its extent less one and its extent (the last pad whose rows meet a tap, the first whose do not)."""
    out = {"0": 0}
    if k > 2:
        out["inside"] = k // 2
    if k > 1:
        out["k-1"] = k - 1
    out["k"] = k
    extent = d * (k - 1) + 1
    if d > 1 and extent - 1 > k:
        out["extent-1"] = extent - 1
        out["extent"] = extent
    return out


def pad_class(p: int, k: int, d: int) -> str:
    """The class `pad_classes` gives pad `p` (an unlisted pad: 'other')."""
    return _class_of(p, pad_classes(k, d))


@dataclass(frozen=True)
class Axis:
    """One axis of a case: its numbers and the facts the array pairs."""

    k: int
    s: int
    p: int
    d: int  # dilation, or a transposed conv's output padding
    size: int
    facts: tuple[tuple[str, object], ...]


def forward_axes(rank: int) -> tuple[Axis, ...]:
    out = []
    for k in KERNELS[rank]:
        for s in range(1, k + 1):
            for d in (1, 2, 3) if k > 1 else (1,):
                if d * (k - 1) + 1 > MAX_EXTENT[rank]:
                    continue
                for name, p in pad_classes(k, d).items():
                    for kind, size in sizes(k, s, p, d).items():
                        facts = (("kernel", k), ("stride", s), ("dilation", d), ("pad", name), ("remainder", kind))
                        out.append(Axis(k, s, p, d, size, facts))
    return tuple(out)


def transposed_pad_classes(k: int) -> dict[str, int]:
    """A transposed conv's pad class -> the pad: none, inside the kernel, the largest it takes (k - 1)."""
    return {"0": 0, **({"inside": (k - 1) // 2} if k > 2 else {}), **({"k-1": k - 1} if k > 1 else {})}


def output_padding_classes(s: int) -> dict[str, int]:
    return {"0": 0, **({"s-1": s - 1} if s > 1 else {})}


def _class_of(value: int, classes: dict[str, int]) -> str:
    return next((name for name, v in classes.items() if v == value), "other")


def transposed_axes() -> tuple[Axis, ...]:
    out = []
    for k in T_KERNELS:
        for s in range(1, k + 1):
            for name, p in transposed_pad_classes(k).items():
                for op_name, op in output_padding_classes(s).items():
                    facts = (("kernel", k), ("stride", s), ("pad", name), ("output_padding", op_name))
                    out.append(Axis(k, s, p, op, T_SIZE, facts))
    return tuple(out)


def _config(axes: tuple[Axis, ...], group: str, bias: int, scheme: str, transposed: bool) -> ConvConfig | None:
    ic, oc, groups = GROUP_KINDS[group]
    try:
        return ConvConfig(
            len(axes),
            ic,
            oc,
            tuple(a.size for a in axes),
            tuple(a.k for a in axes),
            tuple(a.s for a in axes),
            tuple(a.p for a in axes),
            tuple(1 for _ in axes) if transposed else tuple(a.d for a in axes),
            tuple(a.d for a in axes) if transposed else (),
            transposed=transposed,
            groups=groups,
            bias=bool(bias),
            scheme=scheme,
        )
    except ConfigError:
        return None


def _extras(transposed: bool, schemes: tuple[str, ...]) -> dict[str, tuple]:
    return {"group": T_GROUP_KINDS if transposed else tuple(GROUP_KINDS), "bias": (1, 0), "scheme": schemes}


def wanted(rank: int, transposed: bool, schemes: tuple[str, ...]) -> frozenset[tuple]:
    """Every pair the array must hold: ((axis, fact, value), (axis, fact, value)) across two axes, and
    ((extra, value), (axis, fact, value)) for the group kind, bias and scheme."""
    settings = transposed_axes() if transposed else forward_axes(rank)
    values = sorted({f for a in settings for f in a.facts}, key=repr)
    names = AXES[rank]
    pairs = {((x, *u), (y, *v)) for x, y in itertools.combinations(names, 2) for u in values for v in values}
    for extra, options in _extras(transposed, schemes).items():
        pairs |= {((extra, o), (x, *u)) for o in options for x in names for u in values}
    return frozenset(pairs)


def _pairs(axes: tuple[Axis, ...], extras: dict, names: tuple[str, ...]) -> set[tuple]:
    facts = [[(name, *f) for f in a.facts] for name, a in zip(names, axes)]
    out = {(u, v) for i, j in itertools.combinations(range(len(axes)), 2) for u in facts[i] for v in facts[j]}
    out |= {((extra, value), u) for extra, value in extras.items() for fs in facts for u in fs}
    return out


_UNHELD: dict[tuple, set] = {}  # per array: the wanted pairs no row built for them could hold


@functools.lru_cache(maxsize=8)
def array(rank: int, transposed: bool, schemes: tuple[str, ...] = GRAPH_SCHEMES) -> tuple[ConvConfig, ...]:
    """The covering array of one conv kind: rows added greedily (the most pairs still missing, among a row
    built around a missing pair and `CANDIDATES` seeded random rows) until every wanted pair is held."""
    settings = transposed_axes() if transposed else forward_axes(rank)
    names = AXES[rank]
    options = _extras(transposed, schemes)
    by_fact: dict[tuple, list[Axis]] = {}
    for a in settings:
        for f in a.facts:
            by_fact.setdefault(f, []).append(a)
    missing = set(wanted(rank, transposed, schemes))
    rng = random.Random(SEED)
    rows: list[ConvConfig] = []
    unheld = _UNHELD.setdefault((rank, transposed, schemes), set())

    def random_row(pinned: dict) -> tuple[tuple[Axis, ...], dict]:
        """A row with the pinned facts (axis -> (fact, value)) and extras, the rest drawn."""
        axes = tuple(rng.choice(by_fact[pinned[n]] if n in pinned else settings) for n in names)
        return axes, {e: pinned[e] if e in pinned else rng.choice(o) for e, o in options.items()}

    while missing:
        pair = min(missing)  # the first missing pair, in a fixed order: rows are built around it
        pinned = {item[0]: item[1:] if item[0] in names else item[1] for item in pair}
        best, best_new = None, 0
        for axes, extras in [random_row(pinned) for _ in range(4)] + [random_row({}) for _ in range(CANDIDATES)]:
            config = _config(axes, extras["group"], extras["bias"], extras["scheme"], transposed)
            if config is None:
                continue
            new = len(_pairs(axes, extras, names) & missing)
            if new > best_new:
                best, best_new = (axes, extras, config), new
        if best is None:
            unheld.add(pair)  # no valid row drawn holds it: said by `unheld`, checked by a test
            missing.discard(pair)
            continue
        axes, extras, config = best
        missing -= _pairs(axes, extras, names)
        rows.append(config)
    return tuple(rows)


def cases(schemes: tuple[str, ...] = GRAPH_SCHEMES) -> list[ConvConfig]:
    return list(array(2, False, schemes) + array(3, False, schemes) + array(2, True, schemes))


def axis_facts(c: ConvConfig) -> tuple[tuple[tuple[str, object], ...], ...]:
    """Each spatial axis's facts as the array names them (a config built anywhere)."""
    if c.transposed:
        return tuple(
            (
                ("kernel", k),
                ("stride", s),
                ("pad", _class_of(p, transposed_pad_classes(k))),
                ("output_padding", _class_of(op, output_padding_classes(s))),
            )
            for k, s, p, op in zip(c.kernel, c.stride, c.padding, c.output_padding)
        )
    return tuple(
        (
            ("kernel", k),
            ("stride", s),
            ("dilation", d),
            ("pad", pad_class(p, k, d)),
            ("remainder", remainder_kind(r, p)),
        )
        for k, s, d, p, (r, _) in zip(c.kernel, c.stride, c.dilation, c.padding, c.remainders())
    )


def _kind(c: ConvConfig) -> tuple[int, bool] | None:
    if c.padding_mode != "zeros" or isinstance(c.padding, str) or c.dynamic != "none":
        return None
    if (c.rank, c.transposed) in ((2, False), (3, False), (2, True)):
        return c.rank, c.transposed
    return None


@functools.lru_cache(maxsize=4)
def _wanted_axis_pairs(rank: int, transposed: bool) -> dict[tuple[str, str], frozenset]:
    names = AXES[rank]
    want = [p for p in wanted(rank, transposed, GRAPH_SCHEMES) if p[0][0] in names]
    return {
        (x, y): frozenset(p for p in want if p[0][0] == x and p[1][0] == y) for x, y in itertools.combinations(names, 2)
    }


def coverage(configs: list[ConvConfig]) -> list[dict]:
    """Per conv kind and pair of axes: how many of the cross-axis fact pairs the configs hold, of those the array
    asks for, and a few they miss."""
    seen: dict[tuple, set] = {}
    for c in configs:
        kind = _kind(c)
        if kind is None:
            continue
        names, facts, held = AXES[c.rank], axis_facts(c), seen.setdefault(kind, set())
        for i, j in itertools.combinations(range(c.rank), 2):
            held |= {((names[i], *u), (names[j], *v)) for u in facts[i] for v in facts[j]}
    rows = []
    for rank, transposed in ((2, False), (3, False), (2, True)):
        held = seen.get((rank, transposed), set())
        for (x, y), pairs in _wanted_axis_pairs(rank, transposed).items():
            missing = sorted(pairs - held, key=repr)
            rows.append(
                {
                    "kind": f"{'t' if transposed else ''}conv{rank}d",
                    "axes": f"{x}x{y}",
                    "covered": len(pairs) - len(missing),
                    "expected": len(pairs),
                    "missing": missing[:3],
                }
            )
    return rows


def family(c: ConvConfig, i: int, j: int) -> tuple:
    """A case's cross-axis family on axes i and j: the pair of their remainder kinds (their output paddings'
    classes for a transposed conv)."""
    fact = "output_padding" if c.transposed else "remainder"
    facts = axis_facts(c)
    return tuple(dict(facts[a])[fact] for a in (i, j))


def smoke_picks(schemes: tuple[str, ...] = GRAPH_SCHEMES) -> list[ConvConfig]:
    """From each kind's array, in its order, the first case of each cross-axis family not yet held (for conv3d,
    families on every pair of axes at once: a case counts for each pair it holds)."""
    out = []
    for rank, transposed in ((2, False), (3, False), (2, True)):
        held: set = set()
        for c in array(rank, transposed, schemes):
            mine = {(i, j, family(c, i, j)) for i, j in itertools.combinations(range(rank), 2)}
            if mine - held:
                held |= mine
                out.append(c)
    return out
