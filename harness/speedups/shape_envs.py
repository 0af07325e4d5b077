"""Every live ShapeEnv, tracked so that a finished case's can be released.

A symbolic size is a C++ SymInt holding its Python SymNode, an edge the
collector cannot see; so the cycle ShapeEnv -> tracked fakes / dispatch
cache -> fake tensor -> C++ sizes -> SymNode -> ShapeEnv is never collected,
and a worker kept every dynamic-shape case's fake mode with its graphs
(measured: one ShapeEnv and one FakeTensorMode more per case, 13 after 12
cases; 1 and 1 with this). The per-method LRU caches of ShapeEnv hold the
last few environments as well. Nothing reads a case's environment after the
case; a pack's are released before its cases are judged, which reads none.

Probe: `ShapeEnv` exists and can be built; `release` reads its caches with
getattr, so a ShapeEnv without one of them has nothing to release there.
"""

from __future__ import annotations

import weakref

from harness.speedups.base import Undo, need, patch

_LIVE: weakref.WeakSet | None = None  # every ShapeEnv built since install
_CACHES: tuple = ()  # ShapeEnv's per-method LRU caches


def probe() -> str:
    ShapeEnv = need("torch.fx.experimental.symbolic_shapes", "ShapeEnv")
    ShapeEnv()
    return ""


def install() -> Undo:
    global _LIVE, _CACHES
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    _LIVE = live = weakref.WeakSet()
    _CACHES = tuple(a for a in vars(ShapeEnv).values() if hasattr(a, "cache_clear"))
    original = ShapeEnv.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        live.add(self)

    undo_init = patch(ShapeEnv, "__init__", __init__)

    def undo() -> None:
        global _LIVE, _CACHES
        undo_init()
        _LIVE, _CACHES = None, ()

    return undo


def release() -> None:
    """Clear what each tracked ShapeEnv caches (after a case); nothing when not installed."""
    if _LIVE is None:
        return
    for env in list(_LIVE):
        getattr(env, "fake_tensor_cache", {}).clear()
        if getattr(env, "tracked_fakes", None) is not None:
            env.tracked_fakes.clear()
    for cache in _CACHES:
        cache.cache_clear()
