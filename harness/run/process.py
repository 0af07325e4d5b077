"""Process set-up: done once per process, never on a case's path.

`setup_process()` makes torch deterministic and single-threaded, quiets the
libraries' logs, does the heavy imports, installs the speed-ups below and
freezes the import-time heap out of the garbage collector.
`release_graph_caches()` runs after each case.

The speed-ups: model-independent work that torch repeats on every lowering,
done once. They were written against torch 2.13.0 and replace parts of
it, so on any other torch they stay off and say so once (a changed function
body would otherwise be dropped silently); HARNESS_NO_SPEEDUPS=1 turns them
off too. tests/test_process.py checks that the lowered flatbuffers are
byte-identical either way.

* `to_edge_transform_and_lower` calls `ExportedProgram.run_decompositions`
  three times per case, and each call walks every operator namespace to list
  the CompositeImplicitAutograd ops that may be preserved
  (`torch._export.utils._collect_all_valid_cia_ops`): ~0.1 s a call, the same
  answer every time. torch does not cache it because a custom op registered
  later would change the answer, so the cache here is keyed on exactly that:
  the registered namespaces and the number of CIA registrations in the C++
  dispatcher. Any new registration invalidates it.
* Each run_decompositions also overrides the kernels of the ~560 preservable
  CIA ops and restores them, 12,000 `OperatorBase.py_impl` calls; each call
  defines a closure annotated `Callable[_P, _T]`, and
  `collections.abc.Callable[...]` is not cached, so 60% of that time went to
  building annotation objects nobody reads. torch._ops gets a `Callable` whose
  subscriptions are cached (and whose isinstance checks are unchanged). The
  override itself now builds each op's entries once
  (`harness.lowering.cia_override`).
* The third run_decompositions of a lowering retraces a program with nothing
  left to decompose; it is skipped on the test ExecuTorch uses to skip its
  other one (`harness.lowering.skip_retrace`).
* Every node created by a pass records its provenance: `NodeSource.__init__`
  deep-copies the whole `from_node` history of the node it comes from, so the
  cost grows with the square of the number of passes (10% of a case). Those
  histories are only ever read after creation (ExecuTorch's and torchao's
  debug-handle walkers), so sharing them instead of copying is equivalent.
* The Arm quantizer's HistogramObserver searches its range with a tensor
  indexing per 1e-5 quantile step (13% of a packed a8w8 case); the same
  search over floats, with torch's float32 comparisons
  (`harness.lowering.histogram_search`).
* Every value torch.fx records is checked against `OpaqueBase` through a
  weak-keyed registry and an MRO walk, 3-5 us each, ~25,000 times a pack;
  the types that are not opaque are remembered (`harness.lowering.opaque_lookup`).
* Each pass's graph module is compiled to Python at once, though the passes
  interpret the graph and never run that code; during the lowering they
  compile when first run instead (`harness.lowering.lazy_compile`).
"""

from __future__ import annotations

import collections.abc
import functools
import gc
import importlib
import logging
import os
import sys
import warnings
import weakref

SPEEDUPS_WRITTEN_FOR = "2.13.0"  # the torch whose functions the speed-ups replace

_SETUP_DONE = False
_INSTALLED = False
_SAID = False


def setup_process() -> None:
    """Once per process: deterministic single-threaded torch, quiet logs, frozen heap.

    One intra-op thread makes fp32 results independent of how many workers
    share the machine (and is faster under xdist). `gc.freeze()` moves the
    ~1 GB of import-time objects out of the collector's reach: a full
    collection cost about 0.23 s a case, and freezing saved 17-22% of a case
    (measured on this stack; DESIGN.md section 6).
    """
    global _SETUP_DONE
    if _SETUP_DONE:
        return
    import torch

    from harness.results.case_result import versions

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    for name in ("executorch", "torchao", "torch._export", "torch.export", "root"):
        logging.getLogger(name).setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)
    versions()
    import harness.lowering.lower  # noqa: F401  - the heavy imports
    import harness.lowering.quantize  # noqa: F401
    from harness.policy.targets import TARGETS
    from harness.runners.registry import get_runner
    from harness.targets import backend

    for target in TARGETS.values():
        backend(target)
        get_runner(target.runner)

    install()
    gc.collect()
    gc.freeze()
    _SETUP_DONE = True


