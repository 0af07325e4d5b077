"""Run a delegate's graph eagerly at any point of the Arm pass pipeline.

Between the first pass and serialization the graph is a mixture: edge ops whose
quantization was folded into their node metadata (`input_qparams`,
`output_qparams`: the graph carries integer tensors), and TOSA dialect ops.
Eager execution has to honour both, or the numbers mean nothing:

* an edge op with folded qparams runs as the fake-quant model defines it:
  its quantized inputs dequantized, the op in float, its output quantized;
* a TOSA convolution (CONV2D, DEPTHWISE_CONV2D, CONV3D, TRANSPOSE_CONV2D)
  runs as the TOSA specification defines it, in NHWC with its zero points
  (from the node's metadata, where the rewrite left them), accumulating
  exactly in float64: ExecuTorch's own eager version of these ops builds a
  one-op graph without that metadata and cannot run an INT conv; and its
  typing is checked where serialization reads it from metadata (an int16
  conv's bias must be typed INT48), a violation being a departure;
* PAD runs natively (its padding amounts may be symbolic, which the one-op
  graph below cannot serialize), and so do CONST_SHAPE (its value is the
  shape it holds; the one-op runner returns tensors only) and RESHAPE (its
  shape operand is a list, which the one-op graph cannot name);
* an edge op the CPU has no kernel for in an fp8 dtype (convolution) runs in
  float32 on the exactly widened inputs, its output rounded once to the
  node's dtype: the result of an exact accumulation, within the DOT_PRODUCT
  bound any conforming fp8 conv meets;
* every other TOSA op runs through ExecuTorch's eager implementation, which
  builds a one-op TOSA graph and runs it on the reference model; the ops that
  ship with a fake implementation only get that same one-op implementation
  here (`enable_reference_impls`, for the bisecting process only).

A stage whose graph still cannot run (an op no implementation covers) says
so; the bisector compares at the next stage that can.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from executorch.backends.arm.tosa.dialect import ops_registration
from executorch.backends.arm.tosa.dialect.real_impl import make_tosa_reference_model_impl
from executorch.backends.arm.tosa.mapping import TosaSpecialDtype
from executorch.backends.arm.tosa.specification import TosaLoweringContext, TosaSpecification
from executorch.exir.dialects._ops import ops as exir_ops

_LIBRARY: list = []  # the Library registering the added implementations, kept alive


def enable_reference_impls() -> list[str]:
    """Give every fake-only TOSA dialect op the one-op reference-model implementation; returns their names."""
    if _LIBRARY:
        return _LIBRARY[1]
    lib = torch.library.Library("tosa", "IMPL")
    added = []
    for func, op in ops_registration._registered_tosa_ops_by_func.items():
        name = op._schema.name
        if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeExplicitAutograd"):
            continue
        schema = str(op._schema).split("::", 1)[1]
        lib.impl(schema.split("(")[0], make_tosa_reference_model_impl(func, schema), "CompositeExplicitAutograd")
        added.append(schema.split("(")[0])
    _LIBRARY.extend([lib, added])
    return added


def _tosa(name: str):
    return getattr(exir_ops.backend.tosa, name).default


def _zero_points(node: torch.fx.Node) -> tuple[int, int]:
    """(input, weight) zero points of an INT conv node, from the qparams the rewrite left on it."""
    qparams = node.meta.get("input_qparams") or {}
    zp = [getattr(qparams.get(i), "zp", 0) for i in (0, 1)]
    return tuple(0 if isinstance(z, (list, tuple)) else int(z) for z in zp)  # per-channel weights are symmetric


def _centred(x: torch.Tensor, zp: int) -> torch.Tensor:
    return x.double() - zp if not x.is_floating_point() else x.double()


def _finish(acc: torch.Tensor, bias: torch.Tensor | None, like: torch.Tensor, integer: bool) -> torch.Tensor:
    if bias is not None:
        acc = acc + bias.double().reshape(*[1] * (acc.dim() - 1), -1)
    if integer:
        return acc.round().to(torch.int32)
    return acc.to(
        like.dtype if like.dtype != torch.float8_e4m3fn and like.dtype != torch.float8_e5m2 else torch.float16
    )


def _conv(node: torch.fx.Node, target, x, w, b, stride, pad, dilation, out_pad=None) -> torch.Tensor:
    """The TOSA conv ops on NHWC (NDHWC) tensors: centred on their zero points, summed exactly."""
    integer = not x.is_floating_point()
    zx, zw = _zero_points(node) if integer else (0, 0)
    xc, wc = _centred(x, zx), _centred(w, zw)
    if target == _tosa("CONV3D"):
        xi = xc.permute(0, 4, 1, 2, 3)
        pads = (pad[4], pad[5], pad[2], pad[3], pad[0], pad[1])  # W, H, D for F.pad
        acc = F.conv3d(F.pad(xi, pads), wc.permute(0, 4, 1, 2, 3), stride=tuple(stride), dilation=tuple(dilation))
        return _finish(acc.permute(0, 2, 3, 4, 1), b, x, integer)
    xi = xc.permute(0, 3, 1, 2)
    if target == _tosa("TRANSPOSE_CONV2D"):
        # out[oh, ow] += x[ih, iw] * w[kh, kw] at oh = ih*sy + out_pad_top + kh, ow = iw*sx + out_pad_left + kw
        weight = wc.permute(3, 0, 1, 2)  # (O, KH, KW, I) -> (I, O, KH, KW)
        acc = F.conv_transpose2d(xi, weight, stride=tuple(stride))
        top, bottom, left, right = out_pad
        acc = F.pad(acc, (max(left, 0), max(right, 0), max(top, 0), max(bottom, 0)))
        h, w_ = acc.shape[2], acc.shape[3]
        acc = acc[:, :, max(-top, 0) : h - max(-bottom, 0), max(-left, 0) : w_ - max(-right, 0)]
        return _finish(acc.permute(0, 2, 3, 1), b, x, integer)
    pads = (pad[2], pad[3], pad[0], pad[1])
    if target == _tosa("DEPTHWISE_CONV2D"):
        kh, kw, c, m = wc.shape
        weight = wc.permute(2, 3, 0, 1).reshape(c * m, 1, kh, kw)  # HWCM -> (C*M, 1, KH, KW), channel c*M + m
        acc = F.conv2d(F.pad(xi, pads), weight, stride=tuple(stride), dilation=tuple(dilation), groups=c)
    else:
        acc = F.conv2d(F.pad(xi, pads), wc.permute(0, 3, 1, 2), stride=tuple(stride), dilation=tuple(dilation))
    return _finish(acc.permute(0, 2, 3, 1), b, x, integer)


class SpecViolation(Exception):
    """A stage's graph breaks a TOSA typing rule: it would not compute what it claims once serialized."""


