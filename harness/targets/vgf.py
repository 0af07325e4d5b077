"""The VGF target: `VgfCompileSpec`, `VgfPartitioner`, `VgfQuantizer`, and the ML SDK's model converter.

Lowering goes as a user's `to_edge_transform_and_lower` with the VGF
partitioner goes: the backend lowers each delegate to TOSA and hands the
flatbuffer to `model-converter` (the `ai-ml-sdk-model-converter` wheel, the
`vgf` extra), whose `.vgf` is the delegate's processed bytes. The compile
spec gets a directory for its intermediate artifacts, where the backend
leaves that TOSA flatbuffer (`output_<delegation tag>_<spec>.tosa`) and the
`.vgf`; the flatbuffer, not a rebuilt one, is what the reference model runs.
A conversion the converter refuses raises during lowering: a `lowering_error`
with the converter's own message.
"""

from __future__ import annotations

from executorch.backends.arm.quantizer import VgfQuantizer
from executorch.backends.arm.vgf import VgfCompileSpec, VgfPartitioner

from harness.policy.targets import Target
from harness.targets.dumped import dumped_tosa
from harness.targets.tosa import tosa_spec  # noqa: F401 - the same profile per scheme as the generic target
from harness.tools import expose

NEEDS_WORKDIR = True


def compile_spec(
    target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False, workdir: str | None = None
) -> VgfCompileSpec:
    for tool, _ in target.tools:
        expose(tool)  # the backend looks the converter up on PATH, which an unactivated venv leaves it off
    spec = VgfCompileSpec(tosa_spec(target, scheme, dynamic, control_flow))
    if workdir is not None:
        spec.dump_intermediate_artifacts_to(workdir)
    return spec


def partitioner(spec: VgfCompileSpec) -> VgfPartitioner:
    return VgfPartitioner(spec)


def quantizer(spec: VgfCompileSpec) -> VgfQuantizer:
    return VgfQuantizer(spec)


def collect(delegates: list, workdir: str | None, log: str) -> tuple[list[bytes], dict]:
    """Each delegate's TOSA graph as the backend dumped it for the converter; the size of each `.vgf`."""
    tosa = dumped_tosa(delegates, workdir, "VGF")
    facts = {"vgf": {"delegates": len(delegates), "bytes": sum(len(bytes(d.processed_bytes)) for d in delegates)}}
    return tosa, facts if delegates else {}
