"""The Ethos-U targets: `EthosUCompileSpec`, `EthosUPartitioner`, `EthosUQuantizer`, and Vela.

Lowering goes exactly as a user's `to_edge_transform_and_lower` with the
Ethos-U partitioner goes; the compile spec only gets a directory for its
intermediate artifacts, where the backend leaves the TOSA flatbuffer it
hands to Vela (`output_<delegation tag>_<spec>.tosa`) and Vela its summary.
That flatbuffer, not a rebuilt one, is what the reference model runs.
"""

from __future__ import annotations

from pathlib import Path

from executorch.backends.arm.ethosu import EthosUCompileSpec
from executorch.backends.arm.ethosu.partitioner import EthosUPartitioner
from executorch.backends.arm.quantizer import EthosUQuantizer

from harness.policy.targets import Target
from harness.targets.dumped import dumped_tosa
from harness.targets.vela_report import summarize

NEEDS_WORKDIR = True


def tosa_spec(target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False) -> str:
    return str(EthosUCompileSpec(target.accelerator).tosa_spec)


def compile_spec(
    target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False, workdir: str | None = None
) -> EthosUCompileSpec:
    spec = EthosUCompileSpec(target.accelerator)
    if workdir is not None:
        spec.dump_intermediate_artifacts_to(workdir)
    return spec


def partitioner(spec: EthosUCompileSpec) -> EthosUPartitioner:
    return EthosUPartitioner(spec)


def quantizer(spec: EthosUCompileSpec) -> EthosUQuantizer:
    return EthosUQuantizer(spec)


def collect(delegates: list, workdir: str | None, log: str) -> tuple[list[bytes], dict]:
    """Each delegate's TOSA graph as the backend dumped it before Vela; Vela's summary."""
    tosa = dumped_tosa(delegates, workdir, "Ethos-U")
    folder = Path(workdir)
    stream = sum(len(bytes(d.processed_bytes)) for d in delegates)
    facts = summarize(log, sorted(folder.glob("output/*_summary_*.csv")), stream)
    return tosa, {"vela": facts} if delegates else {}
