"""The commits the expectations name, for a source tree's overlay to place itself by (`harness.overlays`)."""

from __future__ import annotations

from harness.expectations.known_issues import registry
from harness.expectations.rejections import REJECTIONS


def named_commits() -> tuple[str, ...]:
    """Every commit an expectation names (`introduced_by`, `fixed_by`); a tree overlay records which it contains."""
    found = {c for e in (*registry(), *REJECTIONS) for c in (e.holds.introduced_by, e.holds.fixed_by) if c}
    return tuple(sorted(found))
