"""Command line: `python -m harness <verb>`.

Exit status: 0 when every case is green (for `diff` and `nightly`: no
regression), 1 when not, 2 for bad input: a bad descriptor, sweep, option,
run id, results file or database, named in one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import sys

from harness.blame import BackendImportError, backend_import_error
from harness.cli import bisect, cases, doctor, history, mutate, registry, sweeps
from harness.config import ConfigError
from harness.history.db import DEFAULT_DB, HistoryError
from harness.policy.packing import PACK_SIZE
from harness.policy.targets import DEFAULT_TARGET, TARGETS
from harness.overlays import OverlayError
from harness.results.store import ResultsFileError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
VERBS = ("list", "run", "sweep", "canaries", "runs", "import", "merge", "diff", "report", "nightly", "bisect", "shrink", "repro", "model",
         "mutate", "doctor", "registry")


def _selection(p: argparse.ArgumentParser, tier: str = "smoke") -> None:
    p.add_argument("--sweep", default=tier, help=f"tier: smoke, nightly or full, or @FILE: the descriptors a batch "
                   f"file lists, one per line (default: {tier})")
    p.add_argument("--random", type=int, default=0, metavar="N", help="append N random cases drawn with --seed")
    p.add_argument("--seed", type=int, default=0, help="data seed, and seed of --random cases (default: 0)")
    p.add_argument("--filter", metavar="REGEX", help="only descriptors matching this regex (re.search)")
    p.add_argument("--shard", metavar="K/N", help="only the K-th of N cost-balanced parts of the selection")


def _target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", default=DEFAULT_TARGET, help=f"target: {', '.join(TARGETS)} (default: {DEFAULT_TARGET})")


def _executorch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executorch", default="", metavar="SPEC", help="run against another ExecuTorch: a release "
                   "('1.4.1', installed into a cache beside this one), a source checkout ('PATH': its working tree's "
                   "backends/arm as it is now; 'PATH@REV': a commit of it) laid over the installed core, or "
                   "'installed' (default)")


def _db(p: argparse.ArgumentParser, records: bool = False) -> None:
    p.add_argument("--db", default=DEFAULT_DB, help=f"run history database (default: {DEFAULT_DB})")
    if records:
        p.add_argument("--no-history", action="store_true", help="do not record this run in the history")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="verb", required=True, metavar="{" + ",".join(VERBS) + "}")

    ls = sub.add_parser("list", help="print the cases of a sweep, one descriptor per line")
    _selection(ls)
    _target(ls)
    ls.add_argument("--json", action="store_true", help="one JSON object per line with the config fields")
    ls.add_argument("--stats", action="store_true", help="counts per rank, expected TOSA op, scheme, context, data set, dynamic dims")
    ls.add_argument("--classes", action="store_true", help="the structural classes the cases cover "
                    "(harness/tiers/classes.py), with counts, and the values each fact takes")

    run = sub.add_parser("run", help="run one case and print its outcome, metrics and TOSA ops")
    run.add_argument("descriptor", help="case descriptor, e.g. conv2d_ic8_oc16_i32x32_k3x3_s2_p1_qa8w8")
    run.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    _target(run)
    run.add_argument("--json", action="store_true", help="print the result as one JSON line")
    run.add_argument("--keep", metavar="DIR", help="save inputs, outputs and flatbuffer here if it fails")
    run.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend (see `canaries`)")
    run.add_argument("--captured", default="", metavar="FILE", help="a `dscaptured` case's tensors (written by `model`)")
    _executorch(run)

    sw = sub.add_parser("sweep", help="run a sweep in parallel workers; record it, write results and a summary")
    _selection(sw)
    _target(sw)
    sw.add_argument("--results", help="JSONL results path (default: reports/<sweep>/results.jsonl)")
    sw.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar")
    sw.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend in every worker")
    _executorch(sw)
    _time_limit(sw)
    _db(sw, records=True)

    sub.add_parser("canaries", help="list the canary faults that prove the harness can fail")

    runs = sub.add_parser("runs", help="list the recorded runs, newest first")
    runs.add_argument("--limit", type=int, default=20, help="at most this many (default: 20; 0: all)")
    runs.add_argument("--json", action="store_true", help="one JSON object per run")
    _db(runs)

    imp = sub.add_parser("import", help="record a results file (JSONL) as a run in the history")
    imp.add_argument("results", help="a results file")
    imp.add_argument("--tier", default="imported", help="the tier it ran (default: imported)")
    _db(imp)

    mg = sub.add_parser("merge", help="join shard results into one run; refuse mixed versions or seeds")
    mg.add_argument("parts", nargs="+", help="the shards' results files")
    mg.add_argument("--out", required=True, help="the merged results file")
    mg.add_argument("--sweep", help="the tier the shards split, to report gaps (with --random/--seed/--filter as run)")
    mg.add_argument("--random", type=int, default=0, metavar="N")
    mg.add_argument("--seed", type=int, default=None, help="the selection's seed (default: the results' seed)")
    mg.add_argument("--filter", metavar="REGEX")
    _db(mg, records=True)

    df = sub.add_parser("diff", help="what changed between two runs; exit 1 on a regression")
    df.add_argument("base", help="run id, last, last-green, or a results file")
    df.add_argument("new", help="run id, last, last-green, or a results file")
    df.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    _db(df)

    rp = sub.add_parser("report", help="write the HTML report and JUnit XML of a run")
    rp.add_argument("run", nargs="?", default="last", help="run id, last, last-green, or a results file (default: last)")
    rp.add_argument("--out", default=None, help="output directory (default: reports/report-<run id>)")
    rp.add_argument("--baseline", default="last-green", help="run to diff against (default: last-green; 'none': no diff)")
    rp.add_argument("--trend", type=int, default=30, help="runs in the trend plots (default: 30)")
    _db(rp)

    ng = sub.add_parser("nightly", help="the nightly job: sweep, record, report, JUnit, diff against last-green")
    _selection(ng, tier="nightly")
    _target(ng)
    ng.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU count)")
    ng.add_argument("--out", default="reports/nightly", help="results, report and JUnit directory (default: reports/nightly)")
    ng.add_argument("--no-progress", action="store_true", help="no progress bar")
    _executorch(ng)
    _time_limit(ng)
    _db(ng)

    bi = sub.add_parser("bisect", help="find what makes a case wrong: which pass, release or commit")
    how = bi.add_subparsers(dest="how", required=True, metavar="{passes,versions,commits}")
    bp = how.add_parser("passes", help="judge the delegate's graph after every pass; name the first that departs")
    _case(bp)
    bp.add_argument("--captured", default="", metavar="FILE", help="a `dscaptured` case's tensors (written by `model`)")
    bp.add_argument("--json", action="store_true", help="print the bisection as one JSON object")
    _executorch(bp)
    bv = how.add_parser("versions", help="the first ExecuTorch release where the case fails (or is fixed)")
    bv.add_argument("descriptor", help="case descriptor")
    bv.add_argument("--good", required=True, metavar="V", help="a release where the case passes")
    bv.add_argument("--bad", required=True, metavar="V", help="a release where it fails")
    bv.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    _target(bv)
    bv.add_argument("--cache", metavar="DIR", help="overlay cache (default: $HARNESS_CACHE/overlays or "
                    "~/.cache/conv-harness/overlays)")
    bv.add_argument("--json", action="store_true", help="print the bisection as one JSON object")
    bc = how.add_parser("commits", help="the first commit of an ExecuTorch checkout whose Arm backend fails the case")
    bc.add_argument("descriptor", help="case descriptor")
    bc.add_argument("--repo", required=True, metavar="PATH", help="an ExecuTorch git checkout")
    bc.add_argument("--good", required=True, metavar="REV", help="a commit where the case passes")
    bc.add_argument("--bad", required=True, metavar="REV", help="a commit where it fails")
    bc.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    _target(bc)
    bc.add_argument("--json", action="store_true", help="print the bisection as one JSON object")
    step = how.add_parser("commit-step")  # what `git bisect run` calls at each commit (internal)
    step.add_argument("descriptor")
    step.add_argument("--seed", type=int, default=0)
    step.add_argument("--target", default=DEFAULT_TARGET)
    step.add_argument("--signature", required=True)
    step.add_argument("--scratch", required=True)

    sh = sub.add_parser("shrink", help="reduce a failing case to the smallest config that fails the same way")
    _case(sh)
    sh.add_argument("--captured", default="", metavar="FILE", help="a `dscaptured` case's tensors (written by `model`)")
    sh.add_argument("--max-runs", type=int, default=60, metavar="N", help="case runs allowed, the first included "
                    "(default: 60)")
    sh.add_argument("--json", action="store_true", help="print the result as one JSON object, no progress")
    _executorch(sh)

    rr = sub.add_parser("repro", help="write a standalone script (torch, executorch, numpy) that reproduces a case")
    rr.add_argument("descriptor", help="case descriptor (static, no cx cond)")
    rr.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    _target(rr)
    rr.add_argument("--out", required=True, help="the script's path (.py); the model and data files go beside it")
    _executorch(rr)

    md = sub.add_parser("model", help="lower a whole network, then run every conv layer of it as a case")
    md.add_argument("model", help="MODULE:FACTORY or FILE.py:FACTORY, e.g. harness.networks.resnet:resnet18")
    md.add_argument("--scheme", default="a8w8", help="scheme (default: a8w8)")
    md.add_argument("--input", help="input shape, e.g. 1x3x224x224 (default: the model's example_input_shape)")
    md.add_argument("--samples", type=int, default=4, help="calibration inputs, drawn with --seed (default: 4)")
    md.add_argument("--seed", type=int, default=0, help="seed of the weights' initialization and the inputs")
    md.add_argument("--recalibrate-bn", action="store_true", help="recompute the batch norms' running statistics "
                    "on the calibration inputs first (a randomly initialized model; ours ask for it themselves)")
    _target(md)
    md.add_argument("--out", help="results, report and captured data (default: reports/model-<factory>-<scheme>)")
    md.add_argument("--json", action="store_true", help="print the report as one JSON object, no progress")
    _executorch(md)

    rg = sub.add_parser("registry", help="each known issue against stored results: the cases it covers, the worst "
                        "of them, the bounds the policy gives, and what falls outside its signature (exit 1)")
    rg.add_argument("results", nargs="+", help="results files (JSONL), e.g. one per release")
    rg.add_argument("--json", action="store_true", help="one JSON array")
    rg.add_argument("--any-release", action="store_true", help="as if every entry held on every release: does an "
                    "entry's signature also explain what another release does?")
    rg.add_argument("--reclassify", action="store_true", help="judge the stored results again by today's registry "
                    "and rejections (each on the ExecuTorch it ran on) without running anything: what is not green")

    dr = sub.add_parser("doctor", help="what this environment runs: versions, the ExecuTorch in use, which speed-ups "
                        "are on and why not, which runners and tools are there")
    _executorch(dr)
    dr.add_argument("--json", action="store_true", help="print it as one JSON object")
    mutate.add_parser(sub)
    return p


def _case(p: argparse.ArgumentParser) -> None:
    p.add_argument("descriptor", help="case descriptor, e.g. conv2d_ic8_oc16_i32x32_k3x3_s2_p1_qa8w8")
    p.add_argument("--seed", type=int, default=0, help="data seed (default: 0)")
    _target(p)
    p.add_argument("--canary", default="", metavar="NAME", help="inject this fault into the backend (see `canaries`)")


def _time_limit(p) -> None:
    p.add_argument("--time-limit", type=float, metavar="S", help="seconds a case may run before it is a timeout "
                   "and its worker is replaced (default: the tier's, harness/policy/limits.py)")
    p.add_argument("--cluster", default="", metavar="ADDRESS", help="run the cases as tasks on a Ray cluster: "
                   "'local' starts one here with -j CPUs; 'auto' or ray://HOST:PORT joins one (extra: cluster)")
    p.add_argument("--pack", type=int, default=PACK_SIZE, metavar="N", help="lower and run up to N cases as one "
                   f"program where that is proven identical (harness/policy/packing.py; default {PACK_SIZE}, 1: alone)")
    p.add_argument("--resume", action="store_true", help="continue the interrupted run whose results are at the "
                   "results path: run only the cases it did not finish, under the same run id")


def use_executorch(spec: str) -> None:
    """Build the overlay `--executorch` names and put it first on the import path (this process and its workers)."""
    from harness.expectations.commits import named_commits
    from harness.overlays import activate, resolve

    overlay = resolve(spec, commits=named_commits())
    activate(overlay)
    if overlay.path is not None:
        print(f"harness: executorch {overlay.label} ({overlay.kind}"
              + (f", built in {overlay.seconds:.1f} s" if not overlay.reused else "") + ")", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    verbs = {
        "list": cases.cmd_list, "run": cases.cmd_run, "canaries": cases.cmd_canaries, "sweep": sweeps.cmd_sweep,
        "nightly": sweeps.cmd_nightly, "merge": sweeps.cmd_merge, "import": history.cmd_import,
        "runs": history.cmd_runs, "diff": history.cmd_diff, "report": history.cmd_report, "bisect": bisect.cmd_bisect,
        "shrink": bisect.cmd_shrink, "repro": bisect.cmd_repro, "model": bisect.cmd_model,
        "mutate": mutate.cmd_mutate, "doctor": doctor.cmd_doctor,
        "registry": registry.cmd_registry,
    }
    try:
        if getattr(args, "executorch", ""):
            use_executorch(args.executorch)
        return verbs[args.verb](args)
    except (ConfigError, ResultsFileError, HistoryError, BackendImportError, OverlayError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # `python -m harness list | head`
        return EXIT_OK
    except ImportError as e:  # an ExecuTorch (an overlay, a source tree) the harness cannot import: one line
        found = backend_import_error(e)
        if found is None:
            raise
        print(f"error: {found}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
