"""Every speed-up, in the order they are installed (the policy of what may patch torch or ExecuTorch)."""

from __future__ import annotations

from harness.speedups import (
    callable_alias,
    cia_ops_cache,
    cia_override,
    histogram_search,
    lazy_compile,
    node_source,
    opaque_lookup,
    passthrough_retrace,
    qdq_fake_cache,
    shape_envs,
    skip_retrace,
)
from harness.speedups.base import Speedup

_SAVES = {  # module -> what it saves, measured
    cia_ops_cache: "the list of preservable CIA ops once per set of registrations (~0.1 s a run_decompositions, "
    "three a lowering)",
    callable_alias: "cached Callable[...] subscriptions in torch._ops (60% of the CIA override's time)",
    node_source: "node provenance shares its history instead of deep-copying it (10% of a case)",
    cia_override: "each CIA op's override table built once (0.26 s a lowering)",
    opaque_lookup: "non-opaque types remembered (~25,000 checks a pack)",
    qdq_fake_cache: "FakeTensor's dispatch cache for the Q/DQ operators (1,390 meta kernel runs a pack of ten a8w8 "
    "cases, about a fifth of it)",
    skip_retrace: "the third run_decompositions of a lowering skipped when nothing is left to decompose (a quarter "
    "of a lowering)",
    passthrough_retrace: "a pass's retrace skipped where a dry run shows it would rebuild the same graph (15 of the "
    "30 retraces of a packed a8w8 lowering of ten cases)",
    histogram_search: "the HistogramObserver's range search over floats (13% of a packed a8w8 case)",
    lazy_compile: "graph modules compiled to Python only when run (18% of a packed lowering)",
    shape_envs: "a finished case's ShapeEnv released (memory: one fake mode kept per dynamic case without it)",
}
SPEEDUPS: tuple[Speedup, ...] = tuple(
    Speedup(module.__name__.rsplit(".", 1)[-1], saves, module.probe, module.install) for module, saves in _SAVES.items()
)
NAMES = tuple(s.name for s in SPEEDUPS)
