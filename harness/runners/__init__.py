"""Targets that execute a lowered artifact.

A runner takes an `Artifact` and the case's fp32 inputs and returns the
program's outputs. It knows nothing of pytest, tolerances or references; it
raises `RunnerError` when the target rejects or fails the graph, and
`available()` says whether it can run here at all, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import torch


class RunnerError(Exception):
    """The target rejected or failed to run the graph (never a pass)."""


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""


class Runner(Protocol):
    name: str

    def available(self) -> Availability: ...

    def run(self, artifact, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]: ...


RUNNERS = ("tosa-ref",)


@lru_cache(maxsize=None)
def get_runner(name: str) -> Runner:
    """The process's one instance of runner `name`."""
    if name == "tosa-ref":
        from harness.runners.tosa_ref import TosaReferenceRunner

        return TosaReferenceRunner()
    raise ValueError(f"unknown runner {name!r}; known runners: {', '.join(RUNNERS)}")
