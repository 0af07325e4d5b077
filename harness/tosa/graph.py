"""Read the facts a test needs out of a serialized TOSA graph.

Only the flatbuffer's own schema is used (the `tosa` package that ships with
tosa-tools), so what we report is what the backend emitted, not what its
Python objects claim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

CONV_OPS = ("CONV2D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D", "CONV3D")
CONV_ATTRIBUTES = {
    "CONV2D": "Conv2dAttribute",
    "DEPTHWISE_CONV2D": "DepthwiseConv2dAttribute",
    "TRANSPOSE_CONV2D": "TransposeConv2dAttribute",
    "CONV3D": "Conv3dAttribute",
}
CONSTANT_OPS = ("CONST", "CONST_SHAPE")
_LAYOUT_OPS = ("TRANSPOSE", "RESHAPE")  # move values without changing them


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class TosaSummary:
    version: str
    ops: tuple[str, ...]  # every non-constant operator, all regions, in order
    inputs: tuple[TensorInfo, ...]  # of the main block, in graph order
    outputs: tuple[TensorInfo, ...]
    regions: tuple[str, ...] = field(default=())
    conv_acc_types: tuple[str, ...] = field(default=())  # declared accumulator of each conv op
    conv_weight_types: tuple[str, ...] = field(default=())  # the element type of each conv op's weight tensor
    narrowed_accumulators: int = 0  # conv ops whose INT48 accumulator an INT32 consumer reads through INT16

    @property
    def conv_ops(self) -> tuple[str, ...]:
        return tuple(op for op in self.ops if op in CONV_OPS)


def attribute(op, name: str):
    """Operator `op`'s attribute table read as schema class `name` (e.g. "Conv2dAttribute")."""
    cls = getattr(__import__(f"tosa.{name}", fromlist=[name]), name)
    value = cls()
    table = op.Attribute()
    value.Init(table.Bytes, table.Pos)
    return value


def conv_acc_type(op, name: str, dtype_names: dict[int, str]) -> str:
    return dtype_names.get(attribute(op, CONV_ATTRIBUTES[name]).AccType(), "UNKNOWN")


def block_tensors(block, dtype_names: dict[int, str]) -> dict[str, TensorInfo]:
    """A block's tensors by name: what its operators' inputs and outputs name."""
    out = {}
    for t in range(block.TensorsLength()):
        tensor = block.Tensors(t)
        shape = tuple(int(s) for s in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()
        name = tensor.Name().decode()
        out[name] = TensorInfo(name, shape, dtype_names.get(tensor.Type(), "UNKNOWN"))
    return out


def conv_weight_type(op, tensors: dict[str, TensorInfo]) -> str:
    """The element type of a conv op's weight (its second input)."""
    weight = tensors.get(op.Inputs(1).decode())
    return weight.dtype if weight else "UNKNOWN"


def narrowed_convs(ops: list, names: list[str], tensors: dict[str, TensorInfo]) -> list[int]:
    """The indices of the conv ops whose INT48 accumulator reaches an INT32 RESCALE through an INT16 one:
    rounded and clamped to INT16, then widened again (TRANSPOSE and RESHAPE between pass values through).
    An INT32 consumer of an a16w8 conv can read the accumulator with one rescale; two lose its low bits."""

    def output(o: int) -> str:
        return ops[o].Outputs(0).decode()

    def dtype(o: int) -> str:
        t = tensors.get(output(o))
        return t.dtype if t else ""

    consumers: dict[str, list[int]] = {}
    for o, op in enumerate(ops):
        for i in range(op.InputsLength()):
            consumers.setdefault(op.Inputs(i).decode(), []).append(o)
    found = []
    for o, name in enumerate(names):
        if name not in CONV_ATTRIBUTES or dtype(o) != "INT48":
            continue
        frontier = [r for r in consumers.get(output(o), []) if names[r] == "RESCALE" and dtype(r) == "INT16"]
        while frontier:
            users = consumers.get(output(frontier.pop()), [])
            if any(names[u] == "RESCALE" and dtype(u) == "INT32" for u in users):
                found.append(o)
                break
            frontier += [u for u in users if names[u] in _LAYOUT_OPS]
    return found


@cache
def enum_names(module: str) -> dict[int, str]:
    mod = __import__(f"tosa.{module}", fromlist=[module])
    cls = getattr(mod, module)
    return {v: k for k, v in vars(cls).items() if not k.startswith("_") and isinstance(v, int)}


def read_tosa(buffer: bytes) -> TosaSummary:
    """Summarize a TOSA 1.x flatbuffer: version, operators, main-block I/O."""
    from tosa.TosaGraph import TosaGraph

    op_names = enum_names("Op")
    dtype_names = enum_names("DType")
    graph = TosaGraph.GetRootAs(buffer, 0)
    v = graph.Version()
    version = f"{v._Major()}.{v._Minor()}.{v._Patch()}"
    ops: list[str] = []
    acc_types: list[str] = []
    weight_types: list[str] = []
    narrowed = 0
    regions: list[str] = []
    inputs: tuple[TensorInfo, ...] = ()
    outputs: tuple[TensorInfo, ...] = ()
    for r in range(graph.RegionsLength()):
        region = graph.Regions(r)
        regions.append(region.Name().decode())
        for b in range(region.BlocksLength()):
            block = region.Blocks(b)
            tensors = block_tensors(block, dtype_names)
            block_ops = [block.Operators(o) for o in range(block.OperatorsLength())]
            names = [op_names.get(op.Op(), "UNKNOWN") for op in block_ops]
            narrowed += len(narrowed_convs(block_ops, names, tensors))
            for op, name in zip(block_ops, names):
                if name not in CONSTANT_OPS:
                    ops.append(name)
                if name in CONV_ATTRIBUTES:
                    acc_types.append(conv_acc_type(op, name, dtype_names))
                    weight_types.append(conv_weight_type(op, tensors))
            if r == 0 and b == 0:
                inputs = tuple(tensors[block.Inputs(i).decode()] for i in range(block.InputsLength()))
                outputs = tuple(tensors[block.Outputs(i).decode()] for i in range(block.OutputsLength()))
    return TosaSummary(
        version, tuple(ops), inputs, outputs, tuple(regions), tuple(acc_types), tuple(weight_types), narrowed
    )
