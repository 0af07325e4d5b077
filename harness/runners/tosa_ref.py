"""Run a lowered program with its TOSA delegates on the TOSA reference model.

The program's own graph is interpreted node by node in torch (the boundary
quantize/dequantize ops stay on the CPU, as on a device); each delegate call
is replaced by the reference model running that delegate's flatbuffer,
in-process. Delegate inputs and outputs are matched by name and laid out in
each tensor's dim order, as the backend declared it. A graph with dynamic dims
gets them resolved for the run's inputs first (`harness.tosa.shapes`).
"""

from __future__ import annotations

import faulthandler
import functools
import os
import pickle
import select
import signal
import tempfile
import time
from contextlib import contextmanager

import numpy as np
import torch

from harness import cache
from harness.policy.limits import REFERENCE_MODEL_TIME_LIMIT_S
from harness.runners.base import Availability, RunnerError
from harness.runners.delegates import feed, results, run_program
from harness.tosa.graph import read_tosa
from harness.tosa.shapes import ShapeError, is_dynamic, resolve_shapes


@contextmanager
def _captured_stdio(sink):
    """Send fd 1/2 (the C++ model's prints) to `sink`; yields nothing."""
    sink.seek(0)
    sink.truncate()
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def _stand_in_debugger() -> str:
    """A directory whose only program is a `gdb` that exits at once (a two-line shell script).

    On a graph it refuses, the reference model forks a child that attaches gdb
    to print a backtrace (`execlp("gdb", ...)`): 4-7 s per refused case, and
    the backtrace says nothing about the graph. The child must *exec*: if
    the exec fails it calls `exit(1)`, which runs every exit handler of the
    forked process, and one of them can hang for ever (seen: Ray's
    `_raylet.so`, loaded by an earlier in-process cluster run, waits in its
    thread pool's destructor for threads the fork did not copy; the case,
    and a CI run with it, never ended). A stand-in gdb makes the exec
    succeed and exit without running any of them.

    The folder is made once in the harness cache and shared by every process:
    a temporary one per runner was left behind by each worker that ended
    without running its exit handlers (hundreds in /tmp after a day of sweeps).
    Where the cache cannot be written, a temporary folder serves this process.
    """
    return str(cache.kept_folder("stand-in-gdb", {"gdb": (_GDB, 0o755)}, prefix="tosa-ref-no-gdb-"))


_GDB = b"#!/bin/sh\nexit 0\n"


@contextmanager
def _without_debugger(folder: str):
    """PATH is `folder` (the stand-in gdb only) while the model runs."""
    saved = os.environ.get("PATH")
    os.environ["PATH"] = folder
    try:
        yield
    finally:
        if saved is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = saved


def _run_isolated(
    buffer: bytes, feed: list[np.ndarray], time_limit: float = REFERENCE_MODEL_TIME_LIMIT_S
) -> tuple[list[np.ndarray], str, str]:
    """The reference model on `buffer` in a forked child: (outputs, status, error).

    The model can crash the process on a graph it should refuse (seen: a
    bf16 TRANSPOSE_CONV2D inside a COND_IF branch, SIGSEGV). In a child, a
    crash costs this run only and becomes a runner error instead of killing a
    pytest session. fork() shares the loaded model copy-on-write (about 5 ms).
    The child leads its own process group, which the model's own children
    join: past `time_limit`, or once the child is gone, the group is killed,
    so nothing the model started outlives the run holding our pipes open.
    """
    import tosa_reference_model as reference_model

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: run, send the result, leave without any cleanup handlers
        try:
            os.setpgid(0, 0)
            faulthandler.disable()  # a crash is reported by its signal; no Python traceback dump
            os.close(read_end)
            try:
                outputs, status = reference_model.run(buffer, feed)
                payload = pickle.dumps(([np.asarray(o) for o in outputs], status.name, ""))
            except Exception as e:  # noqa: BLE001
                payload = pickle.dumps(([], "", f"refused the graph ({e})"))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        os.setpgid(pid, pid)  # as the child does: whichever runs first
    except OSError:  # the child already did, or is already gone
        pass
    try:
        payload, finished = _collect(read_end, pid, time.monotonic() + time_limit)
    finally:
        os.close(read_end)
        try:  # the child is at most a zombie here, so its group id cannot belong to anyone else yet
            os.killpg(pid, signal.SIGKILL)  # whatever the model left behind, or the hung child itself
        except (ProcessLookupError, PermissionError):
            pass
        _, wait_status = os.waitpid(pid, 0)
    if not finished:
        return [], "", f"did not finish within {time_limit:.0f} s (killed, with the processes it started)"
    if os.WIFSIGNALED(wait_status):
        signal_number = os.WTERMSIG(wait_status)
        return [], "", f"crashed (signal {signal_number}, {signal.Signals(signal_number).name})"
    if not payload:
        return [], "", f"child exited with status {os.waitstatus_to_exitcode(wait_status)} and no result"
    return pickle.loads(payload)


