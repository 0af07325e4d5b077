"""One case end to end: the stages composed, and what a failure leaves on disk.

`run_configured` (the case function a worker runs: a config and the run's
`RunSettings`) and `run_case` (the same with the settings spelled out) never
raise for a case's failure: whatever happens becomes the case's result, and
what it keeps is its `Evidence`. Process-wide set-up happens once
(`harness.run.process`), never on this path.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
import traceback
from pathlib import Path

import torch

from harness.blame import backend_frames, harness_module, harness_origin, raising_frame
from harness.config import ConvConfig
from harness.expectations.applies import current as current_backend
from harness.expectations.classify import Observation, classify
from harness.expectations.left_on_cpu import BOOKKEEPING
from harness.faults.canaries import injected
from harness.judging import attribution, executors
from harness.judging.op_choice import narrowed_accumulator, wrong_op, wrong_weight_quantization, wrong_weight_type
from harness.policy.schemes import SCHEMES
from harness.policy.targets import DEFAULT_TARGET, get_target
from harness.results.case_result import CaseResult, Outcome, versions
from harness.results.stages import HARNESS, LOWER, QUANTIZE, RUN
from harness.run import stages
from harness.run.evidence import Evidence, save
from harness.run.process import one_task, release_graph_caches, setup_process
from harness.run.settings import RunSettings
from harness.runners.base import RunnerError
from harness.runners.registry import get_runner


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def prepared_metrics(p: stages.Prepared) -> dict:
    """What a result reports as soon as the quantizer chose its parameters."""
    return {"qparams": p.quantized.qparams.summary()} if p.quantized is not None and p.quantized.qparams else {}


def lowered_observation(artifact, metrics: dict, evidence: Evidence, config: ConvConfig) -> Observation | None:
    """Records the artifact's facts; the observation if the case ends here (not delegated, or delegated as
    a TOSA conv op its shape does not call for: `harness.judging.op_choice`)."""
    evidence.tosa = artifact.tosa
    evidence.tosa_ops, evidence.conv_ops = list(artifact.tosa_ops), list(artifact.conv_ops)
    metrics.update(artifact.facts)
    if artifact.delegated:
        wrong = wrong_op(config, artifact.conv_ops)
        if wrong:
            return Observation(
                Outcome.LOWERING_ERROR,
                wrong,
                metrics=metrics,
                stage=LOWER,
                error=wrong,
                error_type="WrongConvOperator",
            )
        wrong = wrong_weight_type(config, artifact.conv_weight_types, SCHEMES[config.scheme].weight_type)
        if wrong:
            return Observation(
                Outcome.LOWERING_ERROR, wrong, metrics=metrics, stage=LOWER, error=wrong, error_type="WrongWeightType"
            )
        wrong = narrowed_accumulator(config, artifact.narrowed_accumulators)
        return (
            Observation(
                Outcome.LOWERING_ERROR,
                wrong,
                metrics=metrics,
                stage=LOWER,
                error=wrong,
                error_type="NarrowedAccumulator",
            )
            if wrong
            else None
        )
    vela_cpu = artifact.facts.get("vela", {}).get("cpu_ops")
    where = (
        ", ".join(artifact.cpu_ops)
        if artifact.cpu_ops
        else f"Vela placed {vela_cpu} operator(s) on the CPU"
        if vela_cpu
        else "nothing was delegated"
    )
    said = partitioner_said(artifact.rejected)
    return Observation(
        Outcome.NOT_DELEGATED,
        f"left on CPU: {where}" + (f"; the partitioner: {said}" if said else ""),
        metrics=metrics,
        error=said,
    )


def partitioner_said(rejected) -> str:
    """The partitioner's reasons for the compute nodes it rejected ('target, target: reason; ...'), each reason
    once with every node it was given for (`harness.expectations.left_on_cpu` reads them node by node)."""
    reasons: dict[str, list[str]] = {}
    for _, target, reason in rejected:
        if not any(b in target for b in BOOKKEEPING):
            op = target.split(".")[-2] if "." in target else target
            ops = reasons.setdefault(" ".join(reason.split()), [])
            if op not in ops:
                ops.append(op)
    return "; ".join(f"{', '.join(ops)}: {reason}" for reason, ops in reasons.items())


def judged_observation(
    p: stages.Prepared, artifact, outputs, timings: dict, evidence: Evidence, metrics: dict, second=None
) -> Observation:
    """Judge the program's output at each of the case's sizes; `outputs(index)` runs it at the index-th.
    `second(index)`: (its name, the output of a second executor); a disagreement between the two (by
    `harness.judging.executors`) is the verdict when the oracle passed the first."""
    verdicts = []
    disagreed = ""
    compared: tuple = ()  # (first executor's output, second's, the rule's limit) at the size attributed
    digest = hashlib.sha256()  # every size's output, in order: for one size, the digest of its bytes
    for index, (variant, tensors) in enumerate(p.runs):
        output = outputs(index)
        digest.update(output.detach().contiguous().numpy().tobytes())
        evidence.output_sha256 = digest.hexdigest()
        verdict, judge = stages.judge(p, artifact, index, output, timings)
        if second is not None:
            name, other = second(index)
            limit = None if p.config.is_quantized else judge.expectation().limit
            why, agreement = executors.disagreement(output, other, limit, (p.target.runner, name))
            metrics.setdefault("executors", agreement)
            compared = compared or (output, other, limit)  # the size the attribution shows: the first, or
            if why and not disagreed:  # the first where the executors disagree
                disagreed, metrics["executors"], compared = why, agreement, (output, other, limit)
        verdicts.append((variant, verdict))
        if index == 0 or verdict.outcome is not Outcome.PASS:
            evidence.inputs, evidence.output = tensors.inputs, output
            evidence.reference = torch.as_tensor(judge.reference)
        if verdict.outcome is Outcome.MISMATCH:
            break
    j = stages.combine(verdicts)
    if compared and "attribution" in j.metrics:
        scale = p.quantized.output.scale if p.config.is_quantized and p.quantized.output else None
        j.metrics["attribution"]["executor"] = attribution.executor(*compared[:2], scale, compared[2])
        if disagreed and not j.metrics["attribution"].get("added_by"):
            j.metrics["attribution"]["added_by"] = "executor"
    if disagreed and j.outcome in (Outcome.PASS, Outcome.MISTRUSTED):
        return Observation(
            Outcome.MISMATCH, f"executors disagree: {disagreed}", executors.RULE, {**metrics, **j.metrics}
        )
    wrong = weight_quantization(p) if j.outcome is Outcome.PASS else ""
    if wrong:  # after the numbers: a case whose numbers are wrong says that first
        return Observation(
            Outcome.LOWERING_ERROR,
            wrong,
            j.rule,
            {**metrics, **j.metrics},
            stage=QUANTIZE,
            error=wrong,
            error_type="WrongWeightQuantization",
        )
    return Observation(j.outcome, j.reason, j.rule, {**metrics, **j.metrics})


def weight_quantization(p: stages.Prepared) -> str:
    """'' unless the quantizer quantized the conv's weight otherwise than its scheme declares."""
    q = p.quantized.qparams if p.quantized is not None else None
    if q is None:
        return ""
    w = q.weight
    return wrong_weight_quantization(
        p.config, SCHEMES[p.config.scheme].quantizer.per_channel, w.axis, w.zero_points, w.qmin, w.qmax
    )


