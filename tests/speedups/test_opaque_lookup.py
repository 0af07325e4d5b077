"""The memo of non-opaque types answers every opaque check as torch does, registrations included."""

from __future__ import annotations

import enum

import pytest
import torch
from torch._library import opaque_object
from torch._library.fake_class_registry import FakeScriptObject
from torch._opaque_base import OpaqueBase, OpaqueBaseMeta

from harness.speedups import opaque_lookup


@pytest.fixture(autouse=True)
def installed():
    undo = opaque_lookup.install()
    yield
    undo()


class _Plain:
    pass


class _Color(enum.Enum):  # Enum subclasses are registered opaque value types
    RED = 1


def _torch_answers(values):
    check = type(OpaqueBase).__instancecheck__
    original = getattr(check, "__wrapped__", check)
    resolve = opaque_object._resolve_opaque_type_info
    resolve = getattr(resolve, "__wrapped__", resolve)
    return [(original(OpaqueBase, v), resolve(type(v))) for v in values]


def test_every_answer_is_torchs_before_and_after_a_registration():
    values = [torch.zeros(2), 3, "s", None, _Plain(), _Color.RED, torch.nn.Module(), [1], int]
    for _ in range(2):  # the second round answers from the memo
        assert [
            (isinstance(v, OpaqueBase), opaque_object._resolve_opaque_type_info(type(v))) for v in values
        ] == _torch_answers(values)
    assert _Plain in opaque_lookup._NOT_OPAQUE and int in opaque_lookup._NOT_OPAQUE

    class Later(metaclass=OpaqueBaseMeta):  # what a reference type needs
        pass

    assert not isinstance(Later(), OpaqueBase)  # remembered as not opaque ...
    opaque_object.register_opaque_type(Later, typ="reference")
    assert isinstance(Later(), OpaqueBase) and opaque_object.is_opaque_type(Later)  # ... until a registration

    class Sub(Later):
        pass

    assert isinstance(Sub(), OpaqueBase) == _torch_answers([Sub()])[0][0] is True


def test_a_fake_script_object_takes_torchs_path_and_forget_empties_the_memo():
    fake = FakeScriptObject.__new__(FakeScriptObject)
    object.__setattr__(fake, "real_obj", _Plain())
    assert isinstance(fake, OpaqueBase) is _torch_answers([fake])[0][0] is False
    assert FakeScriptObject in opaque_lookup._NOT_OPAQUE  # the wrapper's own type is not opaque ...
    object.__setattr__(fake, "real_obj", _Color.RED)
    assert isinstance(fake, OpaqueBase) is _torch_answers([fake])[0][0] is True  # ... what it wraps decides
    isinstance(_Plain(), OpaqueBase)
    opaque_lookup.forget()
    assert not opaque_lookup._NOT_OPAQUE


def test_the_probe_passes_here_and_its_install_undoes():
    from torch._opaque_base import OpaqueBaseMeta

    assert opaque_lookup.probe() == ""
    before = OpaqueBaseMeta.__instancecheck__
    undo = opaque_lookup.install()
    assert OpaqueBaseMeta.__instancecheck__ is not before
    undo()
    assert OpaqueBaseMeta.__instancecheck__ is before
