"""Config shrinking: the smallest config that fails the way a case fails.

Greedy delta debugging over the config's fields, the way a test-case reducer
works: from the current config, candidates that each make one field simpler
(a context, the data set, dynamic dims, batch, bias and padding mode set to
their plainest value; a spatial dim dropped; fewer groups and channels; a
smaller input, kernel, stride, dilation, padding and output padding, each
spatial dim on its own) are tried biggest step first; the first whose result
has the same failure signature becomes the current config and the search
starts over from it. It ends when no candidate keeps the signature (the
config is then 1-minimal: no single simplification keeps the failure) or
when the run budget is spent. Candidates that are not valid configs, not
cases of the target or documented rejections cost no run.

The signature is what makes two failures the same: the outcome the case
actually had (before the registry explained it), the stage that failed, the
class of its error, and for a mismatch its locus: on the border only, or
reaching the interior. A config whose every output position is on the
border cannot tell the two apart and matches either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from harness.config import CAPTURED, ConfigError, ConvConfig, elements
from harness.expectations.rejections import expected_rejection
from harness.policy.targets import check_case, get_target

DEFAULT_MAX_RUNS = 60
_PLAIN = {"context": "none", "dataset": "normal", "dynamic": "none", "batch": 1, "bias": False, "padding_mode": "zeros"}
_DIMS = ("input_size", "kernel", "stride", "dilation", "padding", "output_padding")


class ShrinkError(ValueError):
    """The case cannot be shrunk (it does not fail)."""


@dataclass(frozen=True)
class Signature:
    outcome: str
    stage: str
    error_type: str
    locus: str = ""  # mismatches: 'border', 'interior', or 'all-border' (no interior position exists)

    def matches(self, other: Signature) -> bool:
        same = (self.outcome, self.stage, self.error_type) == (other.outcome, other.stage, other.error_type)
        return same and (self.locus == other.locus or "all-border" in (self.locus, other.locus))

    def __str__(self) -> str:
        parts = [self.outcome, self.stage or "-", self.error_type or "-"] + ([self.locus] if self.locus else [])
        return "/".join(parts)


def signature(result) -> Signature:
    """The failure signature of a CaseResult."""
    locus = ""
    where = result.metrics.get("where")
    if where:
        if where.get("border_positions_share", 0) >= 1.0:
            locus = "all-border"
        else:
            locus = "interior" if where.get("interior", 0) else "border"
    return Signature(result.actual_outcome, result.stage, result.error_type, locus)


size = elements  # what shrinking minimizes: the elements a case moves (input, weight, output)


def complexity(c: ConvConfig) -> int:
    """A measure every candidate strictly lowers, so the search ends: the sum of the numeric fields
    (every entry of the per-dim ones), plus one per field off its plainest value."""
    numbers = c.rank + c.in_channels + c.out_channels + c.groups + c.batch
    numbers += sum(sum(getattr(c, f)) for f in _DIMS if not isinstance(getattr(c, f), str))
    flags = sum(getattr(c, k) != v for k, v in _PLAIN.items() if k != "batch") + isinstance(c.padding, str)
    return numbers + flags


def _steps_down(value: int, least: int) -> list[int]:
    """Smaller values toward `least`, biggest step first: least, the halfway point, one less."""
    return sorted({v for v in (least, (value + least) // 2, value - 1) if least <= v < value})


def _with_dim(c: ConvConfig, name: str, i: int, value: int) -> dict:
    dims = list(getattr(c, name))
    dims[i] = value
    return {name: tuple(dims)}


def _drop_dim(c: ConvConfig, i: int) -> dict:
    changes: dict = {"rank": c.rank - 1}
    for name in _DIMS:
        value = getattr(c, name)
        if not isinstance(value, str):
            changes[name] = value[:i] + value[i + 1 :]
    return changes


def _moves(c: ConvConfig) -> Iterator[tuple[str, dict]]:
    """(label, field changes) of every one-field simplification, biggest first. A `captured` case's tensors
    fit its own config only: its one move is to drawn data, and the rest follows from there."""
    if c.dataset == CAPTURED:
        yield "dataset normal", {"dataset": "normal"}
        return
    for name, plain in _PLAIN.items():
        if getattr(c, name) != plain:
            yield f"{name} {plain}", {name: plain}
    if isinstance(c.padding, str):
        yield "explicit padding", {"padding": tuple(p for p, _ in c.explicit_padding())}
    for i in range(c.rank if c.rank > 1 else 0):
        yield f"drop spatial dim {i}", _drop_dim(c, i)
    g, per_in, per_out = c.groups, c.in_channels // c.groups, c.out_channels // c.groups
    for groups in _steps_down(g, 1):
        yield f"groups {groups}", {"groups": groups, "in_channels": per_in * groups, "out_channels": per_out * groups}
    for n in _steps_down(per_in, 1):
        yield f"in_channels {n * g}", {"in_channels": n * g}
    for n in _steps_down(per_out, 1):
        yield f"out_channels {n * g}", {"out_channels": n * g}
    for name, least in (
        ("input_size", 1),
        ("kernel", 1),
        ("stride", 1),
        ("dilation", 1),
        ("padding", 0),
        ("output_padding", 0),
    ):
        value = getattr(c, name)
        if isinstance(value, str):
            continue
        for i, v in enumerate(value):
            for smaller in _steps_down(v, least):
                yield f"{name}[{i}] {smaller}", _with_dim(c, name, i, smaller)


def candidates(c: ConvConfig, target: str = "tosa", lost: frozenset[str] = frozenset()) -> list[tuple[str, ConvConfig]]:
    """Valid, simpler configs one step from `c` that are cases of the target and not documented rejections:
    the plain-value moves first (one run each, and they often keep a failure), then the smallest configs
    first; moves of a field that lost the failure before (`lost`) after all others."""
    t = get_target(target)
    found = []
    for order, (label, changes) in enumerate(_moves(c)):
        try:
            candidate = c.replace(**changes)
            check_case(t, candidate)
        except ConfigError:
            continue
        if complexity(candidate) < complexity(c) and not expected_rejection(candidate, t.family):
            plain = label.split(" ")[0] in _PLAIN or label == "explicit padding"
            found.append(((_field(label) in lost, not plain, size(candidate), order), label, candidate))
    return [(label, candidate) for _, label, candidate in sorted(found, key=lambda f: f[0])]


def _field(label: str) -> str:
    """The field a move changes ('input_size[1]', 'groups', 'drop spatial dim 0', 'context')."""
    return label.rsplit(" ", 1)[0] if label.startswith("drop") else label.split(" ")[0]


@dataclass
class Shrunk:
    start: str
    minimal: str
    signature: Signature
    runs: int
    steps: list[str] = field(default_factory=list)  # the simplifications kept, in order
    exhausted: bool = False  # the budget ran out before the config was 1-minimal
    start_size: int = 0
    minimal_size: int = 0
    repro: str = ""


def shrink(
    config: ConvConfig,
    run: Callable[[ConvConfig], object],
    target: str = "tosa",
    max_runs: int = DEFAULT_MAX_RUNS,
    progress: Callable[[str], None] | None = None,
) -> Shrunk:
    """Shrink a failing case; `run(config)` returns its CaseResult (a seed and a canary are the caller's)."""
    if max_runs < 1:
        raise ConfigError(f"invalid --max-runs={max_runs}: must be an integer >= 1")
    first = run(config)
    if first.green:
        raise ShrinkError(f"{config.descriptor} is {first.outcome.value}: there is no failure to shrink")
    wanted = signature(first)
    current, last, runs, steps, tried, lost = config, first, 1, [], {config.descriptor}, set()
    improved, exhausted = True, False
    while improved and not exhausted:
        improved = False
        for label, candidate in candidates(current, target, frozenset(lost)):
            if candidate.descriptor in tried:
                continue
            if runs >= max_runs:
                exhausted = True
                break
            tried.add(candidate.descriptor)
            result = run(candidate)
            runs += 1
            kept = not result.green and wanted.matches(signature(result))
            if progress:
                progress(f"{runs:3d} {'kept' if kept else 'lost'} {label}: {candidate.descriptor}")
            if kept:
                current, last, improved = candidate, result, True
                steps.append(label)
                break
            lost.add(_field(label))
    return Shrunk(
        config.descriptor, current.descriptor, wanted, runs, steps, exhausted, size(config), size(current), last.repro
    )
