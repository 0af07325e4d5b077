"""Which functions of the mutation targets each case runs: a stand-in case function for one sweep.

`run_case` here is the real one under `sys.setprofile`, recording every call
into a mutation target's file (nested functions count as their enclosing
top-level function or method, which is what a mutant changes). Each worker
appends `{"descriptor", "functions"}` lines to a file of its own under
`trace_dir(run_id)`. A mutant then runs only the cases that reach its function.
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
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call":
            key = files.get(frame.f_code.co_filename)
            if key is not None:
                seen.add(f"{key}:{frame.f_code.co_qualname.split('.<locals>')[0]}")

    sys.setprofile(profile)
    try:
        result = _run_case(config, seed, target, keep_dir=keep_dir, canary=canary, run_id=run_id)
    finally:
        sys.setprofile(None)
    out = trace_dir(run_id)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps({"descriptor": config.descriptor, "functions": sorted(seen)}) + "\n")
    return result


def read_trace(run_id: str) -> dict[str, set[str]]:
    """descriptor -> the "target:function" names it ran."""
    out: dict[str, set[str]] = {}
    for path in sorted(trace_dir(run_id).glob("*.jsonl")):
        for line in path.read_text().splitlines():
            d = json.loads(line)
            out[d["descriptor"]] = set(d["functions"])
    return out
