"""One case in stages: prepare -> lower -> run -> judge -> classify.

Each stage is a function with typed inputs and outputs, so that a sweep
(`harness.run.execute.run_case` composes them), a test, pass bisection (which
re-runs the lowering pass by pass) and packing (which lowers many prepared
cases at once) call the same code:

* `prepare`: config -> tensors, the case's module, the sizes it runs at, and
  for an INT scheme the PT2E-quantized model (timed as `build` and `quantize`).
* `lower`: the prepared model -> the target's `Artifact`.
* `run`: the artifact on the target's runner, at one of the case's sizes.
* `judge`: that output against the independent references -> a `Judgement`
  (timed as `judge`; the names: `harness.results.stages`);
  `combine` makes one of a dynamic-shape case's several.

`harness.expectations.classify` then turns what happened into the result's outcome.

A stage that fails raises `StageError` naming itself; its outcome kind is
`STAGE_OUTCOME[stage]` (a runner's own `RunnerError` passes through as is).
"""

from __future__ import annotations

import copy
import dataclasses
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import torch

from harness.build.data import CaseTensors, make_tensors, program_inputs, scheme_dtype
from harness.build.dynamic import export_dims, run_configs
from harness.build.model import CaseModule, build_model
from harness.config import ConvConfig
from harness.judging.judge import Judge, Judgement
from harness.policy.targets import Target
from harness.qparams import QuantizedModel
from harness.results.case_result import Outcome
from harness.results.stages import BUILD, JUDGE, LOWER, QUANTIZE, RUN
from harness.runners.base import Runner, RunnerError

if TYPE_CHECKING:
    from harness.lowering.lower import Artifact

STAGE_OUTCOME = {
    BUILD: Outcome.HARNESS_ERROR,
    QUANTIZE: Outcome.LOWERING_ERROR,
    LOWER: Outcome.LOWERING_ERROR,
    RUN: Outcome.RUNNER_ERROR,
    JUDGE: Outcome.HARNESS_ERROR,
}
T = TypeVar("T")


def root_cause(error: BaseException) -> BaseException:
    """The innermost exception of a chain. ExecuTorch's pass manager wraps a
    failing pass in "An error occurred when running the ... pass after the
    following passes: [...]"; what went wrong is in the exception it wraps."""
    seen = {id(error)}
    while True:
        inner = error.__cause__ or error.__context__
        if inner is None or id(inner) in seen:
            return error
        seen.add(id(inner))
        error = inner


def describe(cause: BaseException) -> str:
    """`Type: message`; for a tool that failed (a CalledProcessError: the VGF model converter, Vela), the tool,
    its exit code and what it printed on stderr instead of the command line, whose temporary paths change from
    run to run while the tool's words do not."""

    if isinstance(cause, subprocess.CalledProcessError):
        cmd = cause.cmd if isinstance(cause.cmd, (list, tuple)) else str(cause.cmd).split()
        tool = os.path.basename(str(cmd[0])) if cmd else "a tool"
        err = cause.stderr.decode(errors="replace") if isinstance(cause.stderr, bytes) else (cause.stderr or "")
        said = "; ".join(line.strip() for line in err.splitlines() if line.strip())
        return f"CalledProcessError: {tool} exited {cause.returncode}" + (f": {said}" if said else "")
    return f"{type(cause).__name__}: {cause}"


class StageError(Exception):
    """A stage failed: `stage` names it, `error` is what it raised."""

    def __init__(self, stage: str, error: BaseException):
        cause = root_cause(error)
        super().__init__(f"{stage}: {describe(cause)}")
        self.stage = stage
        self.error = error


def timed(stage: str, timings: dict[str, float], fn: Callable[..., T], *args) -> T:
    """Run one stage's work, add its wall time to `timings`, tag any exception with the stage."""
    start = time.perf_counter()
    try:
        return fn(*args)
    except (RunnerError, StageError):
        raise
    except Exception as e:  # noqa: BLE001 - every failure becomes an outcome
        raise StageError(stage, e) from e
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + time.perf_counter() - start, 4)


# -- prepare ---------------------------------------------------------------------------
@dataclass
class Prepared:
    """A case ready to lower: its tensors and module, and what the lowering takes."""

    config: ConvConfig
    seed: int
    target: Target
    tensors: CaseTensors
    model: CaseModule  # the fp32 module: the eager and fp64 references
    runs: tuple[tuple[ConvConfig, CaseTensors], ...]  # every size the program runs at, nominal first
    dynamic_shapes: object  # torch.export dynamic_shapes, or None
    quantized: QuantizedModel | None  # INT schemes: the PT2E-converted model and its parameters
    program: torch.nn.Module  # what is exported and lowered
    example_inputs: tuple[torch.Tensor, ...]


def _sized_tensors(variant: ConvConfig, nominal: CaseTensors, seed: int) -> CaseTensors:
    """Inputs drawn for the variant's size; the model's parameters stay the nominal ones."""
    return dataclasses.replace(make_tensors(variant, seed), weight=nominal.weight, bias=nominal.bias)


class CaseBroken(RuntimeError):
    """The case as the harness built it does not run in eager torch: its own mistake, whatever raised."""


def runs_in_eager(model: CaseModule, runs) -> None:
    """The module must run on the case's inputs at every size in eager torch before anything is lowered: a
    model or inputs torch itself refuses are the harness's mistake (a build-stage failure, a harness_error),
    not a failure of the quantizer or the lowering that would meet them first."""
    for variant, tensors in runs:
        try:
            with torch.no_grad():
                model(*tensors.inputs)
        except Exception as e:  # noqa: BLE001 - whatever torch says, the case is broken
            raise CaseBroken(
                f"the case's module does not run in eager torch at {_size(variant)}: {type(e).__name__}: {e}"
            ) from e


