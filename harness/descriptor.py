"""The one-line case descriptor: its grammar, formatting and parsing.

A descriptor names every field of a conv case and is the case's identity
everywhere: pytest id, results key, file name, repro line. It must stay
parseable across releases (a baseline from last month must still read): every
field is a prefixed token, tokens may come in any order, and a token missing
from an old descriptor takes the field's default.

This module knows the grammar only: it turns field values into text and text
into field values. Which values make a valid conv is `harness.config`'s job.
It imports nothing but the standard library.
"""

from __future__ import annotations

import re


class ConfigError(ValueError):
    """An impossible config or an unparseable descriptor (one line)."""


# key -> (field, kind). Keys are tried longest first so 'pm' wins over 'p'.
TOKENS: dict[str, tuple[str, str]] = {
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
REQUIRED = ("in_channels", "out_channels", "input_size", "kernel")
_KEYS_LONGEST_FIRST = sorted(TOKENS, key=len, reverse=True)
_HEAD = re.compile(r"^(t?)conv([123])d$")
_DIMS = re.compile(r"^\d+(x\d+)*$")
_WORD = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def dims_text(values: tuple[int, ...]) -> str:
    return "x".join(str(v) for v in values)


def format_descriptor(c) -> str:
    """Canonical descriptor of a config (any object with the config's fields):
    every field, fixed order, '_'-separated tokens.

    Only [a-z0-9x_-] appear, so it is safe as a pytest id, a shell word and a
    file name. Output padding is printed only for transposed convs (it is
    always zero otherwise), dynamic dims only when there are some.
    """
    pad = c.padding if isinstance(c.padding, str) else dims_text(c.padding)
    parts = [
        f"{'t' if c.transposed else ''}conv{c.rank}d",
        f"n{c.batch}",
        f"ic{c.in_channels}",
        f"oc{c.out_channels}",
        f"g{c.groups}",
        f"i{dims_text(c.input_size)}",
        f"k{dims_text(c.kernel)}",
        f"s{dims_text(c.stride)}",
        f"p{pad}",
        f"d{dims_text(c.dilation)}",
    ]
    if c.transposed:
        parts.append(f"op{dims_text(c.output_padding)}")
    parts += [f"b{int(c.bias)}", f"pm{c.padding_mode}", f"q{c.scheme}", f"ds{c.dataset}", f"cx{c.context}"]
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


def parse_fields(text: str) -> dict[str, object]:
    """The field values a descriptor spells; ConfigError names the bad token."""
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
            field, kind = TOKENS[key]
            value = _parse_value(kind, token[len(key) :], rank)
            if value is None:
                continue
            if field in values:
                raise ConfigError(f"descriptor token {token!r} repeats field {field}")
            values[field] = value
            break
        else:
            raise ConfigError(
                f"unknown descriptor token {token!r}; tokens are " + ", ".join(f"{k}<{TOKENS[k][0]}>" for k in TOKENS)
            )
    missing = [f for f in REQUIRED if f not in values]
    if missing:
        raise ConfigError(f"descriptor {text!r} lacks required field(s) {', '.join(missing)}")
    return values
