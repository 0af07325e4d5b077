"""The binary search both `bisect versions` and `bisect commits` run: over a line of states, by signature.

`order` runs from the end in the *other* state (index 0) to the end in the
*asked* state (the last): oldest first for a regression, newest first for a
fix, so the same search finds a first bad release or commit and a first good
one. Each point is tried once and is 'asked', 'other' or untestable (it cannot
run, or ends in a third state: the caller lists those, the search never guesses
which side they belong to). The answer is the adjacent pair (other, asked); when
untestable points sit between the last 'other' and the first 'asked', it is the
list of candidates instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

ASKED, OTHER = "asked", "other"


@dataclass
class Found:
    other: int = 0  # index of the last point in the other state
    asked: int = -1  # index of the first point in the asked state
    open: list[int] = field(default_factory=list)  # untestable points between them (then the answer is open)


def search(order: list[str], state: Callable[[str], str]) -> Found:
    """Binary search; `state(point)` is ASKED, OTHER or anything else (untestable). The ends are not tried
    here: the caller has checked order[0] is OTHER and order[-1] is ASKED."""
    lo, hi, tried = 0, len(order) - 1, set()
    while hi - lo > 1:
        pending = [i for i in range(lo + 1, hi) if i not in tried]
        if not pending:
            break
        mid = min(pending, key=lambda i: abs(i - (lo + hi) / 2))
        tried.add(mid)
        verdict = state(order[mid])
        if verdict == OTHER:
            lo = mid
        elif verdict == ASKED:
            hi = mid
    return Found(lo, hi, list(range(lo + 1, hi)))
