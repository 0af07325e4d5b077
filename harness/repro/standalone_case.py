#!/usr/bin/env python3
"""Standalone reproduction of one convolution case of the ExecuTorch Arm backend.

Needs torch, executorch with its Arm extras (tosa-tools' reference model; for
an Ethos-U target, ethos-u-vela) and numpy, and the two files beside it: the
case's model as a torch.export program, and its data (inputs, calibration
samples, the expected output and its per-element limit). It quantizes (INT
schemes) and lowers the model as a user would, runs the lowered graph on the
TOSA reference model, and asserts that every output element is within its
limit of the expected value. Exit status 0: as expected; 1: it is not.

This file is a template: `python -m harness repro` fills in CASE.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

CASE: dict = {}  # filled in by harness.repro.script

HERE = Path(__file__).resolve().parent
_DELEGATE = torch.ops.higher_order.executorch_call_delegate
_BITS = {torch.bfloat16: torch.uint16, torch.float8_e4m3fn: torch.uint8, torch.float8_e5m2: torch.uint8}


def compile_spec(workdir: str):
    if CASE["accelerator"]:  # an Ethos-U target: the backend leaves the TOSA graph it gives Vela in workdir
        from executorch.backends.arm.ethosu import EthosUCompileSpec

        spec = EthosUCompileSpec(CASE["accelerator"])
        spec.dump_intermediate_artifacts_to(workdir)
        return spec
    from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec

    return TosaCompileSpec(CASE["tosa_spec"])


def quantize(program: torch.export.ExportedProgram, spec, calibration: list) -> torch.nn.Module:
    """PT2E with the Arm quantizer's symmetric configuration, calibrated on the saved samples."""
    from executorch.backends.arm.quantizer import (
        EthosUQuantizer,
        TOSAQuantizer,
        get_symmetric_a16w8_quantization_config,
        get_symmetric_quantization_config,
    )
    from executorch.backends.arm.quantizer.arm_quantizer import get_symmetric_a8w4_quantization_config
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    quantizer = EthosUQuantizer(spec) if CASE["accelerator"] else TOSAQuantizer(spec)
    makers = {
        "a8w8": get_symmetric_quantization_config,
        "a16w8": get_symmetric_a16w8_quantization_config,
        "a8w4": lambda is_per_channel: get_symmetric_a8w4_quantization_config(is_per_channel, is_qat=False),
    }
    quantizer.set_global(makers[CASE["quantizer"]](is_per_channel=CASE["per_channel"]))
    prepared = prepare_pt2e(program.module(check_guards=False), quantizer)
    for sample in calibration:
        prepared(*sample)
    return convert_pt2e(prepared)


