"""The plugin's command-line options, all `--harness-*` so that no other plugin's can clash with them."""

from __future__ import annotations

import argparse

from harness.history.db import DEFAULT_DB
from harness.policy.packing import PACK_SIZE
from harness.policy.targets import DEFAULT_TARGET, TARGETS

DEFAULT_RESULTS = "reports/pytest/results.jsonl"
GROUP = "conv-harness"


def add_options(parser) -> None:
    g = parser.getgroup(
        GROUP, "conv numerics harness (one test per conv case: pytest --pyargs harness.pytest_plugin.test_cases)"
    )
    g.addoption("--harness-tier", default="smoke", metavar="NAME", help="the tier to run (default: smoke)")
    # its name before 2026-12, still read so existing nightly scripts run; hidden from --help
    g.addoption("--harness-sweep", dest="harness_tier", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    g.addoption(
        "--harness-case",
        action="append",
        default=[],
        metavar="DESCRIPTOR",
        help="run this case (repeatable; replaces --harness-tier)",
    )
    g.addoption(
        "--harness-seed",
        type=int,
        default=0,
        metavar="N",
        help="data seed, and seed of --harness-random cases (default: 0)",
    )
    g.addoption("--harness-random", type=int, default=0, metavar="N", help="append N seeded random cases")
    g.addoption("--harness-filter", default=None, metavar="REGEX", help="only the descriptors matching this regex")
    g.addoption("--harness-shard", default=None, metavar="K/N", help="only the K-th of N cost-balanced parts")
    g.addoption(
        "--harness-target",
        default=DEFAULT_TARGET,
        metavar="NAME",
        help=f"target to lower for and run on: {', '.join(TARGETS)} (default: {DEFAULT_TARGET})",
    )
    g.addoption("--harness-canary", default="", metavar="NAME", help="inject this fault into the backend, every case")
    g.addoption(
        "--harness-pack",
        type=int,
        default=PACK_SIZE,
        metavar="N",
        help=f"lower and run up to N cases as one program, each still its own test (default {PACK_SIZE}; "
        "1: every case alone). Under xdist a pack's cases go to one worker with --dist load, its "
        "default; other --dist modes run every case alone",
    )
    g.addoption(
        "--harness-results",
        default=DEFAULT_RESULTS,
        metavar="PATH",
        help=f"merged JSONL results (default: {DEFAULT_RESULTS})",
    )
    g.addoption("--harness-db", default=DEFAULT_DB, metavar="PATH", help=f"run history (default: {DEFAULT_DB})")
    g.addoption("--harness-no-history", action="store_true", help="do not record the run in the history")
    g.addoption(
        "--harness-durations",
        default="",
        metavar="PATH",
        help="a JSON of {test node id: seconds} from an earlier run: under xdist the longest work goes out "
        "first (order only; what a test does is unchanged)",
    )
    g.addoption(
        "--harness-store-durations",
        default="",
        metavar="PATH",
        help="write this session's durations there (each test's setup + call + teardown), for --harness-durations",
    )
    g.addoption(
        "--harness-executorch",
        default="",
        metavar="SPEC",
        help="run against another ExecuTorch: a release "
        "(1.4.1), a source checkout (PATH, or PATH@REV) whose Python core runs over the installed wheel's "
        "compiled parts",
    )
    g.addoption(
        "--harness-tools",
        nargs="+",
        default=[],
        metavar="SPEC",
        help="other tool versions than the installed ones, each NAME==VERSION (ethos-u-vela, tosa-tools, the ML "
        "SDK wheels), or 'pinned' (those the ExecuTorch in use pins)",
    )


def given(config) -> bool:
    """Whether any selecting option differs from its default (then the selection is checked before collection)."""
    defaults = {
        "harness_tier": "smoke",
        "harness_case": [],
        "harness_random": 0,
        "harness_filter": None,
        "harness_shard": None,
        "harness_target": DEFAULT_TARGET,
        "harness_canary": "",
        "harness_executorch": "",
        "harness_tools": [],
    }
    return any(config.getoption(k) != v for k, v in defaults.items())
