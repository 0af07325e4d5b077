"""The second executor: the .vgf on the ML SDK's scenario runner and emulation layer, compared with the reference
model; and what a machine without that stack is told."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from harness.judging.executors import disagreement
from harness.policy.targets import get_target
from harness.runners import vulkan_env
from harness.runners.vgf_emulation import _resources


def _stack_reason() -> str:
    try:
        vulkan_env.stack()
    except vulkan_env.StackMissing as e:
        return str(e)
    return ""


STACK_MISSING = _stack_reason()
needs_stack = pytest.mark.skipif(bool(STACK_MISSING), reason=f"the VGF executor cannot run here: {STACK_MISSING}")


def test_the_target_runs_the_vgf_and_checks_it_against_the_reference_model():
    t = get_target("vgf-emu")
    assert (t.backend, t.runner, t.cross_check) == ("vgf", "vgf-emulation", "tosa-ref")
    assert t.schemes == get_target("vgf").schemes and not t.dynamic and not t.control_flow


def test_int_outputs_must_agree_bit_for_bit():
    a = torch.tensor([[0.5, 1.0], [1.5, 2.0]])
    assert disagreement(a, a.clone(), None, ("x", "y")) == (
        "",
        {"second": "y", "bit_exact": True, "max_abs_diff": 0.0, "n_diff": 0, "non_finite_one_side": 0},
    )
    b = a.clone()
    b[1, 0] = 1.25  # one LSB of a 0.25 scale
    why, metrics = disagreement(a, b, None, ("vgf-emulation", "tosa-ref"))
    assert "differ on 1 element(s), up to 0.25 at [1, 0], where they must agree bit for bit" in why
    assert metrics["worst"] == {"index": [1, 0], "first": 1.5, "second": 1.25} and not metrics["bit_exact"]


def test_float_outputs_may_differ_by_twice_the_dot_product_limit_and_no_more():
    """Each executor may be `limit` from the exact result, on either side: 2 * limit apart, not more."""
    a = torch.tensor([1.0, 2.0, 3.0])
    limit = np.array([0.25, 0.25, 0.0])  # binary fractions: no rounding in the test's own arithmetic
    why, metrics = disagreement(a, a + torch.tensor([0.5, -0.25, 0.0]), limit, ("x", "y"))
    assert why == "" and metrics["max_share_of_limit"] == 1.0  # the first element is at the limit, not past it
    why, metrics = disagreement(a, a + torch.tensor([0.0, 0.625, 0.0]), limit, ("x", "y"))
    assert "more than twice the DOT_PRODUCT limit on 1 element(s)" in why and metrics["worst"]["index"] == [1]
    zero = np.zeros(3)  # exact data: the exactly rounded result, bit for bit
    assert "bit for bit" in disagreement(a, a + torch.tensor([0.0, 0.0, 1e-6]), zero, ("x", "y"))[0]


@pytest.mark.parametrize("limit", [None, np.full(3, 1e30)])
def test_a_non_finite_value_on_one_side_only_is_a_disagreement_whatever_the_limit(limit):
    a = torch.tensor([1.0, 2.0, 3.0])
    for bad in (float("nan"), float("inf"), float("-inf")):
        b = a.clone()
        b[2] = bad
        why, metrics = disagreement(a, b, limit, ("x", "y"))
        assert "only one gives a non-finite value" in why and metrics["worst"]["index"] == [2], (bad, why)
        assert disagreement(b, a, limit, ("x", "y"))[0], bad  # either side
    both = torch.tensor([1.0, float("nan"), float("inf")])
    assert disagreement(both, both.clone(), limit, ("x", "y"))[0] == ""  # the same non-finite values agree


def test_the_scenario_template_is_read_in_the_graphs_order():
    template = {
        "resources": [
            {"graph": {"src": "g.vgf", "uid": "vgf_graph_ref"}},
            {"tensor": {"uid": "output_0_ref", "dst": "O", "dims": [1], "format": "VK_FORMAT_R8_SINT"}},
            {"tensor": {"uid": "input_10_ref", "src": "I", "dims": [2], "format": "VK_FORMAT_R8_SINT"}},
            {"tensor": {"uid": "input_2_ref", "src": "I", "dims": [3], "format": "VK_FORMAT_R8_SINT"}},
        ]
    }
    ins, outs, graph = _resources(template)
    assert [t["uid"] for t in ins] == ["input_2_ref", "input_10_ref"] and [t["uid"] for t in outs] == ["output_0_ref"]
    assert graph["uid"] == "vgf_graph_ref"


def test_the_graph_layer_is_registered_above_the_tensor_layer(tmp_path, monkeypatch):
    """Implicit layers stack in the order the loader finds them: the graph layer's manifest goes in the directory
    searched first ($XDG_CONFIG_HOME), else the tensor layer takes the graph's SPIR-V and fails to parse it."""
    deploy = tmp_path / "deploy"
    (deploy / "share/vulkan/explicit_layer.d").mkdir(parents=True)
    for layer in ("Graph", "Tensor"):
        (deploy / "share/vulkan/explicit_layer.d" / f"VkLayer_{layer}.json").write_text(
            json.dumps(
                {
                    "file_format_version": "1.0.0",
                    "layer": {"name": f"VK_LAYER_ML_{layer}_Emulation", "library_path": f"libVkLayer_{layer}.so"},
                }
            )
        )
    monkeypatch.setattr(vulkan_env.cache, "ROOT", tmp_path / "cache")
    root = vulkan_env._layer_root(deploy)
    env = vulkan_env._layer_env(root)
    graph = json.loads((root / "config/vulkan/implicit_layer.d/VkLayer_ML_Graph.json").read_text())
    tensor = json.loads((root / "data/vulkan/implicit_layer.d/VkLayer_ML_Tensor.json").read_text())
    assert env == {"XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "data")}
    assert graph["layer"]["library_path"] == str(deploy / "lib/libVkLayer_Graph.so")
    assert "disable_environment" in graph["layer"] and "disable_environment" in tensor["layer"]


def _fake_deploy(tmp_path):
    deploy = tmp_path / "deploy"
    (deploy / "share/vulkan/explicit_layer.d").mkdir(parents=True)
    for layer in ("Graph", "Tensor"):
        (deploy / "share/vulkan/explicit_layer.d" / f"VkLayer_{layer}.json").write_text(
            json.dumps({"layer": {"name": f"VK_LAYER_ML_{layer}_Emulation", "library_path": "x.so"}})
        )
    return deploy


def test_the_layer_manifests_are_made_once_in_the_cache_and_shared(tmp_path, monkeypatch):
    """Not a temporary folder per process (each worker that ended without its exit handlers left one in /tmp):
    one folder per set of manifests under the harness cache, the same for every process; a temporary folder only
    where the cache cannot be written."""
    deploy = _fake_deploy(tmp_path)
    monkeypatch.setattr(vulkan_env.cache, "ROOT", tmp_path / "cache")
    root = vulkan_env._layer_root(deploy)
    assert root.parent == tmp_path / "cache" / "vulkan-layers" and vulkan_env._layer_root(deploy) == root
    assert (root / "config/vulkan/implicit_layer.d/VkLayer_ML_Graph.json").is_file()
    (tmp_path / "blocked").write_text("a file where the cache's folder would be")
    monkeypatch.setattr(vulkan_env.cache, "ROOT", tmp_path / "blocked")
    monkeypatch.setattr(vulkan_env.cache, "_PRIVATE", {})
    fallback = vulkan_env._layer_root(deploy)
    assert fallback.name.startswith("harness-vulkan-layers-") and vulkan_env._layer_root(deploy) == fallback


def test_a_machine_without_a_vulkan_loader_is_told_what_to_install(monkeypatch):
    monkeypatch.setattr(vulkan_env.ctypes.util, "find_library", lambda name: None)
    with pytest.raises(
        vulkan_env.StackMissing,
        match=r"no Vulkan loader \(libvulkan.so.1\): apt-get install "
        r"libvulkan1 mesa-vulkan-drivers",
    ):
        vulkan_env._check_driver()


def test_a_missing_wheel_is_named_with_its_install_line(monkeypatch):
    monkeypatch.setattr(vulkan_env.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(
        vulkan_env.StackMissing,
        match=r"the scenario_runner package is not installed: pip install "
        r"-e '.\[vgf\]' \(ai-ml-sdk-scenario-runner==0.11.0\)",
    ):
        vulkan_env._package_dir("scenario_runner")


@pytest.mark.lowering
def test_without_the_stack_every_case_is_skipped_with_the_reason(monkeypatch):
    from harness.config import parse_descriptor
    from harness.run.execute import run_case
    from harness.runners import vgf_emulation

    monkeypatch.setattr(
        vgf_emulation,
        "stack",
        lambda: (_ for _ in ()).throw(
            vulkan_env.StackMissing("no Vulkan loader (libvulkan.so.1): apt-get install libvulkan1 mesa-vulkan-drivers")
        ),
    )
    r = run_case(parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa8w8"), 0, "vgf-emu")
    assert r.outcome.value == "skipped" and r.reason.startswith("the VGF executor cannot run here: no Vulkan loader")


@pytest.mark.lowering
@needs_stack
@pytest.mark.parametrize(
    "descriptor",
    [
        "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8",
        "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1_qfp32",
        "conv1d_ic4_oc8_i20_k3_s2_p1_qbf16",
        "conv2d_ic8_oc8_i12x12_k3_p1_qa16w8",
    ],
)
def test_the_emulation_layer_runs_the_vgf_and_agrees_with_the_reference_model(descriptor):
    from harness.config import parse_descriptor
    from harness.run.execute import run_case

    r = run_case(parse_descriptor(descriptor), 0, "vgf-emu")
    assert r.outcome.value == "pass", r.reason
    assert r.runner == "vgf-emulation" and r.metrics["executors"]["second"] == "tosa-ref"
    if "_qa" in descriptor:
        assert r.metrics["executors"]["bit_exact"]


@pytest.mark.lowering
@needs_stack
def test_a_difference_between_the_executors_is_a_finding_of_its_own(monkeypatch):
    """The reference model's output nudged by one code: the oracle passes the emulation layer's output, the
    executors' check does not, and says why."""
    from harness.config import parse_descriptor
    from harness.run.execute import run_case
    from harness.runners.tosa_ref import TosaReferenceRunner

    real = TosaReferenceRunner.run

    def nudged(self, artifact, inputs):
        out = real(self, artifact, inputs)
        out[0] = out[0].clone()
        out[0].view(-1)[5] += out[0].abs().max() / 50
        return out

    monkeypatch.setattr(TosaReferenceRunner, "run", nudged)
    r = run_case(parse_descriptor("conv2d_ic8_oc8_i12x12_k3_p1_qa8w8"), 0, "vgf-emu")
    assert (r.outcome.value, r.rule) == ("mismatch", "executors"), r.reason
    assert r.reason.startswith("executors disagree: vgf-emulation and tosa-ref differ on 1 element(s)")
    stage = r.metrics["attribution"]["executor"]
    assert r.metrics["attribution"]["added_by"] == "executor" and stage["unit"] == "lsb" and stage["worst"] > 0


@pytest.mark.lowering
@needs_stack
def test_the_emulation_layers_numbers_are_the_same_alone_twice_and_packed():
    """Determinism holds through the second executor too (lavapipe's threads do not reorder a sum)."""
    from harness.config import parse_descriptor
    from harness.run.execute import run_case
    from harness.run.packed import run_pack
    from harness.run.settings import RunSettings

    cases = [
        parse_descriptor(d) for d in ("conv2d_ic8_oc16_i16x16_k3_p1_qbf16", "conv2d_ic8_oc16_i16x16_k3_s2_p1_qbf16")
    ]
    first, second = (run_case(cases[0], 0, "vgf-emu") for _ in range(2))
    packed = run_pack(cases, RunSettings(target="vgf-emu"))
    assert packed[0].packed == 2 and first.output_sha256 == second.output_sha256 == packed[0].output_sha256
    assert 0 < first.metrics["executors"]["max_share_of_limit"] < 1  # bf16: other sums, within the rule
