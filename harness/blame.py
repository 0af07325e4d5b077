"""Whose exception is it: the harness's own, or what torch and ExecuTorch raised?

A case's outcome follows where its failure was raised, not which stage was
running. The frame that raised it is the innermost frame of the root cause's
traceback that is neither the standard library nor import machinery (a
`json.loads` the harness called badly is the harness's; an `ImportError` of a
name the harness imports is raised in the harness's frame). If that frame is
in the `harness` package, the failure is a `harness_error` naming the module;
otherwise torch, torchao, ExecuTorch, the TOSA tools or Vela raised it, and it
is the stage's (`lowering_error`, `runner_error`).

Two kinds of exception are verdicts on the backend even though the harness
raises them: `Verdict` subclasses (a runner's `RunnerError`: the reference
model refused the graph; a check of the lowered graph), and exceptions that
were never raised at all (built and handed to a stage as its verdict).
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path
from types import TracebackType

PACKAGE_DIR = Path(__file__).resolve().parent
_STDLIB = tuple(str(Path(sysconfig.get_paths()[k]).resolve()) for k in ("stdlib", "platstdlib"))


class BackendImportError(RuntimeError):
    """ExecuTorch, or what the harness needs of it, cannot be imported here: no case can run, none is blamed."""


class Verdict(Exception):
    """An exception the harness raises on purpose to say what the backend or its output did wrong."""


def _is_stdlib(filename: str) -> bool:
    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return True
    path = str(Path(filename).resolve())
    return path.startswith(_STDLIB) and "site-packages" not in path


def raising_frame(tb: TracebackType | None) -> str | None:
    """The file of the innermost frame of `tb` outside the standard library (None: no such frame)."""
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not _is_stdlib(filename):
            found = filename
        tb = tb.tb_next
    return found


def harness_module(filename: str | None) -> str | None:
    """'harness.run.execute' for a file of the harness package; None for any other file."""
    if filename is None:
        return None
    try:
        rel = Path(filename).resolve().relative_to(PACKAGE_DIR)
    except ValueError:
        return None
    return ".".join(("harness", *rel.with_suffix("").parts)).removesuffix(".__init__")


LIBRARIES = ("executorch", "torch", "torchao")  # whose frames name where an error arose
MAX_FRAMES = 16


def backend_frames(root: BaseException) -> tuple[str, ...]:
    """Where in torch or ExecuTorch an error arose: the frames of its traceback in those packages, innermost first,
    each 'package/path.py:Qualname' with the class of `self` where it is another (an ArmPass method run for
    SymbolicToTosaShapesPass: 'executorch/backends/arm/_passes/arm_pass.py:ArmPass.__call__[SymbolicToTosa...]').
    No line numbers: a registry entry names a function, and lines move between releases."""
    found = []
    tb = root.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        parts = Path(code.co_filename).parts
        top = max((i for i, part in enumerate(parts) if part in LIBRARIES), default=None)
        if top is not None and code.co_filename.endswith(".py"):
            name = f"{'/'.join(parts[top:])}:{getattr(code, 'co_qualname', code.co_name)}"
            owner = type(tb.tb_frame.f_locals.get("self", None)).__name__
            if "self" in tb.tb_frame.f_locals and owner not in name:
                name += f"[{owner}]"
            found.append(name)
        tb = tb.tb_next
    return tuple(reversed(found))[:MAX_FRAMES]


def harness_origin(error: BaseException, root: BaseException) -> str | None:
    """The harness module that raised `error`'s root cause `root`; None when it is torch's or ExecuTorch's, or a
    verdict on them."""
    if isinstance(root, Verdict) or isinstance(error, Verdict):
        return None
    if root.__traceback__ is None:  # built, never raised: a stage's verdict
        return None
    return harness_module(raising_frame(root.__traceback__))


def backend_import_error(e: ImportError) -> BackendImportError | None:
    """The one-line error for an ImportError of ExecuTorch (or inside it); None for any other import error."""
    frame = raising_frame(e.__traceback__) or ""
    if "executorch" in str(e) or "executorch" in (getattr(e, "name", "") or "") or f"{Path('/executorch/')}" in frame:
        return BackendImportError(describe_import_error(e))
    return None


def backend_load_error(e: BaseException) -> BackendImportError | None:
    """The one-line error for any exception raised while Python imported an ExecuTorch module (an old tree's
    exir asking torch for an op overload this torch lacks, say); None when it did not arise in such an import."""
    tb = e.__traceback__
    while tb is not None:  # importlib strips its own frames: a module's top level running is the mark of an import
        code = tb.tb_frame.f_code
        if code.co_name == "<module>" and f"{Path('/executorch/')}" in code.co_filename:
            import torch

            return BackendImportError(
                f"{describe_import_error(e)}; this ExecuTorch does not import beside torch {torch.__version__}"
            )
        tb = tb.tb_next
    return None


def describe_import_error(e: BaseException) -> str:
    """One line for an ExecuTorch that cannot be imported: what is missing, and from which module's import."""
    where = harness_module(raising_frame(e.__traceback__)) or _module_of(raising_frame(e.__traceback__))
    line = f"cannot import what the harness needs of ExecuTorch ({type(e).__name__}: {e}; imported by {where})"
    if str(getattr(e, "path", "") or "").endswith(".so") or ".so)" in str(e):
        line += (
            "; the tree's Python needs compiled parts the installed ExecuTorch lacks: build them in the tree "
            "(`pip install -e .` there) and run the harness in that environment"
        )
    return line


def _module_of(filename: str | None) -> str:
    if filename is None:
        return "?"
    for entry in sorted(sys.path, key=len, reverse=True):
        try:
            rel = Path(filename).resolve().relative_to(Path(entry).resolve())
        except (ValueError, OSError):
            continue
        return ".".join(rel.with_suffix("").parts)
    return filename
