"""The known-issue registry: data in known_issues.toml, loaded once.

A registry entry turns a failure into `known_issue` with its reason, and only
the failure it describes. It matches a case by a regex over the descriptor
and, optionally, `fields` (config attributes or properties and the values
they may take), on the ExecuTorch it holds for (`executorch`, a PEP 440
specifier set, with `introduced_by`/`fixed_by` commits for source trees:
`harness.expectations.applies`), and on the target families it names.

Every outcome it lists carries a signature that a different failure cannot
meet (a test walks them):

* an error or a rejection (`lowering_error`, `runner_error`, `not_delegated`):
  a regex over the case's reason (`error`, for every such outcome; `errors.<outcome>` for one),
  which for `not_delegated` holds the partitioner's own message, with `left_on_cpu`: each node the entry leaves
  on the CPU and its own words (`harness.expectations.left_on_cpu`: another node left out for a reason of its
  own is a new failure); and for a `lowering_error`, `frame`: where
  it arises, a function, file or pass (or a list of them) that one of the error's frames in torch or
  ExecuTorch must contain (`harness.blame.backend_frames`, measured on a case of the entry), so the same
  message raised by another pass is a new failure (`from_check = true` instead where the error is the
  harness's own check of the lowered graph, a wrong weight type or quantization, raised nowhere);
* a `mismatch`: `[issue.mismatch]` bounds from the measured worst case with a
  stated margin (`harness.policy.expectations`): the largest error
  (`max_lsb` for INT schemes, `max_err` in DOT_PRODUCT units for float ones),
  the largest share of elements off (`max_share`), the lowest SQNR against fp32
  (`min_sqnr_db`, INT), where the errors may sit (`locus`: border, interior or
  any), and `measured`, the data the bounds come from. A reason pattern may
  narrow it further (`errors.mismatch`).

A registered case that fails outside its entry's signature is a new failure.
An entry is strict: a matching case that passes is reported as fixed (stale),
so the entry gets removed rather than silently hiding a later regression;
`strict = false` lets it pass (say why in the reason).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from harness.config import ConvConfig, parse_descriptor
from harness.expectations.applies import Backend, Holds, holds, or_current
from harness.expectations.left_on_cpu import causes, cpu_nodes
from harness.policy.limits import TIERS

REGISTRY = Path(__file__).with_name("known_issues.toml")
ERROR_OUTCOMES = ("lowering_error", "runner_error", "not_delegated")
OUTCOMES = (*ERROR_OUTCOMES, "mismatch")
LOCI = ("border", "interior", "any")
_MISMATCH_KEYS = {"max_lsb", "max_err", "max_share", "min_sqnr_db", "locus", "measured", "replay"}


class RegistryError(ValueError):
    """A malformed registry entry (one line naming the entry and the field)."""


@dataclass(frozen=True)
class MismatchBounds:
    """The worst a registered mismatch may be; anything beyond is a new failure."""

    max_share: float  # n_over / n_total
    locus: str  # "border", "interior" or "any"; "mechanism" for a replay: where the mechanism puts it
    measured: str  # where the bounds come from
    max_lsb: float | None = None  # INT schemes: largest error in output steps
    max_err: float | None = None  # float schemes: largest |err| in DOT_PRODUCT units
    min_sqnr_db: float | None = None  # INT schemes: the SQNR against fp32 may not drop below this

    replay: str = ""  # a registered mechanism (harness.judging.replays): the output must be what it predicts

    def admits(self, metrics: dict) -> bool:
        """Whether a mismatch with these metrics lies inside the bounds. With a replay, only an output within the
        case's own fake-quant tolerance of the mechanism's replay is: every element where the mechanism puts it."""
        if self.replay:
            return bool(metrics.get("replays", {}).get(self.replay, {}).get("fits"))
        if self.max_lsb is not None and metrics.get("max_lsb", float("inf")) > self.max_lsb:
            return False
        if self.max_err is not None and metrics.get("max_err", float("inf")) > self.max_err:
            return False
        total = metrics.get("n_total") or 0
        if total and metrics.get("n_over", 0) / total > self.max_share:
            return False
        sqnr = metrics.get("sqnr_db")
        if self.min_sqnr_db is not None and sqnr is not None and sqnr < self.min_sqnr_db:
            return False
        where = metrics.get("where")
        if self.locus == "border":
            return bool(where) and where.get("interior") == 0
        if self.locus == "interior":
            return bool(where) and where.get("border", 0) == 0
        return True


@dataclass(frozen=True)
class KnownIssue:
    id: str
    tier: str  # the smallest sweep that reproduces it (a test keeps it true)
    descriptor: re.Pattern
    outcomes: tuple[str, ...]
    reason: str
    link: str
    holds: Holds  # the ExecuTorch releases (and tree commits) it holds for
    errors: tuple[tuple[str, re.Pattern], ...] = ()  # outcome -> the reason must match this
    mismatch: MismatchBounds | None = None
    fields: tuple[tuple[str, tuple], ...] = ()  # config attribute -> allowed values
    strict: bool = True  # a matching case that passes is reported as fixed
    families: tuple[str, ...] = ()  # target families it is seen on ('tosa', 'ethos-u55', ...); () = every target
    frame: tuple[str, ...] = ()  # an error entry: where it arises, one of these in one of the error's frames
    from_check: bool = False  # its lowering_error is the harness's check of the lowered graph: raised nowhere
    # a not_delegated entry: every compute node it leaves on the CPU (op -> the partitioner's reason, a regex);
    # a case that leaves another node out, or one for another reason, is a new failure
    left_on_cpu: tuple[tuple[str, re.Pattern], ...] = ()

    def leaves_exactly(self, nodes: dict[str, str] | None) -> bool:
        """Whether the nodes refused for a reason of their own are this entry's, each for its reason."""
        wanted = dict(self.left_on_cpu)
        found = causes(nodes) if nodes is not None else None
        return (
            found is not None
            and set(found) == set(wanted)
            and all(wanted[op].search(said) is not None for op, said in found.items())
        )

    def error_for(self, outcome: str) -> re.Pattern | None:
        return dict(self.errors).get(outcome)

    def explains(self, outcome: str, metrics: dict, reason: str = "", frames: tuple[str, ...] | None = None) -> bool:
        """Whether this entry accounts for a case that ended in `outcome` (its signature fits). An entry with a
        `frame` needs it among the error's frames: the same message from another pass is another failure
        (`frames` None: a result from before frames were kept, where only the message can be checked)."""
        if outcome not in self.outcomes:
            return False
        pattern = self.error_for(outcome)
        if pattern is not None and pattern.search(reason) is None:
            return False
        if self.frame and frames is not None and not any(s in f for s in self.frame for f in frames):
            return False
        if self.from_check and frames:  # the check's message, raised by torch or ExecuTorch: another failure
            return False
        if outcome == "not_delegated" and self.left_on_cpu:
            if not self.leaves_exactly(cpu_nodes(reason)):
                return False
        if outcome == "mismatch":
            return self.mismatch is not None and self.mismatch.admits(metrics)
        return pattern is not None

    def matches(self, descriptor: str, family: str | None = None, backend: Backend | None = None) -> bool:
        """Whether the entry is about this case (on a target of `family`, on `backend`; None: any)."""
        if family is not None and self.families and family not in self.families:
            return False
        if not self.holds(backend):
            return False
        if self.descriptor.search(descriptor) is None:
            return False
        if not self.fields:
            return True
        config = parse_descriptor(descriptor)
        return all(getattr(config, name) in allowed for name, allowed in self.fields)