def failed_observation(e: Exception, metrics: dict, evidence: Evidence) -> Observation:
    """A stage's failure (StageError) or the runner's (RunnerError) as the case's observation."""
    if isinstance(e, RunnerError):
        return Observation(
            Outcome.RUNNER_ERROR,
            _one_line(str(e)),
            metrics=metrics,
            stage=RUN,
            error=str(e),
            error_type="RunnerError",
        )
    evidence.traceback = "".join(traceback.format_exception(e.error))
    if isinstance(e.error, stages.CaseBroken):  # what torch refused is what the harness built: its own mistake
        return Observation(
            Outcome.HARNESS_ERROR,
            _one_line(f"harness: {e.error}"),
            metrics=metrics,
            stage=e.stage,
            error=str(e.error),
            error_type="CaseBroken",
        )
    cause = stages.root_cause(e.error)
    module = harness_origin(e.error, cause)
    if module is not None:  # the harness's own code raised it, whichever stage was running: never the backend's
        return Observation(
            Outcome.HARNESS_ERROR,
            _one_line(f"harness: {module}: {type(cause).__name__}: {cause} (during {e.stage})"),
            metrics=metrics,
            stage=e.stage,
            error=f"{e.error} {cause}",
            error_type=type(cause).__name__,
        )
    return Observation(
        stages.STAGE_OUTCOME[e.stage],
        _one_line(str(e)),
        metrics=metrics,
        stage=e.stage,
        error=f"{e.error} {cause}",
        error_type=type(cause).__name__,
        frames=backend_frames(cause),
    )


