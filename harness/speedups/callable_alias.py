"""`Callable[...]` subscriptions in `torch._ops`, memoized.

Each `run_decompositions` overrides the kernels of the ~560 preservable CIA
ops and restores them, 12,000 `OperatorBase.py_impl` calls; each call defines
a closure annotated `Callable[_P, _T]`, and `collections.abc.Callable[...]` is
not cached, so 60% of that time went to building annotation objects nobody
reads. `torch._ops` gets a `Callable` whose subscriptions are cached and whose
isinstance and issubclass checks are unchanged.

Probe: `torch._ops` binds the name to `collections.abc.Callable` (otherwise
there is nothing to replace), and the stand-in answers subscriptions and
checks as it does.
"""

from __future__ import annotations

import collections.abc

from harness.speedups.base import Undo, need, patch


class _CachedCallableMeta(type):
    """`Callable[...]` with memoized subscriptions; isinstance as before."""

    _cache: dict = {}

    def __getitem__(cls, params):
        try:
            return cls._cache[params]
        except KeyError:
            alias = cls._cache[params] = collections.abc.Callable[params]
            return alias
        except TypeError:  # unhashable parameters: no caching
            return collections.abc.Callable[params]

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, collections.abc.Callable)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, collections.abc.Callable)


class CachedCallable(metaclass=_CachedCallableMeta):
    pass


def probe() -> str:
    bound = need("torch._ops", "Callable")
    if bound is CachedCallable:
        return ""
    if bound is not collections.abc.Callable:
        return f"torch._ops.Callable is {bound!r}, not collections.abc.Callable"
    for params in (([int], str), (..., int)):
        if CachedCallable[params] != collections.abc.Callable[params]:
            return f"Callable[{params}] differs"
    if (
        not isinstance(len, CachedCallable)
        or isinstance(3, CachedCallable)
        or not issubclass(type(len), CachedCallable)
    ):
        return "the stand-in's isinstance checks differ"
    return ""


def install() -> Undo:
    import torch._ops

    return patch(torch._ops, "Callable", CachedCallable)
