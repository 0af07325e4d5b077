"""Per-case cost: the harness's path against ExecuTorch's own TOSA pipelines.

Times, on the same ten configs, (a) `harness.run.execute.run_case` (build,
quantize, export, lower, run on the reference model, compare), each case
alone and the ten as one pack (`harness.run.packed.run_pack`, its time shared
out per case), and (b)
ExecuTorch's `TosaPipelineINT` / `TosaPipelineFP` (the Arm backend's own test
pipelines, which also quantize, lower, run the reference model and compare).
Each side runs in its own fresh process, so (b) gets none of the harness's
set-up or speed-ups; each is warmed up once. The two sides alternate,
`--rounds` times, a fresh process each: this machine's speed drifts by
a quarter within minutes (measured: TosaPipelineINT 1.87 then 2.38 s a
case in back-to-back runs), so a ratio is taken within a round, where both
sides met the same machine, and the median over rounds is reported. This script may import ExecuTorch's test code; the
harness itself never does.

    python benchmarks/bench_per_case.py [--rounds 7] [--json benchmarks/results/per_case.json]
    python benchmarks/bench_per_case.py --table benchmarks/results/per_case.json   # its table, as docs/performance.md
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


def _harness_side() -> dict:
    from harness.config import parse_descriptor
    from harness.run.execute import run_case
    from harness.run.packed import run_pack
    from harness.run.process import setup_process
    from harness.run.settings import RunSettings

    setup_process()
    out: dict = {}
    for scheme in ("a8w8", "fp32"):
        # Warm-up, as a sweep's worker is after its first pack: one case alone and one pack.
        run_case(parse_descriptor(f"{CONFIGS[0]}_q{scheme}"), 99)
        run_pack([parse_descriptor(f"{base}_q{scheme}") for base in CONFIGS], RunSettings(99))
        for base in CONFIGS:
            d = f"{base}_q{scheme}"

            def go(seed, d=d):
                r = run_case(parse_descriptor(d), seed)
                assert r.outcome.value == "pass", (d, r.outcome, r.reason)

            out[d] = [_time(lambda: go(0))]
        configs = [parse_descriptor(f"{base}_q{scheme}") for base in CONFIGS]

        def go_packed(seed, configs=configs):
            results = run_pack(configs, RunSettings(seed))
            assert all(r.outcome.value == "pass" and r.packed == len(configs) for r in results), results

        out[f"packed_q{scheme}"] = [_time(lambda: go_packed(0)) / len(configs)]
    return out


def _pipeline_side() -> dict:
    # A plain process: none of the harness's set-up or speed-ups.
    from executorch.backends.arm.test.tester.test_pipeline import TosaPipelineFP, TosaPipelineINT

    from harness.build.data import make_tensors
    from harness.build.model import build_model
    from harness.config import parse_descriptor

    def go(d, seed):
        c = parse_descriptor(d)
        t = make_tensors(c, seed)
        cls = TosaPipelineINT if c.scheme == "a8w8" else TosaPipelineFP
        cls(build_model(c, t), t.inputs, _aten_op(c), EXIR_OP).run()

    out: dict = {}
    for scheme in ("a8w8", "fp32"):
        go(f"{CONFIGS[0]}_q{scheme}", 99)  # warm-up
        for base in CONFIGS:
            d = f"{base}_q{scheme}"
            out[d] = [_time(lambda d=d: go(d, 0))]
    return out


def _spread(s: dict) -> str:
    low, high = s["ratio_packed_spread"]
    return f"{low:.2f}x - {high:.2f}x"


def table(path: str) -> str:
    s = json.loads(Path(path).read_text())["summary"]
    a, f = s["a8w8"], s["fp32"]
    return "\n".join(
        [
            "| measure | a8w8 | fp32 |",
            "|---|--:|--:|",
            f"| harness, a case alone | {a['harness_median_s']:.3f} s | {f['harness_median_s']:.3f} s |",
            f"| harness, a case's share of a pack of {a['pack_size']} | {a['harness_packed_s']:.3f} s | "
            f"{f['harness_packed_s']:.3f} s |",
            f"| `TosaPipelineINT` / `TosaPipelineFP` | {a['TosaPipelineINT_median_s']:.3f} s | "
            f"{f['TosaPipelineFP_median_s']:.3f} s |",
            f"| ratio, median of {a['rounds']} rounds: alone / packed | {a['ratio']:.2f}x / {a['ratio_packed']:.2f}x | "
            f"{f['ratio']:.2f}x / {f['ratio_packed']:.2f}x |",
            f"| packed ratio of each round | {', '.join(f'{r:.2f}' for r in a['ratio_packed_per_round'])} | "
            f"{', '.join(f'{r:.2f}' for r in f['ratio_packed_per_round'])} |",
            *(
                [f"| spread of the packed ratio (lowest, highest round) | {_spread(a)} | {_spread(f)} |"]
                if "ratio_packed_spread" in a
                else []
            ),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rounds",
        type=int,
        default=7,
        help="alternations of the two sides: each round times every case once on each side, in a fresh process each",
    )
    parser.add_argument("--table", metavar="JSON", help="print the markdown table of a JSON written earlier, and stop")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--side", choices=("harness", "pipeline"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.table:
        print(table(args.table))
        return 0
    if args.side:  # child process: time one side, print JSON
        fn = _harness_side if args.side == "harness" else _pipeline_side
        print("BENCH " + json.dumps(fn()))
        return 0

    import subprocess

    def side(name: str) -> dict:
        proc = subprocess.run([sys.executable, __file__, "--side", name], capture_output=True, text=True, check=True)
        line = next(x for x in proc.stdout.splitlines() if x.startswith("BENCH "))
        return json.loads(line[6:])

    ours: dict = {}
    theirs: dict = {}
    rounds = []  # per round: (ours, theirs), each {key: [seconds]}
    for _ in range(args.rounds):
        rounds.append((side("harness"), side("pipeline")))
        for mine, got in zip((ours, theirs), rounds[-1]):
            for k, v in got.items():
                mine.setdefault(k, []).extend(v)
    summary = {}
    for scheme, name in (("a8w8", "TosaPipelineINT"), ("fp32", "TosaPipelineFP")):
        keys = [k for k in ours if k.endswith(f"_q{scheme}") and not k.startswith("packed_")]
        for k in keys:
            print(f"{k:55s} harness {statistics.median(ours[k]):.3f}s  {name} {statistics.median(theirs[k]):.3f}s")

        def medians(o: dict, t: dict, keys=keys, scheme=scheme) -> tuple[float, float, float]:
            return (
                statistics.median(x for k in keys for x in o[k]),
                statistics.median(o[f"packed_q{scheme}"]),
                statistics.median(x for k in keys for x in t[k]),
            )

        o, packed, p = medians(ours, theirs)
        per_round = [medians(a, b) for a, b in rounds]
        summary[scheme] = {
            "harness_median_s": round(o, 3),
            "harness_packed_s": round(packed, 3),
            f"{name}_median_s": round(p, 3),
            "ratio": round(statistics.median(r[2] / r[0] for r in per_round), 2),
            "ratio_packed": round(statistics.median(r[2] / r[1] for r in per_round), 2),
            "ratio_per_round": [round(r[2] / r[0], 2) for r in per_round],
            "ratio_packed_per_round": [round(r[2] / r[1], 2) for r in per_round],
            "ratio_spread": [
                round(min(r[2] / r[0] for r in per_round), 2),
                round(max(r[2] / r[0] for r in per_round), 2),
            ],
            "ratio_packed_spread": [
                round(min(r[2] / r[1] for r in per_round), 2),
                round(max(r[2] / r[1] for r in per_round), 2),
            ],
            "pack_size": len(CONFIGS),
            "rounds": args.rounds,
        }
    print()
    for scheme, s in summary.items():
        name = "TosaPipelineINT" if scheme == "a8w8" else "TosaPipelineFP"
        print(
            f"{scheme}: harness {s['harness_median_s']:.3f} s/case alone, {s['harness_packed_s']:.3f} s/case packed; "
            f"{name} {s[f'{name}_median_s']:.3f} s/case (ratio, median of rounds: {s['ratio']:.2f} alone, "
            f"{s['ratio_packed']:.2f} packed; rounds {s['ratio_packed_per_round']})"
        )
    if args.json:
        every = [{"harness": a, "pipelines": b} for a, b in rounds]  # every round's every timing, in order
        Path(args.json).write_text(json.dumps({"summary": summary, "rounds": every}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
