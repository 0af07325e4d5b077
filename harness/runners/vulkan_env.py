"""The ML SDK for Vulkan's executor stack found on this machine, and the environment that makes it run.

The `.vgf` runs in `scenario-runner` (the `ai-ml-sdk-scenario-runner` wheel)
on a CPU Vulkan driver (Mesa's lavapipe: Debian's `mesa-vulkan-drivers` and
`libvulkan1`), with the ML Emulation Layer (the
`ai-ml-emulation-layer-for-vulkan` wheel) providing `VK_ARM_tensors` and
`VK_ARM_data_graph` in software. Two things the wheel's own instructions
(`VK_INSTANCE_LAYERS=...`, explicit layers) do not give on Debian 12's loader
(1.3.239), both measured here:

* An explicit layer's device extensions are not listed to an application that
  asks the loader without a layer name, so scenario-runner never enables
  `VK_ARM_tensors` and the graph layer refuses the device ("ML Emulation
  Layer for Vulkan requires extension: VK_ARM_tensors"). The layers are
  therefore registered as implicit layers, their manifests copied with an
  absolute library path and the `disable_environment` key implicit layers need.
* Implicit layers are stacked in the order the loader finds their manifests,
  the first found on top. With both in one directory the tensor layer came
  out on top, took the graph's SPIR-V module in `vkCreateShaderModule` and
  failed to parse it ("[Tensor][Error] SPIR-V at:... could not be parsed",
  `createShaderModule: ErrorUnknown`). The graph layer's manifest goes in
  `$XDG_CONFIG_HOME/vulkan/implicit_layer.d`, searched before
  `$XDG_DATA_HOME/vulkan/implicit_layer.d` where the tensor layer's goes, so
  the graph layer sits above the tensor layer, as the wheel's
  `VK_LAYER_ML_Graph_Emulation:VK_LAYER_ML_Tensor_Emulation` intends.

Both directories are private to the process (a temporary directory), so
nothing on the machine changes and no other Vulkan program sees the layers.
"""

from __future__ import annotations

import ctypes.util
import hashlib
import importlib.util
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from harness import cache

WHEELS = {  # import name -> what installs it
    "scenario_runner": "ai-ml-sdk-scenario-runner==0.11.0",
    "vgf_lib": "ai-ml-sdk-vgf-library==0.11.0",
    "emulation_layer": "ai-ml-emulation-layer-for-vulkan==0.11.0",
}
LAYERS = (("Graph", "config"), ("Tensor", "data"))  # top first: the directory searched first holds the top layer
DEBIAN_PACKAGES = "libvulkan1 mesa-vulkan-drivers"
ICD_DIRS = ("/etc/vulkan/icd.d", "/usr/share/vulkan/icd.d", "/usr/local/share/vulkan/icd.d")
PROBE_TIMEOUT_S = 60


class StackMissing(Exception):
    """What this machine lacks to run a .vgf, in one line."""


@dataclass(frozen=True)
class Stack:
    scenario_runner: str  # the binary
    vgf_dump: str  # the binary
    env: dict  # the process environment that runs it with the emulation layers


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise StackMissing(f"the {name} package is not installed: pip install -e '.[vgf]' ({WHEELS[name]})")
    return Path(list(spec.submodule_search_locations)[0])


def _binary(path: Path) -> str:
    if not path.is_file():
        raise StackMissing(f"{path} is missing from its wheel")
    return str(path)


def _check_driver() -> None:
    if ctypes.util.find_library("vulkan") is None:
        raise StackMissing(f"no Vulkan loader (libvulkan.so.1): apt-get install {DEBIAN_PACKAGES}")
    if (
        not os.environ.get("VK_ICD_FILENAMES")
        and not os.environ.get("VK_DRIVER_FILES")
        and not any(Path(d).is_dir() and any(Path(d).glob("*.json")) for d in ICD_DIRS)
    ):
        raise StackMissing(
            f"no Vulkan driver (no ICD manifest in {', '.join(ICD_DIRS)}): "
            f"apt-get install {DEBIAN_PACKAGES} (lavapipe, Mesa's CPU driver)"
        )


