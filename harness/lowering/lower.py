"""Export a case's (quantized) model and lower it for its target.

The same calls a user makes: `torch.export.export` and
`to_edge_transform_and_lower` with the target's partitioner. What comes out
is an `Artifact`: the lowered program, its TOSA flatbuffer(s), the operators
they contain and whether the whole conv was delegated. The runners use it;
the oracles never do.
"""

from __future__ import annotations

import hashlib
import io
import operator
import tempfile
from contextlib import nullcontext, redirect_stdout
from dataclasses import dataclass, field

import torch
from executorch.exir import EdgeCompileConfig, EdgeProgramManager, to_edge_transform_and_lower

from harness.lowering import partition_report
from harness.policy.targets import Target
from harness.speedups import lazy_compile
from harness.targets import backend
from harness.tosa.graph import TosaSummary, read_tosa


class _Joined:
    """A fact of every delegate's TOSA graph, in order (a read-only attribute of `Artifact`)."""

    def __init__(self, fact: str):
        self.fact = fact

    def __get__(self, artifact, owner=None) -> tuple[str, ...]:
        if artifact is None:
            return self
        return tuple(x for s in artifact.summaries for x in getattr(s, self.fact))


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
    delegate_tosa: dict[str, bytes] = field(default_factory=dict)  # delegate_key(d) -> the TOSA graph it came from
    # (node, target, reason) the partitioner gave for each node it rejected (harness.lowering.partition_report)
    rejected: tuple[tuple[str, str, str], ...] = ()
    facts: dict = field(default_factory=dict)  # the backend's own facts, as metrics (e.g. Vela's compile)

    def tosa_for(self, delegate) -> bytes | None:
        """The TOSA graph a delegate of this program (or of a copy of it) was lowered from."""
        return self.delegate_tosa.get(delegate_key(bytes(delegate.processed_bytes)))

    @property
    def delegated(self) -> bool:
        return bool(self.tosa) and not self.cpu_ops and not self.facts.get("vela", {}).get("cpu_ops")

    tosa_ops = _Joined("ops")
    conv_ops = _Joined("conv_ops")
    conv_acc_types = _Joined("conv_acc_types")
    conv_weight_types = _Joined("conv_weight_types")

    @property
    def narrowed_accumulators(self) -> int:
        return sum(s.narrowed_accumulators for s in self.summaries)


def _key(delegate) -> str:
    return delegate_key(bytes(delegate.processed_bytes))


def delegate_key(processed: bytes) -> str:
    """A delegate's identity across copies of the program: a digest of what the backend made of it."""
    return hashlib.sha256(processed).hexdigest()


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


def _first_per_node(rejected: list[tuple[str, str, str]]) -> tuple[tuple[str, str, str], ...]:
    """As the reporter keeps them: the first reason given for each node."""
    seen: dict[str, tuple[str, str, str]] = {}
    for row in rejected:
        seen.setdefault(row[0], row)
    return tuple(seen.values())


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
    with tempfile.TemporaryDirectory(prefix="harness-lower-") if side.NEEDS_WORKDIR else nullcontext() as workdir:
        spec = side.compile_spec(target, scheme, dynamic, control_flow, workdir)
        exported = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes)
        log = io.StringIO()  # what the backend's compiler prints (Vela's summary) is a fact, not noise
        with redirect_stdout(log), lazy_compile.during_lowering(), partition_report.recording() as rejected:
            # As ExecuTorch's own Arm flows do (aot_arm_compiler, the Arm recipes, the
            # Arm tests): the edge IR verifier does not know the TOSA dialect's dtypes.
            program = to_edge_transform_and_lower(
                exported,
                partitioner=[side.partitioner(spec)],
                compile_config=EdgeCompileConfig(_check_ir_validity=False),
            )
        gm = program.exported_program().graph_module
        delegates = [
            getattr(gm, n.target)
            for n in gm.graph.nodes
            if n.op == "get_attr" and hasattr(getattr(gm, n.target), "processed_bytes")
        ]
        buffers, facts = side.collect(delegates, workdir, log.getvalue())
    tosa = tuple(buffers)
    return Artifact(
        target=target.name,
        scheme=scheme,
        tosa_spec=side.tosa_spec(target, scheme, dynamic, control_flow),
        program=program,
        tosa=tosa,
        summaries=tuple(read_tosa(t) for t in tosa),
        cpu_ops=_cpu_ops(program),
        rejected=_first_per_node(rejected),
        delegate_tosa={_key(d): buffer for d, buffer in zip(delegates, tosa)},
        facts=facts,
    )
