"""The ExecuTorch side of each target: its compile spec, partitioner and quantizer.

`harness.policy.targets` says which targets exist (data); the module named by
a target's `backend` builds the three objects a user's flow would build for
it, and reads back from a lowered program what the runner and the result need
(the TOSA graph of each delegate, the backend's own facts such as Vela's
compile). Lowering asks the target for them and never names a backend class.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from harness.policy.targets import Target


class Backend(Protocol):
    # Whether the lowering must give the compile spec a fresh directory for its intermediate artifacts.
    NEEDS_WORKDIR: bool

    def tosa_spec(self, target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False) -> str:
        """The TOSA profile and extensions this target lowers a case to."""

    def compile_spec(
        self, target: Target, scheme: str, dynamic: bool = False, control_flow: bool = False, workdir: str | None = None
    ) -> Any: ...

    def partitioner(self, compile_spec: Any) -> Any: ...

    def quantizer(self, compile_spec: Any) -> Any:
        """A fresh, unconfigured quantizer for the compile spec."""

    def collect(self, delegates: list, workdir: str | None, log: str) -> tuple[list[bytes], dict]:
        """For each delegate, in order, the TOSA flatbuffer it was lowered from; and the backend's facts
        (metrics keys), from the delegates, the intermediate artifacts and what the lowering printed."""


def backend(target: Target) -> Backend:
    """The backend module of `target` (imports ExecuTorch)."""
    return importlib.import_module(f"harness.targets.{target.backend}")  # type: ignore[return-value]
