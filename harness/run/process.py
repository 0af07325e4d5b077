"""Process set-up: done once per process, never on a case's path.

`setup_process()` makes torch deterministic and single-threaded, quiets the
libraries' logs, does the heavy imports, installs the speed-ups that pass
their probes and the end-to-end proof (`harness.speedups`), and freezes the
import-time heap out of the garbage collector. `release_graph_caches()` runs
after each case.

A process whose ExecuTorch cannot be imported at all (a source tree that
needs a newer core, a broken overlay) raises `BackendImportError`, one line
naming the module: no case can be run there, and none is blamed for it.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import linecache
import logging
import sys
import warnings

_SETUP_DONE = False

# The end-to-end proof's sample: a float conv, a quantized one and a quantized transposed one (small: ~1 s).
PROOF_SAMPLE = (
    "conv2d_n1_ic4_oc4_g1_i8x8_k3x3_s1x1_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone",
    "conv2d_n1_ic4_oc8_g1_i8x8_k3x3_s2x2_p1x1_d1x1_b1_pmzeros_qa8w8_dsnormal_cxrelu",
    "tconv2d_n1_ic4_oc4_g1_i6x6_k3x3_s2x2_p1x1_op1x1_d1x1_b1_pmzeros_qa8w8-pt_dsnormal_cxnone",
)


def lower_proof_sample() -> list[str]:
    """Per sample case, the sha256 of each flatbuffer it lowers to under whatever speed-ups are installed, or
    how it failed (a release whose backend fails a sample still compares on the others, and on how it fails)."""

    from harness.config import parse_descriptor
    from harness.policy.targets import get_target
    from harness.run import stages

    digests = []
    for descriptor in PROOF_SAMPLE:
        try:
            prepared = stages.prepare(parse_descriptor(descriptor), 0, get_target("tosa"))
            digests.append(" ".join(hashlib.sha256(b).hexdigest() for b in stages.lower(prepared).tosa))
        except stages.StageError as e:
            digests.append(f"error: {e}"[:300])
    if all(d.startswith("error: ") for d in digests):
        raise RuntimeError(f"every sample failed to lower, e.g. {digests[0]}")
    return digests


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
    _import_backend()
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
    for module, name in _GRAPH_PINNING_CACHES:  # a module never imported holds nothing: it is not imported here
        fn = getattr(sys.modules.get(module), name, None)
        if hasattr(fn, "cache_clear"):
            fn.cache_clear()
    _release_generated_sources()
    from harness.speedups import opaque_lookup, shape_envs

    shape_envs.release()
    opaque_lookup.forget()


# After this many cases or packs of a process, the heap that outlived them is frozen too.
REFREEZE_AFTER = (1, 8, 64)  # tasks done (see `one_task`)
_DEPTH = 0
_TASKS_DONE = 0


def _import_backend() -> None:
    """The heavy imports, and every target's backend: BackendImportError (one line) if ExecuTorch's cannot load."""
    try:
        import harness.lowering.lower  # noqa: F401
        import harness.lowering.quantize  # noqa: F401
        from harness.policy.targets import TARGETS
        from harness.runners.registry import get_runner
        from harness.targets import backend

        for target in TARGETS.values():
            backend(target)
            get_runner(target.runner)
    except ImportError as e:
        from harness.blame import BackendImportError, describe_import_error

        raise BackendImportError(describe_import_error(e)) from e
    except Exception as e:  # noqa: BLE001 - an ExecuTorch (an old tree) whose import fails another way: one line
        from harness.blame import backend_load_error

        found = backend_load_error(e)
        if found is None:
            raise
        raise found from e


def install():
    """Install the speed-ups that pass their probes and the end-to-end proof (once); their state."""
    from harness.speedups import state

    return state.install(prove=lower_proof_sample)


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
        if _DEPTH == 0 and _SETUP_DONE and _TASKS_DONE in REFREEZE_AFTER:
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


def _release_generated_sources() -> None:
    """Forget the source of the graph modules torch.fx compiled during the case.

    Every compiled GraphModule leaves its source in torch.fx's loader and a
    lazy entry in `linecache` (for tracebacks), never removed: ~140 objects
    the collector tracks, per case, for the worker's life (measured: 26k more
    after 60 cases without this, flat with it). Only a traceback of generated
    code reads them, and a case's traceback is recorded before this runs. A
    torch without that loader has nothing to release here.
    """

    from torch.fx import graph_module

    loader = getattr(graph_module, "_loader", None)
    sources = getattr(loader, "eval_cache", None)
    if not isinstance(sources, dict):
        return
    for key in sources:
        linecache.cache.pop(key, None)
    sources.clear()
