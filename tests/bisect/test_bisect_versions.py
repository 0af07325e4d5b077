"""Release bisection: the search over releases (with the runs faked), then for real over overlays.

The real case: a conv1d with dynamic batch and length fails to lower on
ExecuTorch 1.4.1 ('TosaArg' object has no attribute 'name') and passes on
1.5.1; the first release with the fix is 1.5.0. A plain conv passes on both:
no release differs.
"""

from __future__ import annotations

import pytest

from harness.bisect import versions
from harness.bisect.versions import between, bisect_releases
from harness.config import ConfigError

RELEASES = ["1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.3.1", "1.4.0", "1.5.0"]


def _fake(monkeypatch, outcome: dict[str, str]) -> list[str]:
    """Each release's result is outcome[version] ('pass', a failure signature, or 'crash'); returns the runs made."""
    runs: list[str] = []
    from harness import overlays

    monkeypatch.setattr(overlays, "release", lambda v, cache: overlays.Overlay(v, "release", v))

    def run(path, descriptor, seed, target):
        runs.append(path)
        if outcome[path] == "crash":
            return None, "the harness cannot run under it (exit 2): ImportError"
        actual = outcome[path].split("/")[0]
        return {
            "versions": {"executorch": path},
            "actual_outcome": actual,
            "sig": outcome[path],
            "reason": "harness: harness.speedups.skip_retrace: ImportError" if actual == "harness_error" else "",
        }, ""

    monkeypatch.setattr(versions, "run_case_under", run)
    monkeypatch.setattr(versions, "result_signature", lambda r: r["sig"])
    return runs


def test_a_regression_is_found_in_logarithmically_many_runs(monkeypatch):
    runs = _fake(monkeypatch, {v: "pass" if v < "1.3.1" else "mismatch/run/-/border" for v in RELEASES})
    b = bisect_releases("d", "1.0.0", "1.5.0", releases=RELEASES)
    assert (b.direction, b.first, b.candidates, b.error) == ("regression", "1.3.1", [], "")
    assert len(runs) <= 2 + 3 and len(set(runs)) == len(runs)


def test_a_fix_is_found_going_back_in_time(monkeypatch):
    _fake(monkeypatch, {v: "pass" if v >= "1.4.0" else "lowering_error/lower/AttributeError" for v in RELEASES})
    b = bisect_releases("d", "1.5.0", "1.0.0", releases=RELEASES)
    assert (b.direction, b.first) == ("fix", "1.4.0")


def test_an_untestable_release_is_neither_good_nor_bad(monkeypatch):
    outcome = {v: "pass" if v < "1.3.1" else "mismatch/run/-/border" for v in RELEASES}
    outcome["1.3.1"] = "crash"
    _fake(monkeypatch, outcome)
    b = bisect_releases("d", "1.0.0", "1.5.0", releases=RELEASES)
    assert b.first == "" and b.candidates == ["1.3.1", "1.4.0"]
    assert [t.verdict for t in b.trials if t.version == "1.3.1"] == ["untestable"]


def test_a_release_failing_another_way_is_untestable(monkeypatch):
    outcome = {v: "pass" if v < "1.3.1" else "mismatch/run/-/border" for v in RELEASES}
    outcome["1.3.0"] = "runner_error/run/RunnerError"
    _fake(monkeypatch, outcome)
    b = bisect_releases("d", "1.0.0", "1.5.0", releases=RELEASES)
    assert [t.verdict for t in b.trials if t.version == "1.3.0"] == ["untestable"]
    assert b.first == "" and b.candidates == ["1.3.0", "1.3.1"]  # the change is in 1.3.0 or 1.3.1


@pytest.mark.parametrize(
    "good, bad, message",
    [
        ("1.0.0", "1.0.0", "must be two different releases"),
        ("0.9", "1.5.0", "invalid --good=0.9: not an executorch release"),
    ],
)
def test_bad_release_arguments_are_refused(good, bad, message):
    with pytest.raises(ConfigError, match=message):
        between(RELEASES, good, bad)


def test_a_case_right_at_both_ends_names_no_release(monkeypatch):
    runs = _fake(monkeypatch, {v: "pass" for v in RELEASES})
    b = bisect_releases("d", "1.0.0", "1.5.0", releases=RELEASES)
    assert b.no_difference and (b.first, b.candidates, b.error) == ("", [], "") and runs == ["1.5.0", "1.0.0"]


def test_swapped_ends_are_said_to_be_swapped(monkeypatch):
    _fake(monkeypatch, {v: "pass" if v == "1.5.0" else "mismatch/run/-/border" for v in RELEASES})
    b = bisect_releases("d", "1.0.0", "1.5.0", releases=RELEASES)
    assert not b.no_difference and "passes under --bad 1.5.0" in b.error and b.error.endswith("swap them")


def test_the_harness_failing_is_never_a_release_being_bad(monkeypatch):
    """The 1.4.1 trap: a speed-up that imports a name 1.4.1 lacks failed every case there; that is untestable."""
    outcome = {v: "pass" for v in RELEASES}
    outcome["1.0.0"] = "harness_error/lower/ImportError"
    _fake(monkeypatch, outcome)
    b = bisect_releases("d", "1.5.0", "1.0.0", releases=RELEASES)
    assert b.first == "" and "cannot be tested under --bad 1.0.0" in b.error
    assert [(t.version, t.verdict) for t in b.trials] == [("1.0.0", "untestable")]
    outcome["1.0.0"], outcome["1.1.0"] = "lowering_error/lower/AttributeError", "harness_error/lower/ImportError"
    b = bisect_releases("d", "1.5.0", "1.0.0", releases=RELEASES)
    verdicts = {t.version: (t.verdict, t.same_failure) for t in b.trials}
    assert verdicts["1.1.0"] == ("untestable", False) and verdicts["1.0.0"] == ("bad", True)
    assert b.first == "" and b.candidates == ["1.1.0", "1.0.0"] and b.signature == "lowering_error/lower/AttributeError"


@pytest.mark.lowering
def test_a_real_fix_is_named_with_its_signature_and_the_overlay_cache_is_reused(tmp_path):
    case = "conv1d_n2_ic4_oc8_g1_i17_k3_s2_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone_dyall"
    releases = ["1.4.1", "1.5.0", "1.5.1"]
    first = bisect_releases(case, "1.5.1", "1.4.1", cache=tmp_path, releases=releases)
    assert (first.error, first.first) == ("", "1.5.0"), first
    assert first.signature == "lowering_error/lower/AttributeError"  # 'TosaArg' object has no attribute 'name'
    bad = next(t for t in first.trials if t.version == "1.4.1")
    assert bad.same_failure and "'TosaArg' object has no attribute 'name'" in bad.detail
    assert [t.verdict for t in first.trials if t.version != "1.4.1"] == ["good", "good"]
    assert not any(t.overlay_reused for t in first.trials if t.version != versions.installed_version())
    from harness.overlays import release

    again = [release(v, tmp_path) for v in releases]  # what the next bisection over them gets: no install
    assert all(o.reused for o in again) and sum(o.seconds for o in again) < 1.0


@pytest.mark.lowering
def test_a_case_right_on_both_releases_names_none(tmp_path):
    """Before the speed-ups had probes this named 1.5.0 as the fix of a conv that is right on 1.4.1 too."""
    case = "conv2d_n1_ic4_oc4_g1_i8x8_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone"
    b = bisect_releases(case, "1.5.1", "1.4.1", cache=tmp_path, releases=["1.4.1", "1.5.0", "1.5.1"])
    assert b.no_difference and b.error == "" and [t.outcome for t in b.trials] == ["pass", "pass"]
