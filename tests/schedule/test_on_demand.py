"""OnDemandPacks: a pack is lowered once, when the first of its cases is asked for, in any order of asking."""

from __future__ import annotations

from harness.config import parse_descriptor
from harness.results.case_result import Outcome
from harness.run.settings import RunSettings
from harness.schedule.on_demand import OnDemandPacks
from tests.factories import case_result

A, B, C, D = (parse_descriptor(f"conv2d_ic4_oc{n}_i8x8_k3_qfp32") for n in (4, 8, 12, 16))


class Calls:
    """Fake case and pack functions that log what they were asked to run."""

    def __init__(self):
        self.log: list[tuple[str, ...]] = []

    def case(self, config, settings):
        self.log.append((config.descriptor,))
        return case_result(config.descriptor, Outcome.PASS, settings.seed, reason="alone")

    def pack(self, configs, settings):
        self.log.append(tuple(c.descriptor for c in configs))
        return [case_result(c.descriptor, Outcome.PASS, settings.seed, reason="packed") for c in configs]

    def functions(self):
        return self.case, self.pack


def test_a_pack_runs_once_whichever_case_asks_first():
    calls = Calls()
    packs = OnDemandPacks([(A, B, C)], RunSettings(seed=3), calls.functions)
    got = [packs.result(c) for c in (C, A, D, B)]
    assert [r.descriptor for r in got] == [C.descriptor, A.descriptor, D.descriptor, B.descriptor]
    assert [r.reason for r in got] == ["packed", "packed", "alone", "packed"]
    assert calls.log == [(A.descriptor, B.descriptor, C.descriptor), (D.descriptor,)]
    assert packs.computed == 2 and all(r.seed == 3 for r in got)


def test_a_case_asked_again_runs_again_alone():
    calls = Calls()
    packs = OnDemandPacks([(A, B)], RunSettings(), calls.functions)
    packs.result(A), packs.result(B)
    assert packs.result(A).reason == "alone"
    assert calls.log[-1] == (A.descriptor,)


def test_a_pack_of_one_runs_alone():
    calls = Calls()
    assert OnDemandPacks([(A,)], RunSettings(), calls.functions).result(A).reason == "alone"


def test_results_never_asked_for_are_handed_out_once_at_the_end():
    calls = Calls()
    packs = OnDemandPacks([(A, B, C)], RunSettings(), calls.functions)
    packs.result(B)  # then -x stops the session
    assert sorted(r.descriptor for r in packs.unclaimed()) == sorted([A.descriptor, C.descriptor])
    assert packs.unclaimed() == []


def test_cases_run_on_a_shallow_stack_and_their_exceptions_reach_the_caller():
    import inspect

    def depth(config, settings):
        return case_result(config.descriptor, reason=str(len(inspect.stack(0))))

    def broken(configs, settings):
        raise ValueError("pack function bug")

    def nest(n, f):
        return f() if n == 0 else nest(n - 1, f)

    packs = OnDemandPacks([(A, B)], RunSettings(), lambda: (depth, broken))
    assert int(nest(100, lambda: packs.result(C)).reason) < 10, "the caller's 100 frames are not the case's"
    try:
        packs.result(A)
    except ValueError as e:
        assert str(e) == "pack function bug"
    else:
        raise AssertionError("the pack function's exception was swallowed")