def _collect(fd: int, pid: int, deadline: float) -> tuple[bytes, bool]:
    """What the child sends on `fd`, and whether it exited before `deadline` (it is left unreaped)."""
    chunks: list[bytes] = []
    poller = select.poll()  # not select.select: a busy worker's descriptors can pass its 1,024 limit
    poller.register(fd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return b"".join(chunks), False
        if poller.poll(min(remaining, 0.2) * 1000):
            chunk = os.read(fd, 1 << 20)
            if chunk:
                chunks.append(chunk)
                continue
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
    while poller.poll(0):  # the child is gone: what it wrote is all in the pipe
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks), True


class TosaReferenceRunner:
    """The TOSA reference model (tosa-tools), in this process."""

    name = "tosa-ref"

    def __init__(self) -> None:
        self._sink = tempfile.TemporaryFile(mode="w+b")
        self._no_gdb = _stand_in_debugger()

    def available(self, family: str = "tosa") -> Availability:
        try:
            import tosa_reference_model  # noqa: F401
        except ImportError as e:  # pragma: no cover - part of the pinned stack
            return Availability(False, f"tosa_reference_model not importable: {e}")
        return Availability(True)

    def run(self, artifact, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        return run_program(artifact, inputs, functools.partial(self._run_delegate, artifact))

    def _log_tail(self, lines: int = 3) -> str:
        """The model's own explanation: its last log lines that say something."""
        self._sink.seek(0)
        log = [line.strip() for line in self._sink.read().decode(errors="replace").splitlines()]
        useful = [line for line in log if line and not line.startswith(("WARNING: Different TOSA spec", "#"))]
        return " | ".join(useful[:lines]) or "no log"

    def _run_delegate(self, artifact, lowered, args) -> tuple[torch.Tensor, ...]:
        buffer = artifact.tosa_for(lowered)
        if buffer is None:
            raise RunnerError(
                f"no TOSA graph for this {lowered.backend_id} delegate: it cannot run on the TOSA reference model"
            )
        summary = read_tosa(buffer)
        arrays = feed(lowered, summary.inputs, args)
        if is_dynamic(buffer):  # the model allocates every tensor up front: give it this run's shapes
            try:
                buffer = resolve_shapes(buffer, [a.shape for a in arrays])
            except ShapeError as e:
                raise RunnerError(
                    f"cannot resolve the graph's dynamic shapes for inputs {[a.shape for a in arrays]}: {e}"
                ) from None
            summary = read_tosa(buffer)
        with _captured_stdio(self._sink), _without_debugger(self._no_gdb):
            outputs, status, error = _run_isolated(buffer, arrays)
        if error:  # the binding raises on graphs it cannot even build, or the model crashed
            raise RunnerError(f"reference model {error}: {self._log_tail()}")
        if status != "TOSA_VALID":
            raise RunnerError(f"reference model returned {status}: {self._log_tail()}")
        return results(lowered, outputs, summary.outputs, "reference model")
