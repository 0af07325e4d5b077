"""Every conv of the real networks, with the input size it sees: the data of the `network_convs` strategy.

`extract(name)` builds a network from its definition here on the meta device
(shapes only: no weight, no data), runs one input of its native (or documented
scaled) size through it and records,
per conv, the config it runs: rank, channels, groups, input size, kernel,
stride, padding, dilation, bias; and what the network puts around it, spelled
in the context grammar, with what the grammar cannot spell and why
(`harness.networks.neighbours`). `python -m harness.networks.convs --write`
stores them in harness/cases/network_convs.json, which the strategy reads without
torch; tests/cases/test_network_convs.py checks the file against the definitions.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

NETWORKS = {  # name -> factory (module:function), in the order the strategy takes their convs
    "mobilenet_v2": "harness.networks.mobilenet:mobilenet_v2",
    "mobilenet_v3_large": "harness.networks.mobilenet_v3:mobilenet_v3_large",
    "mobilenet_v3_small": "harness.networks.mobilenet_v3:mobilenet_v3_small",
    "resnet18": "harness.networks.resnet:resnet18",
    "efficientnet_b0": "harness.networks.efficientnet:efficientnet_b0",
    "shufflenet_v2": "harness.networks.shufflenet:shufflenet_v2",
    "squeezenet1_1": "harness.networks.shufflenet:squeezenet1_1",
    "r3d_18": "harness.networks.video:r3d_18",
    "r2plus1d_18": "harness.networks.video:r2plus1d_18",
    "ds_cnn": "harness.networks.tiny:ds_cnn",
    "mobilenet_v1_025_vww": "harness.networks.tiny:mobilenet_v1_025_vww",
    "resnet8": "harness.networks.tiny:resnet8",
    "m5": "harness.networks.kws:m5",
}
DATA = Path(__file__).resolve().parents[1] / "cases" / "network_convs.json"


def _axes(values) -> str:
    return "x".join(str(int(v)) for v in values)


def _base(conv, shape) -> str:
    """The descriptor (without scheme) of a conv module fed an input of `shape`."""
    rank = conv.weight.dim() - 2
    padding = conv.padding if isinstance(conv.padding, str) else _axes(conv.padding)
    return (
        f"conv{rank}d_n{shape[0]}_ic{conv.in_channels}_oc{conv.out_channels}_g{conv.groups}"
        f"_i{_axes(shape[2:])}_k{_axes(conv.kernel_size)}_s{_axes(conv.stride)}_p{padding}"
        f"_d{_axes(conv.dilation)}_b{int(conv.bias is not None)}"
    )


def extract(name: str) -> list[dict]:
    """The convs of network `name` in the order they run: layer path and descriptor base."""
    import torch
    from torch import nn

    from harness.networks.neighbours import spell_all

    module, factory = NETWORKS[name].split(":")
    with torch.device("meta"):  # shapes only: no weight initialised, no conv computed (half the time)
        model = getattr(importlib.import_module(module), factory)().eval()
    found: list[dict] = []
    hooks = [
        m.register_forward_pre_hook(
            lambda m, args, path=path: found.append(
                {"network": name, "layer": path, "base": _base(m, tuple(args[0].shape))}
            )
        )
        for path, m in model.named_modules()
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d))
    ]
    with torch.no_grad():
        model(torch.zeros(model.example_input_shape, device="meta"))
    for h in hooks:
        h.remove()
    around = spell_all(model)
    for entry in found:
        entry["context"], entry["unspelled"] = around[entry["layer"]]
    return found


def extract_all() -> list[dict]:
    return [entry for name in NETWORKS for entry in extract(name)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write (or check) harness/cases/network_convs.json")
    parser.add_argument("--write", action="store_true", help="write the file (default: print)")
    args = parser.parse_args(argv)
    text = json.dumps(extract_all(), indent=0) + "\n"
    if args.write:
        DATA.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
