"""The Ethos-U targets: their rules, tiers and Vela facts; the FVP runner's command line and output
reading; and, lowering, the Ethos-U flow end to end (the FVP only where it is installed)."""

from __future__ import annotations

import stat
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.cases.tiers import cases_of
from harness.config import ConfigError, parse_descriptor
from harness.expectations.rejections import expected_rejection
from harness.policy.targets import TARGETS, check_case, get_target
from harness.runners import fvp
from harness.runners.base import RunnerError
from harness.targets.vela_report import parse_csv, parse_printed, summarize

VELA_LOG = """Info: Changing const_mem_area from Sram to OnChipFlash.

Network summary for out
Accelerator configuration               Ethos_U55_128
System configuration             Ethos_U55_High_End_Embedded
Total SRAM used                                 17.45 KiB
Total Off-chip Flash used                        1.45 KiB

CPU operators = 1 (16.7%)
NPU operators = 5 (83.3%)

Neural network macs                            294912 MACs/batch
"""
VELA_CSV = (
    "experiment,network,cycles_npu,cycles_total,inference_time,passes_after_fusing,nn_macs\n"
    "default,out,10592,13536,2.7072e-05,5,294912\n"
)


def test_vela_facts_are_read_from_its_summary(tmp_path):
    (block,) = parse_printed(VELA_LOG)
    assert block == {"npu_ops": 5, "cpu_ops": 1, "sram_kib": 17.45, "off_chip_flash_kib": 1.45, "macs": 294912}
    csv = tmp_path / "out_summary_x.csv"
    csv.write_text(VELA_CSV)
    assert parse_csv(csv) == {"cycles": 13536, "npu_cycles": 10592, "inference_s": 2.7072e-05, "passes": 5}
    facts = summarize(VELA_LOG, [csv], 3776)
    assert facts["cycles_per_mac"] == round(13536 / 294912, 6) and facts["command_stream_bytes"] == 3776
    two = summarize(VELA_LOG + VELA_LOG, [csv], 100)  # two graphs, one CSV: no cycle estimate to trust
    assert two["graphs"] == 2 and two["npu_ops"] == 10 and "cycles" not in two


def test_u55_rules_apply_to_the_u55_subset_only():
    past = parse_descriptor("conv2d_ic4_oc4_i16x16_k3_s4_p1_qa8w8")
    assert expected_rejection(past, "ethos-u55").name == "u55-stride"
    assert expected_rejection(past, "ethos-u65").name == "u55-stride"
    assert expected_rejection(past, "ethos-u85") is None and expected_rejection(past, "tosa") is None
    assert expected_rejection(parse_descriptor("conv2d_ic4_oc4_i16x16_k3_s4_qa8w8"), "ethos-u55") is None
    assert expected_rejection(parse_descriptor("conv2d_ic2_oc2_i4x65_k1x65_qa8w8"), "ethos-u55").name == "u55-kernel"
    assert expected_rejection(parse_descriptor("conv2d_ic2_oc2_i4x64_k1x64_qa8w8"), "ethos-u55") is None
    tconv = parse_descriptor("tconv2d_ic4_oc4_i6x6_k3_s3_qa8w8")
    assert expected_rejection(tconv, "ethos-u55").name == "u55-tconv-stride-kernel"
    assert expected_rejection(parse_descriptor("tconv2d_ic4_oc4_i1x6_k1x3_s1x2_qa8w8"), "ethos-u55") is None
    assert (
        expected_rejection(parse_descriptor("conv3d_ic2_oc2_i4x4x4_k1x3x3_qa8w8"), "ethos-u55").name
        == "u55-conv3d-kernel-z"
    )


def test_a_target_says_which_cases_are_not_its_own():
    u55 = get_target("ethos-u55-128")
    with pytest.raises(ConfigError, match="runs the schemes a8w8, a8w8-pt, a16w8, a8w4, a8w4-pt, not fp32"):
        check_case(u55, parse_descriptor("conv2d_ic4_oc4_i8x8_k3_qfp32"))
    with pytest.raises(ConfigError, match="static shapes only"):
        check_case(u55, parse_descriptor("conv2d_n2_ic4_oc4_i8x8_k3_qa8w8_dybatch"))
    with pytest.raises(ConfigError, match="no control flow"):
        check_case(u55, parse_descriptor("conv2d_ic4_oc4_i8x8_k3_p1_qa8w8_cxcond"))
    check_case(get_target("ethos-u85-256"), parse_descriptor("conv2d_ic4_oc4_i8x8_k3_p1_qa8w8_cxcond"))


