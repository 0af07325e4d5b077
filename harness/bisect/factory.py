"""The `network` verb's arguments, checked without torch: a refusal is one line, before any import of weight."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path

from harness.config import ConfigError


def check_spec(spec: str) -> tuple[str, str]:
    """(module or file, factory name) of `MODULE:FACTORY` or `FILE.py:FACTORY`."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise ConfigError(f"invalid network {spec!r}: expected MODULE:FACTORY, e.g. harness.networks.resnet:resnet18")
    return module_name, name


def load_factory(spec: str) -> Callable[[], object]:
    """`package.module:function` or `path/to/file.py:function`; ConfigError naming what is wrong."""
    module_name, name = check_spec(spec)
    try:
        if module_name.endswith(".py"):
            location = importlib.util.spec_from_file_location(Path(module_name).stem, module_name)
            if location is None or not Path(module_name).is_file():
                raise FileNotFoundError(module_name)
            module = importlib.util.module_from_spec(location)
            location.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - the user's module, whatever its import raises (a torchvision whose
        # compiled ops do not load beside this torch raises RuntimeError), is one line naming it
        raise ConfigError(
            f"invalid network {spec!r}: cannot import {module_name} ({type(e).__name__}: {_first_line(e)})"
        ) from None
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ConfigError(f"invalid network {spec!r}: {module_name} has no callable {name}")
    return factory


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]


def instantiate(spec: str, factory: Callable[[], object]):
    """The factory's module in eval mode; ConfigError if the factory raises or returns no `torch.nn.Module`."""
    import torch

    try:
        model = factory()
    except Exception as e:  # noqa: BLE001 - the user's factory: whatever it raises is one line naming it
        raise ConfigError(
            f"invalid network {spec!r}: the factory raised {type(e).__name__}: {_first_line(e)}"
        ) from None
    if not isinstance(model, torch.nn.Module):
        raise ConfigError(
            f"invalid network {spec!r}: the factory returned a {type(model).__name__}, not a torch.nn.Module"
        )
    return model.eval()


def check_forward(spec: str, model, sample) -> None:
    """ConfigError if the model cannot run on `sample` (a wrong --input shape, a model that wants other inputs)."""
    import torch

    try:
        with torch.no_grad():
            model(sample)
    except Exception as e:  # noqa: BLE001 - the user's model: whatever its forward raises is one line naming it
        shape = "x".join(map(str, sample.shape))
        raise ConfigError(
            f"invalid network {spec!r}: it takes no input of shape {shape} "
            f"({type(e).__name__}: {_first_line(e)}); give --input"
        ) from None


def parse_shape(text: str) -> tuple[int, ...]:
    """'1x3x224x224' -> (1, 3, 224, 224)."""
    if not re.fullmatch(r"\d+(x\d+)+", text or ""):
        raise ConfigError(f"invalid --input={text}: expected dims joined by x, e.g. 1x3x224x224")
    return tuple(int(d) for d in text.split("x"))
