"""The speed-ups change nothing: byte-identical TOSA with and without them."""

from __future__ import annotations

import os
import subprocess
import sys

CASES = [
    "conv2d_ic8_oc16_i16x16_k3_s2_p1_qa8w8",
    "conv2d_ic4_oc8_g4_i12x12_k3_p1_qa16w8",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w8-pt",
    "conv3d_ic2_oc4_i5x6x7_k2x3x1_s2x1x1_qfp32",
    "conv1d_ic4_oc4_i12_k3_p2_pmreflect_qa8w8",
]

SCRIPT = """
import hashlib, sys
from harness.config import parse_descriptor
from harness.data import make_tensors
from harness.execute import setup_process
from harness.lowering import lower, quantize
from harness.model import build_model
from harness import speedups
setup_process()
print("speedups", speedups._INSTALLED)
for d in sys.argv[1:]:
    c = parse_descriptor(d)
    t = make_tensors(c, 0)
    m = build_model(c, t)
    if c.is_quantized:
        m = quantize(m, t.inputs, c.scheme).module
    a = lower(m, t.inputs, c.scheme)
    print(d, [hashlib.sha256(b).hexdigest()[:16] for b in a.tosa])
"""


def _lowered(no_speedups: bool) -> list[str]:
    env = dict(os.environ, HARNESS_NO_SPEEDUPS="1" if no_speedups else "0")
    out = subprocess.run([sys.executable, "-c", SCRIPT, *CASES], env=env, capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_lowering_is_byte_identical_without_speedups():
    fast, slow = _lowered(False), _lowered(True)
    assert fast[0] == "speedups True" and slow[0] == "speedups False"
    assert fast[1:] == slow[1:]
    assert len(fast) == len(CASES) + 1