def _check_types(node: torch.fx.Node, x: torch.Tensor) -> None:
    """TOSA 1.0: a convolution of int16 input accumulates in INT48, so its bias is INT48; the backend
    marks the bias node for serialization, and an unmarked one is serialized as INT32."""
    bias = node.args[2]
    if (
        x.dtype == torch.int16
        and isinstance(bias, torch.fx.Node)
        and bias.meta.get(TosaSpecialDtype.meta_key()) != TosaSpecialDtype.INT48
    ):
        raise SpecViolation(f"{node.name}: an int16 convolution's bias {bias.name} is not typed INT48")


class StageInterpreter(torch.fx.Interpreter):
    """Runs a graph from anywhere in the pipeline, with the semantics its nodes carry (module docstring)."""

    CONVS = ("CONV2D", "DEPTHWISE_CONV2D", "CONV3D", "TRANSPOSE_CONV2D")

    def run_node(self, n: torch.fx.Node):
        self._node = n
        return super().run_node(n)

    def call_function(self, target, args, kwargs):
        node = self._node
        if any(target == _tosa(name) for name in self.CONVS):
            _check_types(node, args[0])
            if target == _tosa("TRANSPOSE_CONV2D"):  # (input, weight, bias, out_pad, stride)
                x, w, b, out_pad, stride = args[:5]
                return _conv(node, target, x, w, b, stride, None, None, out_pad=out_pad)
            x, w, b, stride, pad, dilation = args[:6]  # (input, weight, bias, stride, pad, dilation)
            return _conv(node, target, x, w, b, stride, pad, dilation)
        if target == _tosa("PAD"):  # (input, [before, after] per dim, value=): constant padding, as the graph says
            x, padding = args[:2]
            pads = [int(v) for i in reversed(range(x.dim())) for v in (padding[2 * i], padding[2 * i + 1])]
            return F.pad(x, pads, mode="constant", value=kwargs["value"])
        if target == _tosa("CONST_SHAPE"):
            return list(args[0])
        if target == _tosa("RESHAPE"):
            return args[0].reshape([int(v) for v in args[1]])
        in_q, out_q = node.meta.get("input_qparams") or {}, node.meta.get("output_qparams") or {}
        if (in_q or out_q) and getattr(target, "namespace", "") != "tosa":
            args = list(args)
            for i, q in in_q.items():
                if i < len(args) and isinstance(args[i], torch.Tensor) and not args[i].is_floating_point():
                    args[i] = q.dequantize_value(args[i])
            out = super().call_function(target, tuple(args), kwargs)
            return out_q[0].quantize_value(out) if out_q and isinstance(out, torch.Tensor) else out
        if getattr(target, "namespace", "") != "tosa" and any(_is_fp8(a) for a in args):
            return _widened(lambda *a: super(StageInterpreter, self).call_function(target, a, kwargs), node, args)
        return super().call_function(target, args, kwargs)


_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _is_fp8(a) -> bool:
    return isinstance(a, torch.Tensor) and a.dtype in _FP8


def _widened(call, node: torch.fx.Node, args: tuple):
    """`call` on fp8 tensors widened to float32 (exact), the output rounded to the node's dtype."""
    out = call(*(a.float() if _is_fp8(a) else a for a in args))
    val = node.meta.get("val")
    return out.to(val.dtype) if isinstance(out, torch.Tensor) and isinstance(val, torch.Tensor) else out


def eager_spec(tosa_spec):
    """The spec the one-op reference-model graphs are built for. ExecuTorch 1.5.1's eager implementation
    serializes a TOSA 1.1 graph without the draft flag its serializer (1.1.0d) requires, so the reference
    model refuses every one; the operators a conv graph holds compute the same in 1.0, so a 1.1 graph's
    ops are run as 1.0 ops (the shape extension, which 1.0 lacks, is dropped: shape ops cannot run)."""
    text = str(tosa_spec)
    if not text.startswith("TOSA-1.1"):
        return tosa_spec
    extensions = [e for e in text.split("+")[1:] if e != "shape"]
    return TosaSpecification.create_from_string("+".join(["TOSA-1.0", *extensions]))


def run_stage(program, tosa_spec, inputs: tuple) -> tuple:
    """The outputs of an exported program from the pipeline on `inputs`, as a tuple."""
    enable_reference_impls()
    with TosaLoweringContext(eager_spec(tosa_spec)), torch.no_grad():
        out = StageInterpreter(program.module()).run(*inputs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)