# Unbounded lru_caches in the libraries keyed on graph modules and nodes: each
# pins every graph of every case (measured: ~3,500 objects and 1 MiB a case,
# and a per-case time that doubled over 60 cases). Cleared after each case.
_GRAPH_PINNING_CACHES = (
    ("torch.ao.quantization.fx.utils", "assert_and_get_unique_device"),
    ("torchao.utils", "_assert_and_get_unique_device"),
    ("executorch.exir.backend.utils", "is_same_node"),
)


def release_graph_caches() -> None:
    for module, name in _GRAPH_PINNING_CACHES:
        fn = getattr(importlib.import_module(module), name, None)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
    _release_generated_sources()
    _release_shape_envs()
    from harness.lowering import opaque_lookup

    opaque_lookup.forget()


# After this many cases or packs of a process, the heap that outlived them is frozen too.
REFREEZE_AFTER = (1, 8, 64)  # tasks done (see `one_task`)
_DEPTH = 0
_TASKS_DONE = 0


def one_task(fn):
    """Decorates `run_case` and `run_pack`: the heap is frozen again before a process's 2nd, 9th and 65th task.

    `setup_process` freezes the import-time heap, but the first cases build
    more that lives as long as the process (dispatch and fake-tensor caches,
    the backend's registries, compiled code), and every full collection walked
    it again: 9-14% of a packed a8w8 case went to the collector, two thirds of
    it in full collections (measured: 0.035 -> 0.017 s a case in them with a
    second freeze). Before a task starts nothing of the earlier ones is alive,
    so the heap is collected and frozen there; a nested call (a pack's case
    re-run alone) is part of its task and never a boundary. Collection never
    changes results; freezing only a few times bounds what an object frozen
    alive and later dropped in a cycle can keep (benchmarks/bench_workers.py:
    0.07 MiB a case over 2,000 cases).
    """

    @functools.wraps(fn)
    def run(*args, **kwargs):
        global _DEPTH, _TASKS_DONE
        if _DEPTH == 0 and _INSTALLED and _TASKS_DONE in REFREEZE_AFTER:
            gc.collect()
            gc.freeze()
        _DEPTH += 1
        try:
            return fn(*args, **kwargs)
        finally:
            _DEPTH -= 1
            if _DEPTH == 0:
                _TASKS_DONE += 1

    return run


_SHAPE_ENVS: "weakref.WeakSet | None" = None  # every live ShapeEnv (with the speed-ups on)
_SHAPE_ENV_CACHES: tuple = ()  # ShapeEnv's per-method LRU caches


def _track_shape_envs() -> None:
    global _SHAPE_ENVS, _SHAPE_ENV_CACHES
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    _SHAPE_ENVS = weakref.WeakSet()
    _SHAPE_ENV_CACHES = tuple(a for a in vars(ShapeEnv).values() if hasattr(a, "cache_clear"))
    original = ShapeEnv.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _SHAPE_ENVS.add(self)

    ShapeEnv.__init__ = __init__


def _release_shape_envs() -> None:
    """Let the collector free each case's ShapeEnv and FakeTensorMode.

    A symbolic size is a C++ SymInt holding its Python SymNode, an edge the
    collector cannot see; so the cycle ShapeEnv -> tracked fakes / dispatch
    cache -> fake tensor -> C++ sizes -> SymNode -> ShapeEnv is never
    collected, and a worker kept every dynamic-shape case's fake mode with its
    graphs (measured: one ShapeEnv and one FakeTensorMode more per case, 13
    after 12 cases; 1 and 1 with this). The per-method LRU caches of ShapeEnv
    hold the last few environments as well. Nothing reads a case's
    environment after the case; a pack's are released before its cases are
    judged, which reads none.
    """
    if _SHAPE_ENVS is None:
        return
    for env in list(_SHAPE_ENVS):
        getattr(env, "fake_tensor_cache", {}).clear()
        if getattr(env, "tracked_fakes", None) is not None:
            env.tracked_fakes.clear()
    for cache in _SHAPE_ENV_CACHES:
        cache.cache_clear()


