"""Options several verbs share: the selection of cases, the target, the history, the ExecuTorch, run limits."""

from __future__ import annotations

import argparse

from harness.history.db import DEFAULT_DB
from harness.policy.packing import PACK_SIZE
from harness.policy.targets import DEFAULT_TARGET, TARGETS


def tier_option(p, help: str, default: str | None = "smoke") -> None:
    """`--tier NAME`; `--sweep`, its name before 2026-12, still read (hidden) so existing nightly scripts run."""
    p.add_argument("--tier", default=default, help=help)
    p.add_argument("--sweep", dest="tier", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def selection(p: argparse.ArgumentParser, tier: str = "smoke") -> None:
    tier_option(
        p,
        f"tier: smoke, nightly or full, or @FILE: the descriptors a batch file lists, one per line (default: {tier})",
        tier,
    )
    p.add_argument("--random", type=int, default=0, metavar="N", help="append N random cases drawn with --seed")
    p.add_argument("--seed", type=int, default=0, help="data seed, and seed of --random cases (default: 0)")
    p.add_argument("--filter", metavar="REGEX", help="only descriptors matching this regex (re.search)")
    p.add_argument("--shard", metavar="K/N", help="only the K-th of N cost-balanced parts of the selection")


def target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=DEFAULT_TARGET, help=f"target: {', '.join(TARGETS)} (default: {DEFAULT_TARGET})")


def executorch(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--executorch",
        default="",
        metavar="SPEC",
        help="run against another ExecuTorch: a release "
        "('1.4.1', installed into a cache beside this one), a source checkout ('PATH': its working tree as it "
        "is now; 'PATH@REV': a commit of it, read from git) whose Python core runs over the installed "
        "wheel's compiled parts, or 'installed' (default)",
    )
    p.add_argument(
        "--tools",
        nargs="+",
        default=[],
        metavar="SPEC",
        help="run on other versions of the tools than the installed ones, each NAME==VERSION (ethos-u-vela, "
        "tosa-tools, the ML SDK wheels), installed into a cache once; 'pinned': the versions the ExecuTorch in "
        "use pins (with --executorch 1.4.1, that release's own)",
    )


def db(p: argparse.ArgumentParser, records: bool = False) -> None:
    p.add_argument("--db", default=DEFAULT_DB, help=f"run history database (default: {DEFAULT_DB})")
    if records:
        p.add_argument("--no-history", action="store_true", help="do not record this run in the history")


def case(p: argparse.ArgumentParser) -> None:
    p.add_argument("descriptor", help="case descriptor, e.g. conv2d_ic8_oc16_i32x32_k3x3_s2_p1_qa8w8")
    p.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    target(p)
    p.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend (see `canaries`)")


def cluster(p) -> None:
    """`--cluster`: the same for a sweep and a mutation campaign."""
    p.add_argument(
        "--cluster",
        default="",
        metavar="ADDRESS",
        help="run the cases as tasks on a Ray cluster: "
        "'local' starts one here with -j CPUs; 'auto' or ray://HOST:PORT joins one (extra: cluster)",
    )


def scheduling(p) -> None:
    """How a run schedules its cases: the time a case may take, a cluster, packing, resuming."""
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds a case may run before it is a timeout "
        "and its worker is replaced (default: the tier's, harness/policy/limits.py)",
    )
    cluster(p)
    p.add_argument(
        "--pack",
        type=int,
        default=PACK_SIZE,
        metavar="N",
        help="lower and run up to N cases as one "
        f"program where that is proven identical (harness/policy/packing.py; default {PACK_SIZE}, 1: alone)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the interrupted run whose results are at the "
        "results path: run only the cases it did not finish, under the same run id",
    )


def fail_on_cost(p) -> None:
    p.add_argument(
        "--fail-on-cost",
        action="store_true",
        help="exit 4 when the numbers held but a case's Vela estimate (cycles, memory, operators) went up past "
        "harness/policy/cost.py's thresholds (default: report it, exit by the numbers)",
    )
