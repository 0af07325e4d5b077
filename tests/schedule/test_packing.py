"""Packed lowering gives every case the result it has alone; the proof over the smoke tier's packs.

For each pack proved (harness.schedule.packing forms them), the pack is run as
one program without confirmation and each of its cases alone: outcome,
reason, judging rule, metrics, TOSA operators and the digest of the output
bytes must be equal case by case. Every canary is still caught by a packed run.

Which packs: by default the fewest that together hold every fact a pack's
program can differ by (`covering`: each graph context, each scheme and each
dynamic kind it takes, each conv shape, bias, data set and padding mode), 16
of 55 packs, 178 of 755 packed cases, since running every smoke case alone as
well costs CI a quarter of its time; `--every-pack` proves all of them.
"""

from __future__ import annotations

import pytest

from harness.cases.tiers import cases_of
from harness.config import ConfigError, parse_descriptor
from harness.faults.canaries import CANARIES
from harness.policy.packing import PACK_ELEMENTS, PACK_SIZE
from harness.run.settings import RunSettings
from harness.schedule.packing import alone_reason, check_pack_size, form_packs
from tests.canary_cases import FIRST_CATCHING_SMOKE_CASE

SMOKE = cases_of("smoke", target="tosa")
PACKS = [t for t in form_packs(SMOKE, "tosa", PACK_SIZE) if len(t) > 1]
SAME = (
    "outcome",
    "reason",
    "rule",
    "actual_outcome",
    "rejection",
    "issue",
    "stage",
    "error_type",
    "metrics",
    "tosa_ops",
    "conv_ops",
    "output_sha256",
)


def _pack_id(pack) -> str:
    return f"{pack[0].scheme}-{SMOKE.index(pack[0])}"


def _facts(config) -> set[tuple]:
    """What a pack's program can differ by, case by case: the graph around the conv, the scheme and its dynamic
    kinds, the conv's shape, bias, data and padding mode."""
    return {
        ("context", config.context),
        ("scheme", config.scheme),
        ("dynamic", config.scheme, str(config.dynamic)),
        ("shape", config.rank, config.transposed, config.is_depthwise),
        ("bias", config.bias),
        ("data", config.dataset),
        ("padding mode", config.padding_mode),
    }


def covering(packs: list) -> list:
    """The fewest packs (greedy, ties to the earliest, so deterministic) that hold every fact any pack holds,
    in sweep order."""
    facts = [set().union(*map(_facts, p)) for p in packs]
    left, chosen = set().union(*facts), []
    while left:
        best = max(range(len(packs)), key=lambda i: (len(left & facts[i]), -i))
        chosen.append(best)
        left -= facts[best]
    return [packs[i] for i in sorted(chosen)]


def pytest_generate_tests(metafunc):
    if "proved_pack" in metafunc.fixturenames:
        packs = PACKS if metafunc.config.getoption("every_pack") else covering(PACKS)
        metafunc.parametrize("proved_pack", packs, ids=[_pack_id(p) for p in packs])


# -- forming packs (no lowering) -----------------------------------------------------------
def test_packs_cover_the_sweep_once_in_order_and_are_deterministic():
    tasks = form_packs(SMOKE, "tosa", PACK_SIZE)
    flat = [c for t in tasks for c in t]
    assert sorted(c.descriptor for c in flat) == sorted(c.descriptor for c in SMOKE)
    assert [SMOKE.index(t[0]) for t in tasks] == sorted(SMOKE.index(t[0]) for t in tasks)
    assert tasks == form_packs(SMOKE, "tosa", PACK_SIZE)
    for t in tasks:
        assert len(t) <= PACK_SIZE and len({c.scheme for c in t}) == 1
        assert len(t) == 1 or all(not alone_reason(c, "tosa") for c in t)
    assert len(PACKS) * 4 < len(SMOKE) and sum(map(len, PACKS)) > len(SMOKE) * 3 // 4


def test_the_proved_packs_hold_every_fact_of_every_pack_and_are_fewer():
    proved = covering(PACKS)
    assert set().union(*(_facts(c) for p in proved for c in p)) == set().union(*(_facts(c) for p in PACKS for c in p))
    assert covering(PACKS) == proved and 0 < len(proved) < len(PACKS) // 2
    assert [SMOKE.index(p[0]) for p in proved] == sorted(SMOKE.index(p[0]) for p in proved)


def test_what_runs_alone_and_why():
    by = {c.descriptor: c for c in SMOKE}
    reasons = {alone_reason(c, "tosa").split(":")[0] for c in SMOKE} - {""}
    assert {"context cond", "a documented rejection", "a registered known issue that may stop its program"} <= reasons
    assert all(alone_reason(c, "ethos-u55").startswith("target family") for c in list(by.values())[:5])
    assert all(len(t) == 1 for t in form_packs(cases_of("smoke", target="ethos-u55-128"), "ethos-u55-128", PACK_SIZE))
    assert all(len(t) == 1 for t in form_packs(SMOKE, "tosa", 1))


def test_a_pack_stops_before_its_elements_pass_the_limit():
    big = parse_descriptor("conv2d_ic64_oc64_i128x128_k3_p1_qfp32")
    tasks = form_packs([big] * 40, "tosa", PACK_SIZE)
    from harness.config import elements

    assert all(sum(map(elements, t)) <= PACK_ELEMENTS for t in tasks) and len(tasks) > 40 // PACK_SIZE


def test_pack_size_below_one_is_refused():
    with pytest.raises(ConfigError, match="invalid --pack 0: must be >= 1"):
        check_pack_size(0)


# -- the proof ---------------------------------------------------------------------------
@pytest.mark.lowering
@pytest.mark.tier
def test_packed_equals_alone_case_by_case(proved_pack):
    from harness.run.execute import run_case
    from harness.run.packed import run_pack

    pack = proved_pack
    packed = run_pack(list(pack), RunSettings(), confirm=False)
    assert all(r.packed == len(pack) for r in packed), "the pack fell back to running its cases alone"
    for config, together in zip(pack, packed):
        alone = run_case(config)
        assert together.descriptor == alone.descriptor == config.descriptor
        assert together.output_sha256, config.descriptor
        differ = {
            k: (getattr(together, k), getattr(alone, k)) for k in SAME if getattr(together, k) != getattr(alone, k)
        }
        assert not differ, f"{config.descriptor}: {differ}"


@pytest.mark.lowering
@pytest.mark.tier
@pytest.mark.parametrize("name", list(CANARIES))
def test_every_canary_is_caught_when_packed(name):
    """The pack holding the canary's first catching smoke case, run with the fault: that case is not green."""
    from harness.run.packed import run_pack

    first = FIRST_CATCHING_SMOKE_CASE[name]
    pack = next(t for t in form_packs(SMOKE, "tosa", PACK_SIZE) if first in [c.descriptor for c in t])
    results = run_pack(list(pack), RunSettings(canary=name), confirm=False)
    caught = [r for r in results if not r.green]
    assert first in [r.descriptor for r in caught], f"{name}: {[(r.descriptor, r.outcome.value) for r in results]}"


def test_the_parents_count_of_sizes_is_the_one_the_cases_run_at():
    """packing.run_count decides packs without torch; it must equal len(harness.build.dynamic.run_configs)."""
    from harness.build.dynamic import run_configs
    from harness.schedule.packing import run_count

    nightly = cases_of("nightly", target="tosa")
    assert {run_count(c) for c in nightly} == {1, 2, 3}
    assert all(run_count(c) == len(run_configs(c)) for c in nightly)