def fresh_dynamo(model: CaseModule) -> None:
    """A control-flow case starts from Dynamo as a fresh process has it.

    Eager torch runs a torch.cond through Dynamo, and Dynamo remembers: once it has compiled cond for one
    shape, it compiles the next with symbolic sizes ('automatic dynamic shapes'), where torch 2.13 cannot run
    some strided convs (the known issue torch-export-cond-output-stride). A case's eager run then depended on
    the cases its worker had run before: on the 1.5.1 nightly, 18 of the first 63 cond cases were harness
    errors ('does not run in eager torch') in their workers and known issues alone. Steps aside where torch
    has no `torch._dynamo.reset`."""
    reset = getattr(getattr(torch, "_dynamo", None), "reset", None)
    if model.context.control_flow and callable(reset):
        reset()


def prepare(
    config: ConvConfig, seed: int, target: Target, timings: dict[str, float] | None = None, data_file: str = ""
) -> Prepared:
    """`data_file`: where a `captured` case's tensors are."""
    timings = {} if timings is None else timings
    tensors = timed(BUILD, timings, make_tensors, config, seed, data_file)
    model = timed(BUILD, timings, build_model, config, tensors, seed)
    fresh_dynamo(model)
    variants = run_configs(config)  # a dynamic-shape program runs at several sizes
    runs = ((config, tensors),) + tuple(
        (v, timed(BUILD, timings, _sized_tensors, v, tensors, seed)) for v in variants[1:]
    )
    timed(BUILD, timings, runs_in_eager, model, runs)
    dims = export_dims(config)
    quantized = None
    program: torch.nn.Module = model
    if config.is_quantized:
        from harness.lowering.quantize import quantize  # ExecuTorch's quantizer: imported where it is used

        # Calibrated on every size it will run at, as a deployed dynamic model would be.
        calibration = tuple(sample for _, t in runs for sample in t.calibration)
        quantized = timed(
            QUANTIZE,
            timings,
            quantize,
            model,
            tensors.inputs,
            config.scheme,
            target,
            calibration,
            model.context.conv_index,
            dims,
        )
        program = quantized.module
    elif scheme_dtype(config.scheme) != torch.float32:
        program = copy.deepcopy(model).to(scheme_dtype(config.scheme))
    return Prepared(
        config, seed, target, tensors, model, runs, dims, quantized, program, program_inputs(config, tensors)
    )


# -- lower -----------------------------------------------------------------------------
def lower(p: Prepared, timings: dict[str, float] | None = None) -> Artifact:
    from harness.lowering.lower import lower as lower_program  # ExecuTorch's lowering: imported here, not on import

    timings = {} if timings is None else timings
    c = p.config
    artifact = timed(
        LOWER,
        timings,
        lower_program,
        p.program,
        p.example_inputs,
        c.scheme,
        p.target,
        p.dynamic_shapes,
        p.model.context.control_flow,
        c.shape_extension,
    )
    if p.quantized is not None and p.quantized.qparams is None and artifact.delegated:
        raise StageError(
            LOWER, RuntimeError("the quantizer left the conv in float, yet it was delegated to an INT profile")
        )
    return artifact


# -- run and judge ---------------------------------------------------------------------
def run(
    p: Prepared, artifact: Artifact, index: int, runner: Runner, timings: dict[str, float] | None = None
) -> torch.Tensor:
    """The program's (first) output at the case's `index`-th size, as fp32."""
    timings = {} if timings is None else timings
    variant, tensors = p.runs[index]
    outputs = timed(RUN, timings, runner.run, artifact, program_inputs(variant, tensors))
    return outputs[0].float()


def judge(
    p: Prepared, artifact: Artifact, index: int, output: torch.Tensor, timings: dict[str, float] | None = None
) -> tuple[Judgement, Judge]:
    """The verdict on the output at the `index`-th size, and the judge (its references)."""
    timings = {} if timings is None else timings
    variant, tensors = p.runs[index]
    judge_ = timed(JUDGE, timings, Judge, variant, tensors, p.model, p.quantized, artifact.conv_acc_types)
    return timed(JUDGE, timings, judge_.judge, output), judge_


def _size(c: ConvConfig) -> str:
    return f"n{c.batch} i{'x'.join(map(str, c.input_size))}"


def combine(verdicts: list[tuple[ConvConfig, Judgement]]) -> Judgement:
    """One verdict for a case run at one or more sizes: the first size that did
    not pass decides (a mismatch stops the run); its metrics are reported."""
    nominal = verdicts[0][1]
    decisive_variant, decisive = next(((c, v) for c, v in verdicts if v.outcome is not Outcome.PASS), verdicts[0])
    metrics = dict(decisive.metrics)
    reason = decisive.reason
    if len(verdicts) > 1:
        metrics["sizes"] = [
            {
                "size": _size(c),
                "outcome": v.outcome.value,
                **{k: v.metrics[k] for k in ("max_lsb", "max_err", "sqnr_db") if k in v.metrics},
            }
            for c, v in verdicts
        ]
        if decisive is not nominal and reason:
            reason = f"at {_size(decisive_variant)}: {reason}"
    return Judgement(decisive.outcome, decisive.rule, reason, metrics)
