"""Which operators FakeTensor's cache may now answer for, and that a run without the speed-up computes them again."""

from __future__ import annotations

import hashlib

import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers the quantized_decomposed operators
from torch._subclasses.fake_tensor import FakeTensorMode

from harness.speedups import qdq_fake_cache

QD = torch.ops.quantized_decomposed
_LIB = torch.library.Library("quantized_decomposed", "FRAGMENT")  # same namespace, schemas the cache must refuse
_LIB.define("harness_test_inplace(Tensor(a!) x) -> Tensor(a!)")
_LIB.define("harness_test_view(Tensor(a) x) -> Tensor(a)")


def test_probe_passes_on_this_torch():
    assert qdq_fake_cache.probe() == ""


def test_only_functional_operators_of_the_namespace_are_admitted():
    assert qdq_fake_cache.admitted(QD.quantize_per_tensor.default)
    assert qdq_fake_cache.admitted(QD.dequantize_per_tensor.tensor)
    assert qdq_fake_cache.admitted(QD.dequantize_per_channel.default)
    assert not qdq_fake_cache.admitted(QD.harness_test_inplace.default)  # writes its input
    assert not qdq_fake_cache.admitted(QD.harness_test_view.default)  # aliases it
    assert not qdq_fake_cache.admitted(torch.ops.aten.add.Tensor)  # torch's own rules decide for aten
    assert not qdq_fake_cache.admitted(torch.ops.higher_order.cond)  # not an OpOverload


def _bypasses_of_dq(x) -> int:
    before = FakeTensorMode.cache_bypasses["non-builtin"]
    QD.dequantize_per_tensor.default(x, 0.1, 0, -128, 127, torch.int8)
    return FakeTensorMode.cache_bypasses["non-builtin"] - before


@pytest.fixture
def torchs_own(monkeypatch):
    """FakeTensorMode as torch has it, whatever an earlier test's process set-up installed; an empty cache."""
    plain = FakeTensorMode._validate_cache_key
    while hasattr(plain, "__wrapped__"):
        plain = plain.__wrapped__
    monkeypatch.setattr(FakeTensorMode, "_validate_cache_key", plain)
    FakeTensorMode.cache.clear()


def test_installed_it_caches_and_undone_torch_bypasses_again(torchs_own):
    """Entries made while installed must not answer once it is undone (a run with the speed-ups undone is the
    plain flow), nor negative entries made before it block it."""
    with FakeTensorMode() as mode:
        x = mode.from_tensor(torch.zeros(1, 2, 3, 3, dtype=torch.int8))
        assert _bypasses_of_dq(x) == 1  # torch alone: bypassed, and remembered as such
        undo = qdq_fake_cache.install()
        try:
            hits = FakeTensorMode.cache_hits
            assert _bypasses_of_dq(x) == 0 and _bypasses_of_dq(x) == 0
            assert FakeTensorMode.cache_hits == hits + 1  # the second call is answered by the cache
        finally:
            undo()
        assert _bypasses_of_dq(x) == 1


@pytest.mark.lowering
def test_a_pack_lowers_to_the_same_bytes_with_and_without_it(torchs_own):
    """Beyond the proof sample: three a8w8 convs (strided with a batch, depthwise, transposed) as one packed
    program."""
    from harness.config import parse_descriptor
    from harness.lowering.lower import lower
    from harness.lowering.pack import pack_programs
    from harness.policy.targets import get_target
    from harness.run import stages

    target = get_target("tosa")
    descriptors = [
        "conv2d_n2_ic3_oc8_i17x15_k3x5_s3x2_p1x2_qa8w8",
        "conv2d_ic8_oc8_g8_i12x12_k3_p1_qa8w8",
        "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w8",
    ]
    prepared = [stages.prepare(parse_descriptor(d), 0, target) for d in descriptors]
    packed = pack_programs([p.program for p in prepared], [p.example_inputs for p in prepared])

    def digest() -> str:
        artifact = lower(packed.module, packed.inputs, "a8w8", target)
        return hashlib.sha256(b"".join(artifact.tosa)).hexdigest()

    plain = digest()
    undo = qdq_fake_cache.install()
    try:
        cached = digest()
    finally:
        undo()
    assert cached == plain
