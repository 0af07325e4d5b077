"""The generic TOSA target: `TosaCompileSpec`, `TOSAPartitioner`, `TOSAQuantizer`.

The TOSA spec string comes from the scheme table; symbolic dims need the
shape extension, which TOSA 1.1 introduced, and a `torch.cond` the
control-flow one. A delegate's processed bytes are its TOSA flatbuffer.
"""

from __future__ import annotations

from functools import cache

from executorch.backends.arm.quantizer import TOSAQuantizer
from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
from executorch.backends.arm.tosa.partitioner import TOSAPartitioner

from harness.policy.schemes import SCHEMES
from harness.policy.targets import Target

NEEDS_WORKDIR = False


def tosa_spec(target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False) -> str:
    spec = SCHEMES[scheme].tosa_spec
    if dynamic:
        spec = spec.replace("TOSA-1.0", "TOSA-1.1") + "+shape"
    return spec + "+cf" if control_flow else spec


@cache
def _compile_spec(spec: str) -> TosaCompileSpec:
    return TosaCompileSpec(spec)


def compile_spec(
    target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False, workdir: str | None = None
) -> TosaCompileSpec:
    return _compile_spec(tosa_spec(target, scheme, dynamic, control_flow))


def partitioner(spec: TosaCompileSpec) -> TOSAPartitioner:
    return TOSAPartitioner(spec)


def quantizer(spec: TosaCompileSpec) -> TOSAQuantizer:
    return TOSAQuantizer(spec)


def collect(delegates: list, workdir: str | None, log: str) -> tuple[list[bytes], dict]:
    return [bytes(d.processed_bytes) for d in delegates], {}
