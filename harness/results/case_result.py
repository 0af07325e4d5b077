"""A case's result: its outcome kinds and the structured record of one case.

Every field a report, a diff or a JUnit writer needs is a field of its own
(the registry issue, the rule that decided, what happened before the registry
explained it), so nothing reads them back out of the human `reason`. The JSON
form of a `CaseResult` is one line of a results file (`harness.results.store`),
described by `harness/results/schema.json` at `SCHEMA_VERSION`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass, field
from enum import Enum
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# 1: the first format (no version field; the registry id and the actual
# outcome only inside `reason` and `metrics`). 2: structured fields.
SCHEMA_VERSION = 2


class Outcome(str, Enum):
    PASS = "pass"
    MISMATCH = "mismatch"
    LOWERING_ERROR = "lowering_error"  # exception while quantizing, exporting or lowering
    NOT_DELEGATED = "not_delegated"  # some of the conv left on the CPU
    RUNNER_ERROR = "runner_error"  # the target rejected the graph or crashed
    EXPECTED_REJECTION = "expected_rejection"  # documented as unsupported, rejected cleanly
    MISTRUSTED = "mistrusted"  # degenerate reference output: proves nothing (never a pass, not a failure)
    KNOWN_ISSUE = "known_issue"  # failure listed in the registry, with a reason
    SKIPPED = "skipped"  # runner absent, with the reason
    HARNESS_ERROR = "harness_error"  # the harness itself failed: a bug here, not in the backend

    @property
    def ok(self) -> bool:
        """Outcomes that leave a sweep green."""
        return self in (
            Outcome.PASS,
            Outcome.EXPECTED_REJECTION,
            Outcome.KNOWN_ISSUE,
            Outcome.SKIPPED,
            Outcome.MISTRUSTED,
        )


@dataclass
class CaseResult:
    descriptor: str
    seed: int
    outcome: Outcome
    reason: str = ""  # what happened, in words (the failure's own message, or why a case proves nothing)
    target: str = "tosa"
    runner: str = "tosa-ref"
    run_id: str = ""
    # What happened before a documented rejection or the registry explained it
    # (equal to `outcome` when nothing did).
    actual_outcome: str = ""
    rule: str = ""  # the judging rule that decided (harness.policy.schemes.DECIDING_RULES); '' if not judged
    rejection: str = ""  # the documented rejection (harness.expectations.rejections) that applies, if any
    issue: str = ""  # the registry entry (harness/expectations/known_issues.toml) that explains it, or went stale
    stage: str = ""  # the stage that failed (build, quantize, lower, run, compare; harness), '' if none did
    error_type: str = ""  # the class of the exception at the root of that failure
    # Where in torch or ExecuTorch it arose, innermost first (harness.blame.backend_frames); None for a result
    # written before frames were kept (a registry entry's frame cannot be checked on it).
    error_frames: list[str] | None = None
    # Set when an expectation no longer holds: a registered known issue or a
    # documented rejection that did not happen. Such a case is not green.
    stale: str = ""
    canary: str = ""  # the fault injected into the backend for this run, if any
    data_file: str = ""  # a `captured` case: the file its tensors come from
    metrics: dict = field(default_factory=dict)  # keys: harness.results.metrics.METRICS
    tosa_ops: list[str] = field(default_factory=list)
    conv_ops: list[str] = field(default_factory=list)
    timings_s: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    output_sha256: str = (
        ""  # the outputs' bytes at every size, in order, digested: same digest, same numbers; '' if none
    )
    packed: int = 0  # the size of the pack it was lowered and run in (harness.run.packed); 0: alone
    artifacts: str | None = None  # directory holding inputs/outputs/flatbuffer of a failure
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not self.actual_outcome:
            self.actual_outcome = self.outcome.value

    @property
    def green(self) -> bool:
        """Leaves a sweep green: an ok outcome and no stale expectation."""
        return self.outcome.ok and not self.stale

    def to_dict(self) -> dict:
        d = asdict(self)
        d["outcome"] = self.outcome.value
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False, default=str)

    @classmethod
    def from_dict(cls, d: dict) -> CaseResult:
        values = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        values["outcome"] = Outcome(d["outcome"])
        return cls(**values)

    @property
    def repro(self) -> str:
        target = f" --target {self.target}" if self.target != "tosa" else ""
        canary = f" --canary {self.canary}" if self.canary else ""
        data = f" --captured '{self.data_file}'" if self.data_file else ""
        return f"python -m harness run '{self.descriptor}' --seed {self.seed}{target}{canary}{data}"

    @property
    def added_by(self) -> str:
        """The stage that added this case's error (harness.judging.attribution); '' for a case that did not fail
        on its numbers."""
        return (self.metrics.get("attribution") or {}).get("added_by", "")

    @property
    def next_step(self) -> str:
        """Where to look next for a wrong number, from the stage that added it: the lowering's error goes to
        `bisect passes`, which names the pass; the quantizer's and the executors' are not a pass's."""
        if self.added_by == "lowering":
            return self.repro.replace("python -m harness run ", "python -m harness bisect passes ", 1)
        return {
            "quantization": "the quantizer: its fake-quantized model is already off the fp64 reference (no pass to "
            "bisect; `shrink` finds the smallest config that keeps it)",
            "executor": "the executors disagree on the same lowered program (the second executor's, not a pass's)",
        }.get(self.added_by, "")


def new_run_id() -> str:
    """A run's id: its start time and a random suffix (sortable, unique)."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


ML_SDK = ("ai-ml-sdk-model-converter", "ai-ml-sdk-scenario-runner", "ai-ml-emulation-layer-for-vulkan")


@cache
def versions() -> dict[str, str]:
    """Versions of everything that shapes a result (read once per process, without importing any of it)."""

    out = {}
    for name in ("torch", "executorch", "tosa-tools", "ethos-u-vela", "harness"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    for name in ML_SDK:  # recorded where installed: the VGF targets' converter and executor
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    out["executorch-git"] = _executorch_git()
    out.update(_executorch_tree())
    out["harness-commit"] = _harness_commit()
    return out


def _executorch_tree() -> dict[str, str]:
    """For an ExecuTorch source tree laid over the installed one (`--executorch PATH`): which tree and commit,
    and the version its version.txt gives; nothing for a release."""
    from harness.overlays import marker

    m = marker()
    if m.get("kind") != "tree":
        return {}
    commit = m.get("commit", "")
    return {
        "executorch-tree": f"{m.get('source', '?')}@{commit[:12]}{'+dirty' if m.get('dirty') else ''}",
        "executorch-tree-version": m.get("version", ""),
        # 'tree': exir, the passes and serializers were the tree's own; 'installed X': only parts of the tree
        "executorch-core": m.get("core", f"installed {m.get('compiled_from', '?')}"),
        "executorch-compiled": m.get("compiled_from", ""),
    }


def _executorch_git() -> str:
    """The commit ExecuTorch was built from, as its `version.py` records it."""

    try:
        spec = importlib.util.find_spec("executorch")
    except (ImportError, ValueError):
        return "unknown"
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "version.py"
        if path.exists():
            found = re.search(r"git_version[^=]*=\s*['\"]([0-9a-f]+)['\"]", path.read_text())
            return found.group(1)[:12] if found else "unknown"
    return "unknown"


def _harness_commit() -> str:
    """This checkout's commit, '+dirty' when it has uncommitted changes; 'unknown' outside git."""

    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10
        )
        if head.returncode:
            return "unknown"
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty else "")