def _release_generated_sources() -> None:
    """Forget the source of the graph modules torch.fx compiled during the case.

    Every compiled GraphModule leaves its source in torch.fx's loader and a
    lazy entry in `linecache` (for tracebacks), never removed: ~140 objects
    the collector tracks, per case, for the worker's life (measured: 26k more
    after 60 cases without this, flat with it). Only a traceback of generated
    code reads them, and a case's traceback is recorded before this runs. A
    torch without that loader has nothing to release here.
    """
    import linecache

    from torch.fx import graph_module

    loader = getattr(graph_module, "_loader", None)
    sources = getattr(loader, "eval_cache", None)
    if not isinstance(sources, dict):
        return
    for key in sources:
        linecache.cache.pop(key, None)
    sources.clear()


def speedups_state() -> str:
    """'on', or why they are off."""
    import torch

    if os.environ.get("HARNESS_NO_SPEEDUPS", "") not in ("", "0"):
        return "off (HARNESS_NO_SPEEDUPS is set)"
    running = torch.__version__.split("+")[0]
    if running != SPEEDUPS_WRITTEN_FOR:
        return f"off (written against torch {SPEEDUPS_WRITTEN_FOR}, this is torch {running})"
    return "on"


class _CachedCallableMeta(type):
    """`Callable[...]` with memoized subscriptions; isinstance as before."""

    _cache: dict = {}

    def __getitem__(cls, params):
        try:
            return cls._cache[params]
        except KeyError:
            alias = cls._cache[params] = collections.abc.Callable[params]
            return alias
        except TypeError:  # unhashable parameters: no caching
            return collections.abc.Callable[params]

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, collections.abc.Callable)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, collections.abc.Callable)


class CachedCallable(metaclass=_CachedCallableMeta):
    pass


def install() -> None:
    """Install the speed-ups if `speedups_state()` allows; say once if it does not."""
    global _INSTALLED, _SAID
    if _INSTALLED:
        return
    state = speedups_state()
    if state != "on":
        if not _SAID:
            sys.stderr.write(f"harness: torch speed-ups {state}; results are the same, cases are slower\n")
            _SAID = True
        return
    import torch
    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    original = export_utils._collect_all_valid_cia_ops
    cache: dict[tuple, frozenset] = {}

    def collect_all_valid_cia_ops_cached() -> set:
        key = (
            tuple(torch.ops._dir),
            len(torch._C._dispatch_get_registrations_for_dispatch_key("CompositeImplicitAutograd")),
        )
        if key not in cache:
            cache.clear()
            cache[key] = frozenset(original())
        return set(cache[key])  # callers mutate their copy

    exported_program._collect_all_valid_cia_ops = collect_all_valid_cia_ops_cached
    decomp_utils._collect_all_valid_cia_ops = collect_all_valid_cia_ops_cached

    import torch._ops

    if torch._ops.Callable is collections.abc.Callable:
        torch._ops.Callable = CachedCallable

    _share_node_source_history()
    from harness.lowering import cia_override, histogram_search, lazy_compile, opaque_lookup, skip_retrace

    cia_override.install()
    opaque_lookup.install()
    skip_retrace.enable()

    if not histogram_search.install():
        sys.stderr.write(
            f"harness: histogram search speed-up off (written for torchao {histogram_search.WRITTEN_FOR_TORCHAO})\n"
        )

    lazy_compile.enable()
    _track_shape_envs()
    _INSTALLED = True


def _share_node_source_history() -> None:
    from torch.fx import traceback as fx_traceback

    NodeSource = fx_traceback.NodeSource
    Action = fx_traceback.NodeSourceAction

    def __init__(self, node, pass_name: str = "", action=None) -> None:
        self.pass_name = pass_name
        if action is None:
            action = []
        elif not isinstance(action, list):
            action = [action]
        for a in action:
            if not isinstance(a, Action):
                raise AssertionError(f"Expected NodeSourceAction, got {type(a)}")
        self.action = action
        if node:
            self.node_info = self.NodeInfo(name=node.name, target=str(node.target), graph_id=id(node.graph))
            # The one change: a new list sharing the (never mutated) history.
            self.from_node = list(node.meta["from_node"]) if "from_node" in node.meta else []
        else:
            self.node_info = None
            self.from_node = []
        self._action_string = None
        self._dict = None

    NodeSource.__init__ = __init__
