"""Run a lowered VGF program's delegates as the device would: each `.vgf` in the ML SDK's scenario runner.

The delegate's processed bytes are the `.vgf` the model converter wrote. `vgf_dump --scenario-template` says
what the scenario runner needs (one tensor resource per graph input and output, in the graph's order, with its
dims and Vulkan format); the harness fills in the inputs as `.npy` files, runs `scenario-runner` on the ML
Emulation Layer (`harness.runners.vulkan_env`) and reads the outputs back. The inputs are the same arrays the
TOSA reference model gets (`harness.runners.delegates.feed`, matched by name against the delegate's TOSA graph),
so the two executors can be compared tensor for tensor.

A scenario the runner cannot execute is a `RunnerError` in its own words; a machine without the stack is not a
failure of anything: `available` says what is missing, and every case is skipped with that reason.
"""

from __future__ import annotations

import functools
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import torch

from harness.runners.base import Availability, RunnerError
from harness.runners.delegates import feed, results, run_program
from harness.runners.vulkan_env import StackMissing, error_lines, said, stack
from harness.tosa.graph import read_tosa

TIMEOUT_S = 600  # a scenario of one conv takes about a second on lavapipe
# What numpy type each Vulkan format of a tensor resource holds (the formats the converter writes for TOSA dtypes).
FORMATS = {
    "VK_FORMAT_R8_SINT": np.int8,
    "VK_FORMAT_R8_UINT": np.uint8,
    "VK_FORMAT_R8_BOOL_ARM": np.bool_,
    "VK_FORMAT_R16_SINT": np.int16,
    "VK_FORMAT_R32_SINT": np.int32,
    "VK_FORMAT_R64_SINT": np.int64,
    "VK_FORMAT_R16_SFLOAT": np.float16,
    "VK_FORMAT_R32_SFLOAT": np.float32,
    "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM": np.uint16,  # bf16: its bits, as `delegates.to_numpy` gives them
}


def _resources(template: dict) -> tuple[list[dict], list[dict], dict]:
    """The template's input tensors, output tensors (each in the graph's order) and its graph resource."""
    tensors = [r["tensor"] for r in template["resources"] if "tensor" in r]
    inputs = [t for t in tensors if "src" in t]
    outputs = [t for t in tensors if "dst" in t]
    graph = next(r["graph"] for r in template["resources"] if "graph" in r)

    def order(t: dict) -> int:
        return int(t["uid"].rsplit("_", 2)[-2])  # input_3_ref -> 3

    return sorted(inputs, key=order), sorted(outputs, key=order), graph


class VgfEmulationRunner:
    """scenario-runner on the ML Emulation Layer for Vulkan, one process per delegate call."""

    name = "vgf-emulation"

    def available(self, family: str = "vgf") -> Availability:
        try:
            stack()
        except StackMissing as e:
            return Availability(False, f"the VGF executor cannot run here: {e}")
        return Availability(True)

    def run(self, artifact, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        return run_program(artifact, inputs, functools.partial(self._run_delegate, artifact))

    def _run_delegate(self, artifact, lowered, args) -> tuple[torch.Tensor, ...]:
        buffer = artifact.tosa_for(lowered)
        if buffer is None:
            raise RunnerError(f"no TOSA graph for this {lowered.backend_id} delegate: its inputs cannot be matched")
        summary = read_tosa(buffer)
        arrays = feed(lowered, summary.inputs, args)
        tools = stack()
        with tempfile.TemporaryDirectory(prefix="harness-vgf-") as tmp:
            work = Path(tmp)
            (work / "graph.vgf").write_bytes(bytes(lowered.processed_bytes))
            made = subprocess.run(
                [
                    tools.vgf_dump,
                    "-i",
                    str(work / "graph.vgf"),
                    "-o",
                    str(work / "template.json"),
                    "--scenario-template",
                ],
                capture_output=True,
                text=True,
                timeout=TIMEOUT_S,
            )
            if made.returncode != 0:
                raise RunnerError(f"vgf_dump could not read the .vgf: {said(made)}")
            template = json.loads((work / "template.json").read_text())
            ins, outs, graph = _resources(template)
            if len(ins) != len(arrays):
                raise RunnerError(f"the .vgf takes {len(ins)} inputs, its TOSA graph {len(arrays)}")
            graph["src"] = str(work / "graph.vgf")
            for k, (resource, array) in enumerate(zip(ins, arrays)):
                if resource["format"] not in FORMATS:  # a gap in this table, not the backend's doing
                    raise NotImplementedError(f"no numpy type for the .vgf's {resource['format']} in FORMATS")
                if np.dtype(FORMATS[resource["format"]]) != array.dtype or list(resource["dims"]) != list(array.shape):
                    raise RunnerError(
                        f".vgf input {k} is {resource['format']} {resource['dims']}; its TOSA graph's "
                        f"is {array.dtype} {list(array.shape)}"
                    )
                resource["src"] = str(work / f"in{k}.npy")
                np.save(resource["src"], array)
            for k, resource in enumerate(outs):
                resource["dst"] = str(work / f"out{k}.npy")
            (work / "scenario.json").write_text(json.dumps(template))
            try:
                done = subprocess.run(
                    [tools.scenario_runner, "--scenario", str(work / "scenario.json"), "--output", str(work)],
                    env=tools.env,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT_S,
                )
            except subprocess.TimeoutExpired:
                raise RunnerError(f"scenario-runner did not finish in {TIMEOUT_S} s") from None
            missing = [r["dst"] for r in outs if not Path(r["dst"]).is_file()]
            if done.returncode != 0 or missing or error_lines(done):
                raise RunnerError(f"scenario-runner on the ML emulation layer: {said(done)}")
            outputs = [np.load(r["dst"]) for r in outs]
        return results(lowered, outputs, summary.outputs, "scenario-runner")
