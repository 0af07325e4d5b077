"""Release bisection: the search over releases (with the runs faked), then for real over overlays.

The real case: a conv1d with dynamic batch and length fails to lower on
ExecuTorch 1.4.1 ('TosaArg' object has no attribute 'name') and passes on
1.5.1; the first release with the fix is 1.5.0.
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
    monkeypatch.setattr(versions, "overlay", lambda v, cache: (v, 0.0, True))

    def run(path, descriptor, seed, target):
        runs.append(path)
        if outcome[path] == "crash":
            return None, "the harness cannot run under it (exit 1): ImportError"
        actual = "pass" if outcome[path] == "pass" else "mismatch"
        return {"versions": {"executorch": path}, "actual_outcome": actual, "sig": outcome[path], "reason": ""}, ""

    monkeypatch.setattr(versions, "run_case_under", run)
    monkeypatch.setattr(versions, "_signature", lambda r: r["sig"])
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


@pytest.mark.parametrize("good, bad, message", [
    ("1.0.0", "1.0.0", "must be two different releases"),
    ("0.9", "1.5.0", "invalid --good=0.9: not an executorch release"),
])
def test_bad_release_arguments_are_refused(good, bad, message):
    with pytest.raises(ConfigError, match=message):
        between(RELEASES, good, bad)


def test_the_ends_are_verified_first(monkeypatch):
    _fake(monkeypatch, {v: "pass" for v in RELEASES})
    assert "does not fail under --bad 1.5.0" in bisect_releases("d", "1.0.0", "1.5.0", releases=RELEASES).error


@pytest.mark.lowering
def test_a_real_fix_is_named_and_the_overlay_cache_is_reused(tmp_path):
    case = "conv1d_n2_ic4_oc8_g1_i17_k3_s2_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone_dyall"
    releases = ["1.4.1", "1.5.0", "1.5.1"]
    first = bisect_releases(case, "1.5.1", "1.4.1", cache=tmp_path, releases=releases)
    assert (first.error, first.first) == ("", "1.5.0"), first
    assert not any(t.overlay_reused for t in first.trials if t.version != versions.installed_version())
    again = bisect_releases(case, "1.5.1", "1.4.1", cache=tmp_path, releases=releases)
    assert again.first == "1.5.0" and all(t.overlay_reused for t in again.trials)
    assert sum(t.overlay_seconds for t in again.trials) < 1.0
