"""The numbers a report shows, computed once for the Markdown summary and the HTML page.

Every figure says which cases it covers. Numeric figures cover the judged
cases that passed (a known issue's error is the bug's, not the lowering's; a
mistrusted case proves nothing); an error is always shown against its own case's limit, as a
ratio (`harness.results.metrics.error_ratio`: <= 1 within the limit).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from harness.config import parse_descriptor
from harness.results.case_result import CaseResult, Outcome
from harness.results.metrics import error_ratio

OUTCOME_ORDER = [o.value for o in Outcome]


def outcome_counts(results: list[CaseResult]) -> dict[str, int]:
    counts = Counter(r.outcome.value for r in results)
    return {k: counts[k] for k in OUTCOME_ORDER if counts[k]}


def op_of(r: CaseResult) -> str:
    """The TOSA conv op(s) the case lowered to, or its torch op in parentheses when it did not lower."""
    if r.conv_ops:
        return "+".join(sorted(set(r.conv_ops)))
    c = parse_descriptor(r.descriptor)
    return f"({'t' if c.transposed else ''}conv{c.rank}d)"


def scheme_of(r: CaseResult) -> str:
    return parse_descriptor(r.descriptor).scheme


def judged(results: list[CaseResult]) -> list[CaseResult]:
    """The cases numeric figures cover: judged and passed (not a known issue, not mistrusted, not stale)."""
    return [r for r in results if r.rule and r.outcome is Outcome.PASS and not r.stale]


@dataclass
class SchemeNumbers:
    scheme: str
    cases: int
    exact_share: float  # of the elements, against the deciding reference (INT) / the exactly rounded result (float)
    worst_ratio: float  # the largest error / own limit
    worst_case: str
    min_sqnr: float | None  # INT: the SQNR against fp32 of the case nearest its floor, and that floor
    min_sqnr_floor: float | None
    unfloored: int = 0  # INT cases whose data set has no SQNR floor (`unfloored_reasons` says why)


def scheme_numbers(results: list[CaseResult]) -> list[SchemeNumbers]:
    by_scheme: dict[str, list[CaseResult]] = defaultdict(list)
    for r in judged(results):
        if "n_total" in r.metrics:
            by_scheme[scheme_of(r)].append(r)
    out = []
    for scheme, rs in by_scheme.items():
        total = sum(r.metrics["n_total"] for r in rs)
        if "exact_share" in rs[0].metrics:
            exact = sum(r.metrics["exact_share"] * r.metrics["n_total"] for r in rs) / total
        else:
            exact = 1 - sum(r.metrics.get("n_inexact", 0) for r in rs) / total
        ratios = [(error_ratio(r.rule, r.metrics) or 0.0, r.descriptor) for r in rs]
        worst_ratio, worst_case = max(ratios)
        # the case closest to its own SQNR floor
        floored = [r for r in rs if r.metrics.get("sqnr_db") is not None and r.metrics.get("sqnr_floor_db")]
        sqnr = [
            (r.metrics["sqnr_db"] - r.metrics["sqnr_floor_db"], r.metrics["sqnr_db"], r.metrics["sqnr_floor_db"])
            for r in floored
        ]
        low = min(sqnr)[1:] if sqnr else (None, None)
        unfloored = sum(r.metrics.get("sqnr_floor_db") == 0 for r in rs)
        out.append(SchemeNumbers(scheme, len(rs), exact, worst_ratio, worst_case, low[0], low[1], unfloored))
    return out


def unfloored_reasons(results: list[CaseResult]) -> list[tuple[str, str, int, str]]:
    """(scheme, data set, cases, why) for each data set a run judged without an SQNR floor: the policy's reason."""
    from harness.config import parse_descriptor
    from harness.policy.schemes import sqnr_floor_of

    found: dict[tuple[str, str], int] = defaultdict(int)
    for r in judged(results):
        if r.metrics.get("sqnr_floor_db") == 0 and r.metrics.get("sqnr_db") is not None:
            c = parse_descriptor(r.descriptor)
            floor = sqnr_floor_of(c.scheme, c.dataset)
            found[(c.scheme, c.dataset if floor is not None and floor.basis == "none" else "full-range")] += 1
    out = []
    for (scheme, dataset), n in sorted(found.items()):
        floor = sqnr_floor_of(scheme, dataset)
        out.append((scheme, dataset, n, floor.why if floor is not None else ""))
    return out


def signature(r: CaseResult) -> str:
    """What a failure looks like, so alike failures group: outcome, failing stage, error class, locus."""
    parts = [r.actual_outcome if r.outcome is Outcome.KNOWN_ISSUE else r.outcome.value]
    if r.stale:
        parts = ["stale", "known issue" if r.issue else "rejection"]
    if r.stage:
        parts.append(r.stage)
    if r.error_type:
        parts.append(r.error_type)
    where = r.metrics.get("where")
    if where:
        parts.append(
            "border only"
            if where["interior"] == 0
            else "interior only"
            if where["border"] == 0
            else "border and interior"
        )
    return " / ".join(parts)