def _manifests(deploy: Path) -> dict[str, bytes]:
    """Each implicit-layer manifest's path (under a root) and its text: the wheel's, pointing at its library."""
    out = {}
    for layer, xdg in LAYERS:
        manifest = json.loads((deploy / "share/vulkan/explicit_layer.d" / f"VkLayer_{layer}.json").read_text())
        manifest["layer"]["library_path"] = str(deploy / "lib" / f"libVkLayer_{layer}.so")
        manifest["layer"]["disable_environment"] = {f"HARNESS_DISABLE_ML_{layer.upper()}_LAYER": "1"}
        out[f"{xdg}/vulkan/implicit_layer.d/VkLayer_ML_{layer}.json"] = json.dumps(manifest, indent=1).encode()
    return out


def _layer_env(root: Path) -> dict[str, str]:
    """The XDG variables that point the loader at the manifests under `root`."""
    return {f"XDG_{xdg.upper()}_HOME": str(root / xdg) for _, xdg in LAYERS}


def _layer_root(deploy: Path) -> Path:
    """Where this emulation layer's manifests live: one folder of the harness cache per set of manifests, shared
    by every process (`harness.cache.kept_folder`)."""
    manifests = _manifests(deploy)
    digest = hashlib.sha256(b"".join(k.encode() + v for k, v in sorted(manifests.items()))).hexdigest()
    files = {relative: (text, None) for relative, text in manifests.items()}
    return cache.kept_folder(f"vulkan-layers/{digest[:16]}", files, prefix="harness-vulkan-layers-")


@lru_cache(maxsize=1)
def stack() -> Stack:
    """The stack, its layers registered in a private directory and probed once per process; StackMissing
    names the first thing missing (a wheel, the loader, the driver, or the device the probe could not make)."""
    runner = _binary(_package_dir("scenario_runner") / "binaries/bin/scenario-runner")
    dump = _binary(_package_dir("vgf_lib") / "binaries/bin/vgf_dump")
    deploy = _package_dir("emulation_layer") / "deploy"
    _check_driver()
    env = {k: v for k, v in os.environ.items() if k not in ("VK_INSTANCE_LAYERS", "VK_LOADER_LAYERS_ENABLE")}
    env.update(_layer_env(_layer_root(deploy)))
    env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(deploy / "lib"), env.get("LD_LIBRARY_PATH", "")) if p)
    found = Stack(runner, dump, env)
    with tempfile.TemporaryDirectory(prefix="harness-vulkan-probe-") as scratch:
        _probe(found, Path(scratch))
    return found


def _probe(found: Stack, root: Path) -> None:
    """An empty scenario: scenario-runner makes its instance and device through both layers, or says why not."""
    scenario = root / "probe.json"
    scenario.write_text(json.dumps({"commands": [], "resources": []}))
    done = subprocess.run(
        [found.scenario_runner, "--scenario", str(scenario)],
        env=found.env,
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
    )
    if done.returncode != 0 or error_lines(done):
        raise StackMissing(f"scenario-runner could not make a Vulkan device with the ML emulation layers: {said(done)}")


def error_lines(done: subprocess.CompletedProcess) -> list[str]:
    """The scenario runner's and the layers' error lines (it may log an error and still exit 0), each once,
    without timestamps."""
    lines = [
        line.split("] ", 1)[-1].strip()
        for line in (done.stdout + done.stderr).splitlines()
        if "ERROR" in line or "[Error]" in line
    ]
    return list(dict.fromkeys(lines))


def said(done: subprocess.CompletedProcess) -> str:
    """What a failed run of an ML SDK tool said, in one line."""
    return "; ".join(error_lines(done))[:600] or f"exit {done.returncode}, no error line"
