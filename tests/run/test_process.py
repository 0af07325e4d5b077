"""Process set-up: the speed-ups change nothing; the heap and the libraries' caches are released.

Byte-identical flatbuffers with and without the speed-ups, for cases alone (quantized, transposed, 3D,
padding modes, control flow, dynamic shapes) and for a pack. (What happens when one cannot apply:
tests/speedups/test_state.py.)
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

CASES = [
    "conv2d_ic8_oc16_i16x16_k3_s2_p1_qa8w8",
    "conv2d_ic4_oc8_g4_i12x12_k3_p1_qa16w8",
    "tconv2d_ic8_oc4_i8x8_k3_s2_p1_op1_qa8w8-pt",
    "conv3d_ic2_oc4_i5x6x7_k2x3x1_s2x1x1_qfp32",
    "conv1d_ic4_oc4_i12_k3_p2_pmreflect_qa8w8",
    "conv2d_n1_ic8_oc8_g1_i12x12_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxcond",
    "conv2d_n2_ic4_oc8_g1_i16x17_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone_dyspatial",
]
PACKED = [
    "conv2d_ic8_oc16_i16x16_k3_s2_p1_qa8w8",
    "conv2d_ic4_oc8_g4_i12x12_k3_p1_qa8w8",
    "conv1d_ic4_oc4_i12_k3_p2_pmreflect_qa8w8",
]

SCRIPT = """
import hashlib, sys
from harness.config import parse_descriptor
from harness.policy.targets import get_target
from harness.run import process, stages
process.setup_process()
from harness.speedups import skip_retrace, state
print("speedups", state.current().summary())
skip_retrace.SKIPPED[0] = 0  # not the end-to-end proof's lowerings
for d in sys.argv[1:]:
    p = stages.prepare(parse_descriptor(d), 0, get_target("tosa"))
    a = stages.lower(p)
    print(d, [hashlib.sha256(b).hexdigest()[:16] for b in a.tosa])
from harness.lowering.lower import lower
from harness.lowering.pack import pack_programs
ps = [stages.prepare(parse_descriptor(d), 0, get_target("tosa")) for d in PACKED]
packed = pack_programs([p.program for p in ps], [p.example_inputs for p in ps])
a = lower(packed.module, packed.inputs, "a8w8", get_target("tosa"))
print("packed", [hashlib.sha256(b).hexdigest()[:16] for b in a.tosa])
from harness.speedups import skip_retrace
print("skipped", skip_retrace.SKIPPED[0])
"""


def _lowered(no_speedups: bool) -> list[str]:
    env = dict(os.environ, HARNESS_NO_SPEEDUPS="1" if no_speedups else "0")
    out = subprocess.run(
        [sys.executable, "-c", f"PACKED = {PACKED!r}" + SCRIPT, *CASES],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


@pytest.mark.lowering
def test_lowering_is_byte_identical_without_speedups():
    fast, slow = _lowered(False), _lowered(True)
    assert fast[0] == "speedups all on" and slow[0] == "speedups all off"
    assert fast[1:-1] == slow[1:-1]
    assert len(fast) == len(CASES) + 3 and fast[-2].startswith("packed [")
    assert slow[-1] == "skipped 0" and fast[-1] == f"skipped {len(CASES) + 1}"  # one retrace a lowering


def test_release_forgets_the_sources_of_compiled_graph_modules():
    """Without it every graph module of every case stays in linecache (a worker slows as it ages)."""
    import linecache

    import torch
    from torch.fx import graph_module

    from harness.run.process import release_graph_caches

    gm = torch.fx.symbolic_trace(torch.nn.ReLU())
    key = gm.forward.__code__.co_filename
    assert key in graph_module._loader.eval_cache
    linecache.getlines(key)  # as a traceback would
    assert key in linecache.cache
    release_graph_caches()
    assert not graph_module._loader.eval_cache and key not in linecache.cache
    assert torch.equal(gm(torch.tensor([-1.0, 2.0])), torch.tensor([0.0, 2.0]))  # the module still runs


LEAK_SCRIPT = """
import gc, sys
from harness.config import parse_descriptor
from harness.run.execute import run_case
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
alive = []
for d in sys.argv[1:]:
    assert run_case(parse_descriptor(d)).outcome.value == "pass", d
    gc.collect()
    alive.append(tuple(sum(isinstance(o, kind) for o in gc.get_objects()) for kind in (ShapeEnv, FakeTensorMode)))
print(alive)
"""


@pytest.mark.lowering
def test_a_dynamic_case_leaves_no_shape_env_behind():
    """Its symbolic sizes tie its ShapeEnv and fake mode in a cycle the collector cannot see; released after it."""
    cases = [
        f"conv2d_n2_ic4_oc8_g1_i16x17_k3x3_s2x2_p{p}_d1x1_b1_pmzeros_q{q}_dsnormal_cxnone_dy{dy}"
        for p, q, dy in (
            ("1x1", "fp32", "spatial"),
            ("0x0", "fp16", "all"),
            ("0x0", "a8w8", "spatial"),
            ("0x0", "fp32", "spatial-wide"),
        )
    ]
    out = subprocess.run([sys.executable, "-c", LEAK_SCRIPT, *cases], capture_output=True, text=True, check=True)
    alive = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert alive[-1] <= alive[0], alive  # without the release (HARNESS_NO_SPEEDUPS=1): (1, 1), (2, 2), (4, 4), (5, 5)


def test_the_heap_is_frozen_again_before_the_2nd_9th_and_65th_task_and_nested_ones_count_once(monkeypatch):
    from harness.run import process

    events = []
    monkeypatch.setattr(process, "_SETUP_DONE", True)
    monkeypatch.setattr(process, "_TASKS_DONE", 0)
    monkeypatch.setattr(process.gc, "collect", lambda *a: events.append("collect"))
    monkeypatch.setattr(process.gc, "freeze", lambda: events.append(f"freeze before task {process._TASKS_DONE + 1}"))

    @process.one_task
    def case():
        return "result"

    @process.one_task
    def pack():
        frozen = len(events)
        case()  # a case of the pack re-run alone while the pack is alive: never a task boundary
        assert len(events) == frozen
        return "results"

    assert [case() if k % 2 else pack() for k in range(70)][:2] == ["results", "result"]
    assert [e for e in events if e != "collect"] == [f"freeze before task {n}" for n in (2, 9, 65)]
    assert events.count("collect") == 3 and process._DEPTH == 0 and process._TASKS_DONE == 70
    monkeypatch.setattr(process, "_SETUP_DONE", False)  # a process that was never set up: the collector as it is
    monkeypatch.setattr(process, "_TASKS_DONE", 1)
    case()
    assert len(events) == 6
