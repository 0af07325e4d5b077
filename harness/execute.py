"""One case end to end: tensors, model, quantize, lower, run, compare, result.

This is the per-case hot path. Process-wide work (imports, speed-ups, the
thread count, freezing the import-time heap out of the garbage collector)
happens once in `setup_process`, never here.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import json
import logging
import time
import traceback
import warnings
from pathlib import Path

import numpy as np
import torch

from harness.canaries import injected
from harness.cases.known_issues import known_issue, known_issues
from harness.cases.rejections import expected_rejection
from harness.config import ConvConfig
from harness.data import FLOAT_DTYPES, make_tensors
from harness.dynamic import export_dims, run_configs
from harness.judge import Judge
from harness.lowering import Artifact, QuantizedModel, lower, quantize
from harness.model import build_model
from harness.results import CaseResult, Outcome, versions
from harness.runners import RunnerError, get_runner

_SETUP_DONE = False


def setup_process() -> None:
    """Once per process: deterministic single-threaded torch, quiet logs, frozen heap.

    One intra-op thread makes fp32 results independent of how many workers
    share the machine (and is faster under xdist). `gc.freeze()` moves the
    ~1 GB of import-time objects out of the collector's reach, which the
    design notes measured at 17-22% of per-case time.
    """
    global _SETUP_DONE
    if _SETUP_DONE:
        return
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    for name in ("executorch", "torchao", "torch._export", "torch.export", "root"):
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    versions()
    import harness.lowering  # noqa: F401  - the heavy imports
    import harness.runners.tosa_ref  # noqa: F401
    from harness import speedups

    speedups.install()

    gc.collect()
    gc.freeze()
    _SETUP_DONE = True


LOWERING_STAGES = ("quantize", "lower")
_STAGE_OUTCOME = {
    "build": Outcome.HARNESS_ERROR,
    "quantize": Outcome.LOWERING_ERROR,
    "lower": Outcome.LOWERING_ERROR,
    "run": Outcome.RUNNER_ERROR,
    "compare": Outcome.HARNESS_ERROR,
}


# Unbounded lru_caches in the libraries keyed on graph modules and nodes: each
# pins every graph of every case (measured: ~3,500 objects and 1 MiB a case,
# and a per-case time that doubled over 60 cases). Cleared after each case.
_GRAPH_PINNING_CACHES = (
    ("torch.ao.quantization.fx.utils", "assert_and_get_unique_device"),
    ("torchao.utils", "_assert_and_get_unique_device"),
    ("executorch.exir.backend.utils", "is_same_node"),
)


def release_graph_caches() -> None:
    import importlib

    for module, name in _GRAPH_PINNING_CACHES:
        fn = getattr(importlib.import_module(module), name, None)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()


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


class _StageError(Exception):
    def __init__(self, stage: str, error: BaseException):
        cause = root_cause(error)
        super().__init__(f"{stage}: {type(cause).__name__}: {cause}")
        self.stage = stage
        self.error = error


def _timed(stage: str, timings: dict[str, float], fn, *args):
    """Run one stage, record its wall time, tag any exception with the stage."""
    start = time.perf_counter()
    try:
        return fn(*args)
    except RunnerError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure becomes an outcome
        raise _StageError(stage, e) from e
    finally:
        timings[stage] = round(timings.get(stage, 0.0) + time.perf_counter() - start, 4)


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def run_case(
    config: ConvConfig,
    seed: int = 0,
    runner_name: str = "tosa-ref",
    keep_dir: str | Path | None = None,
    canary: str = "",
) -> CaseResult:
    """Run one case and return its result; never raises for a case's failure.

    With `canary`, that fault is injected into the backend for this case only.
    """
    setup_process()
    timings: dict[str, float] = {}
    result = CaseResult(config.descriptor, seed, Outcome.PASS, runner=runner_name, versions=versions(), canary=canary)
    state: dict = {}
    start = time.perf_counter()
    try:
        with injected(canary) if canary else contextlib.nullcontext():
            _run(config, seed, runner_name, timings, result, state)
    except _StageError as e:
        state["traceback"] = "".join(traceback.format_exception(e.error))
        rule = expected_rejection(config)
        message = f"{e.error} {root_cause(e.error)}"
        if e.stage in LOWERING_STAGES and rule and rule.matches_error(message):
            result.outcome = Outcome.EXPECTED_REJECTION
            result.reason = f"{rule.name}: {rule.reason} (raised in {e.stage}: {_one_line(root_cause(e.error), 200)})"
        else:
            result.outcome = _STAGE_OUTCOME[e.stage]
            result.reason = _one_line(str(e))
    except RunnerError as e:
        result.outcome = Outcome.RUNNER_ERROR
        result.reason = _one_line(str(e))
    except Exception as e:  # noqa: BLE001 - a harness bug costs this case only, with its traceback
        state["traceback"] = "".join(traceback.format_exception(e))
        result.outcome = Outcome.HARNESS_ERROR
        result.reason = _one_line(f"harness: {type(e).__name__}: {e}")
    _apply_registry(result)
    release_graph_caches()
    timings["total"] = round(time.perf_counter() - start, 4)
    result.timings_s = timings
    if keep_dir is not None and not result.green:
        result.artifacts = str(_keep(Path(keep_dir), result, state))
    return result


def _run(config: ConvConfig, seed: int, runner_name: str, timings, result: CaseResult, state: dict) -> None:
    tensors = _timed("build", timings, make_tensors, config, seed)
    model = _timed("build", timings, build_model, config, tensors, seed)
    state["inputs"] = tensors.inputs
    qmodel: QuantizedModel | None = None
    lowered_model, inputs = model, tensors.inputs
    variants = run_configs(config)  # a dynamic-shape program runs at several sizes
    variant_tensors = {v: _timed("build", timings, _variant_tensors, v, tensors, seed) for v in variants[1:]}
    dims = export_dims(config)
    if config.is_quantized:
        # Calibrated on every size it will run at, as a deployed dynamic model would be.
        calibration = tensors.calibration + tuple(s for t in variant_tensors.values() for s in t.calibration)
        qmodel = _timed(
            "quantize", timings, quantize, model, tensors.inputs, config.scheme, calibration, model.conv_index, dims,
        )
        if qmodel.qparams is not None:
            result.metrics["qparams"] = qmodel.qparams.summary()
        lowered_model = qmodel.module
    elif config.scheme != "fp32":
        lowered_model = copy.deepcopy(model).to(FLOAT_DTYPES[config.scheme])
        inputs = _program_inputs(config, tensors)
    artifact: Artifact = _timed(
        "lower", timings, lower, lowered_model, inputs, config.scheme, dims, getattr(model, "control_flow", False),
        config.shape_extension,
    )
    state["tosa"] = artifact.tosa
    result.tosa_ops = list(artifact.tosa_ops)
    result.conv_ops = list(artifact.conv_ops)

    rule = expected_rejection(config)
    if qmodel is not None and qmodel.qparams is None and artifact.delegated:
        raise _StageError("lower", RuntimeError("the quantizer left the conv in float, yet it was delegated to an INT profile"))
    if not artifact.delegated:
        where = ", ".join(artifact.cpu_ops) if artifact.tosa else "nothing was delegated"
        if rule:
            result.outcome = Outcome.EXPECTED_REJECTION
            result.reason = f"{rule.name}: {rule.reason} (left on CPU: {where})"
        else:
            result.outcome = Outcome.NOT_DELEGATED
            result.reason = f"left on CPU: {where}"
        return

    runner = get_runner(runner_name)
    availability = runner.available()
    if not availability.ok:
        result.outcome = Outcome.SKIPPED
        result.reason = availability.reason
        return
    verdicts = []
    for variant in variants:
        tensors = variant_tensors.get(variant, tensors)
        outputs = _timed("run", timings, runner.run, artifact, _program_inputs(variant, tensors))
        output = outputs[0].float()
        judge = _timed("compare", timings, Judge, variant, tensors, model, qmodel, artifact.conv_acc_types)
        verdict = _timed("compare", timings, judge.judge, output)
        verdicts.append((variant, verdict))
        if not verdicts[1:] or verdict.outcome is not Outcome.PASS:
            state["inputs"], state["output"], state["reference"] = tensors.inputs, output, torch.as_tensor(judge.reference)
        if verdict.outcome is Outcome.MISMATCH:
            break
    result.outcome, result.reason, result.metrics = _combine(verdicts, result.metrics)
    if rule and result.outcome is Outcome.PASS:
        result.stale = f"expected rejection {rule.name} did not happen: the backend now supports it; update the rule"


def _program_inputs(config: ConvConfig, tensors) -> tuple[torch.Tensor, ...]:
    """The inputs the lowered program takes: fp16, bf16 and fp8 schemes take their own type."""
    if config.scheme in FLOAT_DTYPES and config.scheme != "fp32":
        return tuple(x.to(FLOAT_DTYPES[config.scheme]) for x in tensors.inputs)
    return tensors.inputs


def _variant_tensors(variant: ConvConfig, nominal, seed: int):
    """Inputs drawn for the variant's size; the model's parameters stay the nominal ones."""
    return dataclasses.replace(make_tensors(variant, seed), weight=nominal.weight, bias=nominal.bias)


def _size(c: ConvConfig) -> str:
    return f"n{c.batch} i{'x'.join(map(str, c.input_size))}"


def _combine(verdicts, metrics: dict) -> tuple[Outcome, str, dict]:
    """One outcome for a case run at one or more sizes: the first size that did
    not pass decides (a mismatch stops the run); its metrics are reported."""
    nominal = verdicts[0][1]
    decisive_variant, decisive = next(((c, v) for c, v in verdicts if v.outcome is not Outcome.PASS), verdicts[0])
    merged = {**metrics, **decisive.metrics}
    reason = decisive.reason
    if len(verdicts) > 1:
        merged["sizes"] = [
            {"size": _size(c), "outcome": v.outcome.value,
             **{k: v.metrics[k] for k in ("max_lsb", "max_err", "sqnr_db") if k in v.metrics}}
            for c, v in verdicts
        ]
        if decisive is not nominal and reason:
            reason = f"at {_size(decisive_variant)}: {reason}"
    return decisive.outcome, reason, merged


def _apply_registry(result: CaseResult) -> None:
    """Known issues: a listed failure becomes known_issue; a pass is stale."""
    issue = known_issue(result.descriptor, result.outcome.value, result.metrics, result.reason)
    if issue is not None:
        result.metrics["actual_outcome"] = result.outcome.value
        result.outcome = Outcome.KNOWN_ISSUE
        result.reason = f"{issue.id}: {issue.reason} [{result.reason}]"
        return
    strict = [i for i in known_issues(result.descriptor) if i.strict]
    if strict and result.outcome is Outcome.PASS:
        result.stale = f"known issue {strict[0].id} no longer reproduces: remove it from the registry"


def _keep(root: Path, result: CaseResult, state: dict) -> Path:
    """Save what a failure needs to be studied offline; returns the directory."""
    case_dir = root / f"{result.descriptor}__seed{result.seed}"
    case_dir.mkdir(parents=True, exist_ok=True)
    for i, x in enumerate(state.get("inputs", ())):
        np.save(case_dir / f"input{i}.npy", x.numpy())
    for key in ("output", "reference"):
        if key in state:
            np.save(case_dir / f"{key}.npy", state[key].detach().numpy())
    for i, buf in enumerate(state.get("tosa", ())):
        (case_dir / f"delegate{i}.tosa").write_bytes(buf)
    if "traceback" in state:
        (case_dir / "traceback.txt").write_text(state["traceback"])
    (case_dir / "result.json").write_text(json.dumps(json.loads(result.to_json()), indent=2))
    (case_dir / "repro.sh").write_text(result.repro + "\n")
    return case_dir
