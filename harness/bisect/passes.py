"""Pass bisection: which pass of the Arm pipeline makes a case's numbers wrong.

The case is prepared and lowered through the real stages, with a snapshot of
the delegate's program taken before the pipeline and after every pass that
changes it (`_ExportedProgramGraphPassAdapter` is where the pipeline applies
each pass; it is wrapped for this one lowering only, like a canary). Each
snapshot then stands in for the delegate: the lowered program runs with the
snapshot executed eagerly (`harness.bisect.eager`), and its output is judged
by the case's own judge. The first stage whose output leaves the case's
tolerance names the pass; a stage that cannot run eagerly is said so and
skipped. If every stage is within tolerance and the serialized graph on the
reference model is not, the fault is in serialization (the TOSA node
visitors) or after it.

Tolerance of a stage: for an INT case, within the fake-quant model's
tolerance and above the SQNR floor (the early stages compute in float with
fake quantization, the later ones in integers: both must stay within the
fake-quant tolerance); for a float case, the DOT_PRODUCT rule.

The serialized graph's judgement carries the case's attribution
(`harness.judging.attribution`): when the error was added by the quantizer
(the fake-quantized model is already below the SQNR floor against fp64), no
pass is to blame and the culprit is `quantization`, not the pipeline's start.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import math
from dataclasses import dataclass, field

import torch

from harness.bisect.eager import SpecViolation, run_stage
from harness.build.data import program_inputs
from harness.config import ConvConfig
from harness.faults.canaries import injected
from harness.judging.judge import Judge, Judgement
from harness.policy.targets import get_target
from harness.results.case_result import Outcome
from harness.results.stages import LOWER
from harness.run import stages
from harness.runners.base import RunnerError
from harness.runners.registry import get_runner

_DELEGATE = torch.ops.higher_order.executorch_call_delegate


@dataclass
class Snapshot:
    name: str  # the pass after which it was taken ('<start>' before the pipeline)
    index: int  # the pass's position in the pipeline (-1 for the start)
    program: object  # ExportedProgram


@dataclass
class Stage:
    name: str
    index: int
    runnable: bool
    ok: bool | None = None
    error: float | None = None  # INT: LSB against fake-quant; float: max |err| in units of its limit
    limit: float | None = None  # the largest error within tolerance, in the same unit
    unit: str = ""  # 'LSB' (INT cases, against the fake-quant model) or 'x limit' (float cases)
    reason: str = ""


@dataclass
class PassBisection:
    descriptor: str
    target: str
    canary: str
    stages: list[Stage]
    final: Stage  # the serialized graph on the target's runner
    culprit: str  # the first pass whose output leaves the tolerance, 'quantization', 'serialization', or ''
    attribution: dict = field(default_factory=dict)  # the serialized graph's: where the error comes from
    before: Stage | None = None
    after: Stage | None = None
    change: dict = field(default_factory=dict)  # nodes added, removed, changed; a short graph diff


@contextlib.contextmanager
def _snapshots(found: list[Snapshot], specs: list, running: list):
    """Record the delegate program before the Arm pipeline and after each pass that modifies it;
    `running` holds the name of the pass in progress (the one that raised, if the lowering fails)."""
    from executorch.backends.arm._passes import arm_pass_manager as apm

    adapter_call, transform = apm._ExportedProgramGraphPassAdapter.call, apm.ArmPassManager._transform
    counter = {"i": 0}

    def call(self, exported_program):
        running[:] = [apm._graph_pass_name(self.graph_pass)]
        result = adapter_call(self, exported_program)
        running.clear()
        if result.modified:
            found.append(
                Snapshot(apm._graph_pass_name(self.graph_pass), counter["i"], copy.deepcopy(result.exported_program))
            )
        counter["i"] += 1
        return result

    def spy(self, exported_program, graph_module):
        if graph_module is exported_program.graph_module:
            found.append(Snapshot("<start>", -1, copy.deepcopy(exported_program)))
            specs.append(self.tosa_spec)
        return transform(self, exported_program, graph_module)

    apm._ExportedProgramGraphPassAdapter.call, apm.ArmPassManager._transform = call, spy
    try:
        yield
    finally:
        apm._ExportedProgramGraphPassAdapter.call, apm.ArmPassManager._transform = adapter_call, transform


class _WithStage(torch.fx.Interpreter):
    """The lowered program, its (single) delegate executed as a stage program."""

    def __init__(self, gm, stage_program, tosa_spec):
        super().__init__(gm)
        self.stage_program, self.tosa_spec = stage_program, tosa_spec

    def call_function(self, target, args, kwargs):
        if target is _DELEGATE:
            return run_stage(self.stage_program, self.tosa_spec, tuple(args[1:]))
        return super().call_function(target, args, kwargs)


def _judge(p: stages.Prepared, artifact) -> Judge:
    """The case's judge, built once for every stage (the accumulator the serialized graph declares, if any)."""
    variant, tensors = p.runs[0]
    return Judge(variant, tensors, p.model, p.quantized, artifact.conv_acc_types if artifact is not None else ())


