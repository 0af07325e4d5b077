"""The conv configuration, its validation and its one-line descriptor.

A `ConvConfig` names one convolution case completely. Its descriptor is the
case's identity everywhere: pytest id, results key, file name, repro line. It
must therefore stay parseable across releases: every field is a prefixed
token, tokens may come in any order, and a token missing from an old
descriptor takes the field's default.

This module imports neither torch nor executorch.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Union

RANKS = (1, 2, 3)
# Schemes a conv runs in inside any graph context.
GRAPH_SCHEMES = ("fp32", "fp16", "bf16", "a8w8", "a8w8-pt", "a16w8")
# FP8 (TOSA FP8 extensions: fp8 inputs and weights, an FP16 accumulator and
# output, a CAST back to fp8): the conv alone and static. The float rule bounds
# the one fp8 rounding after the conv, not one after every op of a context.
FP8_SCHEMES = ("fp8e4m3", "fp8e5m2")
SCHEMES = GRAPH_SCHEMES + FP8_SCHEMES
INT_SCHEMES = ("a8w8", "a8w8-pt", "a16w8")
FLOAT_SCHEMES = ("fp32", "fp16", "bf16", *FP8_SCHEMES)
PADDING_MODES = ("zeros", "reflect", "replicate", "circular")
PADDING_STRINGS = ("same", "valid")
DATASETS = ("normal", "full-range", "exact", "channel-skew", "offset", "special")
CONTEXTS = (
    "none",
    "relu",
    "relu6",
    "hardtanh",
    "add",
    "relu-add",
    "cat",
    "relu6-cat",
    "chain",
    "chain3",
    "bn",
    "permute-in",
    "permute-out",
    "permute-add",
    "view-in",
    "view-out",
    "maxpool",
    "avgpool",
    "cond",
)
# Which dims are exported as torch.export.Dim: none; the batch; the spatial
# dims over a narrow range (the backend enumerates each size's remainder);
# the spatial dims over a range too wide to enumerate (truly symbolic); all.
# `spatial-even`: each spatial dim 2*k for a symbolic k, as a model that takes
# even sizes only declares it: remainders mod a stride of 2 are then constant.
# These lower for TOSA 1.1 with the shape extension; the `-tosa10` kinds lower
# for TOSA 1.0, which has no shape operators (what an Ethos-U target takes).
DYNAMICS = ("none", "batch", "spatial", "spatial-wide", "all", "batch-tosa10", "spatial-tosa10", "all-tosa10",
            "spatial-even", "spatial-even-tosa10")
# Contexts whose only input is the conv's own (N, C, spatial) input, so a
# dynamic dim has one meaning throughout the graph.
DYNAMIC_CONTEXTS = ("none", "relu", "relu6", "hardtanh", "chain", "chain3", "bn", "permute-out", "maxpool", "avgpool")
RESIDUAL_CONTEXTS = ("add", "relu-add")
POOL_CONTEXTS = ("maxpool", "avgpool")

Padding = Union[tuple[int, ...], str]


class ConfigError(ValueError):
    """An impossible config or an unparseable descriptor (one line)."""


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
        return self.scheme in INT_SCHEMES

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
        return any(
            s > 1 and not self.size_step % s and (L + 2 * p - d * (k - 1) - 1) % s > p
            for L, k, s, p, d in zip(self.input_size, self.kernel, self.stride, self.padding, self.dilation)
        )

    @property
    def pool_slice(self) -> bool:
        """With dynamic spatial dims, the 3x3/2 pool after the conv leaves a row
        over on some size, so SizeAdjustInputPass slices its symbolic input.
        Only an odd pool input that stays odd escapes (sizes in steps of 2
        after a stride-1 conv)."""
        if not self.dynamic_spatial or self.context not in POOL_CONTEXTS:
            return False
        return self.size_step % 2 != 0 or any(s != 1 for s in self.stride) or any(p % 2 == 0 for p in _output_size(self))

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

    @property
    def descriptor(self) -> str:
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
    _check_choice("scheme", c.scheme, SCHEMES)
    _check_choice("dataset", c.dataset, DATASETS)
    _check_choice("context", c.context, CONTEXTS)
    _check_choice("dynamic", c.dynamic, DYNAMICS)
    if c.scheme in FP8_SCHEMES and (c.context != "none" or c.dynamic != "none"):
        _fail("scheme", c.scheme, f"an fp8 scheme runs the conv alone and static (cx none, dy none), "
              f"not cx {c.context} dy {c.dynamic}")
    if c.dynamic != "none" and c.context not in DYNAMIC_CONTEXTS:
        _fail("dynamic", c.dynamic, f"dynamic dims need a context of {', '.join(DYNAMIC_CONTEXTS)}, not {c.context}")
    least = 5 if c.context in POOL_CONTEXTS else 2  # a 3x3/2 pool of 5 gives 2
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

    if c.context in RESIDUAL_CONTEXTS and (
        c.out_channels != c.in_channels or _output_size(c) != c.input_size
    ):
        _fail("context", c.context, "a residual add needs the conv's output shape to equal its input shape")
    if c.context in POOL_CONTEXTS and (c.rank != 2 or min(_output_size(c)) < 3):
        _fail("context", c.context, "pooling (kernel 3, stride 2) follows a 2D conv with an output of at least 3x3")


# -- descriptor -------------------------------------------------------------
# key -> (field, kind). Keys are tried longest first so 'pm' wins over 'p'.
_TOKENS: dict[str, tuple[str, str]] = {
    "n": ("batch", "int"),
    "ic": ("in_channels", "int"),
    "oc": ("out_channels", "int"),
    "g": ("groups", "int"),
    "i": ("input_size", "dims"),
    "k": ("kernel", "dims"),
    "s": ("stride", "dims"),
    "p": ("padding", "padding"),
    "d": ("dilation", "dims"),
    "op": ("output_padding", "dims"),
    "b": ("bias", "bool"),
    "pm": ("padding_mode", "word"),
    "q": ("scheme", "word"),
    "ds": ("dataset", "word"),
    "cx": ("context", "word"),
    "dy": ("dynamic", "word"),
}
_KEYS_LONGEST_FIRST = sorted(_TOKENS, key=len, reverse=True)
_HEAD = re.compile(r"^(t?)conv([123])d$")
_DIMS = re.compile(r"^\d+(x\d+)*$")
_WORD = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_REQUIRED = ("in_channels", "out_channels", "input_size", "kernel")


def _dims(values: tuple[int, ...]) -> str:
    return "x".join(str(v) for v in values)


def format_descriptor(c: ConvConfig) -> str:
    """Canonical descriptor: every field, fixed order, '_'-separated tokens.

    Only [a-z0-9x_-] appear, so it is safe as a pytest id, a shell word and a
    file name. Output padding is printed only for transposed convs (it is
    always zero otherwise), dynamic dims only when there are some.
    """
    pad = c.padding if isinstance(c.padding, str) else _dims(c.padding)
    parts = [
        f"{'t' if c.transposed else ''}conv{c.rank}d",
        f"n{c.batch}",
        f"ic{c.in_channels}",
        f"oc{c.out_channels}",
        f"g{c.groups}",
        f"i{_dims(c.input_size)}",
        f"k{_dims(c.kernel)}",
        f"s{_dims(c.stride)}",
        f"p{pad}",
        f"d{_dims(c.dilation)}",
    ]
    if c.transposed:
        parts.append(f"op{_dims(c.output_padding)}")
    parts += [
        f"b{int(c.bias)}",
        f"pm{c.padding_mode}",
        f"q{c.scheme}",
        f"ds{c.dataset}",
        f"cx{c.context}",
    ]
    if c.dynamic != "none":
        parts.append(f"dy{c.dynamic}")
    return "_".join(parts)


def _parse_value(kind: str, raw: str, rank: int):
    """Value for one token, or None when raw does not fit the kind."""
    if kind == "int":
        return int(raw) if raw.isdigit() else None
    if kind == "bool":
        return {"0": False, "1": True}.get(raw)
    if kind == "dims" or (kind == "padding" and raw[:1].isdigit()):
        if not _DIMS.match(raw):
            return None
        values = tuple(int(v) for v in raw.split("x"))
        return values * rank if len(values) == 1 else values  # 'k3' == 'k3x3'
    if kind == "padding":
        return raw if raw.isalpha() else None
    return raw if _WORD.match(raw) else None


def parse_descriptor(text: str) -> ConvConfig:
    """Parse a descriptor back to its config; ConfigError names the bad token."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("empty descriptor; expected e.g. conv2d_ic8_oc16_i32x32_k3x3_qa8w8")
    tokens = text.strip().split("_")
    head = _HEAD.match(tokens[0])
    if not head:
        raise ConfigError(
            f"bad descriptor head {tokens[0]!r}: expected conv1d, conv2d, conv3d, tconv1d, tconv2d or tconv3d"
        )
    rank = int(head.group(2))
    values: dict[str, object] = {"rank": rank, "transposed": head.group(1) == "t"}
    for token in tokens[1:]:
        for key in _KEYS_LONGEST_FIRST:
            if not token.startswith(key) or len(token) == len(key):
                continue
            field, kind = _TOKENS[key]
            value = _parse_value(kind, token[len(key):], rank)
            if value is None:
                continue
            if field in values:
                raise ConfigError(f"descriptor token {token!r} repeats field {field}")
            values[field] = value
            break
        else:
            raise ConfigError(
                f"unknown descriptor token {token!r}; tokens are "
                + ", ".join(f"{k}<{_TOKENS[k][0]}>" for k in _TOKENS)
            )
    missing = [f for f in _REQUIRED if f not in values]
    if missing:
        raise ConfigError(f"descriptor {text!r} lacks required field(s) {', '.join(missing)}")
    return ConvConfig(**values)  # type: ignore[arg-type]
