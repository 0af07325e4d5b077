"""A speed-up that cannot apply stays off, the run says why once, and the cases are those of the plain flow."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.speedups import base, state


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process with no speed-up state yet, a private proof cache, and three fake speed-ups."""
    installed: list[str] = []

    def fake(name: str, why: str = "", boom: Exception | None = None) -> base.Speedup:
        def probe() -> str:
            if boom is not None:
                raise boom
            return why

        def install():
            installed.append(name)
            return lambda: installed.remove(name)

        return base.Speedup(name, "nothing", probe, install)

    monkeypatch.setattr(state, "_STATE", None)
    monkeypatch.setattr(state, "_UNDO", None)
    monkeypatch.setattr(state, "CACHE", tmp_path)
    monkeypatch.delenv(state.ENV_OFF, raising=False)
    monkeypatch.setattr(
        state,
        "SPEEDUPS",
        (
            fake("good"),
            fake("absent", boom=ImportError("cannot import name 'helper' from 'executorch.exir.graph_module'")),
            fake("missing", boom=base.Missing("torch._ops has no Callable")),
            fake("refused", why="the table differs from torch's"),
        ),
    )
    return installed


def test_a_speedup_whose_probe_fails_stays_off_and_the_line_says_why(fresh):
    st = state.install()
    assert st.on == ("good",) and fresh == ["good"]
    assert st.off == {
        "absent": "probe failed: ImportError: cannot import name 'helper' from 'executorch.exir.graph_module'",
        "missing": "torch._ops has no Callable",
        "refused": "the table differs from torch's",
    }
    line = st.line()
    assert line.startswith("harness: speed-ups 1 of 4 on; off: absent (probe failed: ImportError")
    assert line.endswith("results are those of the plain flow") and st.summary() == "off: absent, missing, refused"
    assert state.install() is st  # once a process


def test_a_speedup_that_changes_the_flatbuffer_is_proven_off(fresh, monkeypatch):
    monkeypatch.setattr(
        state,
        "SPEEDUPS",
        state.SPEEDUPS
        + (
            state.SPEEDUPS[0].__class__(
                "changer", "nothing", lambda: "", lambda: (fresh.append("changer"), lambda: fresh.remove("changer"))[1]
            ),
        ),
    )

    def prove() -> list[str]:  # the sample's digests: the "changer" changes them
        return ["b" if "changer" in fresh else "a"]

    st = state.install(prove)
    assert st.on == ("good",) and fresh == ["good"] and st.proof == "proven"
    assert st.off["changer"] == "changes the lowered flatbuffer of the end-to-end sample"
    monkeypatch.setattr(state, "_STATE", None)
    state.uninstall()
    assert fresh == []
    again = state.install(prove)  # a second process of the same environment: the verdict is on disk
    assert again.proof == "cached" and again.on == ("good",) and "changer" in again.off


def test_without_a_plain_flow_to_compare_with_nothing_is_installed(fresh):
    def prove() -> list[str]:
        raise RuntimeError("every sample failed to lower")

    st = state.install(prove)
    assert st.on == () and fresh == []
    assert st.off["good"].startswith("no end-to-end proof: the plain flow failed its sample (RuntimeError")


def test_all_off_on_request(fresh, monkeypatch):
    monkeypatch.setenv(state.ENV_OFF, "1")
    st = state.install()
    assert st.on == () and st.summary() == "all off" and fresh == []


@pytest.mark.processes
def test_every_speedup_module_imports_without_torch():
    """A speed-up's import never fails on another torch or ExecuTorch: what it patches is imported in its probe."""
    code = (
        "import sys; import harness.speedups.catalog, harness.speedups.state; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'executorch', 'torchao')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


BROKEN = """
import sys
from harness.speedups import base, state

def probe():
    from executorch.exir.graph_module import no_such_helper  # what a newer ExecuTorch might have
    return ""

def install():
    raise AssertionError("a speed-up whose probe failed was installed")

state.SPEEDUPS = state.SPEEDUPS + (base.Speedup("broken", "nothing", probe, install),)
from harness.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
CASES = [
    "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone",
    "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa16w8_dsnormal_cxnone",
]


@pytest.mark.lowering
def test_a_broken_speedup_costs_no_case_and_the_sweep_says_why_once(tmp_path):
    env = dict(os.environ, HARNESS_START_METHOD="fork", HARNESS_CACHE=str(tmp_path / "cache"))  # workers inherit it
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            BROKEN,
            "sweep",
            "--filter",
            "^(" + "|".join(CASES) + ")$",
            "--results",
            str(tmp_path / "r.jsonl"),
            "--no-history",
            "--no-progress",
            "-j",
            "2",
            "--pack",
            "1",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stderr.count("speed-ups off: broken in the workers") == 1, done.stderr
    import json

    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(r["descriptor"] for r in results) == sorted(CASES)
    assert {(r["outcome"], r["versions"]["harness-speedups"]) for r in results} == {("pass", "off: broken")}
    alone = subprocess.run([sys.executable, "-c", BROKEN, "run", CASES[1]], capture_output=True, text=True, env=env)
    assert alone.returncode == 0 and "outcome: pass" in alone.stdout
    assert "off: broken (probe failed: ImportError: cannot import name 'no_such_helper'" in alone.stderr