def groups_by_signature(results: list[CaseResult]) -> list[tuple[str, list[CaseResult]]]:
    """Cases that are not green, grouped by signature, largest group first."""
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for r in results:
        if not r.green:
            groups[signature(r)].append(r)
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def short(text: str, limit: int = 200) -> str:
    """A failure message without the interpreter's node dump and traceback, cut to `limit` characters."""
    for noise in (" While executing ", " Original traceback:"):
        text = text.split(noise)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_text(r: CaseResult) -> str:
    """A case's error in its own units and against its own limit."""
    m = r.metrics
    ratio = error_ratio(r.rule, m)
    if ratio is None:
        return ""
    if r.rule.startswith("int"):
        own = f"{m.get('max_lsb', 0)} LSB"
        if r.rule == "int-exact":
            own += f" vs exact, {m.get('fq_max_lsb', 0)} vs fake-quant (tolerance {m.get('fq_tolerance_lsb')})"
        else:
            own += f" (tolerance {m.get('fq_tolerance_lsb')})"
    else:
        own = f"|err| {m.get('max_err', 0):.3g} (limit {m.get('err_limit')})"
    return f"{own}: {ratio:.2f} of its limit"


def where_text(r: CaseResult) -> str:
    w = r.metrics.get("where")
    if not w:
        return ""
    return (
        f"{w['border']} on the border, {w['interior']} inside; channels {w['channels']} "
        f"({w['n_channels']} of {w['of_channels']})"
    )


# -- the config space, for heatmaps ----------------------------------------------------------
def _groups_kind(c) -> str:
    return "depthwise" if c.is_depthwise else "grouped" if c.groups > 1 else "dense"


def _family(c) -> str:
    return f"{'t' if c.transposed else ''}conv{c.rank}d"


AXES = {  # name -> value of a config on that axis (spatial ones: the first axis)
    "kernel": lambda c: c.kernel[0],
    "stride": lambda c: c.stride[0],
    "dilation": lambda c: c.dilation[0],
    "groups": _groups_kind,
    "rank": _family,
    "scheme": lambda c: c.scheme,
    "context": lambda c: c.context,
    "dataset": lambda c: c.dataset,
}
HEATMAPS = (
    ("kernel", "stride"),
    ("stride", "dilation"),
    ("groups", "rank"),
    ("scheme", "context"),
    ("dataset", "scheme"),
)


@dataclass
class Grid:
    x: str
    y: str
    xs: list
    ys: list
    pass_rate: list[list[float | None]]  # [y][x]: green share of the cases that ran (rejections and skips apart)
    max_ratio: list[list[float | None]]  # [y][x]: the largest error / own limit among the judged cases that no
    # registered finding explains (a known issue's error is its own view: known_share)
    cases: list[list[int]]
    cycles_per_mac: list[list[float | None]]  # [y][x]: median of Vela's estimate (Ethos-U targets)
    known_share: list[list[float | None]] = field(default_factory=list)  # [y][x]: known issues among those that ran

    @property
    def has_known(self) -> bool:
        return any(v for row in self.known_share for v in row)

    @property
    def has_cycles(self) -> bool:
        return any(v is not None for row in self.cycles_per_mac for v in row)


def grid(results: list[CaseResult], x: str, y: str) -> Grid:
    cells: dict[tuple, list[CaseResult]] = defaultdict(list)
    for r in results:
        if r.outcome in (Outcome.EXPECTED_REJECTION, Outcome.SKIPPED):
            continue
        c = parse_descriptor(r.descriptor)
        cells[(AXES[x](c), AXES[y](c))].append(r)
    xs = sorted({k[0] for k in cells}, key=str)
    ys = sorted({k[1] for k in cells}, key=str)
    pass_rate, max_ratio, counts, cycles, known = [], [], [], [], []
    for vy in ys:
        row = [cells.get((vx, vy), []) for vx in xs]
        ratios = [
            [
                v
                for v in (error_ratio(r.rule, r.metrics) for r in rs if r.rule and r.outcome is not Outcome.KNOWN_ISSUE)
                if v is not None
            ]
            for rs in row
        ]
        pass_rate.append([sum(r.green for r in rs) / len(rs) if rs else None for rs in row])
        known.append([sum(r.outcome is Outcome.KNOWN_ISSUE for r in rs) / len(rs) if rs else None for rs in row])
        max_ratio.append([max(v) if v else None for v in ratios])
        counts.append([len(rs) for rs in row])
        per_mac = [
            [r.metrics["vela"]["cycles_per_mac"] for r in rs if "cycles_per_mac" in r.metrics.get("vela", {})]
            for rs in row
        ]
        cycles.append([statistics.median(v) if v else None for v in per_mac])
    return Grid(x, y, xs, ys, pass_rate, max_ratio, counts, cycles, known)
