"""Composed graph contexts: a context spelled as parts of a grammar instead of listed by name.

A composition names, in this order, at most one token of each slot:

    feed   what feeds the conv        view-in | permute-in | conv-in (a 1x1 conv)
                                      | pad-in | reflect-in | replicate-in (F.pad by 1 on every spatial side,
                                        constant zeros, reflect, replicate: the model's input is the conv's
                                        cropped by 1) | up-in (a nearest x2 upsample of the input at half size:
                                        FPN and YOLO necks, 2D)
    norm   a BatchNorm, folded        bn
    act    an activation              relu | relu6 | hardtanh | clamp (-1, 2) | sigmoid | silu | hardswish
                                      | hardsigmoid | lrelu (leaky_relu, torch's slope 0.01) | lrelu01 (slope 0.1,
                                        YOLO's) | gelu | gelutanh (approximate='tanh') | tanh | elu
    pool   a pooling (2D)             maxpool | avgpool (3x3/2) | maxpool3p1 (3x3/2, pad 1: ResNet's stem)
                                      | maxpool3ceil (3x3/2, ceil_mode: SqueezeNet) | avgpool2 (2x2/2: DenseNet)
                                      | maxpool5p2 (5x5/1, pad 2: YOLOv5's SPPF)
                                      | avgpool2ceil (2x2/2, ceil_mode, count_include_pad=False: ResNet-D)
                                      | avgpool5s3 (5x5/3: Inception-v3's auxiliary head)
                                      | maxpool3s3p1 (3x3/3, pad 1: a stride above 2 is the only way a
                                        pool's leftover rows exceed its pad, so SizeAdjustInputPass slices)
                                      | maxpool2 (2x2 called without a stride: VGG's) | avgpool3s1p1 (3x3/1,
                                        pad 1, torch's defaults: Inception-v3's branch pool)
                                      | gap (adaptive_avg_pool2d(1): a classifier's head) | gapmean (x.mean((2, 3),
                                        keepdim=True), as torchvision's EfficientNet and MobileNetV3 write it)
    merge  what the output meets      add (its own input, a residual) | addz (a second input)
                                      | cat (with a second input) | catx (with its own input) | mul (a second input)
                                      | catpre (with the pool's own input, after a pool that keeps the size:
                                        YOLOv5's SPPF; the conv's, or its activation's, output has two users)
                                      | fpn (plus a second input at half size upsampled x2, nearest: the FPN join)
    after  after the merge            relu

joined by '-': `bn-relu-add-relu` is a ResNet block's tail, `conv-in-bn-relu6` a
MobileNet expansion, `sigmoid-mul` a squeeze-excite gate. The empty composition
is `none`. Today's context names that are compositions spell themselves
(`relu6-cat`, `relu-add`, `bn`, `maxpool`, `view-in`, ...) and build the very same
module, so old descriptors and baselines read as before.

Each slot contributes to the judge's facts by a rule derived once here:
* DOT_PRODUCT bound (fp64, on |x|, |w|, |b|): clamps, max-pooling, pads,
  upsamples and layout ops pass it through (1-Lipschitz, exact). An activation
  (`Activation`) of Lipschitz constant L maps an error e to at most L*e, plus
  the rounded results of its own lowering, n of them, each within a unit of
  the rule of its result's magnitude: |f(y)| <= |y| (silu, gelu, hardswish,
  leaky relu, tanh) gives B' = L*B and ceil(n/L) units; a bounded result or
  one computed by cancellation (sigmoid, hardsigmoid: |f| <= 1; elu:
  exp(y) - 1 loses everything to cancellation near 0, so its error is
  absolute) gives B' = L*B + cap and n units. An average pool is a dot
  product of its window (TOSA's AVG_POOL2D takes the DOT_PRODUCT rule with
  KS the window): its window joins the length, and the max of the bounds
  over its windows bounds it (a global pool's: their mean); a max pool
  takes the max of the bounds. An add adds the other operand's bound and one rounding; a mul scales by
  |z| and adds one rounding; a folded BN adds BN_FOLD_ROUNDINGS (derived in `harness.policy.tolerances`).
  A rounding is a whole unit of the rule in the output's format, not a term
  of KS (`Context.format_roundings`): an fp16 graph adds and multiplies in fp16.
* INT tolerance (LSB of the output): t LSB off at a requantized tensor of
  scale s become at most 1 + t*L*s/s' LSB after an op of Lipschitz constant L
  that requantizes to s' (add L=1, a TABLE-lowered activation its L, mul
  L=max|z|); fused clamps, max pooling, concatenation, pads and nearest
  upsampling share their input's quantization and pass t through; an
  average pool (a global one too) shares it but rounds its average: t + 1;
  a 1x1 conv before the conv under test starts t at its drift on the case's
  data (`harness.judging.requant`; 1 + gain without it, see
  `harness.contexts.base.Chain.int_tolerance`).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

from harness.contexts.base import Context, F, gain, nn, pointwise, same_shape, torch
from harness.contexts.parts import ACTIVATIONS, POOLS, GlobalPool, Pool  # noqa: F401 - the grammar's parts, re-exported
from harness.policy.tolerances import BN_FOLD_ROUNDINGS

SLOTS: dict[str, tuple[str, ...]] = {
    "feed": ("view-in", "permute-in", "conv-in", "pad-in", "reflect-in", "replicate-in", "up-in"),
    "norm": ("bn",),
    "act": (
        "relu",
        "relu6",
        "hardtanh",
        "clamp",
        "sigmoid",
        "silu",
        "hardswish",
        "hardsigmoid",
        "lrelu",
        "lrelu01",
        "gelu",
        "gelutanh",
        "tanh",
        "elu",
    ),
    "pool": (
        "maxpool",
        "avgpool",
        "maxpool3p1",
        "maxpool3ceil",
        "avgpool2",
        "maxpool5p2",
        "avgpool2ceil",
        "avgpool5s3",
        "maxpool3s3p1",
        "maxpool2",
        "avgpool3s1p1",
        "gap",
        "gapmean",
    ),
    "merge": ("add", "addz", "cat", "catx", "mul", "catpre", "fpn"),
    "after": ("relu",),
}
OWN_INPUT_MERGES = ("add", "catx")  # need the conv's output size (a pool changes it)
SECOND_INPUT_MERGES = ("addz", "cat", "mul", "fpn")
PAD_FEEDS = {"pad-in": "constant", "reflect-in": "reflect", "replicate-in": "replicate"}  # F.pad's modes
CAT_MERGES = ("cat", "catx", "catpre")


class GrammarError(ValueError):
    """A context name that is not a composition of the grammar."""


def _tokens(name: str) -> list[str]:
    """'conv-in-bn-relu' -> ['conv-in', 'bn', 'relu']: the '-in' feeds are one token."""
    out: list[str] = []
    for part in name.split("-"):
        if part == "in" and out and f"{out[-1]}-in" in SLOTS["feed"]:
            out[-1] += "-in"
        else:
            out.append(part)
    return out


def parse(name: str) -> dict[str, str]:
    """slot -> token of a composition; GrammarError (one line) for anything else."""
    if name == "none":
        return {}
    slots, chosen, at = list(SLOTS), {}, 0
    for token in _tokens(name):
        for i in range(at, len(slots)):
            if token in SLOTS[slots[i]]:
                chosen[slots[i]], at = token, i + 1
                break
        else:
            raise GrammarError(
                f"invalid context={name}: {token!r} cannot come there; a composition joins with '-' "
                "at most one of each, in this order: " + " ".join(f"[{'|'.join(v)}]" for v in SLOTS.values())
            )
    if "after" in chosen and "merge" not in chosen:
        raise GrammarError(f"invalid context={name}: 'after' ({chosen['after']}) needs a merge before it")
    if chosen.get("merge") == "catpre" and not ("pool" in chosen and POOLS[chosen["pool"]].keeps_size):
        keeping = " or ".join(n for n, pool in POOLS.items() if pool.keeps_size)
        raise GrammarError(
            f"invalid context={name}: catpre concatenates a pool's input and output, so it needs "
            f"a pool that keeps the size before it ({keeping})"
        )
    if chosen.get("merge") == "fpn" and isinstance(POOLS.get(chosen.get("pool", "")), GlobalPool):
        raise GrammarError(
            f"invalid context={name}: fpn adds a half-size input upsampled x2, and a global pool's output is 1x1"
        )
    if "pool" in chosen and chosen.get("merge") in OWN_INPUT_MERGES:
        raise GrammarError(
            f"invalid context={name}: {chosen['merge']} merges with the conv's input, "
            f"which a pool's output never matches in size"
        )
    return chosen


def spell(parts: dict[str, str]) -> str:
    return "-".join(parts[s] for s in SLOTS if s in parts) or "none"


@functools.cache
def compositions() -> tuple[str, ...]:
    """Every well-formed composition, in slot order (the empty one, `none`, first); walked once (~1 s)."""
    out = []
    for combo in itertools.product(*[(None, *tokens) for tokens in SLOTS.values()]):
        parts = {s: t for s, t in zip(SLOTS, combo) if t}
        try:
            if parse(spell(parts)) != parts:  # e.g. a lone 'after' relu reads as the activation
                continue
        except GrammarError:
            continue
        out.append(spell(parts))
    return tuple(out)


def _activate(act: str | None, y):
    return y if act is None else ACTIVATIONS[act](act, y)


def _up(y):
    return F.interpolate(y, scale_factor=2, mode="nearest")


def _bn(rank: int, channels: int, g):
    bn = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}[rank](channels).eval()
    with torch.no_grad():
        bn.weight.copy_(0.5 + torch.rand(channels, generator=g))
        bn.bias.copy_(0.2 * torch.randn(channels, generator=g))
        bn.running_mean.copy_(0.2 * torch.randn(channels, generator=g))
        bn.running_var.copy_(0.5 + torch.rand(channels, generator=g))
    return bn


def _bn_bound(m, x):
    """The folded conv's bound: w' = w * k, b' = (b - mean) * k + beta with k = gamma / sqrt(var + eps)."""
    bn = m.bn
    k = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach().double()
    shape = (1, -1) + (1,) * m.config.rank
    b = torch.zeros_like(k) if m.conv.bias is None else m.conv.bias.detach().double()
    folded_b = ((b - bn.running_mean.double()) * k).abs() + bn.bias.double().abs()  # as the fold sums it
    return m.abs_conv(m.conv, x, bias=False) * k.abs().reshape(shape) + folded_b.reshape(shape)


