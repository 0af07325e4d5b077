"""What every case of a run shares, and what a worker runs: the run path's types (torch-free).

`RunSettings` travels whole from the command line to the worker and into each
result, instead of five loose parameters through every signature. A worker
runs a *case function* given by reference (`FunctionRef`, loaded where it runs:
the process that schedules never imports it) (`CaseFunction`); its module may
define `setup_process()` (once per process) and a `run_pack` (`PackFunction`:
many cases lowered as one).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from harness.policy.targets import DEFAULT_TARGET

if TYPE_CHECKING:
    from harness.config import ConvConfig
    from harness.results.case_result import CaseResult


@dataclass(frozen=True)
class RunSettings:
    seed: int = 0  # data seed
    target: str = DEFAULT_TARGET
    keep_dir: str | None = None  # where a case that is not green leaves its inputs, outputs and flatbuffers
    canary: str = ""  # the fault injected into the backend for every case ('' none)
    run_id: str = ""

    def with_canary(self, canary: str) -> RunSettings:
        """These settings with a task's own fault (a mutation campaign's), if it has one."""
        return replace(self, canary=canary) if canary else self


@dataclass(frozen=True)
class FunctionRef:
    """A function by reference: its module and name, imported where it is called (a worker, a Ray actor)."""

    module: str
    name: str

    @classmethod
    def parse(cls, text: str) -> FunctionRef:
        """'module:function', as a command line or a test names one."""
        module, _, name = text.partition(":")
        if not module or not name:
            raise ValueError(f"invalid function reference {text!r}: expected module:function")
        return cls(module, name)

    def load(self) -> Callable:
        return getattr(importlib.import_module(self.module), self.name)

    def __str__(self) -> str:
        return f"{self.module}:{self.name}"


RUN_CONFIGURED = FunctionRef("harness.run.execute", "run_configured")  # the case function of every real run


class CaseFunction(Protocol):
    def __call__(self, config: ConvConfig, settings: RunSettings) -> CaseResult: ...


class PackFunction(Protocol):
    def __call__(self, configs: list[ConvConfig], settings: RunSettings) -> list[CaseResult]: ...
