"""Which lines of the mutation targets each case runs: a stand-in case function for one sweep.

`run_case` here is the real one under `sys.settrace`, with a line tracer on
the frames of a mutation target's file only (every other frame runs
untraced). Each worker appends `{"descriptor", "lines"}` lines (target ->
line numbers run) to a file of its own under `trace_dir(run_id)`. A mutant
then runs only the cases that run one of its lines: code a case never runs
cannot change its result.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from pathlib import Path

from harness.mutate.catalog import source_file
from harness.policy.mutation import TARGETS
from harness.run.execute import run_case as _run_case
from harness.run.process import setup_process  # noqa: F401 - run once per worker by the parallel runner


def trace_dir(run_id: str) -> Path:
    return Path(tempfile.gettempdir()) / f"harness-trace-{run_id}"


@functools.lru_cache(maxsize=1)
def _files() -> dict[str, str]:
    return {str(source_file(t)): t for t in TARGETS}


def run_case(config, seed=0, target="tosa", keep_dir=None, canary="", run_id=""):
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
        result = _run_case(config, seed, target, keep_dir=keep_dir, canary=canary, run_id=run_id)
    finally:
        sys.settrace(None)
    out = trace_dir(run_id)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps({"descriptor": config.descriptor, "lines": {t: sorted(v) for t, v in seen.items()}}) + "\n")
    return result


def read_trace(run_id: str) -> dict[str, dict[str, set[int]]]:
    """descriptor -> target -> the line numbers it ran."""
    out: dict[str, dict[str, set[int]]] = {}
    for path in sorted(trace_dir(run_id).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            d = json.loads(line)
            out[d["descriptor"]] = {t: set(v) for t, v in d["lines"].items()}
    return out
