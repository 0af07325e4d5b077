"""Which lines of the mutation modules each case runs: a stand-in case function for one sweep.

`run_case` here is the real one under `sys.settrace`, with a line tracer on
the frames of a mutation module's file only (every other frame runs
untraced). Each worker appends `{"descriptor", "lines"}` lines (module ->
line numbers run) to a file of its own under `trace_dir(run_id)`. A mutant
then runs only the cases that run one of its lines: code a case never runs
cannot change its result. `run_pack` traces a pack as one, at the packed
sweep's speed on a large tier: each case gets its pack's lines, a superset.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from harness.faults.catalog import source_file
from harness.policy.mutation import MODULES
from harness.run.execute import run_configured as _run_configured
from harness.run.process import setup_process  # noqa: F401 - run once per worker by the parallel runner


def trace_dir(run_id: str) -> Path:
    return Path(tempfile.gettempdir()) / f"harness-trace-{run_id}"


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


def _record(run_id: str, descriptors: list[str], seen: dict[str, set[int]]) -> None:
    out = trace_dir(run_id)
    out.mkdir(parents=True, exist_ok=True)
    lines = {t: sorted(v) for t, v in seen.items()}
    with open(out / f"{os.getpid()}.jsonl", "a") as f:
        for d in descriptors:
            f.write(json.dumps({"descriptor": d, "lines": lines}) + "\n")


def run_case(config, settings):
    """The case function a tracing worker runs (`harness.run.settings.CaseFunction`)."""
    with _tracing() as seen:
        result = _run_configured(config, settings)
    _record(settings.run_id, [config.descriptor], seen)
    return result


def run_pack(configs, settings):
    """A pack under the tracer: each of its cases is recorded with the lines the whole pack ran, a superset
    of its own (the cases a mutant then runs include the rest of each reaching pack; a line no pack ran
    no case ran)."""
    from harness.run.packed import run_pack as _run_pack

    with _tracing() as seen:
        results = _run_pack(configs, settings)
    _record(settings.run_id, [c.descriptor for c in configs], seen)
    return results


def read_trace(run_id: str) -> dict[str, dict[str, set[int]]]:
    """descriptor -> module -> the line numbers it ran."""
    out: dict[str, dict[str, set[int]]] = {}
    for path in sorted(trace_dir(run_id).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            d = json.loads(line)
            out[d["descriptor"]] = {t: set(v) for t, v in d["lines"].items()}
    return out
