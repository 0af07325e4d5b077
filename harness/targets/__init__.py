"""The ExecuTorch side of each target: its compile spec, partitioner and quantizer.

`harness.policy.targets` says which targets exist (data); the module named by
a target's `backend` builds the three objects a user's flow would build for
it. Lowering asks the target for them and never names a backend class itself.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from harness.policy.targets import Target


class Backend(Protocol):
    def tosa_spec(self, scheme: str, dynamic: bool = False, control_flow: bool = False) -> str:
        """The TOSA profile and extensions this target lowers a case to."""

    def compile_spec(self, scheme: str, dynamic: bool = False, control_flow: bool = False) -> Any: ...

    def partitioner(self, compile_spec: Any) -> Any: ...

    def quantizer(self, compile_spec: Any) -> Any:
        """A fresh, unconfigured quantizer for the compile spec."""


def backend(target: Target) -> Backend:
    """The backend module of `target` (imports ExecuTorch)."""
    return importlib.import_module(f"harness.targets.{target.backend}")  # type: ignore[return-value]
