"""The HistogramObserver's range search, the same answer without a tensor per step.

The Arm quantizer observes activations with torchao's `HistogramObserver`,
whose `_non_linear_param_search` narrows the range one 1e-5 quantile step at
a time, comparing a 0-d slice of the cumulative histogram with a Python float
at every step: thousands of tensor indexings per observer, 13% of a packed
a8w8 case (17 ms an observer, measured with hist_time on nightly packs).

`search_bins` is that loop over plain floats. It keeps torch's comparison
semantics exactly: a float32 tensor compared with a Python float compares in
float32 (the float is rounded to nearest first), so the threshold is rounded
the same way here and compared with the float32 values of the cumulative sum.
The quantization error of a candidate range is still torch's own
`_compute_quantization_error`. Probe: the observer has the method and the
attributes the search reads, and picks torchao's range on a few data sets
(tests/speedups/test_histogram_search.py checks many more histograms).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from harness.speedups.base import Undo, need, patch

STEP = 1e-5  # torchao's granularity


def _f32(x: float) -> float:
    return float(np.float32(x))


def search_bins(csum: list[float], total: float, error: Callable[[int, int], float]) -> tuple[int, int]:
    """The (start_bin, end_bin) torchao's search settles on for this cumulative histogram."""
    alpha, beta = 0.0, 1.0
    start_bin, end_bin = 0, len(csum) - 1
    norm_min = float("inf")
    while alpha < beta:
        next_alpha = alpha + STEP
        next_beta = beta - STEP
        low, high = _f32(next_alpha * total), _f32(next_beta * total)
        left, right = start_bin, end_bin
        while left < end_bin and csum[left] < low:
            left += 1
        while right > start_bin and csum[right] > high:
            right -= 1
        next_start, next_end = start_bin, end_bin
        if (left - start_bin) > (end_bin - right):
            next_start = left
            alpha = next_alpha
        else:
            next_end = right
            beta = next_beta
        if next_start == start_bin and next_end == end_bin:
            continue
        norm = error(next_start, next_end)
        if norm > norm_min:
            break
        norm_min = norm
        start_bin, end_bin = next_start, next_end
    return start_bin, end_bin


def non_linear_param_search(self):
    """Drop-in for `HistogramObserver._non_linear_param_search` (torchao 0.18)."""
    import torch

    assert self.histogram.size()[0] == self.bins, "bins mismatch"
    bin_width = (self.max_val - self.min_val) / self.bins
    total = torch.sum(self.histogram).item()
    csum = torch.cumsum(self.histogram, dim=0).tolist()
    start_bin, end_bin = search_bins(csum, total, self._compute_quantization_error)
    new_min = self.min_val + bin_width * start_bin
    new_max = self.min_val + bin_width * (end_bin + 1)
    return new_min, new_max


original: Callable | None = None  # torchao's own search, kept for the equivalence checks


def torchaos_search(observer_class) -> Callable:
    """torchao's own search, installed here or not."""
    search = observer_class._non_linear_param_search
    return original if search is non_linear_param_search and original is not None else search


def _observers() -> list:
    """Observers fed with a few kinds of data (normal, one-sided, outliers, constant)."""
    import torch
    from torchao.quantization.pt2e.observer import HistogramObserver

    g = torch.Generator().manual_seed(0)
    base = torch.randn(2000, generator=g)
    outliers = base.clone()
    outliers[::200] *= 100
    found = []
    for data in (base, base.clamp(min=0), outliers, torch.full((64,), 0.25)):
        obs = HistogramObserver(dtype=torch.int8, qscheme=torch.per_tensor_affine)
        obs(data)
        found.append(obs)
    return found


def probe() -> str:
    observer = need("torchao.quantization.pt2e.observer", "HistogramObserver")
    need("torchao.quantization.pt2e.observer", "HistogramObserver._non_linear_param_search")
    need("torchao.quantization.pt2e.observer", "HistogramObserver._compute_quantization_error")
    torchaos = torchaos_search(observer)
    for i, obs in enumerate(_observers()):
        for attr in ("histogram", "bins", "min_val", "max_val"):
            if not hasattr(obs, attr):
                return f"HistogramObserver has no {attr}"
        want, got = torchaos(obs), non_linear_param_search(obs)
        if [float(v) for v in want] != [float(v) for v in got]:
            return f"the float search picks {got} where torchao's picks {want} (data set {i})"
    return ""


def install() -> Undo:
    """Replace the observer's search."""
    global original
    from torchao.quantization.pt2e import observer

    if original is None:
        original = observer.HistogramObserver._non_linear_param_search
    return patch(observer.HistogramObserver, "_non_linear_param_search", non_linear_param_search)
