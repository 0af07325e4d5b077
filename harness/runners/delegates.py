"""What every runner of a lowered program's delegates shares: the program interpreted node by node in torch
with each delegate call handed to the runner, and tensors laid out in the dim order the backend declared."""

from __future__ import annotations

import numpy as np
import torch

from harness.runners.base import RunnerError

_DELEGATE = torch.ops.higher_order.executorch_call_delegate

_BITS_ONLY = {
    torch.bfloat16: torch.uint16,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2: torch.uint8,
}


def to_numpy(t: torch.Tensor, dim_order: tuple[int, ...]) -> np.ndarray:
    t = t.permute(dim_order).contiguous()
    if t.dtype in _BITS_ONLY:  # numpy has no such type: pass the bits; the graph knows the type
        t = t.view(_BITS_ONLY[t.dtype])
    return np.ascontiguousarray(t.numpy())


def from_numpy(a: np.ndarray, dtype: torch.dtype, shape: tuple[int, ...], dim_order: tuple[int, ...]) -> torch.Tensor:
    inverse = [dim_order.index(i) for i in range(len(dim_order))]
    if dtype in _BITS_ONLY or a.dtype.type is np.void:  # raw bits come back
        t = torch.frombuffer(bytearray(np.ascontiguousarray(a).tobytes()), dtype=dtype).reshape(shape)
    else:
        t = torch.from_numpy(np.array(a))
    return t.permute(inverse).contiguous()


class DelegateInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, run_delegate):
        super().__init__(gm)
        self._run_delegate = run_delegate

    def call_function(self, target, args, kwargs):
        if target is _DELEGATE:
            return self._run_delegate(args[0], args[1:])
        return super().call_function(target, args, kwargs)


def run_program(artifact, inputs: tuple[torch.Tensor, ...], run_delegate) -> list[torch.Tensor]:
    """The lowered program on `inputs`, `run_delegate(lowered, args)` giving each delegate's outputs."""
    gm = artifact.program.exported_program().module()
    try:
        with torch.no_grad():
            outputs = DelegateInterpreter(gm, run_delegate).run(*inputs)
    except RunnerError as e:  # without the note the interpreter appends ("While executing ...")
        raise RunnerError(str(e).split(" While executing ")[0]) from None
    return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]


def feed(lowered, graph_inputs, args) -> list[np.ndarray]:
    """The delegate's arguments as the graph's inputs (`graph_inputs`: the TOSA summary's, with name and shape),
    matched by name and laid out in each placeholder's dim order."""
    program = lowered.original_module
    user_inputs = list(program.graph_signature.user_inputs)
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    by_name = dict(zip(user_inputs, args))
    arrays = []
    for info in graph_inputs:
        if info.name not in by_name:
            raise RunnerError(f"TOSA input {info.name} is not a delegate input ({', '.join(user_inputs)})")
        order = tuple(placeholders[info.name].meta["val"].dim_order())
        array = to_numpy(by_name[info.name], order)
        if len(array.shape) != len(info.shape) or any(d not in (-1, a) for d, a in zip(info.shape, array.shape)):
            raise RunnerError(f"TOSA input {info.name} has shape {info.shape}, delegate gives {array.shape}")
        arrays.append(array)
    return arrays


def results(lowered, outputs: list[np.ndarray], graph_outputs, who: str) -> tuple[torch.Tensor, ...]:
    """The delegate's outputs from the executor's arrays, in the dtype and dim order the delegate declares."""
    output_nodes = lowered.original_module.graph.output_node().args[0]
    if len(outputs) != len(output_nodes):
        raise RunnerError(f"{who} gave {len(outputs)} outputs, delegate declares {len(output_nodes)}")
    tensors = []
    for out, node, info in zip(outputs, output_nodes, graph_outputs):
        val = node.meta["val"]
        tensors.append(from_numpy(out, val.dtype, info.shape, tuple(val.dim_order())))
    return tuple(tensors)
