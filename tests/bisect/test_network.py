"""From a model to its convs: configs read off real layers, captured data, the whole flow on a network."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from torch import nn

from harness.bisect.network import capture, conv_config, load_factory, parse_shape, recalibrate_batch_norm
from harness.build import captured
from harness.build.data import make_tensors
from harness.config import ConfigError, parse_descriptor


def test_a_layer_becomes_the_case_of_its_own_config():
    x = torch.zeros(1, 8, 15, 9)
    c = conv_config(
        nn.Conv2d(8, 16, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=4, bias=False), x, "a8w8"
    )
    assert c.descriptor == "conv2d_n1_ic8_oc16_g4_i15x9_k3x2_s2x1_p1x0_d1x2_b0_pmzeros_qa8w8_dscaptured_cxnone"
    t = conv_config(nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1), x, "fp32")
    assert (t.transposed, t.output_padding, t.bias) == (True, (1, 1), True)
    same = conv_config(nn.Conv1d(4, 4, 3, padding="same", padding_mode="reflect"), torch.zeros(1, 4, 10), "a16w8")
    assert (same.padding, same.padding_mode, same.rank) == ("same", "reflect", 1)


def test_capture_records_each_conv_input_per_sample_in_call_order():
    model = nn.Sequential(nn.Conv1d(1, 4, 3), nn.ReLU(), nn.Conv1d(4, 2, 1))
    xs = [torch.randn(1, 1, 12) for _ in range(3)]
    layers = capture(model, xs)
    assert [name for name, _, _ in layers] == ["0", "2"]
    assert [len(acts) for _, _, acts in layers] == [3, 3]
    assert torch.equal(layers[0][2][1], xs[1])
    assert torch.equal(layers[1][2][0], torch.relu(model[0](xs[0])).detach())


def test_batch_norm_recalibration_is_the_exact_average_over_the_samples():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
    with torch.no_grad():
        model[0].weight.mul_(50)
    xs = [torch.randn(1, 3, 16, 16) for _ in range(4)]
    assert recalibrate_batch_norm(model, xs) == 1
    with torch.no_grad():
        acts = [model[0](x) for x in xs]
    # momentum=None makes the running statistics the plain average of each batch's mean and unbiased variance
    mean = torch.stack([a.mean(dim=(0, 2, 3)) for a in acts]).mean(0)
    var = torch.stack([a.var(dim=(0, 2, 3), unbiased=True) for a in acts]).mean(0)
    torch.testing.assert_close(model[1].running_mean, mean)
    torch.testing.assert_close(model[1].running_var, var)
    assert model[1].momentum == 0.1 and not model.training


def test_a_captured_case_reads_its_file_and_refuses_another_case_s(tmp_path):
    c = parse_descriptor("conv1d_n1_ic2_oc3_g1_i8_k3_s1_p0_d1_b1_qa8w8_dscaptured")
    acts = [torch.randn(1, 2, 8) for _ in range(2)]
    w, b = torch.randn(3, 2, 3), torch.randn(3)
    path = captured.save(tmp_path / "layer.pt", c, w, b, acts, "features.0")
    t = make_tensors(c, 0, str(path))
    assert torch.equal(t.inputs[0], acts[0]) and torch.equal(t.weight, w) and torch.equal(t.bias, b)
    assert len(t.calibration) == 2 and all(torch.equal(s[0], a) for s, a in zip(t.calibration, acts))
    other = c.replace(in_channels=4)
    with pytest.raises(ConfigError, match="holds the tensors of conv1d_n1_ic2"):
        make_tensors(other, 0, str(path))
    with pytest.raises(ConfigError, match="needs the file"):
        make_tensors(c, 0, "")
    with pytest.raises(ConfigError, match="cx none and dy none"):
        parse_descriptor("conv1d_n1_ic2_oc3_g1_i8_k3_s1_p0_d1_b1_qa8w8_dscaptured_cxrelu")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("harness.networks.resnet", "expected MODULE:FACTORY"),
        ("harness.networks.nothere:resnet18", "cannot import harness.networks.nothere"),
        ("harness.networks.resnet:resnet99", "has no callable resnet99"),
        ("/no/such/file.py:net", "cannot import /no/such/file.py"),
    ],
)
def test_a_bad_model_is_named_in_one_line(spec, message):
    with pytest.raises(ConfigError, match=message):
        load_factory(spec)


def test_a_model_in_the_user_s_file(tmp_path):
    f = tmp_path / "mynet.py"
    f.write_text("import torch\ndef net():\n    return torch.nn.Conv1d(1, 1, 3)\n")
    assert isinstance(load_factory(f"{f}:net")(), nn.Conv1d)


def test_shapes_parse_or_are_refused():
    assert parse_shape("1x3x224x224") == (1, 3, 224, 224)
    for bad in ("1,3,224", "x3", "", "1x"):
        with pytest.raises(ConfigError, match="--input"):
            parse_shape(bad)


@pytest.mark.lowering
def test_the_keyword_spotting_network_layer_by_layer(tmp_path):
    out = tmp_path / "m5"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "network", "harness.networks.kws:m5", "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["whole"]["ok"] and report["whole"]["top1_agrees"]
    assert report["recalibrated"] == 4
    assert [layer["name"] for layer in report["layers"]] == ["features.0", "features.4", "features.8", "features.12"]
    assert all(layer["green"] and layer["outcome"] == "pass" for layer in report["layers"])
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["data_file"] for r in results] == [layer["data_file"] for layer in report["layers"]]
    first = report["layers"][0]
    assert f"--captured '{first['data_file']}'" in first["repro"]
    rerun = subprocess.run(
        [sys.executable, "-m", "harness", "run", first["descriptor"], "--captured", first["data_file"], "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    again = json.loads(rerun.stdout.strip().splitlines()[-1])
    assert (again["outcome"], again["metrics"]["qparams"]) == ("pass", results[0]["metrics"]["qparams"])
