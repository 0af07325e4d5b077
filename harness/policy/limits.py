"""Resource limits of one case: what a worker may spend on it, as data.

Size. A worker's budget is 1.5 GiB RSS (issue 12); torch, ExecuTorch and the
reference model take about 0.8 GiB of it before any case, which leaves about
0.7 GiB for one case's tensors. A case holds each element it moves (input,
weight, output) several times over: the fp32 tensor, its float64 reference,
the quantized integer copy, the fake-quant model's copy, the reference model's
own buffers and the comparison's float64 work arrays: about 48 bytes per
element at most. 0.7 GiB / 48 B is about 15.6 Mi elements; the limit is
2^24 (16 Mi), a config above it is refused by `harness.config.validate` before
anything is allocated. The largest case of any tier moves 40,152 elements and
the first conv of MobileNetV2 at 224x224 about 0.55 Mi: the limit is three
orders of magnitude above what the tiers need and still inside the budget.

Time. A case that has no result after its tier's limit is a `runner_error`
with a `timeout` reason and its worker is replaced (`harness.run.parallel`).
The slowest case measured in the nightly tier takes about 40 s on a loaded
2-core machine (lowering a dynamic graph); the limits are generous multiples of
that, longer for the tiers whose cases are bigger.
"""

from __future__ import annotations

MAX_CASE_ELEMENTS = 1 << 24
BYTES_PER_ELEMENT = 48  # the upper estimate above, for the refusal's message

CASE_TIME_LIMIT_S = {"smoke": 300.0, "nightly": 600.0, "full": 900.0}
DEFAULT_CASE_TIME_LIMIT_S = 600.0


def case_time_limit(tier: str) -> float:
    return CASE_TIME_LIMIT_S.get(tier, DEFAULT_CASE_TIME_LIMIT_S)
