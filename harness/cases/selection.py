"""Which cases a run runs: a tier (for a target), seeded random extras, a descriptor filter, a shard.

The same arguments give the same cases in the same order in every process:
the command line, the pytest plugin and each shard of a split sweep call this.
"""

from __future__ import annotations

import re

from harness.cases.shards import shard as take_shard
from harness.cases.tiers import cases_of
from harness.config import ConfigError, ConvConfig
from harness.policy.targets import DEFAULT_TARGET


def select(
    tier: str,
    random: int = 0,
    seed: int = 0,
    pattern: str | None = None,
    shard: str | None = None,
    target: str = DEFAULT_TARGET,
) -> list[ConvConfig]:
    configs = cases_of(tier, random, seed, target)
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise ConfigError(f"invalid --filter {pattern!r}: not a regular expression ({e})") from None
        configs = [c for c in configs if regex.search(c.descriptor)]
    return take_shard(configs, shard) if shard else configs
