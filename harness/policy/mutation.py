"""What `python -m harness mutate` mutates: the installed conv lowering, by module. Policy as data.

The three conv passes are the default; the TOSA conv visitors and the
quantizer's annotation can be named with --module. Paths are relative to the
installed `executorch` package, read without importing it.
"""

from __future__ import annotations

PACKAGE = "executorch"
MODULES = {
    "rewrite_conv_pass": "backends/arm/_passes/rewrite_conv_pass.py",
    "size_adjust_input_pass": "backends/arm/_passes/size_adjust_input_pass.py",
    "decompose_grouped_conv_pass": "backends/arm/_passes/decompose_grouped_conv_pass.py",
    "op_tosa_conv2d": "backends/arm/operators/op_tosa_conv2d.py",
    "op_tosa_depthwise_conv2d": "backends/arm/operators/op_tosa_depthwise_conv2d.py",
    "op_tosa_transpose_conv2d": "backends/arm/operators/op_tosa_transpose_conv2d.py",
    "op_tosa_conv3d": "backends/arm/operators/op_tosa_conv3d.py",
    "quantization_annotator": "backends/arm/quantizer/quantization_annotator.py",
}
DEFAULT_MODULES = ("rewrite_conv_pass", "size_adjust_input_pass", "decompose_grouped_conv_pass")


def module_name(module: str) -> str:
    return PACKAGE + "." + MODULES[module].removesuffix(".py").replace("/", ".")
