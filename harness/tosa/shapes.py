"""Resolve the symbolic dims of a dynamic-shape TOSA graph for one set of inputs.

A graph lowered with `torch.export.Dim`s declares unknown dims as -1, and the
tosa-tools 2026.5.0 reference model refuses to allocate such tensors (its
`infer_shapes` tool is not shipped in the wheel). Here we propagate the concrete
input shapes through the graph with the output-shape rules of the TOSA 1.x
spec, evaluating the shape operators (DIM, CONST_SHAPE, ADD_SHAPE, ...) on the
way, and write the resolved dims into a copy of the flatbuffer in place (a
vector of int32 keeps its length, so nothing else in the buffer moves).

Every dim the graph declares statically is checked against the propagated one:
a lowering that emits inconsistent shapes is reported, not papered over.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from harness.tosa.graph import CONV_ATTRIBUTES, attribute, enum_names


class ShapeError(ValueError):
    """The graph's shapes cannot be resolved, or contradict themselves."""


_ELEMENTWISE_UNARY = frozenset(
    "RESCALE CLAMP CAST TABLE IDENTITY ABS NEGATE EXP LOG RECIPROCAL RSQRT SIGMOID TANH ERF "
    "FLOOR CEIL LOGICAL_NOT BITWISE_NOT CLZ SIN COS".split()
)
_ELEMENTWISE_BROADCAST = frozenset(
    "ADD SUB MUL MAXIMUM MINIMUM POW ARITHMETIC_RIGHT_SHIFT LOGICAL_LEFT_SHIFT "
    "LOGICAL_RIGHT_SHIFT LOGICAL_AND LOGICAL_OR LOGICAL_XOR BITWISE_AND BITWISE_OR "
    "BITWISE_XOR EQUAL GREATER GREATER_EQUAL INTDIV SELECT".split()
)
_REDUCE = frozenset("REDUCE_ALL REDUCE_ANY REDUCE_MAX REDUCE_MIN REDUCE_PRODUCT REDUCE_SUM ARGMAX".split())
_SHAPE_BINARY: dict[str, Callable[[int, int], int]] = {
    "ADD_SHAPE": lambda a, b: a + b,
    "SUB_SHAPE": lambda a, b: a - b,
    "MUL_SHAPE": lambda a, b: a * b,
    "DIV_FLOOR_SHAPE": lambda a, b: a // b,
    "DIV_CEIL_SHAPE": lambda a, b: -(-a // b),
    "DIV_SHAPE": lambda a, b: a // b,
    "MOD_SHAPE": lambda a, b: a % b,
    "MAX_SHAPE": max,
    "MIN_SHAPE": min,
}


def _ints(attribute, field: str) -> list[int]:
    return [int(getattr(attribute, field)(j)) for j in range(getattr(attribute, f"{field}Length")())]


@dataclass
class _State:
    shapes: dict[str, list[int]]  # resolved tensor shapes
    values: dict[str, list[int]]  # values of SHAPE-typed tensors


def _broadcast(shapes: list[list[int]], op: str) -> list[int]:
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise ShapeError(f"{op}: operands of different rank {shapes}")
    out = []
    for dims in zip(*shapes):
        big = {d for d in dims if d != 1}
        if len(big) > 1:
            raise ShapeError(f"{op}: operands {shapes} do not broadcast")
        out.append(big.pop() if big else 1)
    return out


def _conv_out(size: int, pad_lo: int, pad_hi: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - 1 + pad_lo + pad_hi - (kernel - 1) * dilation) // stride + 1


def _output_shapes(name: str, op, ins: list[str], st: _State) -> list[int] | None:
    """The output shape of a single-output operator (None: keep the declared one)."""
    shape = lambda i: st.shapes[ins[i]]  # noqa: E731
    if name in _ELEMENTWISE_UNARY:
        return list(shape(0))
    if name in _ELEMENTWISE_BROADCAST:
        operands = ins[:2] if name == "MUL" else ins  # MUL's third input is its shift
        return _broadcast([st.shapes[i] for i in operands], name)
    if name == "TRANSPOSE":
        perms = _ints(attribute(op, "TransposeAttribute"), "Perms")
        return [shape(0)[p] for p in perms]
    if name == "SLICE":
        return list(st.values[ins[2]])
    if name == "PAD":
        pads = st.values[ins[1]]
        return [d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(shape(0))]
    if name == "RESHAPE":
        new = list(st.values[ins[1]])
        if -1 in new:
            known = int(np.prod([d for d in new if d != -1]))
            new[new.index(-1)] = int(np.prod(shape(0))) // known
        return new
    if name == "CONCAT":
        axis = attribute(op, "ConcatAttribute").Axis()
        out = list(shape(0))
        out[axis] = sum(st.shapes[i][axis] for i in ins)
        return out
    if name in ("CONV2D", "DEPTHWISE_CONV2D", "CONV3D"):
        attr = attribute(op, CONV_ATTRIBUTES[name])
        pad, stride, dilation = (_ints(attr, f) for f in ("Pad", "Stride", "Dilation"))
        x, w = shape(0), shape(1)
        spatial = len(stride)
        kernels = w[:spatial] if name == "DEPTHWISE_CONV2D" else w[1 : 1 + spatial]
        out_c = w[2] * w[3] if name == "DEPTHWISE_CONV2D" else w[0]
        dims = [
            _conv_out(x[1 + i], pad[2 * i], pad[2 * i + 1], kernels[i], stride[i], dilation[i]) for i in range(spatial)
        ]
        return [x[0], *dims, out_c]
    if name == "TRANSPOSE_CONV2D":
        attr = attribute(op, CONV_ATTRIBUTES[name])
        out_pad, stride = _ints(attr, "OutPad"), _ints(attr, "Stride")
        x, w = shape(0), shape(1)
        dims = [(x[1 + i] - 1) * stride[i] + out_pad[2 * i] + out_pad[2 * i + 1] + w[1 + i] for i in range(2)]
        return [x[0], *dims, w[0]]
    if name in ("MAX_POOL2D", "AVG_POOL2D"):
        attr = attribute(op, "MaxPool2dAttribute" if name == "MAX_POOL2D" else "AvgPool2dAttribute")
        kernel, stride, pad = (_ints(attr, f) for f in ("Kernel", "Stride", "Pad"))
        x = shape(0)
        return [
            x[0],
            *(_conv_out(x[1 + i], pad[2 * i], pad[2 * i + 1], kernel[i], stride[i], 1) for i in range(2)),
            x[3],
        ]
    if name in _REDUCE:
        attr_name = (
            "ArgMaxAttribute" if name == "ARGMAX" else "".join(p.capitalize() for p in name.split("_")) + "Attribute"
        )
        axis = attribute(op, attr_name).Axis()
        out = list(shape(0))
        if name == "ARGMAX":
            del out[axis]
        else:
            out[axis] = 1
        return out
    return None


def _shape_values(name: str, op, ins: list[str], st: _State, tensor) -> list[int] | None:
    """The value of a shape operator's output (None: not a shape operator);
    `tensor` is the output's TosaShape (the block keeps shapes apart from tensors)."""
    if name == "CONST_SHAPE":
        return [int(v) for v in np.frombuffer(tensor.DataAsNumpy().tobytes(), dtype="<i8")[: tensor.Rank()]]
    if name == "DIM":
        return [st.shapes[ins[0]][attribute(op, "DimAttribute").Axis()]]
    if name in _SHAPE_BINARY:
        a, b = st.values[ins[0]], st.values[ins[1]]
        return [_SHAPE_BINARY[name](x, y) for x, y in zip(a, b)]
    if name == "CONCAT_SHAPE":
        return [v for i in ins for v in st.values[i]]
    return None


def is_dynamic(buffer: bytes) -> bool:
    """Whether any tensor of the graph declares an unknown (-1) dim."""
    from tosa.TosaGraph import TosaGraph

    graph = TosaGraph.GetRootAs(buffer, 0)
    for r in range(graph.RegionsLength()):
        region = graph.Regions(r)
        for b in range(region.BlocksLength()):
            block = region.Blocks(b)
            for t in range(block.TensorsLength()):
                tensor = block.Tensors(t)
                if any(tensor.Shape(j) < 0 for j in range(tensor.ShapeLength())):
                    return True
    return False


def resolve_shapes(buffer: bytes, input_shapes: Sequence[Sequence[int]]) -> bytes:
    """A copy of `buffer` whose every -1 dim is resolved for these input shapes."""
    from tosa.TosaGraph import TosaGraph

    op_names = enum_names("Op")
    data = bytearray(buffer)
    graph = TosaGraph.GetRootAs(data, 0)
    block = graph.Regions(0).Blocks(0)
    tensors = {}
    for t in range(block.TensorsLength()):
        tensor = block.Tensors(t)
        tensors[tensor.Name().decode()] = tensor
    shape_tensors = {}
    for t in range(block.ShapesLength()):
        shape_tensor = block.Shapes(t)
        shape_tensors[shape_tensor.Name().decode()] = shape_tensor
    declared = {n: [int(d) for d in t.ShapeAsNumpy()] if t.ShapeLength() else [] for n, t in tensors.items()}
    st = _State(shapes={n: s for n, s in declared.items() if all(d >= 0 for d in s)}, values={})

    names = [block.Inputs(i).decode() for i in range(block.InputsLength())]
    if len(names) != len(input_shapes):
        raise ShapeError(f"graph has {len(names)} inputs, got {len(input_shapes)} shapes")
    for name, shape in zip(names, input_shapes):
        _agree(name, declared[name], list(shape), "input")
        st.shapes[name] = list(shape)

    for i in range(block.OperatorsLength()):
        op = block.Operators(i)
        name = op_names.get(op.Op(), str(op.Op()))
        ins = [op.Inputs(j).decode() for j in range(op.InputsLength())]
        outs = [op.Outputs(j).decode() for j in range(op.OutputsLength())]
        if len(outs) != 1:
            continue
        out = outs[0]
        value = _shape_values(name, op, ins, st, shape_tensors.get(out))
        if value is not None:
            st.values[out] = value
            continue
        missing = [t for t in ins if t not in st.shapes and t not in st.values]
        if missing:
            if out in st.shapes:
                continue  # a static result of an operator we could not follow
            raise ShapeError(f"{name} -> {out}: unresolved input shape of {missing[0]}")
        try:
            shape = _output_shapes(name, op, ins, st)
        except KeyError as e:
            raise ShapeError(f"{name} -> {out}: needs the value of shape tensor {e.args[0]}") from None
        if shape is None:
            if out not in st.shapes:
                raise ShapeError(f"{name} -> {out}: the shape resolver does not know operator {name}")
            continue
        _agree(out, declared[out], shape, name)
        st.shapes[out] = shape

    for name, tensor in tensors.items():
        if all(d >= 0 for d in declared[name]):
            continue
        if name not in st.shapes:
            raise ShapeError(f"tensor {name}: dims {declared[name]} left unresolved")
        tensor.ShapeAsNumpy()[:] = st.shapes[name]
    return bytes(data)


def _agree(name: str, declared: list[int], resolved: list[int], where: str) -> None:
    if len(declared) != len(resolved) or any(d not in (-1, r) for d, r in zip(declared, resolved)):
        raise ShapeError(f"{where} -> {name}: declared shape {declared} but the graph gives {resolved}")
    if any(r < 1 for r in resolved):
        raise ShapeError(f"{where} -> {name}: resolved shape {resolved} has an empty dim")
