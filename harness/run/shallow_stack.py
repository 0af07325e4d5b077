"""Run a call on a thread of its own, whose stack starts near empty, however deep the caller's is.

torch.fx's tracer records, for every node it creates while exporting, the
whole Python stack above it (`Tracer.create_node` -> `CapturedTraceback.extract().summary()`),
symbolizing each frame. Its cost grows with the caller's depth: a test
runner's test sits ~60 frames deep (pluggy's hooks, xdist's loop), and 60
extra frames made 40 packed a8w8 cases 33% slower (measured: 12.2 s against
9.2 s in one process, `lower` 10.6 s against 7.6 s). A sweep worker calls
from a shallow stack already; a caller that is deep (the pytest plugin) runs
its cases here instead. The recorded traces only annotate nodes: no
flatbuffer and no number depends on them.

One thread serves the process, so whatever torch keeps per thread stays warm
from case to case as in a sweep worker. It is a daemon: an interrupted caller
(Ctrl-C, a test timeout) does not wait for it. An exception in the call is
raised in the caller.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")

_JOBS: queue.SimpleQueue | None = None
_LOCK = threading.Lock()


def _serve(jobs: queue.SimpleQueue) -> None:
    while True:
        future, fn, args = jobs.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            future.set_result(fn(*args))
        except BaseException as e:  # noqa: BLE001 - handed to the caller, raised there
            future.set_exception(e)


def call(fn: Callable[..., T], *args) -> T:
    """`fn(*args)`, computed on the process's shallow-stack thread; the caller waits (interruptibly)."""
    global _JOBS
    with _LOCK:
        if _JOBS is None:
            _JOBS = queue.SimpleQueue()
            threading.Thread(target=_serve, args=(_JOBS,), name="harness-shallow-stack", daemon=True).start()
    future: Future = Future()
    _JOBS.put((future, fn, args))
    return future.result()
