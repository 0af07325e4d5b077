"""`doctor`: what this environment runs, and what is off here and why.

One place to look when a run says a speed-up is off, a target is skipped or a
source tree cannot be imported: the versions a result records, the ExecuTorch
in use (installed, a release overlay or a source tree, and the version
expectations are judged against), each speed-up with its probe's answer, whether
the partitioner's reasons can be read, and each target's runner.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from harness.cli import options
from harness.cli.common import EXIT_OK

# (name, how it is found, what it is for, how to get it): the tools beyond the Python packages. An FVP is not
# here: the fvp runner's own lookup says whether its targets run (the targets lines, with the reason).
TOOLS = (
    ("vela", "module:ethosu.vela", "Ethos-U targets: Vela's compile of each case", "pip install 'executorch[ethos-u]'"),
    (
        "model-converter",
        "exe:model-converter",
        "the vgf target: the ML SDK's TOSA-to-VGF converter",
        "pip install -e '.[vgf]'",
    ),
    ("ray", "module:ray", "--cluster: a sweep over a Ray cluster", "pip install -e '.[cluster]'"),
    ("chromium", "exe:chromium", "the report's browser test (tests/report)", "apt-get install chromium"),
    ("git", "exe:git", "bisect commits, --executorch PATH@REV", "apt-get install git"),
)


def tools() -> dict:
    """Each tool: found or not, what it is for, how to get it."""

    from harness.tools import locate

    out = {}
    for name, how, purpose, get in TOOLS:
        kind, _, what = how.partition(":")
        if kind == "module":
            found = importlib.util.find_spec(what) is not None
        else:
            found = locate(what) is not None
        out[name] = {"found": found, "for": purpose, "get": get}
    return out


def paths() -> dict:
    """Where results, reports and the history go by default, and whether they can be written here."""

    from harness.cli.paths import DEFAULTS, check_path
    from harness.config import ConfigError
    from harness.history.db import DEFAULT_DB

    existing = Path(DEFAULTS).absolute()
    while not existing.exists() and existing != existing.parent:  # doctor makes nothing: the nearest that exists
        existing = existing.parent
    try:
        check_path("reports", DEFAULTS if existing == Path(DEFAULTS).absolute() else existing, "dir")
        writable = ""
    except ConfigError as e:
        writable = str(e)
    return {
        "reports": f"{DEFAULTS}/<tier>/ (results.jsonl, summary.md, index.html, junit.xml)",
        "history": DEFAULT_DB,
        "problem": writable,
    }


def facts() -> dict:
    """Everything `doctor` prints (sets the process up: imports ExecuTorch, probes the speed-ups)."""
    from harness.config import ConfigError
    from harness.expectations.applies import current
    from harness.lowering import partition_report
    from harness.overlays import marker
    from harness.policy.targets import TARGETS, check_tools
    from harness.results.case_result import versions
    from harness.run.process import setup_process
    from harness.runners.registry import get_runner
    from harness.speedups import state
    from harness.speedups.catalog import SPEEDUPS

    setup_process()
    st = state.current()
    backend = current()
    targets = {}
    for t in TARGETS.values():  # ready only when it can run: its lowering's tools here and its runner
        try:
            check_tools(t)
            available = get_runner(t.runner).available(t.family)
            ok, why = available.ok, available.reason
        except ConfigError as e:
            ok, why = False, str(e)
        targets[t.name] = {"runner": t.runner, "available": ok, "why": why}
    return {
        "tools": tools(),
        "paths": paths(),
        "versions": versions(),
        "executorch": {
            "overlay": marker().get("kind", "installed"),
            "label": backend.label,
            "expectations_version": backend.version,
        },
        "speedups": {
            s.name: {"on": s.name in st.on, "why": st.off.get(s.name, ""), "saves": s.saves} for s in SPEEDUPS
        },
        "speedups_proof": st.proof,
        "partition_report": partition_report.unavailable() or "recorded",
        "targets": targets,
    }


def cmd_doctor(args) -> int:
    found = facts()
    if args.json:
        print(json.dumps(found, sort_keys=True))
        return EXIT_OK
    print("versions:")
    for k, v in found["versions"].items():
        print(f"  {k:24s} {v}")
    e = found["executorch"]
    print(f"executorch: {e['label']} ({e['overlay']}); expectations judged for version {e['expectations_version']}")
    print(f"speed-ups ({found['speedups_proof']}):")
    for name, s in found["speedups"].items():
        print(f"  {'on ' if s['on'] else 'off'} {name:18s} {s['why'] or s['saves']}")
    print(f"partitioner's reasons: {found['partition_report']}")
    print("tools:")
    for name, t in found["tools"].items():
        print(
            f"  {'found  ' if t['found'] else 'missing'} {name:15s} {t['for']}"
            + ("" if t["found"] else f"; get it: {t['get']}")
        )
    where = found["paths"]
    print(
        f"reports: {where['reports']}\nhistory: {where['history']}"
        + (f"\n  {where['problem']}" if where["problem"] else "")
    )
    ready = [name for name, t in found["targets"].items() if t["available"]]
    print(f"targets ready: {', '.join(ready) or 'none'}")
    for name, t in found["targets"].items():
        if not t["available"]:
            print(f"  skipped {name} ({t['runner']}): {t['why']}")
    return EXIT_OK


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command."""
    dr = sub.add_parser(
        "doctor",
        help="what this environment runs: versions, the ExecuTorch in use, which speed-ups "
        "are on and why not, which runners and tools are there",
    )
    options.executorch(dr)
    dr.add_argument("--json", action="store_true", help="print it as one JSON object")
    return {"doctor": cmd_doctor}
