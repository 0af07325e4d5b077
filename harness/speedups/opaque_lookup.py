"""torch's "is this an opaque object?" answered from a memo for the types that are not.

Every argument torch.fx's proxy tracer records, and every value a pass
retraces, is checked with `isinstance(x, OpaqueBase)`; its metaclass imports
`is_opaque_value` on each call, which looks the type up in a
`WeakKeyDictionary` (a new weak reference per lookup) and then walks its MRO:
3-5 us a check, ~25,000 checks and ~56,000 lookups for a pack of ten a8w8
cases (measured), for types (tensors, ints, nodes) that are never opaque.
Here a type found not to be opaque is remembered; the memo is dropped whenever
the registry's size changes (a registration, or a registered class collected) and after each case (it holds
its types strongly, and torch.fx makes a class per graph module). Opaque
types and FakeScriptObject instances take torch's own path.

Probe: the registry, resolver and metaclass check it wraps exist, and with it
installed every answer on a sample of values (tensors, nodes, numbers,
an Enum, which torch registers as opaque) is torch's; tests/speedups/test_opaque_lookup.py
checks registrations as well.
"""

from __future__ import annotations

import enum

from harness.speedups.base import Undo, need, patch, undo_all

_NOT_OPAQUE: set = set()
_REGISTRY_SIZE = [-1]  # len(_OPAQUE_TYPES) when the memo was last valid


def forget() -> None:
    """Drop the memo (after each case: it holds the case's classes)."""
    _NOT_OPAQUE.clear()


def _sample() -> list:
    import torch

    class Color(enum.Enum):
        RED = 1

    graph = torch.fx.Graph()
    return [
        torch.zeros(2),
        graph.placeholder("x"),
        3,
        2.5,
        "s",
        None,
        (1, 2),
        [torch.ones(1)],
        Color.RED,
        torch.float32,
        torch.device("cpu"),
    ]


def _answers(values, check, resolve) -> list:
    from torch._opaque_base import OpaqueBase

    return [(check(OpaqueBase, v), resolve(type(v))) for v in values]


def probe() -> str:
    need("torch._library.opaque_object", "_OPAQUE_TYPES")
    need("torch._library.opaque_object", "_resolve_opaque_type_info")
    need("torch._opaque_base", "OpaqueBaseMeta.__instancecheck__")
    need("torch._opaque_base", "OpaqueBase")
    need("torch._library.fake_class_registry", "FakeScriptObject")
    from torch._library import opaque_object
    from torch._opaque_base import OpaqueBaseMeta

    def torchs() -> list:
        check = OpaqueBaseMeta.__instancecheck__
        resolve = opaque_object._resolve_opaque_type_info
        return _answers(_sample(), getattr(check, "__wrapped__", check), getattr(resolve, "__wrapped__", resolve))

    want = torchs()
    undo = install()
    try:
        got = [
            _answers(_sample(), OpaqueBaseMeta.__instancecheck__, opaque_object._resolve_opaque_type_info)
            for _ in range(2)
        ]  # the second time from the memo
    finally:
        undo()
        forget()
    if got[0] != want or got[1] != want:
        return "the memo answers an opaque check otherwise than torch"
    return ""


def install() -> Undo:
    from torch import _opaque_base
    from torch._library import opaque_object
    from torch._library.fake_class_registry import FakeScriptObject

    registry = opaque_object._OPAQUE_TYPES
    original_resolve = opaque_object._resolve_opaque_type_info
    original_check = _opaque_base.OpaqueBaseMeta.__instancecheck__
    opaque_base = _opaque_base.OpaqueBase

    def remembered(cls) -> bool:
        try:
            return cls in _NOT_OPAQUE and fresh()
        except TypeError:  # a type whose metaclass makes it unhashable: torch's path
            return False

    def fresh() -> bool:
        if len(registry) != _REGISTRY_SIZE[0]:
            _NOT_OPAQUE.clear()
            _REGISTRY_SIZE[0] = len(registry)
            return False
        return True

    def _resolve_opaque_type_info(cls):
        if not isinstance(cls, type):
            return original_resolve(cls)
        if remembered(cls):
            return None
        info = original_resolve(cls)
        if info is None:
            fresh()  # the memo is for this registry
            try:
                _NOT_OPAQUE.add(cls)
            except TypeError:
                pass
        return info

    def __instancecheck__(cls, instance):
        if cls is opaque_base and remembered(type(instance)) and not isinstance(instance, FakeScriptObject):
            return False
        return original_check(cls, instance)

    _resolve_opaque_type_info.__wrapped__ = original_resolve
    __instancecheck__.__wrapped__ = original_check
    return undo_all(
        [
            patch(opaque_object, "_resolve_opaque_type_info", _resolve_opaque_type_info),
            patch(_opaque_base.OpaqueBaseMeta, "__instancecheck__", __instancecheck__),
        ]
    )
