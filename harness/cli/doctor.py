"""`doctor`: what this environment runs, and what is off here and why.

One place to look when a run says a speed-up is off, a target is skipped or a
source tree cannot be imported: the versions a result records, the ExecuTorch
in use (installed, a release overlay or a source tree, and the version
expectations are judged against), each speed-up with its probe's answer, whether
the partitioner's reasons can be read, and each target's runner.
"""

from __future__ import annotations

import json

from harness.cli.common import EXIT_OK
from harness.cli import options


def facts() -> dict:
    """Everything `doctor` prints (sets the process up: imports ExecuTorch, probes the speed-ups)."""
    from harness.expectations.applies import current
    from harness.lowering import partition_report
    from harness.overlays import marker
    from harness.policy.targets import TARGETS
    from harness.results.case_result import versions
    from harness.run.process import setup_process
    from harness.runners.registry import get_runner
    from harness.speedups import state
    from harness.speedups.catalog import SPEEDUPS

    setup_process()
    st = state.current()
    backend = current()
    targets = {}
    for t in TARGETS.values():
        available = get_runner(t.runner).available(t.family)
        targets[t.name] = {"runner": t.runner, "available": available.ok, "why": available.reason}
    return {
        "versions": versions(),
        "executorch": {"overlay": marker().get("kind", "installed"), "label": backend.label,
                       "expectations_version": backend.version},
        "speedups": {s.name: {"on": s.name in st.on, "why": st.off.get(s.name, ""), "saves": s.saves}
                     for s in SPEEDUPS},
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
    print("targets:")
    for name, t in found["targets"].items():
        print(f"  {name:22s} {t['runner']:9s} {'ready' if t['available'] else 'skipped: ' + t['why']}")
    return EXIT_OK


def add_parsers(sub) -> dict:
    """This module's verbs on the command line's subparsers; verb -> its command."""
    dr = sub.add_parser("doctor", help="what this environment runs: versions, the ExecuTorch in use, which speed-ups "
                        "are on and why not, which runners and tools are there")
    options.executorch(dr)
    dr.add_argument("--json", action="store_true", help="print it as one JSON object")
    return {"doctor": cmd_doctor}
