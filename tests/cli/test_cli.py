"""The command line: list, run, sweep, their output and exit codes."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from harness.cases.tiers import cases_of
from harness.cli.main import main, parser


def _cli(*args, check_rc=None):
    proc = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True, text=True)
    if check_rc is not None:
        assert proc.returncode == check_rc, proc.stdout + proc.stderr
    return proc


def test_list_is_deterministic_and_parses(capsys):
    assert main(["list"]) == 0
    first = capsys.readouterr().out.splitlines()
    assert main(["list", "--tier", "smoke"]) == 0
    assert capsys.readouterr().out.splitlines() == first
    assert len(first) >= 60 and len(set(first)) == len(first)


def test_list_json_has_the_config_fields(capsys):
    assert main(["list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for key in (
        "descriptor",
        "rank",
        "transposed",
        "groups",
        "in_channels",
        "out_channels",
        "kernel",
        "stride",
        "padding",
        "dilation",
        "output_padding",
        "bias",
        "scheme",
        "batch",
        "input_size",
    ):
        assert key in rows[0]
    assert {r["scheme"] for r in rows} == {
        "fp32",
        "fp16",
        "bf16",
        "a8w8",
        "a8w8-pt",
        "a16w8",
        "a8w4",
        "a8w4-pt",
        "fp8e4m3",
        "fp8e5m2",
    }


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["list", "--tier", "nope"], "unknown tier 'nope'"),
        (["run", "conv2d_ic8_oc7_g2_i8x8_k3"], "invalid groups=2: must divide out_channels=7"),
        (["run", "conv2d_ic8_oc8_i8x8_k3_xx1"], "unknown descriptor token 'xx1'"),
        (["run", "conv2d_ic8_oc8_i8x8_k3", "--target", "fpga"], "unknown target 'fpga'; targets: tosa"),
        (["sweep", "--target", "fpga"], "unknown target 'fpga'"),
        (["sweep", "-j", "0"], "invalid -j 0"),
        (["sweep", "--filter", "(_qa8"], "invalid --filter '(_qa8': not a regular expression"),
    ],
)
def test_bad_input_is_exit_2_with_one_line(args, fragment, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and len(err.splitlines()) == 1


@pytest.mark.processes
def test_bad_option_is_exit_2():
    assert _cli("run", "--seed", "x", "conv2d_ic8_oc8_i8x8_k3").returncode == 2


@pytest.mark.lowering
def test_run_pass_prints_outcome_ops_and_repro():
    out = _cli("run", "conv2d_ic4_oc8_g4_i8x8_k3_p1_qa8w8", "--seed", "3", check_rc=0).stdout
    assert "outcome: pass" in out and "DEPTHWISE_CONV2D" in out and "max_lsb=" in out
    assert "worst:" in out and "__REPRO: python -m harness run 'conv2d_n1_ic4_oc8_g4" in out and "--seed 3" in out


@pytest.mark.lowering
def test_run_json_of_explained_outcomes_exits_0():
    proc = _cli("run", "conv2d_ic4_oc8_i12x12_k4_psame_qa8w8", "--json", check_rc=0)
    row = json.loads(proc.stdout)
    assert (row["outcome"], row["issue"], row["actual_outcome"]) == (
        "known_issue",
        "int-same-asymmetric-pad",
        "not_delegated",
    )
    proc = _cli("run", "tconv2d_ic4_oc4_i6x6_k3_d2_qfp32", "--json", check_rc=0)
    row = json.loads(proc.stdout)
    assert (row["outcome"], row["rejection"]) == ("expected_rejection", "tconv-dilation")
    assert row["run_id"] and row["target"] == "tosa" and row["schema_version"] == 2


@pytest.mark.parametrize(
    "outcome, stale, rc",
    [
        ("mismatch", "", 1),
        ("pass", "known issue x fixed", 1),
        ("mistrusted", "", 0),
        ("lowering_error", "", 1),
        ("pass", "", 0),
    ],
)
def test_run_exit_code_follows_the_outcome(monkeypatch, capsys, outcome, stale, rc):
    import harness.run.execute
    from harness.results.case_result import CaseResult, Outcome

    def fake_run_case(config, seed, target, keep_dir=None, canary="", run_id="", data_file=""):
        return CaseResult(config.descriptor, seed, Outcome(outcome), reason="r", stale=stale)

    monkeypatch.setattr(harness.run.execute, "run_case", fake_run_case)
    assert main(["run", "conv2d_ic4_oc8_i8x8_k3"]) == rc
    assert f"outcome: {outcome}" in capsys.readouterr().out


@pytest.mark.processes
def test_help_on_each_verb():
    for verb in ("list", "run", "sweep"):
        assert "usage: python -m harness " + verb in _cli(verb, "--help", check_rc=0).stdout


def test_list_stats_counts_the_tier(capsys):
    assert main(["list", "--tier", "smoke", "--stats"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{len(cases_of('smoke'))} cases"
    assert out[2].startswith("op") and "DEPTHWISE_CONV2D" in out[2] and "TRANSPOSE_CONV2D" in out[2]


def test_names_before_the_rename_still_run_and_are_not_listed(capsys):
    """`--sweep` (now `--tier`) and the `model` verb (now `network`) still work for existing scripts, unlisted."""
    assert main(["list", "--tier", "nightly", "--shard", "1/400"]) == 0
    tier = capsys.readouterr().out
    assert main(["list", "--sweep", "nightly", "--shard", "1/400"]) == 0
    assert capsys.readouterr().out == tier and tier
    assert main(["model", "harness.networks.resnet"]) == 2
    assert "invalid network 'harness.networks.resnet': expected MODULE:FACTORY" in capsys.readouterr().err
    p = parser()[0]
    verbs = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices
    help_text = p.format_help() + "".join(v.format_help() for v in verbs.values())
    assert "--sweep" not in help_text and "model," not in help_text and "network" in help_text


def test_list_filter_selects_by_descriptor(capsys):
    assert main(["list", "--filter", "_dy(spatial|all)$"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows and all(r.endswith(("_dyspatial", "_dyall")) for r in rows)
    assert main(["list", "--filter", "no-such-case"]) == 0
    assert capsys.readouterr().out == ""
