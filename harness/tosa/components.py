"""Split a TOSA graph into the independent subgraphs its inputs feed.

A packed program's delegate holds every case's operators in one graph. Two
operators belong to the same case when a computed tensor (an operator's
output or a graph input) links them; constants never link (the backend may
fuse equal constants of two cases into one). Each part is named by the
owner of the graph inputs that feed it, so a case's operators and conv
accumulators can be reported exactly as when it is lowered alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.tosa.graph import (
    CONSTANT_OPS,
    CONV_ATTRIBUTES,
    block_tensors,
    conv_acc_type,
    conv_weight_type,
    enum_names,
    narrowed_convs,
)


class SplitError(ValueError):
    """The graph does not split into parts with one owner each."""


@dataclass(frozen=True)
class Part:
    ops: tuple[str, ...]  # non-constant operators, in graph order
    conv_acc_types: tuple[str, ...]
    conv_weight_types: tuple[str, ...] = ()
    narrowed_accumulators: int = 0


def _find(parent: dict, x):
    while parent[x] != x:
        parent[x] = parent[parent[x]]
        x = parent[x]
    return x


def split_by_owner(buffer: bytes, owner_of_input: dict[str, int]) -> dict[int, Part]:
    """The parts of the main block, keyed by the owner of the inputs that feed them.

    `owner_of_input` maps each graph input's name to its owner (a case's index).
    A part fed by no input, or by inputs of two owners, is a SplitError.
    """
    from tosa.TosaGraph import TosaGraph

    op_names, dtype_names = enum_names("Op"), enum_names("DType")
    graph = TosaGraph.GetRootAs(buffer, 0)
    if graph.RegionsLength() != 1 or graph.Regions(0).BlocksLength() != 1:
        raise SplitError("a graph with control flow regions does not split by case")
    block = graph.Regions(0).Blocks(0)
    ops = [block.Operators(o) for o in range(block.OperatorsLength())]
    names = [op_names.get(op.Op(), "UNKNOWN") for op in ops]
    inputs = [block.Inputs(i).decode() for i in range(block.InputsLength())]
    parent: dict = {("in", n): ("in", n) for n in inputs}
    producer: dict[str, int] = {}
    for o, (op, name) in enumerate(zip(ops, names)):
        parent[o] = o
        for i in range(op.InputsLength()):
            tensor = op.Inputs(i).decode()
            linked = ("in", tensor) if tensor in inputs else producer.get(tensor)
            if linked is not None:
                parent[_find(parent, o)] = _find(parent, linked)
        if name not in CONSTANT_OPS:
            for i in range(op.OutputsLength()):
                producer[op.Outputs(i).decode()] = o
    owners: dict = {}
    for tensor in inputs:
        if tensor not in owner_of_input:
            raise SplitError(f"graph input {tensor} has no owner")
        root = _find(parent, ("in", tensor))
        if owners.setdefault(root, owner_of_input[tensor]) != owner_of_input[tensor]:
            raise SplitError(f"cases {owners[root]} and {owner_of_input[tensor]} share a subgraph")
    tensors = block_tensors(block, dtype_names)
    collected: dict[int, tuple[list[str], list[str], list[str]]] = {}
    for o, (op, name) in enumerate(zip(ops, names)):
        if name in CONSTANT_OPS:
            continue
        root = _find(parent, o)
        if root not in owners:
            raise SplitError(f"operator {o} ({name}) is fed by no graph input")
        part = collected.setdefault(owners[root], ([], [], []))
        part[0].append(name)
        if name in CONV_ATTRIBUTES:
            part[1].append(conv_acc_type(op, name, dtype_names))
            part[2].append(conv_weight_type(op, tensors))
    narrowed: dict[int, int] = {}
    for o in narrowed_convs(ops, names, tensors):
        owner = owners[_find(parent, o)]
        narrowed[owner] = narrowed.get(owner, 0) + 1
    return {owner: Part(tuple(o), tuple(a), tuple(w), narrowed.get(owner, 0)) for owner, (o, a, w) in collected.items()}
