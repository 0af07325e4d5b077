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
import signal
import tempfile
from contextlib import contextmanager

import numpy as np
import torch

from harness.runners.base import Availability, RunnerError
from harness.tosa.graph import read_tosa
from harness.tosa.shapes import ShapeError, is_dynamic, resolve_shapes

_DELEGATE = torch.ops.higher_order.executorch_call_delegate


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


@contextmanager
def _without_debugger(empty_dir: str):
    """Hide gdb while the model runs.

    On a graph it refuses, the reference model forks a child that attaches gdb
    to print a backtrace (`execlp("gdb", ...)`): 4-7 s per refused case, and
    the backtrace says nothing about the graph. With PATH pointing at an
    empty directory the exec fails at once; the model's own message remains.
    """
    saved = os.environ.get("PATH")
    os.environ["PATH"] = empty_dir
    try:
        yield
    finally:
        if saved is None:
            del os.environ["PATH"]
        else:
            os.environ["PATH"] = saved


_BITS_ONLY = {
    torch.bfloat16: torch.uint16,
    torch.float8_e4m3fn: torch.uint8,
    torch.float8_e5m2: torch.uint8,
}


def _to_numpy(t: torch.Tensor, dim_order: tuple[int, ...]) -> np.ndarray:
    t = t.permute(dim_order).contiguous()
    if t.dtype in _BITS_ONLY:  # numpy has no such type: pass the bits; the graph knows the type
        t = t.view(_BITS_ONLY[t.dtype])
    return np.ascontiguousarray(t.numpy())


def _from_numpy(a: np.ndarray, dtype: torch.dtype, shape: tuple[int, ...], dim_order: tuple[int, ...]) -> torch.Tensor:
    inverse = [dim_order.index(i) for i in range(len(dim_order))]
    if dtype in _BITS_ONLY or a.dtype.type is np.void:  # raw bits come back
        t = torch.frombuffer(bytearray(np.ascontiguousarray(a).tobytes()), dtype=dtype).reshape(shape)
    else:
        t = torch.from_numpy(np.array(a))
    return t.permute(inverse).contiguous()


def _run_isolated(buffer: bytes, feed: list[np.ndarray]) -> tuple[list[np.ndarray], str, str]:
    """The reference model on `buffer` in a forked child: (outputs, status, error).

    The model can crash the process on a graph it should refuse (seen: a
    bf16 TRANSPOSE_CONV2D inside a COND_IF branch, SIGSEGV). In a child, a
    crash costs this run only and becomes a runner error instead of killing a
    pytest session. fork() shares the loaded model copy-on-write (about 5 ms).
    """
    import tosa_reference_model as reference_model

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: run, send the result, leave without any cleanup handlers
        try:
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
    with os.fdopen(read_end, "rb") as pipe:
        payload = pipe.read()
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        signal_number = os.WTERMSIG(wait_status)
        return [], "", f"crashed (signal {signal_number}, {signal.Signals(signal_number).name})"
    if not payload:
        return [], "", f"child exited with status {os.waitstatus_to_exitcode(wait_status)} and no result"
    return pickle.loads(payload)


class _DelegateInterpreter(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, run_delegate):
        super().__init__(gm)
        self._run_delegate = run_delegate

    def call_function(self, target, args, kwargs):
        if target is _DELEGATE:
            return self._run_delegate(args[0], args[1:])
        return super().call_function(target, args, kwargs)


class TosaReferenceRunner:
    """The TOSA reference model (tosa-tools), in this process."""

    name = "tosa-ref"

    def __init__(self) -> None:
        self._sink = tempfile.TemporaryFile(mode="w+b")
        self._empty = tempfile.TemporaryDirectory(prefix="tosa-ref-no-gdb-")
        self._empty_dir = self._empty.name

    def available(self, family: str = "tosa") -> Availability:
        try:
            import tosa_reference_model  # noqa: F401
        except ImportError as e:  # pragma: no cover - part of the pinned stack
            return Availability(False, f"tosa_reference_model not importable: {e}")
        return Availability(True)

    def run(self, artifact, inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        gm = artifact.program.exported_program().module()
        try:
            with torch.no_grad():
                outputs = _DelegateInterpreter(gm, functools.partial(self._run_delegate, artifact)).run(*inputs)
        except RunnerError as e:  # without the note the interpreter appends ("While executing ...")
            raise RunnerError(str(e).split(" While executing ")[0]) from None
        return list(outputs) if isinstance(outputs, (tuple, list)) else [outputs]

    def _log_tail(self, lines: int = 3) -> str:
        """The model's own explanation: its last log lines that say something."""
        self._sink.seek(0)
        log = [line.strip() for line in self._sink.read().decode(errors="replace").splitlines()]
        useful = [line for line in log if line and not line.startswith(("WARNING: Different TOSA spec", "#"))]
        return " | ".join(useful[:lines]) or "no log"

    def _run_delegate(self, artifact, lowered, args) -> tuple[torch.Tensor, ...]:
        buffer = artifact.tosa_for(lowered)
        if buffer is None:
            raise RunnerError(f"no TOSA graph for this {lowered.backend_id} delegate: it cannot run on the TOSA "
                              "reference model")
        summary = read_tosa(buffer)
        program = lowered.original_module
        user_inputs = list(program.graph_signature.user_inputs)
        placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
        by_name = dict(zip(user_inputs, args))
        feed = []
        for info in summary.inputs:
            if info.name not in by_name:
                raise RunnerError(f"TOSA input {info.name} is not a delegate input ({', '.join(user_inputs)})")
            order = tuple(placeholders[info.name].meta["val"].dim_order())
            array = _to_numpy(by_name[info.name], order)
            if len(array.shape) != len(info.shape) or any(d not in (-1, a) for d, a in zip(info.shape, array.shape)):
                raise RunnerError(f"TOSA input {info.name} has shape {info.shape}, delegate gives {array.shape}")
            feed.append(array)
        if is_dynamic(buffer):  # the model allocates every tensor up front: give it this run's shapes
            try:
                buffer = resolve_shapes(buffer, [a.shape for a in feed])
            except ShapeError as e:
                raise RunnerError(f"cannot resolve the graph's dynamic shapes for inputs {[a.shape for a in feed]}: {e}") from None
            summary = read_tosa(buffer)
        with _captured_stdio(self._sink), _without_debugger(self._empty_dir):
            outputs, status, error = _run_isolated(buffer, feed)
        if error:  # the binding raises on graphs it cannot even build, or the model crashed
            raise RunnerError(f"reference model {error}: {self._log_tail()}")
        if status != "TOSA_VALID":
            raise RunnerError(f"reference model returned {status}: {self._log_tail()}")
        output_nodes = program.graph.output_node().args[0]
        if len(outputs) != len(output_nodes):
            raise RunnerError(f"reference model gave {len(outputs)} outputs, delegate declares {len(output_nodes)}")
        results = []
        for out, node, info in zip(outputs, output_nodes, summary.outputs):
            val = node.meta["val"]
            results.append(_from_numpy(out, val.dtype, info.shape, tuple(val.dim_order())))
        return tuple(results)
