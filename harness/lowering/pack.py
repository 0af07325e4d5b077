"""Many prepared cases as one program, so that they are exported and lowered once.

Almost all of a case is `to_edge_transform_and_lower`, and much of that is paid
per program, not per node. A pack puts each case's program beside the others
as an independent subgraph with its own inputs and its one output: case i
takes inputs `input_slices[i]` of the packed program and gives its output i.

Each case is quantized alone before packing (its own observers, its own
calibration: the parameters are the ones it has alone). A PT2E-converted
module carries the Arm quantizer's marks in its nodes' meta, which
`torch.export` keeps only for nodes of the root graph, so converted modules are
merged into one flat fx graph; float modules are simply called in turn.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import fx

from harness.lowering.lower import Artifact
from harness.tosa.components import SplitError, split_by_owner
from harness.tosa.graph import TosaSummary, read_tosa

_DELEGATE = torch.ops.higher_order.executorch_call_delegate


class PackError(ValueError):
    """The programs cannot be packed (e.g. a case's module has more than one output)."""


@dataclass(frozen=True)
class PackedProgram:
    module: torch.nn.Module
    inputs: tuple[torch.Tensor, ...]  # every case's inputs, case after case
    input_slices: tuple[tuple[int, int], ...]  # case i's inputs: inputs[start:end]

    def dynamic_shapes(self, per_case: list[tuple | None]):
        """`torch.export`'s dynamic_shapes for the packed module from each case's own (None: static);
        None if every case is static. Each case's dims need names of their own."""
        if all(d is None for d in per_case):
            return None
        specs = []
        for dims, (start, end) in zip(per_case, self.input_slices):
            dims = tuple(dims or ())
            specs.extend(dims[k] if k < len(dims) else None for k in range(end - start))
        return (tuple(specs),) if isinstance(self.module, _Sequence) else tuple(specs)

    def owner_of_input(self, index: int) -> int:
        """The case whose input is the packed program's `index`-th."""
        return next(i for i, (start, end) in enumerate(self.input_slices) if start <= index < end)


class _Sequence(torch.nn.Module):
    """Float programs: each called on its own inputs; one output each."""

    def __init__(self, programs: list[torch.nn.Module], slices: tuple[tuple[int, int], ...]):
        super().__init__()
        self.programs = torch.nn.ModuleList(programs)
        self.slices = slices

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outputs = []
        for program, (start, end) in zip(self.programs, self.slices):
            out = program(*inputs[start:end])
            if not isinstance(out, torch.Tensor):
                raise PackError(f"a packed case must return one tensor, not {type(out).__name__}")
            outputs.append(out)
        return tuple(outputs)


def _merge_graphs(modules: list[fx.GraphModule]) -> fx.GraphModule:
    """One graph holding every module's nodes (meta included), case i's attributes under `case{i}.`."""
    root = torch.nn.Module()
    graph = fx.Graph()
    outputs = []
    for i, gm in enumerate(modules):
        root.add_module(f"case{i}", gm)
        env: dict[fx.Node, fx.Node] = {}
        for node in gm.graph.nodes:
            if node.op == "placeholder":
                env[node] = graph.placeholder(f"case{i}_{node.name}")
                env[node].meta = dict(node.meta)
            elif node.op == "output":
                leaves = node.args[0] if isinstance(node.args[0], (tuple, list)) else (node.args[0],)
                if len(leaves) != 1:
                    raise PackError(f"a packed case must have one output, case {i} has {len(leaves)}")
                outputs.append(env[leaves[0]])
            elif node.op in ("get_attr", "call_module"):
                copied = graph.node_copy(node, env.__getitem__)
                copied.target = f"case{i}.{node.target}"
                env[node] = copied
            else:
                env[node] = graph.node_copy(node, env.__getitem__)
    graph.output(tuple(outputs))
    return fx.GraphModule(root, graph)


def pack_programs(programs: list[torch.nn.Module], inputs: list[tuple[torch.Tensor, ...]]) -> PackedProgram:
    """The packed program of `programs` (all converted fx graphs, or all float modules) and its inputs."""
    slices, start = [], 0
    for xs in inputs:
        slices.append((start, start + len(xs)))
        start += len(xs)
    graphs = [isinstance(p, fx.GraphModule) for p in programs]
    if any(graphs) and not all(graphs):
        raise PackError("a pack mixes quantized and float programs")
    module = _merge_graphs(programs) if all(graphs) else _Sequence(programs, tuple(slices))
    return PackedProgram(module, tuple(x for xs in inputs for x in xs), tuple(slices))


def _owners_of_delegate_inputs(program, packed: PackedProgram, call: fx.Node, lowered) -> dict[str, int]:
    """Each TOSA input name of a delegate (its user inputs) -> the case whose packed inputs it derives from."""
    user_inputs = list(program.graph_signature.user_inputs)
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    index_of = {placeholders[name]: i for i, name in enumerate(user_inputs)}
    owners: dict[str, int] = {}
    for name, arg in zip(lowered.original_module.graph_signature.user_inputs, call.args[1:]):
        seen, todo, found = set(), [arg], set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            if node in index_of:
                found.add(packed.owner_of_input(index_of[node]))
            todo.extend(node.all_input_nodes)
        if len(found) != 1:
            raise PackError(f"delegate input {name} derives from {len(found)} cases' inputs")
        owners[name] = found.pop()
    return owners


def split_artifact(artifact: Artifact, packed: PackedProgram) -> list[Artifact]:
    """One artifact per case: the packed program and flatbuffers, with the case's own operators.

    A pack that left compute on the CPU, or whose graphs do not split into one
    part per case, is a PackError: its cases are then lowered alone.
    """
    if artifact.cpu_ops:
        raise PackError(f"the pack left {len(artifact.cpu_ops)} operator(s) on the CPU")
    if not artifact.tosa:
        raise PackError("nothing of the pack was delegated")
    program = artifact.program.exported_program()
    gm = program.graph_module
    parts: list[list[TosaSummary]] = [[] for _ in packed.input_slices]
    for call in gm.graph.nodes:
        if call.op != "call_function" or call.target is not _DELEGATE:
            continue
        lowered = getattr(gm, call.args[0].target)
        buffer = artifact.tosa_for(lowered)
        whole = read_tosa(buffer)
        try:
            split = split_by_owner(buffer, _owners_of_delegate_inputs(program, packed, call, lowered))
        except SplitError as e:
            raise PackError(str(e)) from e
        for owner, part in split.items():
            parts[owner].append(
                TosaSummary(
                    whole.version,
                    part.ops,
                    (),
                    (),
                    whole.regions,
                    part.conv_acc_types,
                    part.conv_weight_types,
                    part.narrowed_accumulators,
                )
            )
    if any(not p for p in parts):
        raise PackError(f"case {next(i for i, p in enumerate(parts) if not p)} has no operator in any delegate")
    return [dataclasses.replace(artifact, summaries=tuple(p)) for p in parts]
