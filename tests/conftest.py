"""Test-only settings, and the guard of the fast unit loop.

Property tests draw the same examples on every run, so CI is deterministic;
explore new ones with `--hypothesis-profile=default`.

The unit loop (`-m "not lowering and not processes"`) stays fast only if no
test in it imports ExecuTorch's lowering (seconds of imports, then seconds a
case). A test without the `lowering` mark that imports it fails, naming the
module; so does a test module that imports it while being collected, when the
run selects no lowering test at all.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

LOWERING_MODULES = ("executorch.exir", "executorch.backends.arm", "harness.lowering.lower")


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


def _check(item) -> None:
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
    item.stash[_BEFORE] = lowering_imported()  # before any fixture of the item, module- and session-scoped too
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
    result = yield
    _check(item)
    return result
