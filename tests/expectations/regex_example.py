"""A string a regex matches, built from its parse tree: the registry's tests build observations inside an
entry's signature from its own patterns, so no measured message has to be copied into the tests."""

from __future__ import annotations

import re
import re._constants as C  # noqa: N812 - the parser's opcodes
import re._parser as parser

_CATEGORY = {
    C.CATEGORY_DIGIT: "1",
    C.CATEGORY_WORD: "a",
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_NOT_DIGIT: "a",
    C.CATEGORY_NOT_WORD: " ",
    C.CATEGORY_NOT_SPACE: "a",
}


def _char_in(items) -> str:
    negated = any(op is C.NEGATE for op, _ in items)
    if negated:  # a character none of the items allows
        return next(
            ch for ch in "a1 _-Z" if not any(_char_in_one(op, av, ch) for op, av in items if op is not C.NEGATE)
        )
    op, av = items[0]
    if op is C.LITERAL:
        return chr(av)
    if op is C.RANGE:
        return chr(av[0])
    if op is C.CATEGORY:
        return _CATEGORY[av]
    raise ValueError(f"unsupported class item {op}")


def _char_in_one(op, av, ch: str) -> bool:
    if op is C.LITERAL:
        return ord(ch) == av
    if op is C.RANGE:
        return av[0] <= ord(ch) <= av[1]
    return (
        re.fullmatch({C.CATEGORY_DIGIT: r"\d", C.CATEGORY_WORD: r"\w", C.CATEGORY_SPACE: r"\s"}.get(av, "."), ch)
        is not None
    )


def _build(tokens) -> str:
    out = []
    for op, av in tokens:
        if op is C.LITERAL:
            out.append(chr(av))
        elif op is C.NOT_LITERAL:
            out.append("a" if av != ord("a") else "b")
        elif op is C.ANY:
            out.append("x")
        elif op is C.IN:
            out.append(_char_in(av))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
            low, _, item = av
            out.append(_build(item) * max(low, 1 if low == 0 and _build(item) == "" else low))
        elif op is C.SUBPATTERN:
            out.append(_build(av[-1]))
        elif op is C.BRANCH:
            out.append(_build(av[1][0]))
        elif op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        elif op is C.GROUPREF:
            raise ValueError("back references are not supported")
        else:
            raise ValueError(f"unsupported regex operation {op}")
    return "".join(out)


def example(pattern: re.Pattern) -> str:
    """A string `pattern` matches (re.search), or ValueError for a construct this does not build."""
    text = _build(parser.parse(pattern.pattern, pattern.flags))
    if pattern.search(text) is None:
        raise ValueError(f"built {text!r}, which {pattern.pattern!r} does not match")
    return text