def _cross_check(p: stages.Prepared, artifact, timings: dict):
    """`second` for `judged_observation`: the target's cross-check runner at the index-th size, or None."""
    if not p.target.cross_check:
        return None
    other = get_runner(p.target.cross_check)
    return lambda index: (other.name, stages.run(p, artifact, index, other, timings))


def _observe(
    config: ConvConfig, settings: RunSettings, timings: dict, evidence: Evidence, data_file: str = ""
) -> Observation:
    """Run the stages; what happened, before rejections and the registry."""
    target = get_target(settings.target)
    metrics: dict = {}  # kept whatever happens after the quantizer chose its parameters
    try:
        p = stages.prepare(config, settings.seed, target, timings, data_file)
        evidence.inputs = p.tensors.inputs
        metrics.update(prepared_metrics(p))
        artifact = stages.lower(p, timings)
        ended = lowered_observation(artifact, metrics, evidence, config)
        if ended is not None:
            return ended
        runner = get_runner(target.runner)
        availability = runner.available(target.family)
        if not availability.ok:
            return Observation(Outcome.SKIPPED, availability.reason, metrics=metrics)
        return judged_observation(
            p,
            artifact,
            lambda index: stages.run(p, artifact, index, runner, timings),
            timings,
            evidence,
            metrics,
            _cross_check(p, artifact, timings),
        )
    except (stages.StageError, RunnerError) as e:
        return failed_observation(e, metrics, evidence)


@one_task
def run_configured(config: ConvConfig, settings: RunSettings, data_file: str = "") -> CaseResult:
    """Run one case under the run's settings and return its result; never raises for a case's failure.

    `data_file`: the file a `captured` case's tensors come from. The settings' canary is injected into the
    backend for this case only; with their `keep_dir`, a case that is not green leaves its evidence there.
    """
    setup_process()
    timings: dict[str, float] = {}
    evidence = Evidence()
    start = time.perf_counter()
    try:
        with injected(settings.canary) if settings.canary else contextlib.nullcontext():
            seen = _observe(config, settings, timings, evidence, data_file)
    except Exception as e:  # noqa: BLE001 - a harness bug costs this case only, with its traceback
        evidence.traceback = "".join(traceback.format_exception(e))
        module = harness_module(raising_frame(e.__traceback__)) or "harness"
        seen = Observation(
            Outcome.HARNESS_ERROR,
            _one_line(f"harness: {module}: {type(e).__name__}: {e}"),
            stage=HARNESS,
            error_type=type(e).__name__,
        )
    release_graph_caches()
    timings["total"] = round(time.perf_counter() - start, 4)
    result = case_result(config, settings, seen, timings, evidence, data_file)
    # Under an injected fault (a canary, a mutant) red is the experiment's expected answer, not a verdict on the
    # backend: no second run (it would double the cost of every kill in a campaign).
    if not result.green and seen.outcome is not Outcome.HARNESS_ERROR and not settings.canary:
        changed = _speedups_changed(config, settings, seen, data_file)
        if changed is not None:
            result = case_result(config, settings, changed, timings, evidence, data_file)
    return result


