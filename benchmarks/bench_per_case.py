"""Per-case cost: the harness's path against ExecuTorch's own TOSA pipelines.

Times, in one process and on the same ten configs, (a) `harness.execute.run_case`
(build, quantize, export, lower, run on the reference model, compare) and (b)
ExecuTorch's `TosaPipelineINT` / `TosaPipelineFP` (the Arm backend's own test
pipelines, which also quantize, lower, run the reference model and compare).
Each path is warmed up once first; the medians of `--repeat` rounds are
reported with their ratio. This script may import ExecuTorch's test code; the
harness itself never does.

    python benchmarks/bench_per_case.py [--repeat 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CONFIGS = (
    "conv2d_ic8_oc16_i32x32_k3_s2_p1",  # the design note's reference config
    "conv2d_ic8_oc16_i16x16_k3_p1",
    "conv2d_n2_ic3_oc8_i17x15_k3x5_s3x2_p1x2",
    "conv2d_ic4_oc8_i16x16_k3_d2_p2",
    "conv2d_ic8_oc8_g8_i12x12_k3_p1",
    "conv2d_ic4_oc8_g4_i12x12_k3_s2_p1",
    "conv2d_ic8_oc12_g4_i10x10_k3_p1",
    "conv2d_ic8_oc8_i10x10_k1_b0",
    "conv2d_ic8_oc8_i16x16_k3_s2_p0",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1",
)
EXIR_OP = "executorch_exir_dialects_edge__ops_aten_convolution_default"


def _aten_op(config) -> str:
    if config.transposed:
        return "torch.ops.aten.conv_transpose2d.input"
    return f"torch.ops.aten.conv{config.rank}d.default"


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    from harness.config import parse_descriptor
    from harness.data import make_tensors
    from harness.execute import run_case, setup_process
    from harness.model import build_model

    setup_process()
    from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineFP, TosaPipelineINT

    def harness_case(descriptor: str, seed: int):
        def go():
            r = run_case(parse_descriptor(descriptor), seed)
            assert r.outcome.value == "pass", (descriptor, r.outcome, r.reason)

        return go

    def pipeline_case(descriptor: str, seed: int, scheme: str):
        c = parse_descriptor(descriptor)
        t = make_tensors(c, seed)
        model = build_model(c, t)

        def go():
            cls = TosaPipelineINT if scheme == "a8w8" else TosaPipelineFP
            cls(model, t.inputs, _aten_op(c), EXIR_OP).run()

        return go

    figures: dict[str, dict[str, list[float]]] = {}
    for scheme in ("a8w8", "fp32"):
        ours = f"harness {scheme}"
        theirs = f"TosaPipeline{'INT' if scheme == 'a8w8' else 'FP'}"
        figures[ours], figures[theirs] = {}, {}
        base0 = f"{CONFIGS[0]}_q{scheme}"
        harness_case(base0, 99)()  # warm-up: first-call caches on both paths
        pipeline_case(base0, 99, scheme)()
        for base in CONFIGS:
            d = f"{base}_q{scheme}"
            figures[ours][d] = [_time(harness_case(d, s)) for s in range(args.repeat)]
            figures[theirs][d] = [_time(pipeline_case(d, s, scheme)) for s in range(args.repeat)]
            print(f"{d:60s} harness {statistics.median(figures[ours][d]):.3f}s  "
                  f"{theirs} {statistics.median(figures[theirs][d]):.3f}s", flush=True)

    print()
    summary = {}
    for scheme, theirs in (("a8w8", "TosaPipelineINT"), ("fp32", "TosaPipelineFP")):
        ours_med = statistics.median(t for ts in figures[f"harness {scheme}"].values() for t in ts)
        theirs_med = statistics.median(t for ts in figures[theirs].values() for t in ts)
        summary[scheme] = {"harness_median_s": round(ours_med, 3), f"{theirs}_median_s": round(theirs_med, 3),
                           "speedup": round(theirs_med / ours_med, 2)}
        print(f"{scheme}: harness median {ours_med:.3f} s/case, {theirs} {theirs_med:.3f} s/case, "
              f"harness is {theirs_med / ours_med:.2f}x faster")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "figures": figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
