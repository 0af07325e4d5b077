"""A bug report draft for ExecuTorch's tracker, in Markdown, from what the harness measured of one case.

Pure formatting: the verb (`python -m harness issue`) runs the case, shrinks it,
writes the standalone script and finds the registry entry; this module only
turns those facts into the sections a maintainer reads first: what happens, on
which versions and commit, the smallest config, where it comes from (pass,
commit, mechanism), the numbers, and a repro that needs no harness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

VERSION_KEYS = (
    "torch",
    "executorch",
    "executorch-tree",
    "executorch-core",
    "executorch-git",
    "tosa-tools",
    "ethos-u-vela",
    "harness-commit",
)


@dataclass
class IssueFacts:
    result: dict  # the case's JSON result (CaseResult.to_dict)
    minimal: str = ""  # the smallest config failing the same way ('' when not shrunk)
    shrink_note: str = ""  # how it was shrunk (runs; or why not)
    culprit_pass: str = ""  # from `bisect passes`, for a wrong number
    entry: dict = field(default_factory=dict)  # the registry entry: id, reason, link, introduced_by, fixed_by
    script: str = ""  # the standalone script's text
    script_files: tuple[str, ...] = ()  # the data files it reads, written beside the draft
    commit_url: str = "https://github.com/pytorch/executorch/commit/"


def _kind(descriptor: str) -> str:
    head = descriptor.split("_")[0]
    return ("transposed " if head.startswith("t") else "") + head.lstrip("t")


def _scheme(descriptor: str) -> str:
    return next((t[1:] for t in descriptor.split("_") if t.startswith("q")), "fp32")


def title(f: IssueFacts) -> str:
    r = f.result
    what = {
        "mismatch": "wrong output",
        "lowering_error": "lowering fails",
        "runner_error": "the TOSA graph is refused",
        "not_delegated": "left on the CPU",
    }.get(r["actual_outcome"], r["actual_outcome"])
    first = (r.get("reason") or "").split(" [")[0].split(" While executing")[0]
    return f"[Arm] {_kind(r['descriptor'])} {_scheme(r['descriptor'])}: {what}: {first[:90]}"


def _metrics(r: dict) -> list[str]:
    m, out = r.get("metrics") or {}, []
    if "max_lsb" in m:
        out.append(
            f"- largest error: {m['max_lsb']} LSB; {m.get('n_diff', '?')} of {m.get('n_total', '?')} elements differ"
        )
    if "max_err_units" in m or "max_ulp" in m:
        out.append(f"- largest error: {m.get('max_err_units', m.get('max_ulp'))} units of the TOSA dot-product bound")
    if m.get("sqnr_db") is not None:
        out.append(f"- SQNR against the fp32 model: {m['sqnr_db']} dB")
    where = m.get("where") or {}
    if where:
        out.append(f"- where: {where}")
    return out


def render(f: IssueFacts) -> str:
    """The draft in Markdown. Long because it lays out the report's sections in their order, a line or two each."""
    r = f.result
    versions = r.get("versions") or {}
    lines = [
        f"# {title(f)}",
        "",
        "Found with conv-harness, a reference-numerics harness for the Arm backend's conv lowering.",
        "",
        "## What happens",
        "",
        f"- case: `{r['descriptor']}` (seed {r.get('seed', 0)}, target {r.get('target', 'tosa')})",
        f"- outcome: **{r['actual_outcome']}**" + (f" at stage `{r['stage']}`" if r.get("stage") else ""),
        f"- message: {(r.get('reason') or '').split(' [a new failure')[0]}",
    ]
    lines += _metrics(r)
    if r.get("tosa_ops"):
        lines.append(f"- TOSA operators: {' '.join(r['tosa_ops'])}")
    lines += ["", "## Versions", "", "| component | version |", "|---|---|"]
    lines += [f"| {k} | {versions[k]} |" for k in VERSION_KEYS if versions.get(k)]
    lines += ["", "## Smallest failing config", ""]
    lines.append(
        f"`{f.minimal}`" + (f" ({f.shrink_note})" if f.shrink_note else "")
        if f.minimal
        else f.shrink_note or "not shrunk"
    )
    lines += ["", "## Where it comes from", ""]
    if f.culprit_pass:
        lines.append(f"- first pass after which the output departs: `{f.culprit_pass}` (`bisect passes`)")
    e = f.entry
    if e.get("introduced_by"):
        lines.append(
            f"- introduced by [{e['introduced_by'][:12]}]({f.commit_url}{e['introduced_by']}) (`bisect commits`)"
        )
    if e.get("fixed_by"):
        lines.append(f"- fixed by [{e['fixed_by'][:12]}]({f.commit_url}{e['fixed_by']})")
    if e.get("link"):
        lines.append(f"- code: `{e['link']}`")
    if e.get("reason"):
        lines += ["", f"Mechanism (harness registry entry `{e['id']}`):", "", e["reason"]]
    if not (f.culprit_pass or e):
        lines.append("not yet placed: run `python -m harness bisect passes` and `bisect commits` on it")
    lines += ["", "## Reproduce", ""]
    if f.script:
        beside = ", ".join(f"`{name}`" for name in f.script_files)
        lines += [
            f"Needs torch, executorch and numpy; reads {beside} (attached) from its folder. "
            "Exit 0: within the limits; 1: not.",
            "",
            "```python",
            f.script.rstrip(),
            "```",
        ]
    lines += [
        "",
        "With the harness:",
        "",
        "```",
        f"python -m harness run '{r['descriptor']}' --seed {r.get('seed', 0)} --target {r.get('target', 'tosa')}"
        + (f" --executorch {versions['executorch-tree']}" if versions.get("executorch-tree") else ""),
        "```",
        "",
    ]
    return "\n".join(lines)
