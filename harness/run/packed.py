"""Run a pack of cases as one program: lowered once, run once, judged case by case.

Each case is prepared alone (its tensors, its module, its own PT2E
calibration), then the programs are packed (`harness.lowering.pack`), lowered
and run once; each case's output, operators and accumulators are its own
part of the pack, judged and classified exactly as `run_case` does alone.

Nothing is attributed to a pack. A case whose preparation fails, and every
case of a pack that fails to lower, to split by case or to run, is run
alone. So is a case whose packed result is not green (with `confirm`, the
default): its recorded result, files and repro are then the standalone ones.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, replace

from harness.build.data import program_inputs
from harness.build.dynamic import export_dims
from harness.config import ConvConfig
from harness.faults.canaries import injected
from harness.lowering.lower import lower as lower_program
from harness.lowering.pack import pack_programs, split_artifact
from harness.policy.targets import get_target
from harness.results.case_result import CaseResult
from harness.results.stages import LOWER, RUN
from harness.run import stages
from harness.run.evidence import Evidence
from harness.run.execute import case_result, judged_observation, lowered_observation, prepared_metrics, run_configured
from harness.run.process import one_task, release_graph_caches, setup_process
from harness.run.settings import RunSettings
from harness.runners.registry import get_runner


def _share(timings: dict, stage: str, seconds: float, n: int) -> None:
    timings[stage] = round(timings.get(stage, 0.0) + seconds / n, 4)


@dataclass
class _Lowered:
    """A pack lowered and run once: each case's part of the artifact, the outputs at each size, the seconds."""

    parts: list
    outputs: list
    lower_s: float
    run_s: float
    second: list | None = None  # the target's cross-check runner's outputs, as `outputs`


def _lower_and_run(prepared: list, settings: RunSettings, configs: list[ConvConfig]) -> _Lowered | None:
    """The prepared cases packed, lowered and run as one program; None when the pack fails as a whole."""
    t = prepared[0][1].target  # resolved once, by prepare
    try:
        start = time.perf_counter()
        packed = pack_programs([p.program for _, p in prepared], [p.example_inputs for _, p in prepared])
        dims = packed.dynamic_shapes([export_dims(p.config, f"case{k}_") for k, (_, p) in enumerate(prepared)])
        artifact = lower_program(
            packed.module, packed.inputs, configs[0].scheme, t, dims, False, configs[0].shape_extension
        )
        parts = split_artifact(artifact, packed)
        lower_s = time.perf_counter() - start
        start = time.perf_counter()
        inputs = [
            tuple(x for _, p in prepared for x in program_inputs(*p.runs[index]))
            for index in range(len(prepared[0][1].runs))
        ]  # one pack_key: as many sizes each
        outputs = [get_runner(t.runner).run(artifact, x) for x in inputs]
        second = [get_runner(t.cross_check).run(artifact, x) for x in inputs] if t.cross_check else None
        return _Lowered(parts, outputs, lower_s, time.perf_counter() - start, second)
    except Exception:  # noqa: BLE001 - the pack failed as a whole: each case says for itself, alone
        return None
    finally:
        release_graph_caches()


@one_task
def run_pack(configs: list[ConvConfig], settings: RunSettings, confirm: bool = True) -> list[CaseResult]:
    """The results of `configs` (one `harness.schedule.packing.pack_key`), in their order; never raises for a
    case's failure. A dynamic-shape pack is exported with each case's own dims and run at each of its sizes.

    `confirm`: run again alone each case whose packed result is not green, and report that.
    Each result's `timings_s` holds its own stages and its share of the pack's lowering and run.
    """
    setup_process()

    def alone(i: int) -> CaseResult:
        return run_configured(configs[i], settings)

    if len(configs) == 1:
        return [alone(0)]
    results: dict[int, CaseResult] = {}
    with contextlib.ExitStack() as fault:
        if settings.canary:
            try:
                fault.enter_context(injected(settings.canary))
            except Exception:  # noqa: BLE001 - a fault that cannot be installed (an invalid mutant): alone, each
                return [alone(i) for i in range(len(configs))]  # case records it as its harness_error
        prepared, timings = [], []
        target = get_target(settings.target)
        for i, c in enumerate(configs):
            own: dict[str, float] = {}
            start = time.perf_counter()
            try:
                prepared.append((i, stages.prepare(c, settings.seed, target, own)))
                own["total"] = time.perf_counter() - start
                timings.append(own)
            except stages.StageError:
                results[i] = alone(i)
        lowered = _lower_and_run(prepared, settings, configs)
    n = len(prepared)
    for k, ((i, p), own) in enumerate(zip(prepared, timings)):
        result = _judged(p, k, own, lowered, settings, n) if lowered is not None else None
        results[i] = alone(i) if result is None or (confirm and not result.green) else result
    return [results[i] for i in range(len(configs))]


def _judged(p, k: int, own: dict, lowered: _Lowered, settings: RunSettings, n: int) -> CaseResult | None:
    """The k-th case of a pack judged on its own part; None when judging fails (it then runs alone, where the
    failure gets its stage and traceback)."""
    _share(own, LOWER, lowered.lower_s, n)
    _share(own, RUN, lowered.run_s, n)
    evidence = Evidence()
    metrics = prepared_metrics(p)
    start = time.perf_counter()
    try:
        part = lowered.parts[k]
        second = (
            None if lowered.second is None else (lambda index: (p.target.cross_check, lowered.second[index][k].float()))
        )
        seen = lowered_observation(part, metrics, evidence, p.config) or judged_observation(
            p, part, lambda index: lowered.outputs[index][k].float(), own, evidence, metrics, second
        )
    except Exception:  # noqa: BLE001
        return None
    own["total"] = round(own["total"] + time.perf_counter() - start + (lowered.lower_s + lowered.run_s) / n, 4)
    return case_result(p.config, replace(settings, keep_dir=None), seen, own, evidence, packed=n)
