"""The mutation report shows both scores: the tool's (unreached apart) and the conventional one."""

from __future__ import annotations

from harness.mutation.render import write
from harness.mutation.report import MutantResult, MutationReport


def _m(i: int, status: str) -> MutantResult:
    return MutantResult(f"m{i}:rewrite_conv_pass:f:1", "f", 1, "const", "const 1 -> 2", status)


def test_the_conventional_score_counts_the_unreached_as_not_killed(tmp_path):
    statuses = ["killed"] * 6 + ["survived", "masked", "equivalent", "equivalent", "unreached", "unreached", "invalid"]
    report = MutationReport("smoke", ["rewrite_conv_pass"], {}, mutants=[_m(i, s) for i, s in enumerate(statuses)])
    assert report.score() == round(6 / 8, 4)  # killed / (killed + survived + masked)
    assert report.conventional_score() == round(6 / 10, 4)  # killed / (13 - 2 equivalent - 1 invalid)
    write(report, tmp_path)
    md = (tmp_path / "mutation.md").read_text()
    assert "| all | 13 | 6 | 1 | 1 | 2 | 2 | 1 | 75.0% | 60.0% |" in md
    assert '"conventional_score": 0.6' in (tmp_path / "mutation.json").read_text()
    assert (
        "2 of 2 equivalences rest on 2 judged cases or fewer: weak" in md and "2 unreached mutants have no reason" in md
    )