@dataclass(frozen=True, kw_only=True)
class Composed(Context):
    """A context of the grammar (see the module docstring); `name` is its spelling."""

    feed: str | None = None
    norm: str | None = None
    act: str | None = None
    pool: str | None = None
    merge: str | None = None
    after: str | None = None

    @classmethod
    def of(cls, name: str) -> Composed:
        p = parse(name)
        merge, feed = p.get("merge"), p.get("feed")
        return cls(
            name=spell(p),
            **p,
            conv_layout=p.get("pool") is None and merge not in CAT_MERGES,
            dynamic=feed in (None, "conv-in") and merge is None,
            exact_arithmetic=feed != "conv-in"
            and "norm" not in p
            and ACTIVATIONS[p.get("act", "relu")].aten is None
            and ("pool" not in p or POOLS[p["pool"]].max)
            and merge not in ("addz", "mul", "fpn"),
            pools="pool" in p,
            conv_index=1 if feed == "conv-in" else 0,
        )

    # what the descriptor admits -------------------------------------------------------------------
    def check(self, c) -> str:
        least = 4 if self.feed == "reflect-in" else 3  # the cropped input keeps a row; reflect by 1 needs two
        if self.feed in PAD_FEEDS and min(c.input_size) < least:
            return f"{self.feed} pads a model input 2 smaller than the conv's: an input of at least {least}"
        if self.feed == "up-in" and (c.rank != 2 or any(n % 2 for n in c.input_size)):
            return "up-in upsamples x2 into a 2D conv: its input size must be even"
        if self.merge == "fpn" and (c.rank != 2 or any(n % 2 for n in self._merged_shape(c)[2:])):
            return "fpn adds an upsampled half-size input to a 2D output: its size must be even"
        if self.pool and (c.rank != 2 or min(c.output_size()) < POOLS[self.pool].least):
            least = POOLS[self.pool].least
            return f"pooling {self.pool} follows a 2D conv with an output of at least {least}x{least}"
        if (
            self.pool
            and POOLS[self.pool].ceil
            and c.dynamic_spatial
            and any(step % POOLS[self.pool].stride for step in c.output_steps)
        ):
            return (
                f"a ceil_mode pool ({self.pool}) on a dynamic dim whose leftover rows change with its size: "
                "torch.export refuses it (its output size guards on the size's parity); use a spatial-even kind"
            )
        if self.merge == "add":
            return same_shape(c)
        if self.merge == "catx" and c.output_size() != c.input_size:
            return "a concat with the conv's own input needs the conv's output size to equal its input size"
        return ""

    # what the case feeds it ------------------------------------------------------------------------
    def _merged_shape(self, c) -> tuple[int, ...]:
        spatial = tuple(c.output_size())
        return (c.batch, c.out_channels, *((POOLS[self.pool].size(n) for n in spatial) if self.pool else spatial))

    def inputs(self, c, x, g) -> tuple:
        if self.feed == "view-in":
            x = x.reshape(x.shape[0], -1)
        elif self.feed == "permute-in":
            x = torch.movedim(x, 1, -1).contiguous()
        elif self.feed in PAD_FEEDS:  # the pad gives the conv back its input size
            x = x[(..., *(slice(1, -1),) * c.rank)].contiguous()
        elif self.feed == "up-in":
            x = x[..., ::2, ::2].contiguous()
        if self.merge in SECOND_INPUT_MERGES:
            shape = self._merged_shape(c)
            if self.merge == "fpn":
                shape = (*shape[:2], *(n // 2 for n in shape[2:]))
            return (x, torch.randn(shape, generator=g))
        return (x,)

    def parts(self, c, rng) -> dict:
        parts = {}
        if self.feed == "conv-in":
            parts["before"] = pointwise(c.rank, c.in_channels, c.in_channels, rng("ctx-before"))
        if self.norm:
            parts["bn"] = _bn(c.rank, c.out_channels, rng("ctx-bn"))
        return parts

    # its graph -------------------------------------------------------------------------------------
    def _conv_input(self, m, x):
        if self.feed == "view-in":
            return x.reshape(x.shape[0], m.config.in_channels, *m.config.input_size)
        if self.feed == "permute-in":
            return torch.movedim(x, -1, 1)
        if self.feed == "conv-in":
            return m.before(x)
        if self.feed in PAD_FEEDS:
            return F.pad(x, (1, 1) * m.config.rank, mode=PAD_FEEDS[self.feed])
        if self.feed == "up-in":
            return _up(x)
        return x

    def forward(self, m, x, z=None):
        x = self._conv_input(m, x)
        y = m.conv(x)
        if self.norm:
            y = m.bn(y)
        y = pre = _activate(self.act, y)
        if self.pool:
            y = POOLS[self.pool](y)
        if self.merge in ("add", "addz"):
            y = y + (x if self.merge == "add" else z)
        elif self.merge == "fpn":
            y = y + _up(z)
        elif self.merge == "catpre":
            y = torch.cat([pre, y], dim=1)
        elif self.merge in ("cat", "catx"):
            y = torch.cat([y, z if self.merge == "cat" else x], dim=1)
        elif self.merge == "mul":
            y = y * z
        return _activate(self.after, y)

    # what its judge needs --------------------------------------------------------------------------
    def bound(self, m, x, z=None):
        if self.feed == "conv-in":
            x = m.abs_conv(m.before, x)
        else:
            x = self._conv_input(m, x)
        y = _bn_bound(m, x) if self.norm else m.abs_conv(m.conv, x)
        if self.act:
            y = ACTIVATIONS[self.act].bound(y)
        pre = y
        if self.pool:
            y = POOLS[self.pool].bound(y)
        if self.merge in ("add", "addz"):
            y = y + (x if self.merge == "add" else z).abs()
        elif self.merge == "fpn":
            y = y + _up(z.abs())
        elif self.merge == "catpre":
            y = torch.cat([pre, y], dim=1)
        elif self.merge in ("cat", "catx"):
            y = torch.cat([y, (z if self.merge == "cat" else x).abs()], dim=1)
        elif self.merge == "mul":
            y = y * z.abs()
        return y

    def dot_product_length(self, c) -> int:
        pooled = POOLS[self.pool].window(c.output_size()) if self.pool else 0  # an average: a dot product
        return c.fan_in + (c.in_channels if self.feed == "conv-in" else 0) + pooled

    def format_roundings(self, c) -> int:
        n = 1 if self.feed == "conv-in" else 0  # the 1x1 conv's output
        n += BN_FOLD_ROUNDINGS if self.norm else 0
        n += ACTIVATIONS[self.act].units if self.act else 0
        n += 1 if self.merge in ("add", "addz", "mul", "fpn") else 0
        return n

    def has_bias(self, conv_bias) -> bool:
        return bool(self.norm) or super().has_bias(conv_bias)

    def int_tolerance(self, quantized, drift=None) -> int:
        from harness.contexts.propagate import drift_to_output
        from harness.qparams import conv_output_quantize, op_qparams

        t = 1.0
        if self.feed == "conv-in":  # element by element on the data where the judge gives `drift`
            t = drift(1) if drift is not None else 1 + gain(quantized.convs[1]) * t
        s = quantized.qparams.output.scale  # the conv's requantized output, through a fused clamp
        act = ACTIVATIONS[self.act] if self.act else None
        if act and act.aten:  # a TABLE from the conv's requantized output to its own
            try:
                inputs, output = op_qparams(quantized.module, act.aten)
            except ValueError:  # the release decomposed it before quantizing: the graph, op by op, gives the bound
                return math.ceil(
                    drift_to_output(quantized.module, conv_output_quantize(quantized), t * s) / quantized.output.scale
                )
            t, s = 1 + t * act.lipschitz * inputs[0].scale / output.scale, output.scale
        if self.pool and not POOLS[self.pool].max:  # an average is rounded again, on the same scale
            t += 1
        if self.merge in ("add", "addz", "mul", "fpn"):
            ratio = s / quantized.output.scale
            if self.merge == "mul":  # times the largest |z| its quantization can hold
                z = op_qparams(quantized.module, "mul")[0][1]
                ratio *= z.scale * max(z.qmax - z.zero_point, z.zero_point - z.qmin)
            t = 1 + t * ratio
        return math.ceil(t)
