"""What a network puts around each of its convs, spelled in the context grammar where the grammar can.

`spell_all(model)` traces the network with torch.fx and, per conv module,
walks what feeds it and the single-user chain after it, slot by slot as the
grammar orders them (`harness.contexts.grammar`): feed, norm, act, pool,
merge, after. It returns the spelling of what the grammar can say and, where
the chain goes on with something the grammar has no token for, that op and
why it stops there (`unspelled`), so `network_convs` can report which neighbourhoods
of real networks the grammar cannot spell.
"""

from __future__ import annotations

import operator

import torch
from torch import fx, nn

ACTS = {
    nn.ReLU: "relu",
    nn.ReLU6: "relu6",
    nn.Hardtanh: "hardtanh",
    nn.Sigmoid: "sigmoid",
    nn.SiLU: "silu",
    nn.Hardswish: "hardswish",
    nn.Hardsigmoid: "hardsigmoid",
    nn.GELU: "gelu",
    nn.Tanh: "tanh",
    nn.ELU: "elu",
}
ACT_FUNCTIONS = frozenset(ACTS.values())  # F.relu, torch.sigmoid, x.tanh(), ...: the function's name is the token
CONVS = (nn.Conv1d, nn.Conv2d, nn.Conv3d)


def _module(gm: fx.GraphModule, n: fx.Node):
    return gm.get_submodule(n.target) if n.op == "call_module" else None


def _name(gm: fx.GraphModule, n: fx.Node) -> str:
    """What a node does, in a word: the module's class or the function's name."""
    m = _module(gm, n)
    if m is not None:
        return type(m).__name__
    if n.op in ("call_function", "call_method"):
        return getattr(n.target, "__name__", str(n.target))
    return n.op


def _act(gm, n) -> str | None:
    m = _module(gm, n)
    if m is not None:
        if isinstance(m, nn.LeakyReLU):
            return {0.01: "lrelu", 0.1: "lrelu01"}.get(round(m.negative_slope, 6))
        if isinstance(m, nn.GELU) and m.approximate == "tanh":
            return "gelutanh"
        return ACTS.get(type(m))
    if n.op in ("call_function", "call_method"):
        name = getattr(n.target, "__name__", str(n.target))
        return name if name in ACT_FUNCTIONS else None
    return None


def _pool(gm, n) -> str | None:
    """The grammar's pool token for a pooling node, or None (a pool the grammar does not have)."""
    from harness.contexts.grammar import POOLS, Pool

    m = _module(gm, n)
    if isinstance(m, nn.AdaptiveAvgPool2d) and m.output_size in (1, (1, 1)):
        return "gap"
    if _name(gm, n) == "mean" and _dims(n) in ((2, 3), (-2, -1)):
        return "gapmean"  # with or without keepdim: the same reduction, then a view
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):

        def pair(v):
            return v if isinstance(v, int) else v[0]

        is_max = isinstance(m, nn.MaxPool2d)
        for token, pool in POOLS.items():
            if not isinstance(pool, Pool) or pool.max != is_max:
                continue
            if (pool.kernel, pool.stride, pool.padding, pool.ceil) == (
                pair(m.kernel_size),
                pair(m.stride),
                pair(m.padding),
                bool(m.ceil_mode),
            ):
                return token
    return None


def _feed(gm, conv: fx.Node) -> str | None:
    src = conv.args[0]
    if not isinstance(src, fx.Node):
        return None
    m = _module(gm, src)
    if isinstance(m, CONVS) and all(k == 1 for k in m.kernel_size) and len(src.users) == 1:
        return "conv-in"
    name = _name(gm, src)
    if name == "pad":
        return {"constant": "pad-in", "reflect": "reflect-in", "replicate": "replicate-in"}.get(
            src.kwargs.get("mode", src.args[2] if len(src.args) > 2 else "constant")
        )
    if name in ("interpolate", "Upsample"):
        return "up-in"
    return None


