"""The runners by name, one instance per process."""

from __future__ import annotations

from functools import cache

from harness.runners.base import Runner

RUNNERS = ("tosa-ref", "fvp", "vgf-emulation")


@cache
def get_runner(name: str) -> Runner:
    """The process's one instance of runner `name`."""
    if name == "tosa-ref":
        from harness.runners.tosa_ref import TosaReferenceRunner

        return TosaReferenceRunner()
    if name == "fvp":
        from harness.runners.fvp import FvpRunner

        return FvpRunner()
    if name == "vgf-emulation":
        from harness.runners.vgf_emulation import VgfEmulationRunner

        return VgfEmulationRunner()
    raise ValueError(f"unknown runner {name!r}; known runners: {', '.join(RUNNERS)}")
