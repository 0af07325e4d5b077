"""Shards: a tier split into N parts of about equal cost, the same on every machine.

`--shard K/N` keeps the K-th of N parts. The split is a pure function of the
selected cases: each case gets an expected cost from its descriptor alone (a
cost learnt from a local history would differ between machines, and then so
would the shards), cases are dealt, the most expensive first and ties in the
order of a hash of their descriptor, each to the part with the least cost so
far (longest-processing-time first: within 4/3 of the best balance). The N
parts are disjoint and together exactly the selection, each in sweep order.
Every shard of one sweep must be given the same selection (tier, --random,
--seed, --filter).
"""

from __future__ import annotations

import hashlib
import heapq
import re

from harness.config import ConfigError, ConvConfig

_SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    """'K/N' -> (K, N) with 1 <= K <= N; ConfigError (one line) otherwise."""
    m = _SHARD.match(text.strip()) if isinstance(text, str) else None
    if not m:
        raise ConfigError(f"invalid --shard {text!r}: expected K/N, e.g. 2/4")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ConfigError(f"invalid --shard {text!r}: K must be in 1..N and N >= 1")
    return k, n


def expected_cost(c: ConvConfig) -> float:
    """Seconds a case takes, roughly. Fitted to the smoke tier's per-case times on ExecuTorch 1.5.1 here
    (medians: 0.71 s a static fp32 conv2d, 0.98 s its a8w8 twin; a graph context x1.3, a conv3d x1.4,
    a grouped conv x1.3, a dynamic-shape case, run and judged at three sizes, x2.2)."""
    cost = 1.0 if c.is_quantized else 0.7
    cost *= 1.3 if c.context != "none" else 1.0
    cost *= 1.4 if c.rank == 3 else 1.0
    cost *= 1.3 if c.groups > 1 and not c.is_depthwise else 1.0
    return cost * (2.2 if c.dynamic != "none" else 1.0)


def _hash(descriptor: str) -> int:
    return int.from_bytes(hashlib.sha256(descriptor.encode()).digest()[:8], "little")


def assign(configs: list[ConvConfig], n: int) -> list[int]:
    """The part (0-based) of each config: the costliest first, each to the least loaded part (the lower-numbered
    on a tie)."""
    costs = [expected_cost(c) for c in configs]
    order = sorted(range(len(configs)), key=lambda i: (-costs[i], _hash(configs[i].descriptor)))
    parts = [(0.0, j) for j in range(n)]  # a heap of (load, part): its head is min by (load, part)
    part = [0] * len(configs)
    for i in order:
        load, p = parts[0]
        part[i] = p
        heapq.heapreplace(parts, (load + costs[i], p))
    return part


def shard(configs: list[ConvConfig], spec: str) -> list[ConvConfig]:
    """The cases of shard `spec` ('K/N'), in their sweep order."""
    k, n = parse_shard(spec)
    return [c for c, p in zip(configs, assign(configs, n)) if p == k - 1]
