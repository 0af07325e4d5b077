"""From a model to its convs: which conv layers of a real network the backend lowers wrongly.

1. The whole model is quantized (INT schemes) and lowered as a user would, run
   on the target's runner, and compared with the fake-quant model (INT) or
   eager fp32 (float): SQNR, the largest difference in output steps, top-1
   agreement. A deep network has no derived per-element tolerance (errors of
   one LSB compound layer by layer), so these numbers inform; the verdicts
   are the layers'.
2. Every conv layer's real config and its real weights are read off the
   model, and the activation that reached it in each calibration run is
   captured (forward pre-hooks on the float model) into one file per layer:
   the data set `captured` (`harness.build.captured`).
3. Each layer runs as a harness case, judged by its own oracle and tolerance;
   the report lists every layer with its outcome, the departing ones with the
   repro line that names their file, ready for `shrink` or `bisect passes`.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from harness.bisect.factory import check_forward, instantiate, load_factory, parse_shape  # noqa: F401
from harness.build import captured
from harness.config import CAPTURED, ConfigError, ConvConfig
from harness.judging.compare import sqnr_db
from harness.policy.schemes import SCHEMES
from harness.policy.targets import DEFAULT_TARGET, check_case, get_target

_CONVS = (
    torch.nn.Conv1d,
    torch.nn.Conv2d,
    torch.nn.Conv3d,
    torch.nn.ConvTranspose1d,
    torch.nn.ConvTranspose2d,
    torch.nn.ConvTranspose3d,
)


def conv_config(module: torch.nn.Module, activation: torch.Tensor, scheme: str) -> ConvConfig:
    """The case of a conv layer as it runs in the model (batch 1, conv alone, captured data)."""
    transposed = isinstance(module, (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d))
    padding = module.padding if isinstance(module.padding, str) else tuple(module.padding)
    return ConvConfig(
        rank=len(module.kernel_size),
        in_channels=module.in_channels,
        out_channels=module.out_channels,
        input_size=tuple(activation.shape[2:]),
        kernel=tuple(module.kernel_size),
        stride=tuple(module.stride),
        padding=padding,
        dilation=tuple(module.dilation),
        output_padding=tuple(module.output_padding) if transposed else tuple(0 for _ in module.kernel_size),
        transposed=transposed,
        batch=1,
        groups=module.groups,
        bias=module.bias is not None,
        padding_mode=module.padding_mode,
        scheme=scheme,
        dataset=CAPTURED,
        context="none",
    )


def capture(
    model: torch.nn.Module, samples: list[torch.Tensor]
) -> list[tuple[str, torch.nn.Module, list[torch.Tensor]]]:
    """(name, module, one input activation per sample, each of batch 1) of every conv layer, in call order."""
    seen: dict[str, tuple[torch.nn.Module, list]] = {}
    hooks = []
    for name, m in model.named_modules():
        if isinstance(m, _CONVS):

            def hook(mod, args, name=name):
                seen.setdefault(name, (mod, []))[1].append(args[0].detach().clone())

            hooks.append(m.register_forward_pre_hook(hook))
    try:
        with torch.no_grad():
            for x in samples:
                model(x)
    finally:
        for h in hooks:
            h.remove()
    return [(name, m, acts) for name, (m, acts) in seen.items()]


def recalibrate_batch_norm(model: torch.nn.Module, samples: list[torch.Tensor]) -> int:
    """Recompute every batch norm's running statistics as the exact average over `samples` (the rest of the
    model in eval mode); returns how many batch norms there were."""
    norms = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    model.eval()
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the samples, not an exponential one
        m.train()
    with torch.no_grad():
        for x in samples:
            model(x)
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    model.eval()
    return len(norms)


def whole_model(model: torch.nn.Module, samples: list[torch.Tensor], scheme: str, target: str) -> dict:
    """Quantize (INT), lower and run the whole model; its output against the fake-quant model and fp32."""
    from harness.lowering.lower import lower
    from harness.lowering.quantize import quantize
    from harness.run.stages import root_cause
    from harness.runners.registry import get_runner

    t = get_target(target)
    inputs = (samples[0],)
    with torch.no_grad():
        fp32 = model(*inputs)
    facts: dict = {}
    start = time.perf_counter()
    try:
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(scheme)
        if SCHEMES[scheme].quantizer is not None:
            q = quantize(model, inputs, scheme, t, tuple((s,) for s in samples))
            program, oracle, step = q.module, q.module(*inputs), q.output.scale if q.output else None
        elif dtype is not None:
            program, inputs = _cast(model, dtype), (samples[0].to(dtype),)
            oracle, step = fp32, None
        else:
            program, oracle, step = model, fp32, None
        artifact = lower(program, inputs, scheme, t)
        facts["tosa_ops"] = len(artifact.tosa_ops)
        facts["cpu_ops"] = list(artifact.cpu_ops)
        out = get_runner(t.runner).run(artifact, inputs)[0].float()
    except Exception as e:  # noqa: BLE001 - the model's failure is a fact of the report, the layers still run
        cause = root_cause(e)
        return {
            "ok": False,
            "error": f"{type(cause).__name__}: {str(cause).splitlines()[0][:300]}",
            "seconds": round(time.perf_counter() - start, 2),
            **facts,
        }
    oracle = oracle.float()
    diff = float((out - oracle).abs().max())
    return {
        "ok": True,
        "seconds": round(time.perf_counter() - start, 2),
        **facts,
        "against": "fake-quant model" if step else "eager fp32",
        "max_abs_diff": round(diff, 6),
        "max_diff_steps": round(diff / step, 2) if step else None,
        "sqnr_vs_oracle_db": sqnr_db(oracle, out),
        "sqnr_vs_fp32_db": sqnr_db(fp32, out),
        "top1_agrees": bool((out.argmax(-1) == oracle.argmax(-1)).all()),
    }


def _cast(model: torch.nn.Module, dtype: torch.dtype) -> torch.nn.Module:
    return copy.deepcopy(model).to(dtype)


@dataclass
class Layer:
    """One conv of the network, run as a case on the activations it saw in the network."""

    name: str  # the module's qualified name in the network
    descriptor: str  # empty when the conv is not a case the harness can build
    data_file: str  # the captured weights and activations the case replays
    outcome: str  # as classified (a registered issue reports as expected)
    actual_outcome: str  # what the run itself saw
    green: bool
    reason: str = ""
    issue: str = ""
    repro: str = ""


@dataclass
class NetworkReport:
    model: str
    scheme: str
    target: str
    input_shape: list[int]
    samples: int
    recalibrated: int = 0  # batch norms whose running statistics were recomputed on the samples
    whole: dict = field(default_factory=dict)
    layers: list[Layer] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def departing(self) -> list[Layer]:
        return [layer for layer in self.layers if not layer.green]


def run_network(
    spec: str,
    *,
    scheme: str = "a8w8",
    target: str = DEFAULT_TARGET,
    input_shape: tuple[int, ...] | None = None,
    seed: int = 0,
    out_dir: str | Path = "reports/network",
    samples: int = 4,
    say: Callable[[str], None] | None = None,
    results=None,
    recalibrate: bool = False,
    factory: Callable[[], torch.nn.Module] | None = None,
) -> NetworkReport:
    """The whole flow; `results` (a ResultWriter) gets every layer's CaseResult as it is made; `factory`: the
    spec's factory when the caller has loaded it already (a FILE.py spec runs its file once)."""
    from harness.results.case_result import new_run_id
    from harness.run.execute import run_case

    if scheme not in SCHEMES:
        raise ConfigError(f"invalid --scheme={scheme}: must be one of {', '.join(SCHEMES)}")
    if samples < 1:
        raise ConfigError(f"invalid --samples={samples}: must be an integer >= 1")
    factory = factory or load_factory(spec)
    start = time.perf_counter()
    torch.manual_seed(seed)  # the network's random initialization: the same model on every call
    model = instantiate(spec, factory)
    shape = input_shape or getattr(model, "example_input_shape", None)
    if shape is None:
        raise ConfigError(f"model {spec} declares no example_input_shape: give --input, e.g. 1x3x224x224")
    if shape[0] != 1:
        raise ConfigError(
            f"invalid --input={'x'.join(map(str, shape))}: batch must be 1 (calibration runs one sample at a time)"
        )
    g = torch.Generator().manual_seed(seed)
    xs = [torch.randn(shape, generator=g) for _ in range(samples)]
    check_forward(spec, model, xs[0])
    report = NetworkReport(spec, scheme, target, list(shape), samples)
    if recalibrate or getattr(model, "recalibrate_batch_norm", False):
        report.recalibrated = recalibrate_batch_norm(model, xs)
    report.whole = whole_model(model, xs, scheme, target)
    if say:
        say(whole_line(report.whole))
    folder = Path(out_dir) / "captured"
    run_id = new_run_id()
    for index, (name, module, activations) in enumerate(capture(model, xs)):
        weight, bias = module.weight, module.bias
        try:
            config = conv_config(module, activations[0], scheme)
            check_case(get_target(target), config)
        except ConfigError as e:
            report.layers.append(Layer(name, "", "", "not_a_case", "not_a_case", False, str(e)))
            continue
        path = captured.save(
            folder / f"{index:03d}_{name.replace('.', '_')}.pt", config, weight, bias, activations, name
        )
        r = run_case(config, seed, target, run_id=run_id, data_file=str(path))
        if results is not None:
            results.write(r)
        layer = Layer(
            name, config.descriptor, str(path), r.outcome.value, r.actual_outcome, r.green, r.reason, r.issue, r.repro
        )
        report.layers.append(layer)
        if say:
            say(layer_line(layer))
    report.seconds = round(time.perf_counter() - start, 1)
    return report


