"""Targets: what a case is lowered for and run on, as data.

A target is a compile spec, a partitioner and a quantizer (built by its
backend module under `harness.targets`, the only code that imports them from
ExecuTorch) plus the runner that executes what it lowers. Adding a target is
a row here and, for a new backend, one module under `harness.targets`.

Torch-free: the command line and the pytest plugin check a `--target` value
without loading torch or ExecuTorch.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.descriptor import ConfigError
from harness.policy.schemes import SCHEME_NAMES


@dataclass(frozen=True)
class Target:
    name: str
    backend: str  # module harness.targets.<backend>: compile spec, partitioner, quantizer
    runner: str  # harness.runners name
    schemes: tuple[str, ...]  # the schemes it lowers
    description: str


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("tosa", "tosa", "tosa-ref", SCHEME_NAMES,
               "the generic TOSA lowering (TosaCompileSpec, TOSAPartitioner, TOSAQuantizer) on the TOSA reference model"),
    )
}
DEFAULT_TARGET = "tosa"


def get_target(name: str) -> Target:
    """The target called `name`; ConfigError (one line) for an unknown one."""
    if name not in TARGETS:
        raise ConfigError(f"unknown target {name!r}; targets: {', '.join(TARGETS)}")
    return TARGETS[name]