def _signature(o: Observation) -> tuple:
    """What a re-run must give again: outcome, stage, error class, and a mismatch's size (not the message's text,
    which may hold object addresses)."""
    return (o.outcome, o.stage, o.error_type, *(o.metrics.get(k) for k in ("max_lsb", "max_err", "n_over")))


def _speedups_changed(
    config: ConvConfig, settings: RunSettings, seen: Observation, data_file: str
) -> Observation | None:
    """A case that is not green with speed-ups on is run again in the plain flow before the backend is blamed:
    their proof is a small sample, and a speed-up that misbehaves outside it is the harness's failure. None when
    the plain flow sees the same; else the harness_error that says what they changed."""
    from harness.speedups import state

    installed = state.current()
    if installed is None or not installed.on:
        return None
    with state.suspended():
        try:
            plain = _observe(config, settings, {}, Evidence(), data_file)
        except Exception as e:  # noqa: BLE001 - the plain flow's own failure is compared as any other
            plain = Observation(
                Outcome.HARNESS_ERROR, _one_line(f"{type(e).__name__}: {e}"), stage=HARNESS, error_type=type(e).__name__
            )
    release_graph_caches()
    if _signature(plain) == _signature(seen):
        return None
    return Observation(
        Outcome.HARNESS_ERROR,
        _one_line(
            f"harness: speed-ups ({', '.join(installed.on)}) changed this case: with them {seen.outcome.value} "
            f"({seen.reason}); in the plain flow {plain.outcome.value} ({plain.reason or 'no reason'})"
        ),
        metrics=seen.metrics,
        stage=HARNESS,
        error_type="SpeedupChangedResult",
    )


def run_case(
    config: ConvConfig,
    seed: int = 0,
    target: str = DEFAULT_TARGET,
    keep_dir: str | Path | None = None,
    canary: str = "",
    run_id: str = "",
    data_file: str = "",
) -> CaseResult:
    """`run_configured` with the settings spelled out (the command line, tests, bisection)."""
    settings = RunSettings(seed, target, None if keep_dir is None else str(keep_dir), canary, run_id)
    return run_configured(config, settings, data_file)


def result_versions() -> dict[str, str]:
    """The versions a result carries: the libraries', and which speed-ups were on (proven not to change it)."""
    from harness.speedups import state

    installed = state.current()
    return {**versions(), **({"harness-speedups": installed.summary()} if installed else {})}


def case_result(
    config: ConvConfig,
    settings: RunSettings,
    seen: Observation,
    timings: dict,
    evidence: Evidence,
    data_file: str = "",
    packed: int = 0,
) -> CaseResult:
    """The result of what was seen, classified; a case that is not green leaves its evidence in the settings'
    keep_dir."""
    target = get_target(settings.target)
    verdict = classify(config, seen, target.family, current_backend())
    result = CaseResult(
        config.descriptor,
        settings.seed,
        verdict.outcome,
        reason=verdict.reason,
        target=target.name,
        runner=target.runner,
        run_id=settings.run_id,
        actual_outcome=verdict.actual_outcome,
        rule=seen.rule,
        rejection=verdict.rejection,
        issue=verdict.issue,
        stale=verdict.stale,
        stage=seen.stage,
        error_type=seen.error_type,
        error_frames=None if seen.frames is None else list(seen.frames),
        canary=settings.canary,
        data_file=str(data_file),
        metrics=seen.metrics,
        tosa_ops=evidence.tosa_ops,
        conv_ops=evidence.conv_ops,
        timings_s=timings,
        versions=result_versions(),
        output_sha256=evidence.output_sha256,
        packed=packed,
    )
    if settings.keep_dir is not None and not result.green:
        result.artifacts = str(save(Path(settings.keep_dir), result, evidence))
    return result