def lower(model, inputs: tuple, spec, workdir: str):
    """to_edge_transform_and_lower with the target's partitioner; returns the program and each delegate's TOSA graph."""
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    if CASE["accelerator"]:
        from executorch.backends.arm.ethosu.partitioner import EthosUPartitioner as Partitioner
    else:
        from executorch.backends.arm.tosa.partitioner import TOSAPartitioner as Partitioner
    exported = model if isinstance(model, torch.export.ExportedProgram) else torch.export.export(model, inputs)
    program = to_edge_transform_and_lower(
        exported, partitioner=[Partitioner(spec)], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    graphs = {}
    gm = program.exported_program().graph_module
    for node in gm.graph.nodes:
        delegate = getattr(gm, node.target) if node.op == "get_attr" else None
        if delegate is None or not hasattr(delegate, "processed_bytes"):
            continue
        if CASE["accelerator"]:  # processed_bytes is Vela's command stream; the TOSA graph is in workdir
            tag = next(
                n.meta["delegation_tag"] for n in delegate.original_module.graph.nodes if n.meta.get("delegation_tag")
            )
            graphs[node.target] = next(Path(workdir).glob(f"output_{tag}_*.tosa")).read_bytes()
        else:
            graphs[node.target] = bytes(delegate.processed_bytes)
    return program, graphs


def _tosa_input_names(buffer: bytes) -> list[str]:
    from tosa.TosaGraph import TosaGraph

    block = TosaGraph.GetRootAs(buffer, 0).Regions(0).Blocks(0)
    return [block.Inputs(i).decode() for i in range(block.InputsLength())]


def run_delegate(buffer: bytes, lowered, args) -> tuple:
    """One delegate on the reference model: inputs by name, in the dim order the backend declared."""
    import tosa_reference_model

    program = lowered.original_module
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    by_name = dict(zip(program.graph_signature.user_inputs, args))
    feed = []
    for name in _tosa_input_names(buffer):
        t = by_name[name].permute(tuple(placeholders[name].meta["val"].dim_order())).contiguous()
        feed.append(np.ascontiguousarray(t.view(_BITS[t.dtype]).numpy() if t.dtype in _BITS else t.numpy()))
    try:
        outputs, status = tosa_reference_model.run(buffer, feed)
    except ValueError as e:  # the graph breaks a rule of the specification; the model printed which
        raise SystemExit(f"FAIL: the TOSA reference model refused the graph: {e}") from None
    if status.name != "TOSA_VALID":
        raise SystemExit(f"FAIL: the TOSA reference model returned {status.name}")
    results = []
    for array, node in zip(outputs, program.graph.output_node().args[0]):
        val, order = node.meta["val"], tuple(node.meta["val"].dim_order())
        shape = tuple(val.shape[i] for i in order)
        t = torch.frombuffer(bytearray(np.ascontiguousarray(array).tobytes()), dtype=val.dtype).reshape(shape)
        results.append(t.permute([order.index(i) for i in range(len(order))]).contiguous())
    return tuple(results)


class _OnReferenceModel(torch.fx.Interpreter):
    """The lowered program, each delegate call run on the reference model (boundary Q/DQ in torch)."""

    def __init__(self, program, graphs):
        self.graphs = graphs
        super().__init__(program.exported_program().module())

    def call_function(self, target, args, kwargs):
        if target is _DELEGATE:
            key = next(name for name, module in self.module.named_children() if module is args[0])
            return run_delegate(self.graphs[key], args[0], args[1:])
        return super().call_function(target, args, kwargs)


def check(output: torch.Tensor, expected: np.ndarray, limit: np.ndarray) -> int:
    out = output.double().numpy()
    if out.shape != expected.shape:
        print(f"FAIL: output shape {list(out.shape)}, expected {list(expected.shape)}")
        return 1
    diff = np.abs(out - expected)
    same = (out == expected) | (np.isnan(out) & np.isnan(expected))
    bad = ~(same | (diff <= limit))
    print(f"case:   {CASE['descriptor']} seed {CASE['seed']} on {CASE['target']}")
    print(f"rule:   {CASE['rule']}")
    if not bad.any():
        print(f"PASS: all {out.size} elements within their limit (largest |error| {np.nanmax(diff, initial=0):.6g})")
        return 0
    worst = np.unravel_index(np.argmax(np.where(bad, np.nan_to_num(diff - limit, nan=np.inf), -np.inf)), out.shape)
    print(
        f"FAIL: {int(bad.sum())} of {out.size} elements beyond their limit; worst at index {list(map(int, worst))}: "
        f"got {out[worst]:.8g}, expected {expected[worst]:.8g}, limit {limit[worst]:.3g}"
    )
    return 1


def main() -> int:
    program = torch.export.load(HERE / CASE["program"])
    data = torch.load(HERE / CASE["data"], weights_only=True)
    inputs = tuple(data["inputs"])
    with tempfile.TemporaryDirectory() as workdir, torch.no_grad():
        spec = compile_spec(workdir)
        model = quantize(program, spec, data["calibration"]) if CASE["quantizer"] else program
        lowered, graphs = lower(model, inputs, spec, workdir)
        outputs = _OnReferenceModel(lowered, graphs).run(*inputs)
    output = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
    return check(output, data["expected"].numpy(), data["limit"].numpy())


if __name__ == "__main__":
    sys.exit(main())
