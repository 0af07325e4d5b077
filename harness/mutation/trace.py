"""Which lines of the mutation modules each case runs: a stand-in case function for one sweep.

`run_case` here is the real one under `sys.settrace`, with a line tracer on
the frames of a mutation module's file only (every other frame runs
untraced). The lines it ran (module -> line numbers) travel back with the
case's result, in `metrics["trace"]` (`lines_of` takes them off), so the
parent records each case the moment it ends and an interrupted trace keeps
what it did. A mutant then runs only the cases that run one of its lines:
code a case never runs cannot change its result. `run_pack` traces a pack
as one, at the packed sweep's speed on a large tier: each case gets its
pack's lines, a superset.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
from collections.abc import Iterator

from harness.faults.catalog import source_file
from harness.policy.mutation import MODULES
from harness.run.execute import run_configured as _run_configured
from harness.run.process import setup_process  # noqa: F401 - run once per worker by the parallel runner


@functools.lru_cache(maxsize=1)
def _files() -> dict[str, str]:
    return {str(source_file(t)): t for t in MODULES}


@contextlib.contextmanager
def _tracing() -> Iterator[dict[str, set[int]]]:
    """Record the lines of the modules' files that run in the block: module -> line numbers."""
    files = _files()
    seen: dict[str, set[int]] = {}

    def call(frame, event, arg):
        target_name = files.get(frame.f_code.co_filename)
        if target_name is None:
            return None  # this frame runs untraced
        lines = seen.setdefault(target_name, set())
        lines.add(frame.f_lineno)

        def line(frame, event, arg):
            if event == "line":
                lines.add(frame.f_lineno)
            return line

        return line

    sys.settrace(call)
    try:
        yield seen
    finally:
        sys.settrace(None)


TRACE_KEY = "trace"  # the metrics key the lines travel under, from the worker to the parent


def _with_lines(result, seen: dict[str, set[int]]):
    return dataclasses.replace(result, metrics={**result.metrics, TRACE_KEY: {t: sorted(v) for t, v in seen.items()}})


def lines_of(result) -> dict[str, list[int]]:
    """The lines a traced case ran, taken off its result (which then is as an untraced run's)."""
    return result.metrics.pop(TRACE_KEY, {})


def run_case(config, settings):
    """The case function a tracing worker runs (`harness.run.settings.CaseFunction`)."""
    with _tracing() as seen:
        result = _run_configured(config, settings)
    return _with_lines(result, seen)


def run_pack(configs, settings):
    """A pack under the tracer: each of its cases carries the lines the whole pack ran, a superset of its own
    (the cases a mutant then runs include the rest of each reaching pack; a line no pack ran no case ran)."""
    from harness.run.packed import run_pack as _run_pack

    with _tracing() as seen:
        results = _run_pack(configs, settings)
    return [_with_lines(r, seen) for r in results]
