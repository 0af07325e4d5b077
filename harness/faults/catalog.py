"""The mutants of the installed conv lowering, by name, without importing ExecuTorch.

A mutant is named `mutant:TARGET:INDEX` (TARGET from harness/policy/mutation.py,
INDEX its place in `harness.faults.operators.mutants` of that file). The name
travels where a canary's does (`--canary`, a sweep's workers), so a mutant runs
through the same sweep machinery as a canary: `harness.faults.canaries.get`
turns the name into a fault that `harness.faults.load` installs.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path

from harness.config import ConfigError
from harness.faults.operators import Mutant, count, mutants
from harness.policy.mutation import MODULES, PACKAGE

PREFIX = "mutant:"


def source_file(module: str) -> Path:
    """The installed file of `module` (the package located, not imported)."""
    if module not in MODULES:
        raise ConfigError(f"unknown mutation module {module!r}; modules: {', '.join(MODULES)}")
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"{PACKAGE} is not installed: nothing to mutate")
    return Path(list(spec.submodule_search_locations)[0]) / MODULES[module]


@cache
def mutants_of(module: str) -> tuple[Mutant, ...]:
    return tuple(mutants(source_file(module).read_text(), MODULES[module]))


@cache
def count_of(module: str) -> int:
    return count(source_file(module).read_text())


def mutant_name(module: str, index: int) -> str:
    return f"{PREFIX}{module}:{index}"


def parse_name(name: str) -> tuple[str, int]:
    """(module, index) of a mutant's name; ConfigError (one line) for a bad one."""
    try:
        module, index_text = name.removeprefix(PREFIX).split(":")
        index = int(index_text)
    except ValueError:
        raise ConfigError(f"invalid mutant {name!r}: expected {PREFIX}TARGET:INDEX") from None
    n = count_of(module)
    if not 0 <= index < n:
        raise ConfigError(f"invalid mutant {name!r}: {module} has mutants 0..{n - 1}")
    return module, index
