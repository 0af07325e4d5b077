"""Every graph context by name: the named ones, in sweep order, and any composition of the grammar.

`CONTEXTS` is a read-only mapping. Iterating it gives the named contexts
(`CONTEXT_NAMES`: the sweeps' "every context" lists, unchanged since before
the grammar); looking a name up also accepts any well-formed composition of
`harness.contexts.grammar` (`bn-relu-add-relu`), built once per process.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache

from harness.contexts.base import Chain, Cond, Context, PermuteAdd, PermuteOut, ViewOut
from harness.contexts.grammar import Composed, GrammarError, compositions

# Contexts outside the grammar: a conv chained to 1x1 convs, layout ops after the conv, torch.cond.
OUTSIDE_GRAMMAR: dict[str, Context] = {
    cx.name: cx
    for cx in (
        Chain(name="chain", conv_layout=True, dynamic=True, exact_arithmetic=False),
        Chain(name="chain3", before=True, conv_index=1, conv_layout=True, dynamic=True, exact_arithmetic=False),
        PermuteOut(name="permute-out", conv_layout=False, dynamic=True, exact_arithmetic=True),
        PermuteAdd(name="permute-add", conv_layout=False, dynamic=False, exact_arithmetic=True),
        ViewOut(name="view-out", conv_layout=False, dynamic=False, exact_arithmetic=True),
        Cond(name="cond", control_flow=True, conv_layout=True, dynamic=False, exact_arithmetic=True),
        Cond(
            name="cond-nested", nested=True, control_flow=True, conv_layout=True, dynamic=False, exact_arithmetic=True
        ),
    )
}

# The named contexts, in the order every tier has listed them (compositions spell their own names).
CONTEXT_NAMES = (
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


@cache
def _lookup(name: str) -> Context:
    return OUTSIDE_GRAMMAR[name] if name in OUTSIDE_GRAMMAR else Composed.of(name)


def context_error(name: str) -> str:
    """Why `name` is not a context ('' when it is), in one line."""
    if not isinstance(name, str):
        return f"invalid context={name!r}: must be a string"
    try:
        _lookup(name)
    except GrammarError as e:
        return f"{e}; or one of none, {', '.join(OUTSIDE_GRAMMAR)}"
    return ""


class _Contexts(Mapping):
    def __getitem__(self, name: str) -> Context:
        try:
            return _lookup(name)
        except GrammarError as e:
            raise KeyError(str(e)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(CONTEXT_NAMES)

    def __len__(self) -> int:
        return len(CONTEXT_NAMES)


CONTEXTS: Mapping[str, Context] = _Contexts()


def all_contexts() -> list[str]:
    """Every context: each well-formed composition, then those outside the grammar."""
    return [*compositions(), *OUTSIDE_GRAMMAR]
