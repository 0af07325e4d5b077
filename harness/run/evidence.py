"""What a case keeps while it runs: for its result (operators, output digest) and, when it is not green, for
studying it offline (inputs, output, reference, flatbuffers, traceback), saved by `save`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.results.case_result import CaseResult


@dataclass
class Evidence:
    inputs: tuple = ()  # the program's inputs at the size that decided (tensors)
    output: object = None  # the lowered program's output there (a tensor)
    reference: object = None  # the reference it was judged against
    tosa: tuple[bytes, ...] = ()  # the delegates' flatbuffers
    tosa_ops: list[str] = field(default_factory=list)
    conv_ops: list[str] = field(default_factory=list)
    output_sha256: str = ""  # of the outputs at every size the case ran, in order (one size: its bytes)
    traceback: str = ""


def save(root: Path, result: CaseResult, evidence: Evidence) -> Path:
    """Save what a failure needs to be studied offline; returns the case's directory under `root`."""
    case_dir = root / f"{result.descriptor}__seed{result.seed}"
    case_dir.mkdir(parents=True, exist_ok=True)
    for i, x in enumerate(evidence.inputs):
        np.save(case_dir / f"input{i}.npy", x.numpy())
    for name in ("output", "reference"):
        value = getattr(evidence, name)
        if value is not None:
            np.save(case_dir / f"{name}.npy", value.detach().numpy())
    for i, buf in enumerate(evidence.tosa):
        (case_dir / f"delegate{i}.tosa").write_bytes(buf)
    if evidence.traceback:
        (case_dir / "traceback.txt").write_text(evidence.traceback)
    (case_dir / "result.json").write_text(json.dumps(result.to_dict(), indent=2))
    (case_dir / "repro.sh").write_text(result.repro + "\n")
    return case_dir
