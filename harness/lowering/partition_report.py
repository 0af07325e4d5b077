"""Why the partitioner left a node on the CPU, in the backend's own words.

ExecuTorch's partitioners explain each node they reject through
`WhyNoPartitionReporter.report_reject(node, reason)` and only log the table at
INFO level. Here that method is wrapped (once, process-wide) to also record
(node, target, reason) while `recording()` is active, so a `not_delegated`
result can say why, and a documented rejection or a registry entry can be
matched against the partitioner's message rather than against the outcome alone.

Probe: the reporter class and its method with that signature exist; where they
do not, nothing is wrapped, `recording()` yields an empty list and
`unavailable()` says why (a rejection then cannot be confirmed by its message).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager

_ACTIVE: list | None = None
_STATE: list[str] = []  # [''] once wrapped; [reason] when it cannot be


def probe() -> str:
    try:
        from executorch.exir.backend.utils import WhyNoPartitionReporter
    except ImportError as e:
        return f"no WhyNoPartitionReporter ({e})"
    method = getattr(WhyNoPartitionReporter, "report_reject", None)
    if method is None:
        return "WhyNoPartitionReporter has no report_reject"
    params = tuple(inspect.signature(method).parameters)
    if params != ("self", "node", "reason"):
        return f"WhyNoPartitionReporter.report_reject takes {params}, not (self, node, reason)"
    return ""


def _wrap() -> None:
    if _STATE:
        return
    why = probe()
    _STATE.append(why)
    if why:
        return
    from executorch.exir.backend.utils import WhyNoPartitionReporter

    original = WhyNoPartitionReporter.report_reject

    def report_reject(self, node, reason):
        if _ACTIVE is not None and getattr(node, "op", "call_function") == "call_function":
            _ACTIVE.append((getattr(node, "name", str(node)), str(getattr(node, "target", "")), str(reason)))
        return original(self, node, reason)

    report_reject.__wrapped__ = original
    WhyNoPartitionReporter.report_reject = report_reject


def unavailable() -> str:
    """'' when the partitioner's reasons are recorded here, else why not."""
    _wrap()
    return _STATE[0]


@contextmanager
def recording() -> Iterator[list[tuple[str, str, str]]]:
    """The (node, target, reason) of every operator node rejected inside (placeholders and the output are
    reported too, and left out), in order."""
    global _ACTIVE
    _wrap()
    saved, found = _ACTIVE, []
    _ACTIVE = found
    try:
        yield found
    finally:
        _ACTIVE = saved