def _verdict(
    p: stages.Prepared, judge: Judge, output: torch.Tensor
) -> tuple[Judgement, bool, float | None, float | None, str]:
    """The judge on a stage's output, in the stage's terms (module docstring)."""
    judgement = judge.judge(output)
    m = judgement.metrics
    if "shape" in m:
        return judgement, False, None, None, ""
    if p.config.is_quantized:
        limit = m.get("fq_tolerance_lsb", 1)
        ok = m.get("fq_max_lsb", 0) <= limit and not (
            m.get("sqnr_db") is not None and m["sqnr_db"] < (m.get("sqnr_floor_db") or -math.inf)
        )
        return judgement, ok, float(m.get("fq_max_lsb", 0)), float(limit), "LSB"
    ratio = m["max_err"] / m["err_limit"] if m.get("err_limit") else None
    return judgement, judgement.outcome is not Outcome.MISMATCH, ratio, 1.0, "x limit"


_Q, _DQ = "quantize_per_tensor", "dequantize_per_tensor"


def _through_boundary(start, snap: Snapshot, spec, inputs: tuple) -> torch.Tensor:
    """The model's output with the whole graph as one delegate: its inputs quantized as the delegate's first
    dequantize says, its output dequantized as its last quantize says (the start snapshot's boundary)."""
    graph = start.graph_module.graph
    names = list(start.graph_signature.user_inputs)
    if len(names) != len(inputs):
        raise RuntimeError(f"the delegate takes {len(names)} inputs, the model {len(inputs)}: not the whole graph")
    placeholders = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    feed = []
    for name, x in zip(names, inputs):
        users = list(placeholders[name].users)
        dq = next((u for u in users if _DQ in str(u.target)), None)
        if dq is None:
            feed.append(x)
            continue
        _, scale, zp, qmin, qmax, dtype = dq.args[:6]
        feed.append(torch.ops.quantized_decomposed.quantize_per_tensor(x, scale, zp, qmin, qmax, dtype))
    out = run_stage(snap.program, spec, tuple(feed))[0]
    last = graph.output_node().args[0][0]
    if _Q in str(last.target):
        _, scale, zp, qmin, qmax, dtype = last.args[:6]
        out = torch.ops.quantized_decomposed.dequantize_per_tensor(out, scale, zp, qmin, qmax, dtype)
    return out


def _evaluate(p, artifact, judge: Judge, snap: Snapshot, start: Snapshot, spec) -> Stage:
    try:
        if artifact is not None:
            gm = artifact.program.exported_program().module()
            out = _WithStage(gm, snap.program, spec).run(*program_inputs(p.config, p.tensors))
            out = out[0] if isinstance(out, (tuple, list)) else out
        else:  # the lowering failed: evaluate through the delegate's own boundary
            out = _through_boundary(start.program, snap, spec, program_inputs(p.config, p.tensors))
        out = out.float()
    except SpecViolation as e:
        return Stage(snap.name, snap.index, True, False, reason=f"ill-typed: {e}")
    except Exception as e:  # noqa: BLE001 - a stage that cannot run eagerly is skipped, with why
        cause = stages.root_cause(e)
        return Stage(
            snap.name,
            snap.index,
            False,
            reason=f"cannot run eagerly: {type(cause).__name__}: {str(cause).splitlines()[0][:200]}",
        )
    judgement, ok, error, limit, unit = _verdict(p, judge, out)
    return Stage(snap.name, snap.index, True, ok, error, limit, unit, judgement.reason)


def _nodes(program) -> dict[str, str]:
    """Each node as `name: target(args)`, which is what a pass changes."""
    return {
        n.name: f"{getattr(n.target, '__name__', n.target) if n.op == 'call_function' else n.op}{n.args}"
        for n in program.graph_module.graph.nodes
    }


