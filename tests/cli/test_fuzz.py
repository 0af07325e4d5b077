"""Random argument vectors to every verb: each ends in exit 0, 1 or 2 (argparse's own 2 included), never in a
traceback. The work a valid vector would start (a sweep, a lowering, a bisection, a report) is replaced by a
stand-in that says it was reached: what is fuzzed is the checking before it."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from harness.cli.main import VERBS, main, parser

pytestmark = pytest.mark.lowering  # the stand-ins replace functions of modules that import ExecuTorch

VALUES = [
    "",
    "0",
    "-1",
    "1",
    "3",
    "1/0",
    "2/3",
    "x",
    "nope",
    "smoke",
    "@/nonexistent",
    "tosa",
    "npu",
    "a8w8",
    "conv2d_ic8_oc8_i8x8_k3",
    "conv2d_ic8_oc7_g2_i8x8_k3",
    "conv9d",
    "last",
    "last-green",
    "(conv",
    "/proc/nope/x",
    "{tmp}/out",
    "{tmp}/r.jsonl",
    "{tmp}/h.sqlite",
    "harness.networks.kws:m5",
    "os:getcwd",
    "1x1x8x8",
    "9" * 40,
    "--",
    "ü",
]
WORK = [  # (module, function): what a valid command line starts
    ("harness.run.execute", "run_case"),
    ("harness.schedule.sweep", "run_sweep"),
    ("harness.bisect.passes", "bisect_passes"),
    ("harness.bisect.versions", "bisect_releases"),
    ("harness.bisect.commits", "bisect_commits"),
    ("harness.bisect.commits", "try_commit"),
    ("harness.bisect.shrink", "shrink"),
    ("harness.repro.script", "write_repro"),
    ("harness.bisect.network", "run_network"),
    ("harness.mutation.run", "mutate"),
    ("harness.cli.doctor", "facts"),
    ("harness.report.html", "write_report"),
]


class Reached(Exception):
    """A stand-in for the work was called: the command line passed every check."""


def _shape(verb: str) -> tuple[list[int], list[tuple[str, bool]]]:
    """A verb's positional arguments (how many values each takes) and options (name, whether it takes a value)."""
    p, _ = parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[verb]
    positional = [
        1 if a.nargs in (None, "?") else 2
        for a in sub._actions
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction)
    ]
    options = [
        (a.option_strings[-1], a.nargs != 0)
        for a in sub._actions
        if a.option_strings and a.option_strings[-1] != "--help"
    ]
    return positional, options


@pytest.fixture(scope="module")
def shapes():
    return {v: _shape(v) for v in VERBS}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_argument_vectors_end_in_0_1_or_2_without_a_traceback(data, shapes, tmp_path, monkeypatch, capsys):
    import importlib

    monkeypatch.chdir(tmp_path)  # what a default path writes stays here
    for module, name in WORK:

        def reached(*a, **k):
            raise Reached()

        monkeypatch.setattr(importlib.import_module(module), name, reached)
    verb = data.draw(st.sampled_from(VERBS))
    positional, options = shapes[verb]
    words = [data.draw(st.sampled_from(VALUES)) for n in positional for _ in range(n)]
    for name, takes_value in data.draw(st.lists(st.sampled_from(options), max_size=4, unique=True)) if options else []:
        words += [name] + ([data.draw(st.sampled_from(VALUES))] if takes_value else [])
    if data.draw(st.booleans()):  # and now and then a stray word where it does not belong
        words.insert(data.draw(st.integers(0, len(words))), data.draw(st.sampled_from(VALUES)))
    argv = [verb] + [w.replace("{tmp}", str(tmp_path)) for w in words]
    try:
        code = main(argv)
    except SystemExit as e:  # argparse: usage and one error line
        code = e.code
    except Reached:
        code = 0
    err = capsys.readouterr().err
    event(f"exit {code}" + (" (argparse)" if err.startswith("usage:") else ""))
    assert code in (0, 1, 2), (argv, code, err[-2000:])
    assert "Traceback" not in err, (argv, err[-3000:])
