"""The `captured` data set: a conv's real weights and the activations that reached it in a model.

`harness network` runs a network on its calibration inputs and saves, for every
conv layer, one file: the layer's descriptor, its weight and bias, and the
input activation of each calibration run. A case of data set `captured`
loads its tensors from such a file instead of drawing them from (descriptor,
seed): the first activation is the input the case runs on, and all of them
are its calibration samples, so the quantizer sees what it saw in the model.
The descriptor names the layer's config as any other; the file is named in
the case's repro line (`--captured FILE`), and must belong to the descriptor.
"""

from __future__ import annotations

from pathlib import Path

import torch

from harness.config import CAPTURED, ConfigError, ConvConfig


def save(
    path: str | Path,
    config: ConvConfig,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    activations: list[torch.Tensor],
    layer: str = "",
) -> Path:
    """Write a layer's capture; each activation is one sample of shape (1, C, *spatial)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(
        {
            "descriptor": config.descriptor,
            "layer": layer,
            "weight": weight.detach().clone(),
            "bias": None if bias is None else bias.detach().clone(),
            "activations": [a.detach().clone() for a in activations],
        },
        path,
    )
    return path


def load(path: str | Path, config: ConvConfig) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor | None]:
    """(activations, weight, bias) of a capture; ConfigError if it is missing or belongs to another case."""
    if not path:
        raise ConfigError(f"data set {CAPTURED} needs the file its tensors were captured to: --captured FILE")
    try:
        data = torch.load(path, weights_only=True)
    except (OSError, RuntimeError, EOFError) as e:
        raise ConfigError(f"invalid --captured={path}: cannot read it ({type(e).__name__}: {e})") from None
    if not isinstance(data, dict) or data.get("descriptor") != config.descriptor:
        found = data.get("descriptor") if isinstance(data, dict) else "no descriptor"
        raise ConfigError(f"invalid --captured={path}: it holds the tensors of {found}, not {config.descriptor}")
    activations = data["activations"]
    if not activations:
        raise ConfigError(f"invalid --captured={path}: it holds no activations")
    return activations, data["weight"], data["bias"]
