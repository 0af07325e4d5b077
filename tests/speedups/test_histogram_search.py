"""The float search picks exactly the range torchao's tensor search picks."""

from __future__ import annotations

import pytest
import torch
from torchao.quantization.pt2e.observer import HistogramObserver

from harness.speedups import histogram_search


def _observer(batches: list[torch.Tensor]) -> HistogramObserver:
    obs = HistogramObserver(dtype=torch.int8, qscheme=torch.per_tensor_affine)
    for x in batches:
        obs(x)
    return obs


def _data(kind: str, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    n = [7, 64, 1000, 20_000][seed % 4]
    base = torch.randn(n, generator=g)
    if kind == "normal":
        return [base, torch.randn(n, generator=g) * 3]
    if kind == "outliers":
        base[:: max(1, n // 5)] *= 100
        return [base]
    if kind == "relu":
        return [base.clamp(min=0), (base * 2).clamp(min=0)]
    if kind == "uniform":
        return [torch.rand(n, generator=g) * 10 - 3]
    if kind == "constant":
        return [torch.full((n,), 0.25)]
    if kind == "two-values":
        return [torch.where(base > 0, 1.0, -4.0)]
    if kind == "large-total":  # counts past 2**24: the float32 rounding of the threshold matters
        return [torch.randn(1 << 20, generator=g) for _ in range(17)]
    raise ValueError(kind)


# Four sizes of each kind (seed % 4 picks 7 to 20,000 values); torchao's own search takes ~1 s on
# two-valued data (it walks nearly every quantile step), so that kind gets two sizes.
CASES = [(k, s) for k in ("normal", "outliers", "relu", "uniform", "constant") for s in range(4)]
CASES += [("two-values", 0), ("two-values", 3)]


@pytest.mark.parametrize("kind, seed", CASES)
def test_same_range_as_torchao(kind: str, seed: int) -> None:
    obs = _observer(_data(kind, seed))
    want = histogram_search.torchaos_search(HistogramObserver)(obs)
    got = histogram_search.non_linear_param_search(obs)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_same_range_with_counts_beyond_float32_integers() -> None:
    obs = _observer(_data("large-total", 0))
    assert obs.histogram.sum().item() > 2**24
    want = histogram_search.torchaos_search(HistogramObserver)(obs)
    got = histogram_search.non_linear_param_search(obs)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_threshold_compares_in_float32_like_torch() -> None:
    """torch rounds the Python threshold to float32 before comparing; so must the search."""
    t = torch.tensor(16777216.0, dtype=torch.float32)
    assert bool(t < 16777217.0) is False  # the fact the search relies on
    assert histogram_search._f32(16777217.0) == 16777216.0


@pytest.mark.lowering  # installs every speed-up: each probe imports what it patches
def test_installed_when_its_probe_passes() -> None:
    from harness.speedups import state

    st = state.current() or state.install()
    installed = HistogramObserver._non_linear_param_search is histogram_search.non_linear_param_search
    assert installed == ("histogram_search" in st.on)
    assert histogram_search.probe() == ""  # this torchao: the probe finds the same ranges


def test_the_probe_notices_a_search_that_differs(monkeypatch) -> None:
    monkeypatch.setattr(histogram_search, "search_bins", lambda csum, total, error: (0, len(csum) - 1))
    assert "where torchao's picks" in histogram_search.probe()