def _regex(where: str, what: str, text) -> re.Pattern:
    if not isinstance(text, str):
        raise RegistryError(f"{where}: {what} must be a regex string, not {text!r}")
    try:
        return re.compile(text)
    except re.error as e:
        raise RegistryError(f"{where}: bad {what} regex {text!r}: {e}") from e


def _errors(where: str, entry: dict, outcomes: list[str]) -> tuple[tuple[str, re.Pattern], ...]:
    found: dict[str, re.Pattern] = {}
    if "error" in entry:
        found = {o: _regex(where, "error", entry["error"]) for o in outcomes}
    for outcome, text in entry.get("errors", {}).items():
        if outcome not in outcomes:
            raise RegistryError(f"{where}: errors.{outcome} names an outcome the entry does not list")
        found[outcome] = _regex(where, f"errors.{outcome}", text)
    missing = [o for o in outcomes if o in ERROR_OUTCOMES and o not in found]
    if missing:
        raise RegistryError(
            f"{where}: {', '.join(missing)} needs an error pattern (error or errors.<outcome>): "
            "an entry may not match on its outcome alone"
        )
    return tuple(found.items())


def _bounds(where: str, table) -> MismatchBounds:
    if not isinstance(table, dict):
        raise RegistryError(f"{where}: a mismatch needs an [issue.mismatch] table of bounds")
    unknown = set(table) - _MISMATCH_KEYS
    if unknown:
        raise RegistryError(
            f"{where}: unknown mismatch key(s) {sorted(unknown)}; allowed: {', '.join(sorted(_MISMATCH_KEYS))}"
        )
    if "replay" in table:  # the mechanism is the bound: nothing else to admit
        extra = set(table) - {"replay", "measured"}
        if extra or not isinstance(table["replay"], str) or not table["replay"] or "measured" not in table:
            raise RegistryError(
                f"{where}: a replayed mismatch names its replay (harness.judging.replays) and what "
                f"was measured, nothing else (not {sorted(extra)})"
            )
        return MismatchBounds(1.0, "mechanism", " ".join(str(table["measured"]).split()), replay=table["replay"])
    if "max_lsb" not in table and "max_err" not in table:
        raise RegistryError(f"{where}: mismatch bounds need max_lsb (INT) or max_err (float)")
    for key in ("max_share", "locus", "measured"):
        if key not in table:
            raise RegistryError(f"{where}: mismatch bounds need {key}")
    if table["locus"] not in LOCI:
        raise RegistryError(f"{where}: mismatch locus {table['locus']!r}; allowed: {', '.join(LOCI)}")
    numbers = {k: table[k] for k in ("max_lsb", "max_err", "max_share", "min_sqnr_db") if k in table}
    for k, v in numbers.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise RegistryError(f"{where}: mismatch {k} must be a number, not {v!r}")
    return MismatchBounds(
        float(table["max_share"]),
        table["locus"],
        " ".join(str(table["measured"]).split()),
        **{k: float(v) for k, v in numbers.items() if k != "max_share"},
    )