@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-256"])
def test_ethos_u_tiers(target):
    smoke, nightly = cases_of("smoke", target=target), cases_of("nightly", target=target)
    t = TARGETS[target]
    for c in nightly:
        check_case(t, c)
    assert {c.scheme for c in smoke} == set(t.schemes) and {c.descriptor for c in smoke} <= {
        c.descriptor for c in nightly
    }
    limits = [c for c in smoke if c.descriptor.startswith(("conv2d_n1_ic4_oc4_g1_i16x16_k3x3_s4", "conv2d_n1_ic2_oc2"))]
    refused = [c for c in limits if expected_rejection(c, t.family)]
    assert limits and (bool(refused) == t.u55_subset)  # at and past each limit: the U55 refuses, the U85 runs


def _fake_fvp(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "fvp"
    folder.mkdir()
    binary = folder / "FVP_Corstone_SSE-320"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    elf = tmp_path / "runner.elf"
    elf.write_bytes(b"\x7fELF")
    return folder, elf


def test_fvp_availability_says_what_is_missing(tmp_path, monkeypatch):
    runner = fvp.FvpRunner()
    monkeypatch.delenv("HARNESS_FVP_DIR", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = runner.available("ethos-u85").reason
    assert "FVP_Corstone_SSE-320 not found on PATH or in $HARNESS_FVP_DIR" in reason
    folder, elf = _fake_fvp(tmp_path)
    monkeypatch.setenv("HARNESS_FVP_DIR", str(folder))
    assert "HARNESS_FVP_ELF_CORSTONE320" in runner.available("ethos-u85").reason
    monkeypatch.setenv("HARNESS_FVP_ELF_CORSTONE320", str(elf))
    assert runner.available("ethos-u85").ok


def test_fvp_command_line():
    u85 = fvp.command(fvp.BOARDS["ethos-u85"], "/opt/FVP_Corstone_SSE-320", 256, "/r.elf", "/w", 2, timeout=60)
    assert u85[0] == "/opt/FVP_Corstone_SSE-320" and u85[-4:] == ["-a", "/r.elf", "--timelimit", "60"]
    settings = [u85[i + 1] for i, a in enumerate(u85) if a == "-C"]
    assert "mps4_board.subsystem.ethosu.num_macs=256" in settings
    assert "mps4_board.subsystem.cpu0.semihosting-cwd=/w" in settings
    assert (
        "mps4_board.subsystem.cpu0.semihosting-cmd_line='executor_runner -m program.pte -o out -i i0.bin -i i1.bin'"
        in settings
    )
    u55 = fvp.command(fvp.BOARDS["ethos-u55"], "FVP_Corstone_SSE-300_Ethos-U55", 128, "/r.elf", "/w", 1)
    assert (
        "ethosu.num_macs=128" in u55 and "cpu0.semihosting-enable=1" in u55 and "mps3_board.uart0.out_file='-'" in u55
    )
    with pytest.raises(RunnerError, match="semihosting command line of"):
        fvp.command(fvp.BOARDS["ethos-u55"], "f", 128, "e", "w", 30)


def test_fvp_log_and_outputs(tmp_path):
    log = "I [executorch] Model loaded\nE [executorch] Method execute failed\nsome Hard fault here\nok\n"
    assert fvp.problems(log) == ["E [executorch] Method execute failed", "some Hard fault here"]
    np.arange(6, dtype=np.int8).tofile(tmp_path / "out-0.bin")
    (out,) = fvp.read_outputs(str(tmp_path), [(torch.int8, (1, 2, 3))])
    assert torch.equal(out, torch.arange(6, dtype=torch.int8).reshape(1, 2, 3))
    with pytest.raises(RunnerError, match="output 0 has 6 bytes, expected 24"):
        fvp.read_outputs(str(tmp_path), [(torch.float32, (1, 2, 3))])
    with pytest.raises(RunnerError, match="wrote no output 1"):
        fvp.read_outputs(str(tmp_path), [(torch.int8, (6,)), (torch.int8, (6,))])


# -- the flow end to end -------------------------------------------------------------------------
@pytest.mark.lowering
@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-256"])
def test_a_conv_lowers_for_ethos_u_and_its_tosa_graph_passes(target):
    from harness.run.execute import run_case

    r = run_case(parse_descriptor("conv2d_ic8_oc16_i32x32_k3_s2_p1_qa8w8"), 0, target)
    assert r.outcome.value == "pass" and r.rule == "int-exact" and r.metrics["max_lsb"] == 0, r.reason
    assert "CONV2D" in r.tosa_ops and r.target == target
    vela = r.metrics["vela"]
    assert vela["cpu_ops"] == 0 and vela["npu_ops"] >= 1 and vela["cycles"] > 0 and vela["macs"] > 0
    assert vela["command_stream_bytes"] > 0 and 0 < vela["cycles_per_mac"] < 1


@pytest.mark.lowering
def test_velas_estimates_are_the_same_to_the_cycle_when_compiled_again_and_move_with_an_operator():
    """What harness.policy.cost rests on: the estimate is deterministic (no threshold filters noise), a fused
    relu moves it by less than the thresholds, an elementwise operator more by far more."""
    from dataclasses import replace

    from harness.history.diff import cost_changes
    from harness.run.execute import run_case

    base = "conv2d_ic8_oc8_i12x12_k3_p1_qa8w8"
    bare, again, relu, add = (
        run_case(parse_descriptor(f"{base}_cx{cx}"), 0, "ethos-u55-128") for cx in ("none", "none", "relu", "add")
    )
    assert bare.metrics["vela"] == again.metrics["vela"]
    assert not cost_changes(bare, replace(relu, descriptor=bare.descriptor))
    changes = {c.metric: c for c in cost_changes(bare, replace(add, descriptor=bare.descriptor))}
    assert {"cycles", "npu_cycles", "sram_kib", "npu_ops"} <= set(changes)
    assert changes["cycles"].after - changes["cycles"].before > 10 * 64


@pytest.mark.lowering
def test_the_fvp_target_runs_where_installed_and_is_skipped_elsewhere():
    from harness.run.execute import run_case

    r = run_case(parse_descriptor("conv2d_ic8_oc16_i16x16_k3_p1_qa8w8"), 0, "ethos-u55-128-fvp")
    available = fvp.FvpRunner().available("ethos-u55")
    if not available.ok:
        assert r.outcome.value == "skipped" and r.reason == available.reason and r.green
        assert r.metrics["vela"]["npu_ops"] >= 1  # the lowering and Vela ran all the same
    else:  # pragma: no cover - only where Arm's FVP and an executor runner are installed
        assert r.outcome.value == "pass", r.reason


@pytest.mark.lowering
@pytest.mark.tier
@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-256"])
def test_the_ethos_u_smoke_tier_is_green(target, tmp_path):
    from harness.schedule.sweep import SweepRequest, run_sweep

    done = run_sweep(SweepRequest("smoke", target=target, jobs=2, results=tmp_path / "results.jsonl"))
    bad = [f"{r.descriptor}: {r.outcome.value} {r.stale or r.reason}" for r in done.results if not r.green]
    assert done.complete and not bad, bad


@pytest.mark.lowering
def test_the_nightly_reports_a_cycle_regression_and_fails_on_it_when_asked(tmp_path, capsys):
    """A green Ethos-U nightly, then its stored result made cheaper (the NPU's cycles halved, an operator fewer):
    the next nightly on the same backend holds the same numbers and pays more, so it reports the cost changes in
    lines that name cycles and exits 4 with --fail-on-cost; the same two runs pass without it."""
    from harness.cli.main import main
    from harness.history.db import History

    case = "conv2d_n1_ic8_oc16_g1_i16x16_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxnone$"
    db = str(tmp_path / "h.sqlite")

    def nightly(*extra: str) -> int:
        return main(
            ["nightly", "--tier", "smoke", "--target", "ethos-u55-128", "--filter", case, "-j", "1", "--no-progress"]
            + ["--out", str(tmp_path / "out"), "--db", db, *extra]
        )

    def cheaper_baseline() -> int:
        """The newest run's result as a cheaper backend would have made it; the cycles it really paid."""
        with History(db) as h:
            newest = max(h.summaries(), key=lambda s: s.run.started)
            (r,) = h.results(newest.run.run_id)
            vela = r.metrics["vela"]
            r.metrics["vela"] = {
                **vela,
                "cycles": vela["cycles"] // 2,
                "npu_cycles": vela["npu_cycles"] // 2,
                "npu_ops": vela["npu_ops"] - 1,
            }
            h.record(r)
            return vela["cycles"]

    assert nightly() == 0
    paid = cheaper_baseline()
    capsys.readouterr()
    assert nightly("--fail-on-cost") == 4
    out = capsys.readouterr().out
    assert out.startswith("no regression; COST REGRESSION") and "NPU cost past threshold" in out, out
    assert f"cycles {paid // 2} -> {paid} (+" in out and "npu_ops" in out, out
    # the numbers held: without the flag the same two runs exit 0 (diff_exit, which the nightly returns by)
    with History(db) as h:
        base, new = (s.run.run_id for s in sorted(h.summaries(), key=lambda s: s.run.started))
    assert main(["diff", base, new, "--db", db]) == 0 and "COST REGRESSION" in capsys.readouterr().out
