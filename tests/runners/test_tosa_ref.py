"""The TOSA reference model on a graph it refuses: its verdict, in a process whatever else that process has loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

# A process whose exit handlers must never run in the model's children: one that appends to MARK, as a library's
# static destructor would (Ray's `_raylet.so` hangs there for ever once a cluster ran in the process).
SCRIPT = """
import ctypes, os, sys
MARK = sys.argv[1]
@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def on_exit(_):
    fd = os.open(MARK, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, b"exit handler ran in pid %d\\n" % os.getpid())
    os.close(fd)
ctypes.CDLL(None).__cxa_atexit(on_exit, None, None)  # atexit() itself is not exported
from harness.config import parse_descriptor
from harness.run.execute import run_case
r = run_case(parse_descriptor(sys.argv[2]), canary="pad-off-by-one")
print(r.outcome.value, "|", r.reason.splitlines()[0] if r.reason else "", flush=True)
os._exit(0)  # this process's own handlers are not the point
"""


@pytest.mark.lowering
def test_a_refused_graph_never_runs_the_exit_handlers_of_the_process_that_ran_it(tmp_path):
    """The model forks a child to print a backtrace with gdb; that child must exec our stand-in gdb, never fall
    back to `exit()` (which runs every loaded library's exit handlers in a copy of a process without its threads)."""
    from tests.canary_cases import FIRST_CATCHING_SMOKE_CASE

    mark = tmp_path / "exit-handlers"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(mark), FIRST_CATCHING_SMOKE_CASE["pad-off-by-one"]],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outcome, reason = done.stdout.strip().splitlines()[-1].split(" | ", 1)
    # a negative pad: the model refuses the graph (its backtrace child runs) and says why in its own words
    assert outcome == "runner_error", (outcome, reason)
    assert "refused the graph" in reason and "pad is smaller than zero" in reason, reason
    assert not mark.exists(), mark.read_text()


def _hangs_with_a_child(buffer, feed):
    """A model that starts a process of its own and never returns (as the backtrace child did under Ray)."""
    import os
    import time

    grandchild = os.fork()
    if grandchild == 0:
        time.sleep(3600)
        os._exit(0)
    with open(os.environ["HANG_PIDS"], "w") as f:
        f.write(f"{os.getpid()} {grandchild}")
    os.waitpid(grandchild, 0)


def _alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie waiting for init to reap it is dead."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return not f.read().rsplit(") ", 1)[1].startswith(("Z", "X"))
    except FileNotFoundError:
        return False


@pytest.mark.processes
def test_a_hung_model_is_killed_with_its_children_at_the_time_limit(tmp_path, monkeypatch):
    """Nothing the model started may outlive the run: a surviving child holds the worker's pipes open, and pytest-xdist
    then waits for ever on a worker already gone (how the CI run that this guards against never ended)."""
    import time

    import numpy as np
    import tosa_reference_model

    from harness.runners.tosa_ref import _run_isolated

    pids = tmp_path / "pids"
    monkeypatch.setenv("HANG_PIDS", str(pids))
    monkeypatch.setattr(tosa_reference_model, "run", _hangs_with_a_child)
    start = time.monotonic()
    outputs, status, error = _run_isolated(b"", [np.zeros(1)], time_limit=2.0)
    assert 2.0 <= time.monotonic() - start < 10.0
    assert (outputs, status) == (
        [],
        "",
    ) and error == "did not finish within 2 s (killed, with the processes it started)"
    for pid in map(int, pids.read_text().split()):  # SIGKILL is sent; its delivery takes a moment
        for _ in range(50):
            if not _alive(pid):
                break
            time.sleep(0.1)
        assert not _alive(pid), f"pid {pid} outlived the run"


def test_the_model_time_limit_ends_a_run_before_pytest_timeout_ends_its_worker(pytestconfig):
    """pytest-timeout ends the worker with the model's processes alive (nothing kills their group): ours must come
    first, with room for the lowering that precedes the run."""
    from harness.policy.limits import CASE_TIME_LIMIT_S, REFERENCE_MODEL_TIME_LIMIT_S

    assert REFERENCE_MODEL_TIME_LIMIT_S < float(pytestconfig.getini("timeout"))
    assert REFERENCE_MODEL_TIME_LIMIT_S >= CASE_TIME_LIMIT_S["nightly"]  # never cuts a nightly case short


def test_the_stand_in_debugger_is_one_file_in_the_cache_that_exits_at_once(tmp_path, monkeypatch):
    """Shared by every runner and process (a temporary folder per runner was left in /tmp by each worker that
    ended without its exit handlers); a temporary folder of this process only where the cache is unwritable."""
    from harness.runners import tosa_ref

    monkeypatch.setattr(tosa_ref.cache, "ROOT", tmp_path / "cache")
    folder = tosa_ref._stand_in_debugger()
    assert folder == str(tmp_path / "cache" / "stand-in-gdb") and tosa_ref._stand_in_debugger() == folder
    assert subprocess.run([f"{folder}/gdb", "-p", "1"], capture_output=True).returncode == 0
    (tmp_path / "blocked").write_text("a file where the cache's folder would be")
    monkeypatch.setattr(tosa_ref.cache, "ROOT", tmp_path / "blocked")
    monkeypatch.setattr(tosa_ref.cache, "_PRIVATE", {})
    fallback = tosa_ref._stand_in_debugger()
    assert "tosa-ref-no-gdb-" in fallback and subprocess.run([f"{fallback}/gdb"]).returncode == 0
