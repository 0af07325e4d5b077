"""Resource limits of one case: what a worker may spend on it, as data.

Memory. A worker's budget is 1.5 GiB resident (issue 12). After set-up a
worker holds 0.31 GiB (forked from the fork server) or 0.38 GiB (spawned);
caches then grow with the cases it runs. Half the budget, 0.75 GiB, is kept
for the case being run, so a worker whose resident memory after a case is
above the other half is retired and replaced (`harness.schedule.parallel`). A
case holds each element it moves (input, weight, output) several times over:
the fp32 tensor, its float64 reference, the quantized integer copy, the
fake-quant model's copy, the reference model's own buffers and the
comparison's float64 work arrays: about 48 bytes per element at most. 0.75 GiB
/ 48 B is exactly 2^24 elements, the size limit: a config above it is refused
by `harness.config.validate` before anything is allocated. The largest case of
any tier moves 40,152 elements and the first conv of MobileNetV2 at 224x224
about 0.55 Mi: the limit is far above what the tiers need and inside the budget.

Time. A case that has no result after its tier's limit is a `runner_error`
with a `timeout` reason and its worker is replaced (`harness.schedule.parallel`).
The slowest case of a smoke run here took 5.7 s (a conv in
torch.cond, on two busy cores); the limits are fifty times that and more,
longer for the tiers whose cases are bigger, so only a hang reaches them.
"""

from __future__ import annotations

WORKER_RSS_BUDGET = 3 << 29  # 1.5 GiB
WORKER_RECYCLE_RSS = WORKER_RSS_BUDGET // 2
# A mutation campaign's worker loads a mutant for every task, and slows as it goes: measured on smoke's 68 hardest
# mutants (2 workers, packs of 16, nothing else running), 350 case runs/min in the first 14 min after a (re)start,
# 170/min from the 15th to the 23rd (about 150 tasks per worker), back to 350 after a restart, with its resident
# memory still under WORKER_RECYCLE_RSS. A replacement forks from the fork server with torch and ExecuTorch
# already imported, so a fresh worker every 50 tasks (about 5 min of its work) costs far less than the slowdown.
MUTANT_WORKER_TASKS = 50
BYTES_PER_ELEMENT = 48  # the upper estimate above
MAX_CASE_ELEMENTS = (WORKER_RSS_BUDGET - WORKER_RECYCLE_RSS) // BYTES_PER_ELEMENT  # 2^24

TIERS = ("smoke", "nightly", "full")  # the named tiers (harness.cases.tiers builds them), smallest first
CASE_TIME_LIMIT_S = {"smoke": 300.0, "nightly": 600.0, "full": 900.0}
DEFAULT_CASE_TIME_LIMIT_S = 600.0
# One reference-model run of one graph (harness.runners.tosa_ref), after which the model's child is killed with every
# process it started: those inherit the worker's pipes and, left alive, keep it from being seen to end (seen:
# pytest-xdist waiting for ever on a worker pytest-timeout had ended). The limit must fire before whatever ends the
# worker: below pytest-timeout's 900 s (pyproject.toml), which counts the lowering too, and no longer than a nightly
# case's whole budget.
REFERENCE_MODEL_TIME_LIMIT_S = DEFAULT_CASE_TIME_LIMIT_S


def case_time_limit(tier: str) -> float:
    return CASE_TIME_LIMIT_S.get(tier, DEFAULT_CASE_TIME_LIMIT_S)
