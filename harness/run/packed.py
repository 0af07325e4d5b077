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
from pathlib import Path

from harness.build.data import program_inputs
from harness.build.dynamic import export_dims
from harness.faults.canaries import injected
from harness.config import ConvConfig
from harness.lowering.lower import lower as lower_program
from harness.lowering.pack import pack_programs, split_artifact
from harness.policy.targets import DEFAULT_TARGET, get_target
from harness.results.case_result import CaseResult
from harness.run import stages
from harness.run.execute import case_result, judged_observation, lowered_observation, prepared_metrics, run_case
from harness.run.process import one_task, release_graph_caches, setup_process
from harness.runners.registry import get_runner


def _share(timings: dict, stage: str, seconds: float, n: int) -> None:
    timings[stage] = round(timings.get(stage, 0.0) + seconds / n, 4)


@one_task
def run_pack(
    configs: list[ConvConfig],
    seed: int = 0,
    target: str = DEFAULT_TARGET,
    keep_dir: str | Path | None = None,
    canary: str = "",
    run_id: str = "",
    confirm: bool = True,
) -> list[CaseResult]:
    """The results of `configs` (one `harness.schedule.packing.pack_key`), in their order; never raises for a
    case's failure. A dynamic-shape pack is exported with each case's own dims and run at each of its sizes.

    `confirm`: run again alone each case whose packed result is not green, and report that.
    Each result's `timings_s` holds its own stages and its share of the pack's lowering and run.
    """
    setup_process()
    alone = dict(seed=seed, target=target, keep_dir=keep_dir, canary=canary, run_id=run_id)
    if len(configs) == 1:
        return [run_case(configs[0], **alone)]
    t = get_target(target)
    results: dict[int, CaseResult] = {}
    with contextlib.ExitStack() as fault:
        if canary:
            try:
                fault.enter_context(injected(canary))
            except Exception:  # noqa: BLE001 - a fault that cannot be installed (an invalid mutant): alone, each
                return [run_case(c, **alone) for c in configs]  # case records it as its harness_error
        prepared, timings = [], []
        for i, c in enumerate(configs):
            own: dict[str, float] = {}
            start = time.perf_counter()
            try:
                prepared.append((i, stages.prepare(c, seed, t, own)))
                own["total"] = time.perf_counter() - start
                timings.append(own)
            except stages.StageError:
                results[i] = run_case(c, **alone)
        try:
            start = time.perf_counter()
            packed = pack_programs([p.program for _, p in prepared], [p.example_inputs for _, p in prepared])
            dims = packed.dynamic_shapes([export_dims(p.config, f"case{k}_") for k, (_, p) in enumerate(prepared)])
            artifact = lower_program(packed.module, packed.inputs, configs[0].scheme, t, dims, False,
                                     configs[0].shape_extension)
            parts = split_artifact(artifact, packed)
            lowered_s = time.perf_counter() - start
            start = time.perf_counter()
            runner = get_runner(t.runner)
            outputs = [runner.run(artifact, tuple(x for _, p in prepared for x in program_inputs(*p.runs[index])))
                       for index in range(len(prepared[0][1].runs))]  # one pack_key: as many sizes each
            run_s = time.perf_counter() - start
        except Exception:  # noqa: BLE001 - the pack failed as a whole: each case says for itself, alone
            parts = None
        finally:
            release_graph_caches()
    n = len(prepared)
    for k, ((i, p), own, part) in enumerate(zip(prepared, timings, parts or [None] * n)):
        if part is None:
            results[i] = run_case(configs[i], **alone)
            continue
        _share(own, "lower", lowered_s, n)
        _share(own, "run", run_s, n)
        keep: dict = {}
        metrics = prepared_metrics(p)
        start = time.perf_counter()
        try:
            seen = lowered_observation(part, metrics, keep, configs[i]) or judged_observation(
                p, part, lambda index: outputs[index][k].float(), own, keep, metrics)
        except Exception:  # noqa: BLE001 - judging failed: alone, the failure gets its stage and traceback
            results[i] = run_case(configs[i], **alone)
            continue
        own["total"] = round(own["total"] + time.perf_counter() - start + (lowered_s + run_s) / n, 4)
        result = case_result(configs[i], seed, target, seen, own, keep, None, canary, run_id, packed=n)
        results[i] = run_case(configs[i], **alone) if confirm and not result.green else result
    return [results[i] for i in range(len(configs))]