def neighbourhood(gm: fx.GraphModule, conv: fx.Node) -> tuple[str, str]:
    """(spelling, unspelled): the grammar's spelling of what surrounds `conv`, and the op after it the grammar
    cannot say with why ('' when the chain ends where the grammar does: at a fork into several users that are
    not a concat, or at the next conv, a layout op, the output)."""
    from harness.contexts.grammar import spell

    parts: dict[str, str] = {}
    feed = _feed(gm, conv)
    if feed:
        parts["feed"] = feed
    y, unspelled = conv, ""
    for slot in ("norm", "act", "pool", "merge", "after"):
        users = _data_users(gm, y)
        if len(users) != 1:
            if len(users) > 1:
                unspelled = (
                    f"{len(users)} users ({', '.join(sorted(_name(gm, u) for u in users))}): the grammar's "
                    "only fork is catpre, a pool and a concat of its input"
                )
            break
        (u,) = users
        token = None
        if slot == "norm" and isinstance(_module(gm, u), (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            token = "bn"
        elif slot == "act":
            token = _act(gm, u)
        elif slot == "pool":
            token = _pool(gm, u)
        elif slot == "merge":
            token = _merge(gm, u, y, conv)
        elif slot == "after" and "merge" in parts:
            token = "relu" if _act(gm, u) == "relu" else None
        if token is None:
            if slot in ("norm", "act", "pool"):
                continue  # the slot is empty; the same node may fill a later one
            unspelled = _why(gm, u, parts)
            break
        parts[slot], y = token, u
    else:
        users = _data_users(gm, y)
        if len(users) == 1:
            unspelled = _why(gm, users[0], parts)
    return spell(parts), unspelled


def _data_users(gm, y: fx.Node) -> list[fx.Node]:
    """The users that take y's values (not a size query such as `x.size()`)."""
    return [
        u
        for u in y.users
        if not (u.op == "call_function" and u.target is getattr)
        and not (u.op == "call_method" and u.target in ("size", "dim"))
    ]


def _merge(gm, u: fx.Node, y: fx.Node, conv: fx.Node) -> str | None:
    name = _name(gm, u)
    others = [a for a in u.args if isinstance(a, fx.Node) and a is not y]
    if isinstance(u.args[0], (list, tuple)):  # cat([...])
        others = [a for a in u.args[0] if a is not y]
    if name in ("add", "iadd") or u.target in (operator.add, torch.add):
        return "add" if others == [conv.args[0]] else "addz"
    if name == "cat":
        return "catx" if others == [conv.args[0]] else "cat"
    if name == "mul" or u.target in (operator.mul, torch.mul):
        return "mul"
    return None


def _why(gm, u: fx.Node, parts: dict) -> str:
    """Why the grammar cannot go on with `u` ('' where a conv's neighbourhood ends anyway)."""
    m = _module(gm, u)
    name = _name(gm, u)
    if isinstance(m, CONVS + (nn.Linear,)):
        return ""  # the next conv or matmul: the conv's own neighbourhood ends (`chain` spells a 1x1 after it)
    if name in (
        "output",
        "flatten",
        "view",
        "reshape",
        "transpose",
        "permute",
        "contiguous",
        "Flatten",
        "Dropout",
        "Identity",
    ):
        return ""  # a layout op, the output or an inference no-op: the grammar's contexts end there
    if _pool(gm, u):
        return (
            f"{_pool(gm, u)} after {'the merge' if 'merge' in parts else 'the pool'}: the grammar's pool "
            "comes before its merge"
        )
    if isinstance(m, (nn.MaxPool3d, nn.AvgPool3d, nn.AdaptiveAvgPool3d, nn.MaxPool1d, nn.AvgPool1d)) or (
        name == "mean" and len(_dims(u)) != 2
    ):
        return f"{name}{_pool_args(m) if m is not None else str(_dims(u))}: the grammar's pools are 2D"
    if isinstance(m, (nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d)):
        return f"{name}{_pool_args(m)}: a pooling the grammar has no token for"
    return f"{name}: no slot of the grammar takes it here"


def _dims(n: fx.Node) -> tuple:
    dims = n.kwargs.get("dim", n.args[1] if len(n.args) > 1 else ())
    return tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)


def _pool_args(m) -> str:
    fields = ("kernel_size", "stride", "padding", "ceil_mode", "output_size")
    return "(" + ", ".join(f"{f}={getattr(m, f)}" for f in fields if hasattr(m, f)) + ")"


def spell_all(model: nn.Module) -> dict[str, tuple[str, str]]:
    """Layer path of each conv -> (spelling, unspelled)."""
    gm = fx.symbolic_trace(model)
    return {
        str(n.target): neighbourhood(gm, n)
        for n in gm.graph.nodes
        if n.op == "call_module" and isinstance(gm.get_submodule(n.target), CONVS)
    }
