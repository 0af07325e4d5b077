"""The mutants of the installed conv lowering, by name, without importing ExecuTorch.

A mutant is named `mutant:TARGET:INDEX` (TARGET from harness/policy/mutation.py,
INDEX its place in `harness.faults.operators.mutants` of that file). The name
travels where a canary's does (`--canary`, a sweep's workers), so a mutant runs
through the same sweep machinery as a canary: `harness.faults.canaries.get`
turns the name into a fault that `harness.faults.load` installs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import sys
from functools import cache
from pathlib import Path

from harness import cache as harness_cache
from harness.config import ConfigError
from harness.faults.operators import Mutant, count, mutants
from harness.policy.mutation import MODULES, PACKAGE

PREFIX = "mutant:"
STORE = harness_cache.ROOT / "mutants"
_OPERATORS = tuple(sorted(Path(__file__).parent.glob("*.py")))  # the code that lists mutants: all of faults/


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
    """Listing a pass's mutants unparses its functions once per mutant (seconds for the conv pass), so the list
    is kept on disk under the hash of what makes it: the file's text, the mutation operators' own sources and
    the Python whose `ast` unparses them. Anything else a list depends on is in those."""
    source = source_file(module).read_text()
    key = hashlib.sha256(
        "\0".join([sys.version.split()[0], source, *(p.read_text() for p in _OPERATORS)]).encode()
    ).hexdigest()[:24]
    stored = STORE / f"{module}-{key}.json"
    try:
        return tuple(Mutant(**{**row, "lines": tuple(row["lines"])}) for row in harness_cache.read_json(stored))
    except (TypeError, KeyError):  # None (no file) or a row of another shape: listed again
        pass
    found = tuple(mutants(source, MODULES[module]))
    harness_cache.write_json(stored, [dataclasses.asdict(m) for m in found])
    return found


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
