"""Malformed inputs to the history, diff, report, import, merge, selection and bisection commands:
each one is refused with exit status 2 and one line that names what is wrong."""

from __future__ import annotations

import sqlite3

import pytest

import harness.networks.resnet  # noqa: F401  imported outside any capture: torch's import-time warnings are not ours
from harness.cli.main import main
from harness.history.db import History, RunInfo
from harness.results.case_result import CaseResult, Outcome
from harness.results.store import write_results

GOOD_LINE = CaseResult(
    "conv2d_n1_ic4_oc8_g1_i8x8_k3x3_s1x1_p0x0_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone", 0, Outcome.PASS
).to_json()


@pytest.fixture
def files(tmp_path):
    """Every malformed input, by name."""
    f = {}

    def put(name, content, binary=False):
        path = tmp_path / name
        (path.write_bytes if binary else path.write_text)(content)
        f[name] = str(path)

    put("good.jsonl", GOOD_LINE + "\n")
    put("truncated.jsonl", GOOD_LINE + "\n" + GOOD_LINE[: len(GOOD_LINE) // 2] + "\n")
    put("foreign.jsonl", '{"name": "pytest-report", "tests": 3}\n')
    put("array.jsonl", "[1, 2, 3]\n")
    put("future.jsonl", GOOD_LINE.replace('"schema_version": 2', '"schema_version": 9') + "\n")
    put("latin1.jsonl", b"\xff\xfe not utf-8 \xe9\n", binary=True)
    put("bad-outcome.jsonl", GOOD_LINE.replace('"outcome": "pass"', '"outcome": "exploded"') + "\n")
    put("empty.jsonl", "")
    put("garbage.sqlite", b"SQLite format 2\x00 but not really" * 50, binary=True)
    foreign = tmp_path / "foreign.sqlite"
    sqlite3.connect(foreign).execute("CREATE TABLE invoices (id INTEGER)")
    f["foreign.sqlite"] = str(foreign)
    future = tmp_path / "future.sqlite"
    History(future).close()
    con = sqlite3.connect(future)
    con.execute("UPDATE meta SET value = '42' WHERE key = 'schema_version'")
    con.commit()
    f["future.sqlite"] = str(future)
    empty_db = tmp_path / "empty.sqlite"
    History(empty_db).close()
    f["empty.sqlite"] = str(empty_db)
    db = tmp_path / "h.sqlite"
    with History(db) as h:
        h.ensure_run(RunInfo("20260101T000000-aaaaaa", "smoke", 0, "tosa", status="complete"))
    f["h.sqlite"] = str(db)
    write_results(
        [CaseResult("conv2d_a", 0, Outcome.PASS), CaseResult("conv2d_b", 1, Outcome.PASS)],
        tmp_path / "mixed-seeds.jsonl",
    )
    f["mixed-seeds.jsonl"] = str(tmp_path / "mixed-seeds.jsonl")
    write_results([CaseResult("conv2d_c", 0, Outcome.PASS, versions={"torch": "9"})], tmp_path / "other.jsonl")
    f["other.jsonl"] = str(tmp_path / "other.jsonl")
    f["dir"] = str(tmp_path)
    f["missing.jsonl"] = str(tmp_path / "missing.jsonl")
    put("batch-bad.txt", "# cases\nconv2d_ic8_oc8_i8x8_k3\nconv9d_nope\n")
    put("batch-empty.txt", "# nothing here\n")
    put("broken_import.py", "raise RuntimeError('operator torchvision::nms does not exist')\n")
    put("raising.py", "def net():\n    raise ValueError('no weights here')\n")
    return f


CASES = [  # (arguments, with {file} placeholders; a fragment of the one line)
    (["diff", "{truncated.jsonl}", "{good.jsonl}", "--db", "{empty.sqlite}"], "truncated.jsonl line 2"),
    (["diff", "{good.jsonl}", "{foreign.jsonl}", "--db", "{empty.sqlite}"], "foreign.jsonl line 1"),
    (["diff", "{array.jsonl}", "{good.jsonl}", "--db", "{empty.sqlite}"], "a results line is a JSON object"),
    (["diff", "{good.jsonl}", "{future.jsonl}", "--db", "{empty.sqlite}"], "schema version 9 is not supported"),
    (["diff", "{good.jsonl}", "{latin1.jsonl}", "--db", "{empty.sqlite}"], "latin1.jsonl is not UTF-8"),
    (["diff", "{good.jsonl}", "{bad-outcome.jsonl}", "--db", "{empty.sqlite}"], "'exploded' is not a valid Outcome"),
    (["diff", "{good.jsonl}", "{missing.jsonl}", "--db", "{empty.sqlite}"], "cannot read results file"),
    (["diff", "last", "{good.jsonl}", "--db", "{garbage.sqlite}"], "garbage.sqlite is not a usable history database"),
    (["diff", "last", "{good.jsonl}", "--db", "{foreign.sqlite}"], "not a harness history (no meta table"),
    (["diff", "last", "{good.jsonl}", "--db", "{future.sqlite}"], "history schema version 42"),
    (["diff", "20990101T000000-ffffff", "{good.jsonl}", "--db", "{h.sqlite}"], "no run '20990101T000000-ffffff'"),
    (["diff", "last-green", "last", "--db", "{empty.sqlite}"], "no last run"),
    (["diff", "last", "{good.jsonl}", "--db", "{dir}"], "is a directory"),
    (["runs", "--db", "{garbage.sqlite}"], "not a usable history database"),
    (["report", "nope-run", "--db", "{h.sqlite}", "--out", "{dir}/r"], "no run 'nope-run'"),
    (
        ["report", "{good.jsonl}", "--baseline", "nope-run", "--db", "{h.sqlite}", "--out", "{dir}/r"],
        "no run 'nope-run'",
    ),
    (["import", "{missing.jsonl}", "--db", "{h.sqlite}"], "cannot read results file"),
    (["import", "{truncated.jsonl}", "--db", "{h.sqlite}"], "line 2"),
    (["import", "{empty.jsonl}", "--db", "{h.sqlite}"], "holds no results"),
    (["import", "{mixed-seeds.jsonl}", "--db", "{h.sqlite}"], "mixes seeds: 0, 1"),
    (["merge", "{good.jsonl}", "{other.jsonl}", "--out", "{dir}/m.jsonl", "--db", "{h.sqlite}"], "mixes versions"),
    (["merge", "{good.jsonl}", "{mixed-seeds.jsonl}", "--out", "{dir}/m.jsonl", "--db", "{h.sqlite}"], "mixes seeds"),
    (["list", "--shard", "0/3"], "invalid --shard '0/3': K must be in 1..N"),
    (["list", "--shard", "4/3"], "invalid --shard '4/3'"),
    (["list", "--shard", "two/3"], "expected K/N"),
    (["sweep", "--shard", "1/0", "--no-history"], "invalid --shard '1/0'"),
    (["list", "--filter", "(conv"], "invalid --filter '(conv'"),
    (["list", "--tier", "weekly"], "unknown tier 'weekly'"),
    (["list", "--tier", "@{batch-bad.txt}"], "batch-bad.txt line 3: bad descriptor head 'conv9d'"),
    (["list", "--tier", "@{batch-empty.txt}"], "batch-empty.txt: it lists no case"),
    (["list", "--tier", "@{missing.jsonl}"], "cannot read it"),
    (["run", "conv2d_ic8_oc8_i8x8_k3", "--executorch", "{dir}/nope"], "invalid --executorch="),
    (["run", "conv2d_ic8_oc8_i8x8_k3", "--executorch", "{dir}"], "not a release (e.g. 1.4.1) and not a git checkout"),
    (["run", "conv2d_ic8_oc8_i8x8_k3", "--tools", "vela==5.2.0"], "invalid --tools 'vela==5.2.0': vela is not a tool"),
    (["sweep", "--tools", "ethos-u-vela>=5", "--no-history"], "invalid --tools 'ethos-u-vela>=5': one exact version"),
    (["doctor", "--tools", "tosa tools"], "invalid --tools 'tosa tools': not a requirement"),
    (["registry", "{missing.jsonl}"], "cannot read results file"),
    (["sweep", "--target", "npu", "--no-history"], "unknown target 'npu'"),
    (["run", "conv2d_ic8_oc7_g2_i8x8_k3"], "invalid groups=2: must divide out_channels=7"),
    (["run", "conv2d_ic4096_oc4096_i512x512_k3"], "moves 2,290,106,368 elements"),
    (["sweep", "--resume", "--results", "{dir}/none.jsonl", "--no-history"], "invalid --resume: no results at"),
    (["sweep", "--cluster", "nonsense", "--no-history"], "invalid --cluster=nonsense: expected local, auto"),
    (["sweep", "--time-limit", "0", "--no-history"], "invalid --time-limit=0.0: must be a number of seconds > 0"),
    (["sweep", "--pack", "0", "--no-history"], "invalid --pack 0: must be >= 1 (1 runs every case alone)"),
    (["run", "conv2d_ic8_oc8_i8x8_k3_dscaptured"], "needs the file its tensors were captured to: --captured FILE"),
    (["run", "conv2d_ic8_oc8_i8x8_k3_dscaptured", "--captured", "{missing.jsonl}"], "invalid --captured="),
    (["shrink", "conv2d_ic8_oc8_i8x8_k3", "--max-runs", "0"], "invalid --max-runs=0: must be an integer >= 1"),
    (["shrink", "conv2d_ic8_oc8_i8x8_k3", "--target", "npu"], "unknown target 'npu'"),
    (["bisect", "passes", "conv2d_ic8_oc8_i8x8_k3", "--canary", "nope"], "unknown canary 'nope'"),
    (["repro", "conv2d_n2_ic4_oc8_i16x17_k3_s2_p1_dyspatial", "--out", "{dir}/c.py"], "repro writes static cases only"),
    (["repro", "conv2d_ic8_oc8_i8x8_k3_cxcond", "--out", "{dir}/c.py"], "repro cannot write cx cond"),
    (
        ["bisect", "commits", "conv2d_ic8_oc8_i8x8_k3", "--repo", "{dir}/nope", "--good", "a", "--bad", "b"],
        "not a git checkout",
    ),
    (["network", "harness.networks.resnet"], "expected MODULE:FACTORY"),
    (["network", "harness.networks.resnet:resnet99"], "has no callable resnet99"),
    (["network", "harness.networks.kws:m5", "--input", "1x1xabc"], "invalid --input=1x1xabc"),
    (["network", "harness.networks.kws:m5", "--scheme", "a9w9"], "invalid --scheme=a9w9"),
    # every path a verb writes is checked before any work
    (
        ["sweep", "--results", "/proc/nope/r.jsonl", "--no-history"],
        "invalid --results /proc/nope/r.jsonl: cannot write there (No such file or directory",
    ),
    (["sweep", "--db", "/proc/nope/h.sqlite"], "invalid --db /proc/nope/h.sqlite: cannot write there"),
    (["sweep", "--results", "{dir}", "--no-history"], "it is a directory; a file path is needed"),
    (
        ["repro", "conv2d_ic8_oc8_i8x8_k3", "--out", "/proc/x.py"],
        "invalid --out /proc/x.py: cannot write there (no file can be made in /proc",
    ),
    (["run", "conv2d_ic8_oc8_i8x8_k3", "--keep", "/proc/k"], "invalid --keep /proc/k: cannot write there"),
    (["report", "last", "--db", "{h.sqlite}", "--out", "{good.jsonl}"], "it is a file; a directory is needed"),
    (["nightly", "--out", "/proc/n"], "invalid --out /proc/n: cannot write there"),
    (["merge", "{good.jsonl}", "--out", "{dir}", "--db", "{h.sqlite}"], "it is a directory"),
    (["mutate", "--out", "/proc/m"], "invalid --out /proc/m: cannot write there"),
    (["network", "harness.networks.kws:m5", "--out", "/proc/m"], "invalid --out /proc/m: cannot write there"),
    # a model factory: whatever its module raises on import, what it returns, what its module takes
    (
        ["network", "{broken_import.py}:net", "--out", "{dir}/m"],
        "cannot import {dir}/broken_import.py (RuntimeError: operator torchvision::nms does not exist)",
    ),
    (["network", "{raising.py}:net", "--out", "{dir}/m"], "the factory raised ValueError: no weights here"),
    (["network", "os:getcwd", "--out", "{dir}/m"], "the factory returned a str, not a torch.nn.Module"),
    (
        ["network", "harness.networks.resnet:resnet18", "--input", "1x5x8x8", "--out", "{dir}/m"],
        "it takes no input of shape 1x5x8x8 (RuntimeError: Given groups=1, weight of size [64, 3, 7, 7]",
    ),
]


@pytest.mark.parametrize("args, fragment", CASES, ids=[f"{a[0]}-{i}" for i, (a, _) in enumerate(CASES)])
def test_malformed_input_is_exit_2_and_one_line(files, capsys, args, fragment):
    argv = [_fill(a, files) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and len(err.splitlines()) == 1, err
    assert _fill(fragment, files) in err, err


def test_there_are_at_least_25_of_them():
    assert len(CASES) >= 25


def _fill(arg: str, files: dict) -> str:
    for name, path in files.items():
        arg = arg.replace("{" + name + "}", path)
    return arg


@pytest.mark.parametrize(
    "verb, args, where",
    [
        ("report", ["last", "--db", "{h.sqlite}", "--out", "{dir}/r"], ("harness.report.html", "write_report")),
        ("list", ["--tier", "smoke"], ("harness.cases.selection", "select")),
    ],
)
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(files, capsys, monkeypatch, verb, args, where):
    """Ctrl-C while the report is drawn (matplotlib's KeyboardInterrupt, once a traceback) or while cases are listed."""
    import importlib

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module(where[0]), where[1], interrupted)
    assert main([verb] + [_fill(a, files) for a in args]) == 130
    err = capsys.readouterr().err.strip()
    assert err == f"interrupted: python -m harness {verb} stopped (Ctrl-C); what finished is kept", err
