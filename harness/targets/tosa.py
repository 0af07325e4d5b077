"""The generic TOSA target: `TosaCompileSpec`, `TOSAPartitioner`, `TOSAQuantizer`.

The TOSA spec string comes from the scheme table; symbolic dims need the
shape extension, which TOSA 1.1 introduced, and a `torch.cond` the
control-flow one.
"""

from __future__ import annotations

from functools import lru_cache

from executorch.backends.arm.quantizer import TOSAQuantizer
from executorch.backends.arm.tosa.compile_spec import TosaCompileSpec
from executorch.backends.arm.tosa.partitioner import TOSAPartitioner

from harness.policy.schemes import SCHEMES


def tosa_spec(scheme: str, dynamic: bool = False, control_flow: bool = False) -> str:
    spec = SCHEMES[scheme].tosa_spec
    if dynamic:
        spec = spec.replace("TOSA-1.0", "TOSA-1.1") + "+shape"
    return spec + "+cf" if control_flow else spec


@lru_cache(maxsize=None)
def compile_spec(scheme: str, dynamic: bool = False, control_flow: bool = False) -> TosaCompileSpec:
    return TosaCompileSpec(tosa_spec(scheme, dynamic, control_flow))


def partitioner(spec: TosaCompileSpec) -> TOSAPartitioner:
    return TOSAPartitioner(spec)


def quantizer(spec: TosaCompileSpec) -> TOSAQuantizer:
    return TOSAQuantizer(spec)
