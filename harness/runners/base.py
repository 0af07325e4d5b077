"""What every runner is: a small interface, its error, and whether it can run here.

A runner takes an `Artifact` and the program's inputs and returns the
program's outputs. It knows nothing of pytest, tolerances or references; it
raises `RunnerError` when the target rejects or fails the graph, and
`available(family)` says whether it can run here at all, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from harness.blame import Verdict


class RunnerError(Verdict):
    """The target rejected or failed to run the graph (never a pass)."""


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""


class Runner(Protocol):
    name: str

    def available(self, family: str) -> Availability:
        """Whether it can run here for a target of this family ('tosa', 'ethos-u55', ...), and why not."""

    def run(self, artifact, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]: ...
