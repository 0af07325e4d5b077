"""Test-only settings, and the guard of the fast unit loop.

Property tests draw the same examples on every run, so CI is deterministic;
explore new ones with `--hypothesis-profile=default`.

The unit loop (`-m "not lowering and not processes"`) stays fast only if no
test in it imports ExecuTorch's lowering (seconds of imports, then seconds a
case) or starts a process (a Python child spends seconds importing before it
does anything). A test without the `lowering` mark that imports it fails,
naming the module; so does a test module that imports it while being
collected, when the run selects no lowering test at all. A test marked neither
`processes` nor `lowering` that starts a Python interpreter or a browser (each
takes seconds before it does anything) fails, naming the command; a fork, git
or ruff is cheap and allowed.
"""

from __future__ import annotations

import os
import sys

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

LOWERING_MODULES = ("executorch.exir", "executorch.backends.arm", "harness.lowering.lower")


def pytest_addoption(parser):
    parser.addoption(
        "--every-pack",
        action="store_true",
        help="prove packed == alone over every smoke pack (tests/schedule/test_packing.py), not the covering sample",
    )


def lowering_imported() -> list[str]:
    return [m for m in LOWERING_MODULES if m in sys.modules]


def pytest_collection_finish(session):
    lowering = any(item.get_closest_marker("lowering") for item in session.items)
    if session.items and not lowering and lowering_imported():
        raise pytest.UsageError(
            f"collecting the tests imported {', '.join(lowering_imported())}, though no "
            "selected test lowers: import it inside the test, or mark its module 'lowering'"
        )


_BEFORE = pytest.StashKey[list]()
_started: list[str] | None = None  # while an unmarked test runs: the processes it started


def _slow_to_start(program) -> bool:
    name = os.path.basename(os.fsdecode(program))
    return name == os.path.basename(sys.executable) or name.startswith(("python", "chromium", "chrome"))


def _audit(event: str, args: tuple) -> None:
    """Watches interpreter starts (an audit hook: every `subprocess.Popen` and `os.posix_spawn` reports here)."""
    if _started is None:
        return
    if event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        argv = [argv] if isinstance(argv, (str, bytes, os.PathLike)) else list(argv)
        if _slow_to_start(executable or argv[0]):
            _started.append(" ".join(map(os.fsdecode, argv))[:160])
    elif event == "os.posix_spawn" and _slow_to_start(args[0]):
        _started.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def _watching(item) -> bool:
    return item.get_closest_marker("processes") is None and item.get_closest_marker("lowering") is None


def _check(item) -> None:
    global _started
    if _started:
        started, _started = _started, []
        raise pytest.fail.Exception(
            f"a test without the 'processes' mark started {started[0]!r}"
            f"{f' and {len(started) - 1} more' if len(started) > 1 else ''}: mark it processes; the unit loop "
            "starts no process",
            pytrace=False,
        )
    if item.get_closest_marker("lowering") is None:
        new = sorted(set(lowering_imported()) - set(item.stash.get(_BEFORE, [])))
        if new:
            item.stash[_BEFORE] = lowering_imported()  # said once
            raise pytest.fail.Exception(
                f"a test without the 'lowering' mark imported {', '.join(new)} (in a test "
                "or a fixture it uses): mark it lowering; the unit loop must not lower",
                pytrace=False,
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    global _started
    item.stash[_BEFORE] = lowering_imported()  # before any fixture of the item, module- and session-scoped too
    _started = [] if _watching(item) else None
    result = yield
    _check(item)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    _check(item)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    global _started
    try:
        result = yield
        _check(item)
    finally:
        _started = None
    return result