def whole_line(w: dict) -> str:
    if not w.get("ok"):
        return f"whole model: FAILED after {w.get('seconds')} s: {w.get('error')}"
    steps = f" ({w['max_diff_steps']} output steps)" if w.get("max_diff_steps") is not None else ""

    left = ", ".join(f"{n} x{k}" if k > 1 else n for n, k in Counter(w["cpu_ops"]).items()) or "none"
    return (
        f"whole model: lowered ({w['tosa_ops']} TOSA ops; left on the CPU: {left}) and run in "
        f"{w['seconds']} s; against the {w['against']}: max |diff| {w['max_abs_diff']}{steps}, SQNR "
        f"{_db(w['sqnr_vs_oracle_db'])}, top-1 {'agrees' if w['top1_agrees'] else 'DIFFERS'}; SQNR against fp32 "
        f"{_db(w['sqnr_vs_fp32_db'])}"
    )


def _db(sqnr: float | None) -> str:
    return "inf (identical)" if sqnr is None else f"{sqnr} dB"


def layer_line(layer: Layer) -> str:
    mark = "ok " if layer.green else "BAD"
    what = layer.outcome + (f" ({layer.issue})" if layer.issue else "")
    return f"{mark} {layer.name:32s} {what:24s} {layer.descriptor}"
