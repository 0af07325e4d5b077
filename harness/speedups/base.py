"""What a speed-up is: a probe that says whether it can apply here, and an install that can be undone.

Every patch of torch, torchao or ExecuTorch internals in this package replaces
code it does not own, so none is trusted on a version string: before it is
installed, its probe checks that every name it relies on exists and that the
replacement behaves as the original on a small input (the same answer, the
same attributes, the same tables). A probe returns '' when the speed-up may
go on, or one line saying why not; it never raises (an exception in a probe
is its answer: off, with the exception named). `install` returns the undo.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

Undo = Callable[[], None]


@dataclass(frozen=True)
class Speedup:
    name: str
    saves: str  # one line: what it saves, measured (for `doctor` and the docs)
    probe: Callable[[], str]  # '' if it may be installed here, else why not
    install: Callable[[], Undo]


class Missing(Exception):
    """A name a speed-up relies on is not there (raised by `need`, turned into the probe's answer)."""


def need(dotted: str, attrs: str = ""):
    """The object at `module` (and `.attr.attr` after it); Missing naming what is absent."""
    try:
        obj = importlib.import_module(dotted)
    except ImportError as e:
        raise Missing(f"no module {dotted} ({e})") from None
    where = dotted
    for attr in filter(None, attrs.split(".")):
        if not hasattr(obj, attr):
            raise Missing(f"{where} has no {attr}")
        obj, where = getattr(obj, attr), f"{where}.{attr}"
    return obj


def run_probe(check: Callable[[], str]) -> str:
    """`check()`'s answer; an exception in it is the answer too (the speed-up stays off, the reason says why)."""
    try:
        return check()
    except Missing as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - a probe that cannot run proves nothing: off
        return f"probe failed: {type(e).__name__}: {str(e)[:200]}"


def patch(owner, attr: str, value) -> Undo:
    """Set `owner.attr` (a module or class) and return what puts the original back."""
    had = attr in vars(owner)
    old = vars(owner).get(attr)
    setattr(owner, attr, value)

    def undo() -> None:
        if had:
            setattr(owner, attr, old)
        else:
            delattr(owner, attr)

    return undo


def undo_all(undos: list[Undo]) -> Undo:
    """One undo for several, run in reverse order."""

    def undo() -> None:
        for u in reversed(undos):
            u()

    return undo
