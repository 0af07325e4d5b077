"""A standalone reproduction script for one case, to paste into an upstream bug report.

The script (`standalone_case.py`, filled in) needs torch, executorch and
numpy only. Beside it go the case's model as a torch.export program
(`<name>.pt2`: the fp32 model an INT scheme quantizes, or the model in the
scheme's float type) and its data (`<name>.data.pt`: the inputs, the
calibration samples, the expected output and the per-element limit the
harness's judge derives, `Judge.expectation`). The script quantizes with the
same Arm quantizer configuration, lowers with the target's partitioner, runs
the TOSA reference model and checks every element, so its verdict is the
harness's per-element verdict without the harness.

Static cases without control flow: a dynamic program needs its TOSA shapes
resolved per run (harness.tosa.shapes) and a torch.cond needs the harness's
per-branch PT2E, which a short script cannot carry.
"""

from __future__ import annotations

import pprint
from pathlib import Path

from harness.config import ConfigError, ConvConfig
from harness.contexts.names import CONTEXTS
from harness.policy.schemes import SCHEMES
from harness.policy.targets import get_target

TEMPLATE = Path(__file__).with_name("standalone_case.py")
_PLACEHOLDER = "CASE: dict = {}  # filled in by harness.repro.script"


def check_reproducible(config: ConvConfig) -> None:
    """ConfigError (one line) for a case a standalone script cannot carry."""
    if config.dynamic != "none":
        raise ConfigError(
            f"repro writes static cases only, not dy {config.dynamic}: the reference model needs a "
            "dynamic program's shapes resolved per run; use `python -m harness run` for it"
        )
    if CONTEXTS[config.context].control_flow:
        raise ConfigError(
            f"repro cannot write cx {config.context}: quantizing torch.cond branches needs the "
            "harness's per-branch PT2E; use `python -m harness run` for it"
        )


def write_repro(config: ConvConfig, out: str | Path, seed: int = 0, target: str = "tosa") -> list[Path]:
    """Write the script at `out` and its two data files beside it; returns the three paths. The case is
    lowered once here for the accumulator type its float limits follow (fp32 if the lowering fails)."""
    import torch  # here, not at import: refusing a case needs none of it

    from harness.build.data import program_inputs
    from harness.judging.judge import Judge
    from harness.run import stages
    from harness.targets import backend

    check_reproducible(config)
    out = Path(out)
    if out.suffix != ".py":
        raise ConfigError(f"invalid --out={out}: the script's name must end in .py")
    t = get_target(target)
    p = stages.prepare(config, seed, t)
    try:
        acc_types = stages.lower(p).conv_acc_types
    except stages.StageError:
        acc_types = ()  # the script will fail where the lowering does
    expectation = Judge(config, p.tensors, p.model, p.quantized, acc_types).expectation()
    stem = out.with_suffix("")
    program_path, data_path = stem.with_suffix(".pt2"), Path(f"{stem}.data.pt")
    exported_model = p.model if p.quantized is not None else p.program
    inputs = p.tensors.inputs if p.quantized is not None else program_inputs(config, p.tensors)
    out.parent.mkdir(parents=True, exist_ok=True)
    torch.export.save(torch.export.export(exported_model, inputs), program_path)
    torch.save(
        {
            "inputs": list(program_inputs(config, p.tensors)),
            "calibration": [list(s) for s in p.tensors.calibration],
            "expected": torch.from_numpy(expectation.expected),
            "limit": torch.from_numpy(expectation.limit),
        },
        data_path,
    )
    q = SCHEMES[config.scheme].quantizer
    case = {
        "descriptor": config.descriptor,
        "seed": seed,
        "target": target,
        "accelerator": t.accelerator,
        "tosa_spec": backend(t).tosa_spec(t, config.scheme),
        "quantizer": q.kind if q else "",
        "per_channel": q.per_channel if q else False,
        "rule": expectation.rule,
        "program": program_path.name,
        "data": data_path.name,
        "harness": f"python -m harness run '{config.descriptor}' --seed {seed} --target {target}",
    }
    text = TEMPLATE.read_text()
    if _PLACEHOLDER not in text:
        raise RuntimeError(f"{TEMPLATE} lost its CASE placeholder")
    out.write_text(text.replace(_PLACEHOLDER, "CASE = " + pprint.pformat(case, sort_dicts=False, width=110)))
    out.chmod(0o755)
    return [out, program_path, data_path]