def parse_registry(text: str, source: str = "registry") -> tuple[KnownIssue, ...]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RegistryError(f"{source}: not valid TOML: {e}") from e
    issues = []
    known_fields = set(ConvConfig.__dataclass_fields__) | {
        n for n, v in vars(ConvConfig).items() if isinstance(v, property)
    }
    for i, entry in enumerate(data.get("issue", [])):
        where = f"{source} issue #{i + 1} ({entry.get('id', '?')})"
        for key in ("id", "tier", "descriptor", "outcomes", "reason", "link", "executorch"):
            if key not in entry:
                raise RegistryError(f"{where}: missing field {key!r}")
        if entry["tier"] not in TIERS:
            raise RegistryError(f"{where}: unknown tier {entry['tier']!r}; tiers: {', '.join(TIERS)}")
        fields = []
        for name, wanted in entry.get("fields", {}).items():
            if name not in known_fields:
                raise RegistryError(f"{where}: unknown config field {name!r} in fields")
            values = wanted if isinstance(wanted, list) else [wanted]
            fields.append((name, tuple(tuple(v) if isinstance(v, list) else v for v in values)))
        pattern = _regex(where, "descriptor", entry["descriptor"])
        bad = [o for o in entry["outcomes"] if o not in OUTCOMES]
        if bad:
            raise RegistryError(f"{where}: unknown outcome(s) {bad}; allowed: {', '.join(OUTCOMES)}")
        flags: dict = {"errors": _errors(where, entry, entry["outcomes"])}
        if "mismatch" in entry["outcomes"]:
            flags["mismatch"] = _bounds(where, entry.get("mismatch"))
        elif "mismatch" in entry:
            raise RegistryError(f"{where}: mismatch bounds on an entry that lists no mismatch outcome")
        if "frame" in entry:
            if not set(entry["outcomes"]) & {"lowering_error", "harness_error"}:
                raise RegistryError(f"{where}: frame names where an error arises; its outcomes have no error frames")
            frame = entry["frame"] if isinstance(entry["frame"], list) else [entry["frame"]]
            if not frame or not all(isinstance(s, str) and s.strip() for s in frame):
                raise RegistryError(
                    f"{where}: frame must name a function, file or pass (a string or a list of "
                    f"them), not {entry['frame']!r}"
                )
            flags["frame"] = tuple(frame)
        if "left_on_cpu" in entry:
            table = entry["left_on_cpu"]
            if entry["outcomes"] != ["not_delegated"] or not isinstance(table, dict) or not table:
                raise RegistryError(
                    f"{where}: left_on_cpu maps each op a not_delegated entry leaves on the CPU to "
                    f"its reason, e.g. {{ hardtanh = 'Node was not marked as quantized' }}"
                )
            flags["left_on_cpu"] = tuple((op, _regex(where, f"left_on_cpu.{op}", r)) for op, r in table.items())
        if "from_check" in entry:
            if not isinstance(entry["from_check"], bool) or "frame" in entry:
                raise RegistryError(f"{where}: from_check is true or false, and an entry raised nowhere has no frame")
            flags["from_check"] = entry["from_check"]
        if "families" in entry:
            families = entry["families"]
            if not isinstance(families, list) or not all(isinstance(f, str) for f in families):
                raise RegistryError(f"{where}: families must be a list of target families, not {families!r}")
            flags["families"] = tuple(families)
        if "strict" in entry:
            if not isinstance(entry["strict"], bool):
                raise RegistryError(f"{where}: strict must be true or false, not {entry['strict']!r}")
            flags["strict"] = entry["strict"]
        try:
            applies = holds(entry["executorch"], entry.get("introduced_by", ""), entry.get("fixed_by", ""), where)
        except ValueError as e:
            raise RegistryError(str(e)) from None
        issues.append(
            KnownIssue(
                entry["id"],
                entry["tier"],
                pattern,
                tuple(entry["outcomes"]),
                " ".join(entry["reason"].split()),
                entry["link"],
                applies,
                fields=tuple(fields),
                **flags,
            )
        )
    return tuple(issues)


