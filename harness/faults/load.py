"""Load a mutant into the running process: swap one function's code object.

The mutated module is compiled from its tree (never executed, never written
anywhere: site-packages stays as it is), the mutated function's code object
is taken from it by qualified name, and set as the live function's
`__code__`. Every reference to the function (classes, the pass manager's
instances, aliases) sees the mutant at once; undo puts the original back.
A mutant whose code cannot take the function's place (a different set of
closure variables) is refused with MutantError.
"""

from __future__ import annotations

import functools
import importlib
import types
from collections.abc import Callable
from pathlib import Path

from harness.faults.operators import mutant_tree


class MutantError(ValueError):
    """The mutant cannot be loaded into the live function."""


def _code_named(code: types.CodeType, qualname: str) -> types.CodeType | None:
    if code.co_qualname == qualname:
        return code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found = _code_named(const, qualname)
            if found is not None:
                return found
    return None


def live_function(module, qualname: str) -> types.FunctionType:
    """The function object behind `qualname` ("Class.method" or "function") in `module`."""
    owner, *rest = qualname.split(".")
    obj = getattr(module, owner)
    if rest:
        obj = vars(obj)[rest[0]]
    obj = getattr(obj, "__func__", obj)  # staticmethod / classmethod
    while hasattr(obj, "__wrapped__") and obj.__code__.co_qualname != qualname:
        obj = obj.__wrapped__
    if not isinstance(obj, types.FunctionType):
        raise MutantError(f"{qualname} is not a plain function ({type(obj).__name__})")
    return obj


@functools.lru_cache(maxsize=8)
def _mutated_code(path: str, index: int) -> tuple[types.CodeType, str]:
    tree, function = mutant_tree(Path(path).read_text(), index)
    code = _code_named(compile(tree, path, "exec"), function)
    if code is None:
        raise MutantError(f"no code for {function} in the mutated {Path(path).name}")
    return code, function


def install(module_name: str, index: int) -> Callable[[], None]:
    """Load mutant `index` of module `module_name`; returns the undo."""
    module = importlib.import_module(module_name)
    code, function = _mutated_code(module.__file__, index)
    fn = live_function(module, function)
    if code.co_freevars != fn.__code__.co_freevars:
        raise MutantError(f"mutant {index} changes the closure of {function}")
    original = fn.__code__
    fn.__code__ = code

    def undo() -> None:
        fn.__code__ = original

    return undo
