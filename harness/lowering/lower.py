"""Export a case's (quantized) model and lower it for its target.

The same calls a user makes: `torch.export.export` and
`to_edge_transform_and_lower` with the target's partitioner. What comes out
is an `Artifact`: the lowered program, its TOSA flatbuffer(s), the operators
they contain and whether the whole conv was delegated. The runners use it;
the oracles never do.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from executorch.exir import EdgeCompileConfig, EdgeProgramManager, to_edge_transform_and_lower

from harness.policy.targets import Target
from harness.targets import backend
from harness.tosa.graph import TosaSummary, read_tosa


@dataclass
class Artifact:
    """The lowered program and the facts about it a test asserts on."""

    target: str
    scheme: str
    tosa_spec: str
    program: EdgeProgramManager
    tosa: tuple[bytes, ...]  # one flatbuffer per delegate
    summaries: tuple[TosaSummary, ...]
    cpu_ops: tuple[str, ...]  # compute left outside the delegate(s)

    @property
    def delegated(self) -> bool:
        return bool(self.tosa) and not self.cpu_ops

    @property
    def tosa_ops(self) -> tuple[str, ...]:
        return tuple(op for s in self.summaries for op in s.ops)

    @property
    def conv_ops(self) -> tuple[str, ...]:
        return tuple(op for s in self.summaries for op in s.conv_ops)

    @property
    def conv_acc_types(self) -> tuple[str, ...]:
        return tuple(a for s in self.summaries for a in s.conv_acc_types)


_BOUNDARY_TARGETS = ("quantize_per_tensor", "dequantize_per_tensor", "executorch_call_delegate")


def _cpu_ops(program: EdgeProgramManager) -> tuple[str, ...]:
    """Compute nodes left outside the delegates (boundary Q/DQ excepted)."""
    left = []
    for node in program.exported_program().graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        name = getattr(node.target, "__name__", str(node.target))
        if not any(b in name for b in _BOUNDARY_TARGETS):
            left.append(name)
    return tuple(left)


def lower(
    module: torch.nn.Module,
    inputs: tuple,
    scheme: str,
    target: Target,
    dynamic_shapes=None,
    control_flow: bool = False,
    shape_extension: bool | None = None,
) -> Artifact:
    """Export (with `dynamic_shapes`, if any) and lower through the target's
    partitioner; summarize the result. `shape_extension` (default: whether
    there are dynamic shapes) lowers for TOSA 1.1 with shape operators."""
    dynamic = dynamic_shapes is not None if shape_extension is None else shape_extension
    side = backend(target)
    spec = side.compile_spec(scheme, dynamic, control_flow)
    exported = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes)
    # As ExecuTorch's own Arm flows do (aot_arm_compiler, the Arm recipes, the
    # Arm tests): the edge IR verifier does not know the TOSA dialect's dtypes.
    program = to_edge_transform_and_lower(
        exported, partitioner=[side.partitioner(spec)], compile_config=EdgeCompileConfig(_check_ir_validity=False)
    )
    gm = program.exported_program().graph_module
    delegates = [
        getattr(gm, n.target)
        for n in gm.graph.nodes
        if n.op == "get_attr" and hasattr(getattr(gm, n.target), "processed_bytes")
    ]
    tosa = tuple(bytes(d.processed_bytes) for d in delegates)
    return Artifact(
        target=target.name,
        scheme=scheme,
        tosa_spec=side.tosa_spec(scheme, dynamic, control_flow),
        program=program,
        tosa=tosa,
        summaries=tuple(read_tosa(t) for t in tosa),
        cpu_ops=_cpu_ops(program),
    )

