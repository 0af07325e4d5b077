"""Tool overlays: run the tiers on another Vela, reference model or ML SDK than the installed one (`--tools`).

A backend engineer bumping Vela or tosa-tools wants the tiers on the new version beside the old, as
`--executorch` gives them another ExecuTorch. Each `NAME==VERSION` is installed once into the cache with
`pip install --no-deps --target` (its dependencies stay the environment's: a version whose dependencies the
environment cannot meet fails on import, one line) and put first on the import path and, for its executables
(`model-converter`, `scenario-runner`), on PATH, in this process and every worker it starts. A result records
the versions it ran with (`harness.results.case_result.versions` reads each tool's metadata from the path, so an
overlaid tool's version is the one recorded); `doctor` shows them.

`pinned` takes the pins of the ExecuTorch in use (with `--executorch 1.4.1`, that release's own: its wheel's
requirements, extras included), so a release runs with the tools it was released with.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from harness import cache
from harness.descriptor import ConfigError

TOOLS = (  # the packages a run's numbers or verdicts depend on besides torch and ExecuTorch
    "ethos-u-vela",
    "tosa-tools",
    "ai-ml-sdk-model-converter",
    "ai-ml-sdk-scenario-runner",
    "ai-ml-sdk-vgf-library",
    "ai-ml-emulation-layer-for-vulkan",
)
PINNED = "pinned"
DEFAULT_CACHE = cache.ROOT / "tools"
_COMPLETE = ".complete"


class ToolError(RuntimeError):
    """A tool version pip cannot install."""


@dataclass(frozen=True)
class ToolOverlay:
    name: str
    version: str
    path: Path | None  # None: the installed version is the one asked for
    seconds: float = 0.0
    reused: bool = True


def _bad(spec: str, why: str) -> ConfigError:
    return ConfigError(
        f"invalid --tools {spec!r}: {why}; expected NAME==VERSION with NAME one of {', '.join(TOOLS)}, or {PINNED}"
    )


def parse(specs: list[str]) -> list[tuple[str, str]]:
    """`--tools` values as (name, version) pairs, `pinned` expanded; ConfigError names a bad one."""
    out: dict[str, str] = {}
    for spec in specs:
        if spec == PINNED:
            for name, version in pins().items():
                out.setdefault(name, version)
            continue
        try:
            req = Requirement(spec)
        except InvalidRequirement:
            raise _bad(spec, "not a requirement") from None
        pinned = [s.version for s in req.specifier if s.operator == "=="]
        if req.name not in TOOLS:
            raise _bad(spec, f"{req.name} is not a tool the harness overlays")
        if len(pinned) != 1 or len(req.specifier) != 1 or req.extras or req.marker:
            raise _bad(spec, "one exact version (==) and nothing else")
        out[req.name] = pinned[0]
    return list(out.items())


def pins(requires: list[str] | None = None) -> dict[str, str]:
    """The exact versions the ExecuTorch on the import path requires of each tool, extras included."""
    if requires is None:
        try:
            requires = importlib.metadata.requires("executorch") or []
        except importlib.metadata.PackageNotFoundError:
            requires = []
    found: dict[str, str] = {}
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        exact = [s.version for s in req.specifier if s.operator == "=="]
        if req.name in TOOLS and len(exact) == 1:
            found.setdefault(req.name, exact[0])
    return found


def installed(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def install(name: str, version: str, where: Path = DEFAULT_CACHE) -> ToolOverlay:
    """The overlay of `name==version` (none when that version is the installed one), installed into `where` once."""
    start = time.perf_counter()
    if installed(name) == version:
        return ToolOverlay(name, version, None)
    target = Path(where) / f"{name}-{version}"
    if (target / _COMPLETE).exists():
        return ToolOverlay(name, version, target, time.perf_counter() - start, True)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--quiet", "--target"]
    done = subprocess.run([*command, str(partial), f"{name}=={version}"], capture_output=True, text=True, timeout=1800)
    if done.returncode:
        shutil.rmtree(partial, ignore_errors=True)
        last = (done.stderr.strip().splitlines() or ["(pip said nothing)"])[-1]
        raise ToolError(f"pip could not install {name}=={version}: {last}")
    (partial / _COMPLETE).write_text(f"{name}=={version}")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return ToolOverlay(name, version, target, time.perf_counter() - start, False)


def activate(overlays: list[ToolOverlay]) -> None:
    """Put each overlay first on this process's import path and PATH, and its children's (PYTHONPATH, PATH)."""
    for o in overlays:
        if o.path is None:
            continue
        entry = str(o.path)
        os.environ["PYTHONPATH"] = os.pathsep.join([entry, *filter(None, [os.environ.get("PYTHONPATH")])])
        if (o.path / "bin").is_dir():
            os.environ["PATH"] = os.pathsep.join([str(o.path / "bin"), os.environ.get("PATH", "")])
        if entry not in sys.path:
            sys.path.insert(0, entry)
    labels = [f"{o.name}=={o.version}" for o in overlays]
    if labels:
        os.environ["HARNESS_TOOLS"] = " ".join(labels)
        os.environ["HARNESS_TOOLS_PATH"] = os.pathsep.join(str(o.path) for o in overlays if o.path is not None)
    importlib.invalidate_caches()


def check_not_imported(overlays: list[ToolOverlay]) -> None:
    """ConfigError when a tool to overlay is already imported here (it would stay the one imported)."""
    modules = {"ethos-u-vela": "ethosu", "tosa-tools": "tosa_reference_model"}
    for o in overlays:
        module = modules.get(o.name)
        if o.path is not None and module in sys.modules:
            raise ConfigError(f"--tools {o.name}=={o.version} must take effect before {module} is imported")
