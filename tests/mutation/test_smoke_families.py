"""Smoke's structural families catch faults on one axis or one remainder kind that its other cases let through.

Each fault is a mutant of the installed passes (harness.faults), named by what
it changes rather than by index. Each survived every case of the smoke tier as
it was before its family (the first two: 436 cases, `python -m harness mutate
--sample 0.1 --filter '^(?!.*_qa8w4)'` on it; the others: 619 cases, every
mutant of the pass) and is caught by a case of `SMOKE_STRUCTURAL_BASES`.
"""

from __future__ import annotations

import re

import pytest

from harness.cases.smoke_picks import SMOKE_STRUCTURAL_BASES
from harness.cases.tiers import cases_of
from harness.config import parse_descriptor
from harness.faults.catalog import mutant_name, mutants_of
from harness.run.execute import run_case

pytestmark = [pytest.mark.lowering, pytest.mark.tier]

# (target, function, operator, description, source text the mutant changes) -> (what it breaks, the families
# tried first: every family is tried, these before the others, so the test costs one case when it holds)
FAULTS = {
    ("rewrite_conv_pass", "RewriteConvPass.call", "const", "0 -> 1", "-pad_list[0] + output_padding_list[0]"): (
        "a transposed conv's H output pad taken from W's padding: equal when the pads are",
        "^tconv2d_",
    ),
    ("rewrite_conv_pass", "RewriteConvPass._add_bias", "const", "1 -> 0", "get_first_fake_tensor(node).shape[1]"): (
        "the inserted zero bias sized by the batch: a bias of 1 broadcasts when the batch is 1",
        "_b0_",
    ),
    # Survived all 619 cases of smoke before its slice past a pad (the full run of the pass's 320 mutants).
    ("size_adjust_input_pass", "_get_slice_adjustment", "arith", "Sub -> Add", "return remainder - pad if"): (
        "the input slice past a pad sized remainder + pad: the same when the pad is 0",
        "_s3x1_p1x1",
    ),
    ("size_adjust_input_pass", "conv_remainder", "const", "2 -> 1", "input_length + 2 * pad"): (
        "a conv's remainder taken with one pad, not two: the same parity when the stride is 2",
        "_s3x1_p1x1",
    ),
}


def _mutant(target: str, function: str, operator: str, description: str, text: str) -> str:
    found = [
        m
        for m in mutants_of(target)
        if (m.function, m.operator, m.description) == (function, operator, description)
        and any(line.startswith("-") and text in line for line in m.diff.splitlines())
    ]
    assert len(found) >= 1, (function, operator, description, text)
    return mutant_name(target, found[-1].index)


@pytest.mark.parametrize("fault", list(FAULTS), ids=[f[1].split(".")[-1] for f in FAULTS])
def test_a_structural_family_of_smoke_catches_it(fault):
    name = _mutant(*fault)
    smoke = {c.descriptor for c in cases_of("smoke")}
    what, first = FAULTS[fault]
    families = [parse_descriptor(f"{b}_qfp32") for b in SMOKE_STRUCTURAL_BASES]
    assert all(c.descriptor in smoke for c in families)
    for c in sorted(families, key=lambda c: not re.search(first, c.descriptor)):
        r = run_case(c, 0, "tosa", canary=name)
        if not r.green:
            assert "MutantError" not in r.reason
            return
    pytest.fail(f"{name} ({what}) survived every structural family of smoke")