@cache
def registry() -> tuple[KnownIssue, ...]:
    return parse_registry(REGISTRY.read_text(encoding="utf-8"), str(REGISTRY))


def known_issues(descriptor: str, family: str | None = None, backend: Backend | None = None) -> tuple[KnownIssue, ...]:
    """Every registry entry that matches (on a target of `family`, if given, and on `backend`: by default the
    ExecuTorch of this process, `applies.ANY` for any), in registry order (a case can hit two issues, e.g. a
    ReLU6 that is not delegated and a dynamic-shape pad)."""
    backend = or_current(backend)
    return tuple(issue for issue in registry() if issue.matches(descriptor, family, backend))


def known_issue(
    descriptor: str,
    outcome: str | None = None,
    metrics: dict | None = None,
    reason: str = "",
    family: str | None = None,
    backend: Backend | None = None,
) -> KnownIssue | None:
    """The first matching entry; with `outcome` (and the case's `metrics` and `reason`), the first that
    explains it."""
    for issue in known_issues(descriptor, family, backend):
        if outcome is None or issue.explains(outcome, metrics or {}, reason):
            return issue
    return None


def entry(issue_id: str) -> KnownIssue | None:
    """The registry entry with this id, if it is still there."""
    return next((i for i in registry() if i.id == issue_id), None)