_CONV_TARGETS = ("convolution", "CONV2D", "CONV3D", "DEPTHWISE_CONV2D", "TRANSPOSE_CONV2D")


def neighbourhood(program, hops: int = 2) -> set[str]:
    """The conv nodes of a graph and every node within `hops` edges of one (inputs or users)."""
    nodes = list(program.graph_module.graph.nodes)
    frontier = {n for n in nodes if n.op == "call_function" and any(t in str(n.target) for t in _CONV_TARGETS)}
    seen = set(frontier)
    for _ in range(hops):
        frontier = {m for n in frontier for m in (*n.all_input_nodes, *n.users)} - seen
        seen |= frontier
    return {n.name for n in seen}


def graph_change(before, after, lines: int = 40) -> dict:
    """What a pass did around the conv: nodes added, removed and changed within two edges of a conv
    (on either side of the pass), how many changes lie elsewhere, and a short diff of the graph's code."""
    a, b = _nodes(before), _nodes(after)
    near = neighbourhood(before) | neighbourhood(after)
    added, removed = set(b) - set(a), set(a) - set(b)
    changed = {k for k in set(a) & set(b) if a[k] != b[k]}
    diff = list(
        difflib.unified_diff(
            before.graph_module.code.splitlines(),
            after.graph_module.code.splitlines(),
            "before",
            "after",
            lineterm="",
            n=1,
        )
    )
    return {
        "added": sorted(added & near),
        "removed": sorted(removed & near),
        "changed": sorted(changed & near),
        "elsewhere": len((added | removed | changed) - near),
        "nodes": {k: b.get(k, a.get(k)) for k in sorted((added | removed | changed) & near)},
        "diff": diff[:lines] + ([f"... {len(diff) - lines} more lines"] if len(diff) > lines else []),
    }


def bisect_passes(
    config: ConvConfig, seed: int = 0, target: str = "tosa", canary: str = "", data_file: str = ""
) -> PassBisection:
    """Lower the case once with snapshots, judge every stage, name the first pass that departs
    (`data_file`: a captured case's tensors)."""
    t = get_target(target)
    found: list[Snapshot] = []
    specs: list = []
    running: list[str] = []
    artifact = None
    with injected(canary) if canary else contextlib.nullcontext():
        p = stages.prepare(config, seed, t, data_file=data_file)
        with _snapshots(found, specs, running):
            try:
                artifact = stages.lower(p)
            except stages.StageError as e:
                crash = e
    if len(specs) != 1:
        raise stages.StageError(
            LOWER, RuntimeError(f"pass bisection needs one delegate; the lowering made {len(specs)}")
        )
    final_name = f"serialized graph on {t.runner}"
    judge = _judge(p, artifact)
    attributed: dict = {}
    if artifact is None:  # the lowering raised: in the pass that was running, if one was
        where = f"raised in {running[0]}" if running else "raised after the passes"
        final = Stage(final_name, -1, False, False, reason=f"{where}: {str(crash).splitlines()[0][:300]}")
    else:
        try:
            output = stages.run(p, artifact, 0, get_runner(t.runner))
        except RunnerError as e:
            final = Stage(final_name, -1, True, False, reason=str(e).splitlines()[0][:300])
        else:
            judgement, ok, error, limit, unit = _verdict(p, judge, output)
            final = Stage(final_name, -1, True, ok, error, limit, unit, judgement.reason)
            attributed = judgement.metrics.get("attribution") or {}
    evaluated = [_evaluate(p, artifact, judge, s, found[0], specs[0]) for s in found]
    report = PassBisection(config.descriptor, target, canary, evaluated, final, "", attributed)
    if attributed.get("added_by") == "quantization":  # the quantizer's error, in every stage alike
        report.culprit, report.after = "quantization", final
        return report
    last_good = None
    for snap, stage in zip(found, evaluated):
        if not stage.runnable:
            continue
        if stage.ok:
            last_good = (snap, stage)
            continue
        report.culprit, report.after = stage.name, stage
        if last_good is not None:
            report.before = last_good[1]
            previous = found[found.index(snap) - 1]
            report.change = graph_change(previous.program, snap.program)
        return report
    if not final.ok:
        report.culprit = (running[0] if running else "serialization") if artifact is None else "serialization"
        report.after, report.before = final, last_good[1] if last_good else None
    return report
