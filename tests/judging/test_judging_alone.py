"""Judging stands without ExecuTorch: in a process where `import executorch`
fails, the judging modules import, and judge real outputs of a float and an
INT case (quantized by hand here, as PT2E would) rightly, both ways."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import sys

sys.modules["executorch"] = None  # any `import executorch...` now raises ImportError
import torch

from harness.build.data import make_tensors
from harness.build.model import build_model
from harness.config import parse_descriptor
from harness.judging import compare, judge, oracles, spec_math  # noqa: F401
from harness.qparams import ConvQParams, QuantizedModel, TensorQParams, WeightQParams
from harness.results.case_result import Outcome

try:
    import executorch  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("executorch was importable")

# fp32: torch's own conv is within the DOT_PRODUCT bound; one element 1% off is not.
c = parse_descriptor("conv2d_ic4_oc8_i8x8_k3_p1_qfp32")
t = make_tensors(c, 0)
m = build_model(c, t)
with torch.no_grad():
    out = m(*t.inputs)
j = judge.Judge(c, t, m, None, ("FP32",))
assert j.judge(out).outcome is Outcome.PASS, j.judge(out).reason
bad = out.clone()
bad[0, 3, 4, 4] *= 1.01
assert j.judge(bad).outcome is Outcome.MISMATCH

# a8w8 per channel, quantized by hand as the Arm quantizer would: symmetric
# int8 weights per output channel, an int32 bias at s_in * s_w, affine int8
# activations from the observed range.
c = parse_descriptor("conv2d_ic4_oc8_i8x8_k3_p1_qa8w8")
t = make_tensors(c, 0)
m = build_model(c, t)
with torch.no_grad():
    y = m(*t.inputs)


def affine(v):
    lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
    scale = (hi - lo) / 255
    return TensorQParams(scale, int(round(-128 - lo / scale)), -128, 127, "int8")


qi, qo = affine(t.inputs[0]), affine(y)
w_scales = t.weight.abs().amax(dim=(1, 2, 3)) / 127
w_int = torch.round(t.weight / w_scales.reshape(-1, 1, 1, 1)).to(torch.int8)
b_scales = qi.scale * w_scales.double()
b_int = torch.round(t.bias.double() / b_scales).to(torch.int32)
qw = WeightQParams(tuple(w_scales.tolist()), (0,) * 8, 0, -127, 127, "int8", w_int)
conv = ConvQParams(qi, qw, b_int, tuple(b_scales.tolist()), qo)


class FakeQuant(torch.nn.Module):
    """quantize -> dequantize around the fp32 conv, as PT2E's converted model computes it."""

    def forward(self, x):
        def qdq(v, q):
            return (torch.clamp(torch.round(v / q.scale) + q.zero_point, q.qmin, q.qmax) - q.zero_point) * q.scale
        w = w_int.float() * w_scales.reshape(-1, 1, 1, 1)
        b = (b_int.double() * b_scales).float()
        return qdq(torch.nn.functional.conv2d(qdq(x, qi), w, b, padding=1), qo)


quantized = QuantizedModel(FakeQuant(), [conv], qo)
j = judge.Judge(c, t, m, quantized)
codes = torch.from_numpy(j.int_ref.codes)
lowered = ((codes - qo.zero_point) * qo.scale).float()  # what a conforming lowering outputs
verdict = j.judge(lowered)
assert verdict.outcome is Outcome.PASS and verdict.rule == "int-exact", verdict.reason
assert verdict.metrics["max_lsb"] == 0 and verdict.metrics["sqnr_db"] > 30
off = codes.clone()
off[0, 2, 3, 3] += 1
verdict = j.judge(((off - qo.zero_point) * qo.scale).float())
assert verdict.outcome is Outcome.MISMATCH and verdict.metrics["where"]["interior"] == 1

loaded = sorted(name for name, module in sys.modules.items()
                if module is not None and name.startswith(("executorch", "harness.lowering", "harness.targets")))
assert not loaded, loaded
print("judged without executorch")
'''


@pytest.mark.processes
def test_judging_works_where_executorch_cannot_be_imported():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert proc.stdout.strip().endswith("judged without executorch")
