"""Mutation testing: the operators, loading a mutant into a live function, and a tier killing mutants."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from harness.config import ConfigError
from harness.faults.catalog import count_of, mutant_name, mutants_of, parse_name, source_file
from harness.faults.operators import count, mutant_tree, mutants
from harness.mutation.campaign import Campaign
from harness.mutation.journal import JournalError

SOURCE = textwrap.dedent('''
    """A module to mutate."""
    LIMIT = 3


    def window(x, k, s):
        """Docstrings are never dropped."""
        if x > k and s >= 1:
            return (x - k) // s + 1, True
        log(x)
        return 0, False


    def log(x):
        return x


    class Pad:
        def amounts(self, total):
            before = total // 2
            self.after = total - before
            return [before, self.after]
''')


def test_every_operator_applies_where_it_should():
    ms = mutants(SOURCE, "m.py")
    ops = {(m.function, m.operator, m.description) for m in ms}
    assert ("window", "compare", "Gt -> GtE") in ops and ("window", "compare", "GtE -> Gt") in ops
    assert ("window", "bool", "and -> or") in ops and ("window", "negate", "condition") in ops
    assert ("window", "const", "1 -> 2") in ops and ("window", "const", "1 -> 0") in ops
    assert ("window", "arith", "Sub -> Add") in ops and ("window", "swap", "operands") in ops
    assert ("window", "drop-stmt", "Expr") in ops and ("window", "swap", "elements") in ops
    assert ("Pad.amounts", "drop-stmt", "Assign") in ops and ("Pad.amounts", "swap", "elements") in ops
    assert not any(m.function == "window" and m.operator == "drop-stmt" and m.line == 7 for m in ms)  # docstring
    assert all(m.line > 3 for m in ms), "module-level code (LIMIT = 3) is never mutated"
    assert len(ms) == count(SOURCE) and [m.index for m in ms] == list(range(len(ms)))
    assert mutants(SOURCE, "m.py") == ms  # stable


SPANS = textwrap.dedent("""
    def pick(x, k):
        if (x > k and
                k >= 0):
            y = (x,
                 k + 1)
            return y
        match x:
            case 2:
                return -1
        return 0
""")


def test_a_mutant_names_the_lines_that_run_it():
    """An `if`'s test spans its header lines only (not its body); a simple statement spans all its lines."""
    spans = {(m.line, m.operator, m.description): m.lines for m in mutants(SPANS, "s.py")}
    assert spans[(3, "negate", "condition")] == (3, 4)
    assert spans[(3, "compare", "Gt -> GtE")] == (3, 4) and spans[(4, "const", "0 -> 1")] == (3, 4)
    assert spans[(6, "const", "1 -> 2")] == (5, 6)  # inside a statement that starts a line above
    assert spans[(10, "const", "1 -> 2")] == (10, 10)


def test_cases_that_never_run_a_mutants_lines_are_not_run_for_it():
    """The coverage argument behind `reaching`: a call whose traced lines miss every line of a mutant
    returns the same with the mutant in place."""
    from harness.mutation.reach import reaching
    from harness.mutation.run import _spread

    ns: dict = {}
    exec(compile(SPANS, "s.py", "exec"), ns)
    lines_run: dict[int, set[int]] = {}

    def tracer(frame, event, arg):
        if frame.f_code.co_filename != "s.py":
            return None
        seen = lines_run.setdefault(frame.f_locals["x"], set())

        def line(frame, event, arg):
            seen.add(frame.f_lineno)
            return line

        return line

    sys.settrace(tracer)
    try:
        results = {x: ns["pick"](x, 1) for x in (0, 2, 5)}
    finally:
        sys.settrace(None)

    class Case:
        def __init__(self, x):
            self.descriptor = str(x)

    cases = [Case(x) for x in results]
    trace = {str(x): {"t": lines} for x, lines in lines_run.items()}
    for m in mutants(SPANS, "s.py"):
        tree, _ = mutant_tree(SPANS, m.index)
        mutated: dict = {}
        exec(compile(tree, "s.py", "exec"), mutated)
        reached = {c.descriptor for c in reaching(m, "t", cases, trace)}
        for x, expected in results.items():
            if str(x) not in reached:
                assert mutated["pick"](x, 1) == expected, (m.description, m.line, x)
    m = next(m for m in mutants(SPANS, "s.py") if m.line == 6)
    assert [c.descriptor for c in reaching(m, "t", cases, trace)] == ["2", "5"]
    six = [Case(i) for i in range(6)]
    assert [c.descriptor for c in _spread(six, 2)] == ["0", "3", "1", "4", "2", "5"]  # a first pack spans the list


def test_each_mutant_changes_its_function_only_and_compiles():
    original = compile(SOURCE, "m.py", "exec")
    for m in mutants(SOURCE, "m.py"):
        tree, function = mutant_tree(SOURCE, m.index)
        compile(tree, "m.py", "exec")
        assert function == m.function and m.diff.count("\n-") >= 1 and m.diff.count("\n+") >= 1, m
    assert original is not None
    with pytest.raises(IndexError, match="out of range"):
        mutant_tree(SOURCE, count(SOURCE))


def test_a_loaded_mutant_changes_the_live_function_and_undo_restores_it(tmp_path, monkeypatch):
    (tmp_path / "mutme.py").write_text(SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import mutme

    from harness.faults.load import install

    index = next(
        m.index for m in mutants(SOURCE, "m.py") if m.function == "window" and m.description == "1 -> 2" and m.line == 9
    )
    assert mutme.window(10, 3, 1) == (8, True)
    undo = install("mutme", index)
    assert mutme.window(10, 3, 1) == (7 + 2, True)
    undo()
    assert mutme.window(10, 3, 1) == (8, True)
    method = next(
        m.index for m in mutants(SOURCE, "m.py") if m.function == "Pad.amounts" and m.description == "elements"
    )
    undo = install("mutme", method)
    assert mutme.Pad().amounts(5) == [3, 2]
    undo()
    assert mutme.Pad().amounts(5) == [2, 3]
    sys.modules.pop("mutme", None)


def test_mutant_names_are_checked_in_one_line():
    n = count_of("decompose_grouped_conv_pass")
    assert parse_name(mutant_name("decompose_grouped_conv_pass", n - 1)) == ("decompose_grouped_conv_pass", n - 1)
    for bad, fragment in (
        ("mutant:decompose_grouped_conv_pass", "expected mutant:TARGET:INDEX"),
        (f"mutant:decompose_grouped_conv_pass:{n}", f"has mutants 0..{n - 1}"),
        ("mutant:nope:1", "unknown mutation module 'nope'"),
    ):
        with pytest.raises(ConfigError, match=fragment):
            parse_name(bad)


def test_the_three_conv_passes_have_hundreds_of_mutants():
    sizes = {t: count_of(t) for t in ("rewrite_conv_pass", "size_adjust_input_pass", "decompose_grouped_conv_pass")}
    assert all(n > 100 for n in sizes.values()), sizes


GROUPED_FP32 = "^conv2d_.*_g4_.*_qfp32_dsnormal_cxnone$"  # smoke's plain grouped conv2d cases in fp32: 9


@pytest.mark.lowering
def test_a_tier_kills_a_wrong_slice_axis_and_reports_a_survivor(tmp_path):
    """Mutant 40 slices grouped inputs on axis 2 instead of the channels: a grouped smoke case fails at once."""
    from harness.mutation.run import mutate

    index = next(
        m.index
        for m in mutants_of("decompose_grouped_conv_pass")
        if m.function.endswith("_slice_inputs") and m.description == "1 -> 2"
    )
    report = mutate(
        Campaign(
            modules=("decompose_grouped_conv_pass",),
            jobs=2,
            function="_slice_inputs",
            out=tmp_path,
            filter=GROUPED_FP32,
        )
    )
    rows = {r.name: r for r in report.mutants}
    killed = rows[mutant_name("decompose_grouped_conv_pass", index)]
    assert killed.status == "killed" and "_g4_" in killed.killed_by and killed.cases_run >= 1
    assert {r.status for r in report.mutants} <= {"killed", "survived", "masked", "unreached", "equivalent", "invalid"}
    # e.g. dropping `input_slices.append(super().call_operator(...))` drops the closure over __class__
    assert all("MutantError" in r.reason and "closure" in r.reason for r in report.mutants if r.status == "invalid")
    data = json.loads((tmp_path / "mutation.json").read_text())
    assert data["counts"]["decompose_grouped_conv_pass"]["killed"] == report.counts()["killed"] > 0
    survivors = [r for r in report.mutants if r.status == "survived"]
    text = (tmp_path / "mutation.md").read_text()
    assert all(r.name in text and r.diff.splitlines()[-1] in text for r in survivors)
    assert (tmp_path / "trace-smoke.json").exists()


def test_a_sample_is_seeded_and_a_carried_kill_needs_its_case(tmp_path):
    from harness.mutation.run import carried, sample

    ms = list(mutants(SOURCE, "m.py"))
    a, b = sample(ms, 0.3, 1), sample(ms, 0.3, 1)
    assert a == b and len(a) == round(0.3 * len(ms)) and [m.index for m in a] == sorted(m.index for m in a)
    assert sample(ms, 0.3, 2) != a and sample(ms, 1.0, 0) == ms
    report = tmp_path / "mutation.json"
    rows = [
        dict(
            name=f"mutant:t:{i}",
            function="f",
            line=1,
            operator="const",
            description="",
            status=s,
            cases_run=1,
            killed_by=k,
            outcome="mismatch" if k else "",
            reason="",
            diff="",
        )
        for i, (s, k) in enumerate(
            [("killed", "case_a"), ("killed", "case_gone"), ("survived", ""), ("invalid", "case_a")]
        )
    ]
    report.write_text(json.dumps({"mutants": rows}))
    kept = carried(report, {"case_a", "case_b"})
    assert set(kept) == {"mutant:t:0", "mutant:t:3"} and all(r.carried for r in kept.values())
    assert carried(None, {"case_a"}) == {}


def test_type_expressions_are_not_mutated():
    """An annotation is never evaluated and `cast` returns its value: a change there is no mutant."""
    source = textwrap.dedent("""
        def f(x):
            y: dict[int, list[int]] = {}
            z = cast(tuple[int, int], x)
            return z[1]
    """)
    found = mutants(source, "t.py")
    # cast(T) alone, or x -> None, is a real change
    assert [m.description for m in found] == ["last positional", "1 -> 2", "1 -> 0", "arg 1 -> None"]


def test_a_carried_kill_follows_its_mutant_when_indices_move(tmp_path):
    from harness.mutation.run import carried, identity

    ms = list(mutants(SOURCE, "m.py"))
    report = tmp_path / "mutation.json"
    rows = [
        dict(
            name=f"mutant:t:{m.index}",
            function=m.function,
            line=m.line,
            operator=m.operator,
            description=m.description,
            status="killed",
            cases_run=1,
            killed_by="case_a",
            outcome="mismatch",
            reason="",
            diff=m.diff,
        )
        for m in ms[:3]
    ]
    report.write_text(json.dumps({"mutants": rows}))
    shifted = {
        identity(m.function, m.line, m.operator, m.description, m.diff): f"mutant:t:{m.index + 10}" for m in ms[1:]
    }  # today's source lost the first point: the others moved by 10
    kept = carried(report, {"case_a"}, shifted)
    assert set(kept) == {f"mutant:t:{m.index + 10}" for m in ms[1:3]}


def test_every_listed_equivalent_names_mutants_of_the_installed_passes():
    """The policy stays true to the source it was written for: each entry matches at least one mutant."""
    from harness.faults.catalog import source_file
    from harness.faults.equivalents import load, lookup_at

    texts = {}
    for e in load():
        text = texts.setdefault(e.module, source_file(e.module).read_text().splitlines())
        hits = [
            m
            for m in mutants_of(e.module)
            if m.function in e.function  # an entry matches its functions only
            and lookup_at(e.module, m.function, m.line, m.operator, m.description, text, (e,), m.column)
        ]
        assert hits, f"{e.function}: {e.source} matches no mutant"
        assert {m.function for m in hits} == set(e.function)


def test_a_bad_equivalent_entry_is_one_line(tmp_path):
    from harness.faults.equivalents import load

    bad = tmp_path / "eq.toml"
    bad.write_text(
        '[[equivalent]]\nmodule = "t"\nfunction = "f"\nsource = "x"\nchange = "*"\nkind = "maybe"\nreason = "r"\n'
    )
    with pytest.raises(ConfigError, match="invalid kind 'maybe'; allowed: equivalent, unreachable, defensive"):
        load(bad)
    bad.write_text('[[equivalent]]\nmodule = "t"\n')
    with pytest.raises(ConfigError, match="entry 1: missing function, source, change, kind, reason"):
        load(bad)


def test_a_listed_mutant_that_a_case_kills_stays_killed_and_says_the_listing_is_wrong():
    from harness.faults import equivalents
    from harness.faults.catalog import source_file
    from harness.mutation.report import MutantResult
    from harness.mutation.run import mark_equivalents

    (m,) = [
        m
        for m in mutants_of("decompose_grouped_conv_pass")
        if m.function.endswith("_slice_biases") and m.description == "0 -> -1"
    ]
    text = source_file("decompose_grouped_conv_pass").read_text().splitlines()[m.line - 1]
    assert equivalents.lookup("decompose_grouped_conv_pass", m.function, text, m.operator, m.description)
    name = mutant_name("decompose_grouped_conv_pass", m.index)
    rows = [
        MutantResult(name, m.function, m.line, m.operator, m.description, s, killed_by="c" if s == "killed" else "")
        for s in ("survived", "killed")
    ]
    mark_equivalents(rows)
    mark_equivalents(rows)  # a carried row is marked again: once is enough
    assert rows[0].status == "equivalent" and "1-D" in rows[0].reason
    assert rows[1].status == "killed" and rows[1].reason.count("the listing is wrong") == 1


def test_a_carried_kill_no_longer_listed_drops_the_old_listings_verdict():
    """A kill carried from a run under an older policy keeps its own reason, not 'the listing is wrong' about an
    entry that was since corrected (the dilated-pool check's, split into column-exact entries)."""
    from harness.mutation.report import MutantResult
    from harness.mutation.run import mark_equivalents

    (m,) = [
        m
        for m in mutants_of("size_adjust_input_pass")
        if m.function == "is_valid_operator"
        and "dilation[1] > 1" in m.diff
        and m.column == 44
        and m.description == "1 -> 2"
    ]
    old = "lower: IndexError: list index out of range"
    row = MutantResult(
        mutant_name("size_adjust_input_pass", m.index),
        m.function,
        m.line,
        m.operator,
        m.description,
        "killed",
        1,
        "c",
        "lowering_error",
        reason=f"listed as defensive in the policy, but killed: the listing is wrong. {old}",
        column=m.column,
    )
    mark_equivalents([row])
    assert (row.status, row.reason) == ("killed", old)


def test_an_interrupted_run_resumes_from_its_journal_and_refuses_another_runs(tmp_path, monkeypatch):
    """Every verdict is journaled as it is reached: after a stop, --resume runs only the undecided mutants."""
    import harness.mutation.run as run

    monkeypatch.setattr(run, "trace", lambda configs, jobs, cache, pack=1, cluster="": ({}, {}))
    calls = []

    def interrupted(mutants, configs, reached, *, jobs, pack, on_mutant, **_):
        calls.append([run.mutant_name(t, m.index) for t, m in mutants])
        for t, m in mutants[:3]:
            on_mutant(
                run.MutantResult(
                    run.mutant_name(t, m.index),
                    m.function,
                    m.line,
                    m.operator,
                    m.description,
                    "killed",
                    1,
                    "case_a",
                    "mismatch",
                    diff=m.diff,
                )
            )
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "run_mutants", interrupted)
    args = dict(
        tier="smoke",
        modules=("decompose_grouped_conv_pass",),
        function="_slice_inputs",
        out=tmp_path,
        filter=GROUPED_FP32,
    )
    with pytest.raises(KeyboardInterrupt):
        run.mutate(Campaign(**args))
    first = calls[0]
    assert len(first) > 3 and len((tmp_path / "mutation.journal.jsonl").read_text().splitlines()) == 1 + 3

    def rest(mutants, configs, reached, *, jobs, pack, on_mutant, **_):
        calls.append([run.mutant_name(t, m.index) for t, m in mutants])
        return [
            run.MutantResult(
                run.mutant_name(t, m.index), m.function, m.line, m.operator, m.description, "survived", diff=m.diff
            )
            for t, m in mutants
        ]

    monkeypatch.setattr(run, "run_mutants", rest)
    report = run.mutate(Campaign(**args, resume=True))
    assert calls[1] == first[3:]
    statuses = {r.name: r.status for r in report.mutants}
    assert [statuses[n] for n in first[:3]] == ["killed"] * 3 and list(statuses) == first
    with pytest.raises(JournalError, match="cannot resume from .*journal.*another tier, case list or versions"):
        run.mutate(Campaign(**{**args, "filter": "_g4_.*_qa8w8_"}, resume=True))
    report = run.mutate(Campaign(**args))  # without --resume the journal starts afresh
    assert calls[-1] == first


def test_a_journal_that_is_not_one_is_refused_in_one_line(tmp_path):
    from harness.mutation.journal import Journal

    path = tmp_path / "j.jsonl"
    path.write_text("not json\n")
    with pytest.raises(JournalError, match=r"cannot resume from .*j\.jsonl: its first line is not a journal's key"):
        Journal(path, {"tier": "smoke"}, resume=True)
    assert Journal(path, {"tier": "smoke"}, resume=False).verdicts == []  # without --resume it starts afresh


def _run_two_mutants(monkeypatch, cases, result, baseline=None, on_progress=None) -> dict:
    """`run_mutants` over mutants t:1 and t:2 (a constant on line 1 of module t, which every case reaches), with
    `result(mutant name, descriptor)` as each case's result instead of a worker's."""
    from harness.mutation import run

    def fake_parallel(configs, settings, jobs, on_result, tasks=(), skip=None, **kw):
        for task in tasks:
            for descriptor in task.descriptors:
                on_result(result(task.canary, descriptor))

    class M:
        def __init__(self, index):
            self.index, self.function, self.line, self.lines, self.column = index, "f", 1, (1, 1), 1
            self.operator, self.description, self.diff = "const", "1 -> 2", ""

    monkeypatch.setattr(run, "run_anywhere", fake_parallel)
    reached = {x.descriptor: {"t": {1}} for x in cases}
    return {
        r.name: r
        for r in run.run_mutants(
            [("t", M(1)), ("t", M(2))], cases, reached, jobs=1, pack=2, baseline=baseline, on_progress=on_progress
        )
    }


def test_a_stopped_survivor_resumes_with_the_cases_it_ran(monkeypatch, tmp_path):
    """A mutant no case kills runs every reaching case (thousands on nightly): a stop keeps each case result in
    the journal, and the resumed run judges them again and runs only the rest, to the verdict of an unstopped run."""
    from harness.config import parse_descriptor
    from harness.mutation import run
    from harness.mutation.journal import Journal
    from harness.results.case_result import CaseResult, Outcome

    cases = [parse_descriptor(f"conv2d_ic4_oc4_i8x{w}_k3_qfp32") for w in (8, 9, 10, 11)]
    key, ran = {"tier": "t"}, []

    class M:
        index, function, line, lines, column, operator, description, diff = 2, "f", 1, (1, 1), 1, "const", "", ""

    def parallel(stop_after):
        def fake(configs, settings, jobs, on_result, tasks=(), skip=None, **kw):
            for task in tasks:
                for d in task.descriptors:
                    if len(ran) == stop_after:
                        raise KeyboardInterrupt
                    ran.append(d)
                    on_result(CaseResult(d, 0, Outcome.PASS, canary=task.canary, output_sha256="s"))

        return fake

    reached = {c.descriptor: {"t": {1}} for c in cases}
    journal = Journal(tmp_path / "j.jsonl", key, resume=False)
    monkeypatch.setattr(run, "run_anywhere", parallel(stop_after=3))
    with pytest.raises(KeyboardInterrupt):
        run.run_mutants([("t", M())], cases, reached, jobs=1, pack=2, on_case=journal.record_case)
    first = list(ran)
    resumed = Journal(tmp_path / "j.jsonl", key, resume=True)
    assert [c["descriptor"] for c in resumed.cases["mutant:t:2"]] == first and len(first) == 3
    ran.clear()
    monkeypatch.setattr(run, "run_anywhere", parallel(stop_after=None))
    replay = {n: [CaseResult.from_dict(c) for c in rs] for n, rs in resumed.cases.items()}
    (row,) = run.run_mutants([("t", M())], cases, reached, jobs=1, pack=2, replay=replay, on_case=resumed.record_case)
    assert sorted(first + ran) == sorted(c.descriptor for c in cases) and len(ran) == 1
    assert (row.status, row.cases_run, row.judged) == ("survived", 4, 4)


def test_a_long_run_says_how_far_it_is(monkeypatch):
    """Hard mutants decide late (an hour on smoke's last 129): the runs' progress, counted as they end."""
    from harness.config import parse_descriptor
    from harness.mutation import run
    from harness.results.case_result import CaseResult, Outcome

    cases = [parse_descriptor(d) for d in ("conv2d_ic4_oc4_i8x8_k3_qfp32", "conv2d_ic4_oc4_i8x9_k3_qfp32")]
    monkeypatch.setattr(run, "PROGRESS_EVERY_S", 0.0)
    said = []
    outcome = {"mutant:t:1": Outcome.MISMATCH, "mutant:t:2": Outcome.PASS}  # t:1 dies at its first case
    _run_two_mutants(
        monkeypatch,
        cases,
        lambda name, d: CaseResult(d, 0, outcome[name], canary=name),
        on_progress=lambda p: said.append(p.line()),
    )
    assert said[0].startswith("mutate: 1 case runs of at most 4; 1 of 2 mutants decided (")
    assert said[-1].startswith("mutate: 4 case runs of at most 4; 2 of 2 mutants decided (")


def test_a_survivor_that_changed_output_bits_is_counted_apart(monkeypatch):
    """A green case whose output digest differs from the unmutated run's: the judge's tolerance hid the
    fault. Counted per survivor, never for a case without a baseline digest or without an output."""
    from harness.config import parse_descriptor
    from harness.results.case_result import CaseResult, Outcome

    cases = [
        parse_descriptor(d)
        for d in ("conv2d_ic4_oc4_i8x8_k3_qfp32", "conv2d_ic4_oc4_i8x9_k3_qfp32", "conv2d_ic4_oc4_i9x9_k3_qfp32")
    ]
    a, b, c = (x.descriptor for x in cases)
    digests = {"mutant:t:1": {a: "x", b: "B", c: ""}, "mutant:t:2": {a: "A", b: "B", c: "C"}}

    rows = _run_two_mutants(
        monkeypatch,
        cases,
        lambda name, d: CaseResult(d, 0, Outcome.PASS, canary=name, output_sha256=digests[name][d]),
        baseline={a: "A", b: "B"},
    )
    assert (rows["mutant:t:1"].status, rows["mutant:t:1"].outputs_changed, rows["mutant:t:1"].changed_case) == (
        "survived",
        1,
        a,
    )
    assert (rows["mutant:t:2"].status, rows["mutant:t:2"].outputs_changed) == ("survived", 0)  # c: no baseline


def test_a_case_that_fails_without_a_mutant_judges_no_mutant(tmp_path, monkeypatch):
    """Else it would 'kill' every mutant it reaches (a stale expectation did, before this rule)."""
    import harness.mutation.run as run

    seen = {}

    def fake_trace(configs, jobs, cache, pack=1, cluster=""):
        broken = configs[0].descriptor
        return {c.descriptor: {} for c in configs}, {
            c.descriptor: (None if c.descriptor == broken else "d") for c in configs
        }

    def fake_run(mutants, configs, reached, *, jobs, pack, on_mutant, **_):
        seen["cases"] = [c.descriptor for c in configs]
        return [
            run.MutantResult(
                run.mutant_name(t, m.index), m.function, m.line, m.operator, m.description, "survived", diff=m.diff
            )
            for t, m in mutants
        ]

    monkeypatch.setattr(run, "trace", fake_trace)
    monkeypatch.setattr(run, "run_mutants", fake_run)
    report = run.mutate(
        Campaign(
            modules=("decompose_grouped_conv_pass",),
            function="_slice_inputs",
            out=tmp_path,
            filter=GROUPED_FP32,
        )
    )
    assert len(report.not_green) == 1 and report.not_green[0] not in seen["cases"] and seen["cases"]
    assert "1 cases were not green without a mutant" in (tmp_path / "mutation.md").read_text()


def _listed(module: str, kind: str | None = None):
    """(mutant, its entry) for the policy's listed mutants of `module`."""
    from harness.faults.equivalents import lookup_at

    text = source_file(module).read_text().splitlines()
    out = [
        (m, lookup_at(module, m.function, m.line, m.operator, m.description, text, column=m.column))
        for m in mutants_of(module)
    ]
    return [(m, e) for m, e in out if e is not None and (kind is None or e.kind == kind)]


def test_a_listing_is_checked_by_running_never_taken_on_trust():
    """Only a listed survivor whose every output was bit-identical is equivalent; a listed mutant that changed an
    output stays survived, one no case reached stays unreached, one behind a known issue stays masked, and each
    reason says the listing did not hold. The score counts neither unreached nor equivalent."""
    from harness.mutation.report import MutantResult, MutationReport
    from harness.mutation.run import mark_equivalents

    (m, e), *_ = _listed("rewrite_conv_pass", "equivalent")
    name = mutant_name("rewrite_conv_pass", m.index)

    def row(status, **kw):
        return MutantResult(name, m.function, m.line, m.operator, m.description, status, column=m.column, **kw)

    rows = [
        row("survived", cases_run=5, judged=5),
        row("survived", cases_run=5, judged=5, outputs_changed=2, changed_case="c1"),
        row("unreached"),
        row("masked", cases_run=3, reason="every reaching case ended unjudged (issue-x)"),
        row("killed", cases_run=1, killed_by="c2"),
    ]
    mark_equivalents(rows)
    assert rows[0].status == "equivalent" and "ran 5 cases, outputs bit-identical" in rows[0].reason
    assert rows[1].status == "survived" and "2 outputs changed (e.g. c1)" in rows[1].reason
    assert rows[2].status == "unreached" and "not shown: no case reaches it" in rows[2].reason
    assert rows[3].status == "masked" and "issue-x" in rows[3].reason
    assert rows[4].status == "killed" and "the listing is wrong" in rows[4].reason
    report = MutationReport("smoke", ["rewrite_conv_pass"], {}, mutants=rows)
    assert report.score() == round(1 / 3, 4)  # killed / (killed + survived + masked)
    assert report.counts(operator=m.operator)["unreached"] == 1 and report.operators() == [m.operator]


def test_a_mutant_whose_cases_all_end_in_a_known_issue_is_masked(monkeypatch):
    """The registry decided those cases, not the oracle: such a mutant is neither survived nor equivalent."""
    from harness.config import parse_descriptor
    from harness.results.case_result import CaseResult, Outcome

    cases = [parse_descriptor(d) for d in ("conv2d_ic4_oc4_i8x8_k3_qfp32", "conv2d_ic4_oc4_i8x9_k3_qfp32")]
    outcomes = {
        "mutant:t:1": (Outcome.KNOWN_ISSUE, Outcome.KNOWN_ISSUE),
        "mutant:t:2": (Outcome.KNOWN_ISSUE, Outcome.PASS),
    }

    order = [c.descriptor for c in cases]
    rows = _run_two_mutants(
        monkeypatch,
        cases,
        lambda name, d: CaseResult(
            d,
            0,
            outcomes[name][order.index(d)],
            canary=name,
            issue=("a16w8-cond-int16-weights", "other-issue")[order.index(d)],
        ),
    )
    assert (
        rows["mutant:t:1"].status == "masked"
        and rows["mutant:t:1"].masked_by == "a16w8-cond-int16-weights, other-issue"
        and "a16w8-cond-int16-weights, other-issue" in rows["mutant:t:1"].reason
    )
    assert (rows["mutant:t:2"].status, rows["mutant:t:2"].judged) == ("survived", 1)


def test_a_key_that_matches_one_change_at_several_places_of_a_line_names_their_columns():
    """`1 -> 2` on `if d[0] > 1 or d[1] > 1:` can be three mutants; an entry says which by column."""
    from collections import Counter

    from harness.faults.equivalents import load

    for e in load():
        if "*" in e.change:
            continue
        text = source_file(e.module).read_text().splitlines()
        hits = [
            m
            for m in mutants_of(e.module)
            if m.function in e.function
            and e.matches(e.module, m.function, text[m.line - 1], m.operator, m.description, text[m.line - 2], m.column)
        ]
        places = Counter((m.function, m.line, m.operator, m.description) for m in hits)
        assert e.column or max(places.values()) == 1, (e.source, places.most_common(1))
    source = "def f(d):\n    if d[0] > 1 or d[1] > 1:\n        return 1\n"
    assert sorted(m.column for m in mutants(source, "f.py") if m.line == 2 and m.description == "1 -> 2") == [
        15,
        22,
        27,
    ]


MORE = textwrap.dedent("""
    def f(xs, n, flag=True):
        out = []
        for x in xs:
            if x is None:
                continue
            try:
                out.append(-x % n ** 2 << 1 & 3 ^ 1 | 4 / 2)
            except (TypeError, ValueError):
                break
        if not out:
            raise ValueError(f"empty {n}: " + "no values")
        log.warning("kept %d", len(out))
        return helper(out, "mode", flag=False)
""")


def test_the_operator_classes_of_mutmut_and_cosmic_ray_apply_and_come_after_the_first_ones():
    """Each added class appears where it applies; messages are not strings to mutate; the added classes are
    listed after every earlier point, so no earlier mutant's index moved when they came."""
    ms = mutants(MORE, "more.py")
    ops = {(m.operator, m.description) for m in ms}
    for expected in [
        ("arith", "Mod -> Div"),
        ("arith", "Pow -> Mult"),
        ("arith", "LShift -> RShift"),
        ("arith", "BitAnd -> BitOr"),
        ("arith", "BitXor -> BitAnd"),
        ("arith", "BitOr -> BitAnd"),
        ("arith", "Div -> Mult"),
        ("unary", "USub -> Invert"),
        ("keyword", "continue -> break"),
        ("keyword", "break -> continue"),
        ("keyword", "False -> True"),
        ("zero-iteration", "for over []"),
        ("except", "catches nothing"),
        ("string", "'mode' -> 'XXmodeXX'"),
        ("arg-none", "arg 0 -> None"),
        ("arg-none", "arg 1 -> None"),
    ]:
        assert expected in ops, expected
    strings = [m.description for m in ms if m.operator == "string"]
    assert strings == ["'mode' -> 'XXmodeXX'"]  # not the raise's message, its f-string, or the log's format
    first = ("const", "compare", "bool", "swap", "negate", "drop-arg", "drop-stmt")
    order = [
        m.operator in first or (m.operator == "arith" and m.description.split(" -> ")[0] in ("Add", "Sub")) for m in ms
    ]
    assert order == sorted(order, reverse=True)
    for m in ms:  # every one compiles and changes its function
        tree, _ = mutant_tree(MORE, m.index)
        compile(tree, "more.py", "exec")
    zero = next(m for m in ms if m.operator == "zero-iteration")
    assert "for x in []:" in zero.diff and zero.lines == (4, 4)
    handler = next(m for m in ms if m.operator == "except")
    assert "except ():" in handler.diff and handler.lines == (9, 9)  # runs only when the try body raised


DELETIONS = textwrap.dedent("""
    def g(a, b, flag, size: int | None = None):
        pad = (a * b - 1) % 4
        if not flag:
            raise ValueError(f"bad {a - b}" + " sizes")
        out = -pad, ~b
        return out
""")


def test_the_deletions_drop_one_operand_or_one_operator_and_come_last():
    """PIT's operand deletion (`a op b` -> `a`, -> `b`) and unary/boolean deletion (`-x`, `~x`, `not x` -> `x`),
    each a program of its own, after every other class (no earlier index moves), never in a message or a type."""
    ms = mutants(DELETIONS, "deletions.py")
    deletions = [m for m in ms if m.operator.startswith("delete-")]
    assert ms[-len(deletions) :] == deletions
    after = {}
    for m in deletions:
        tree, _ = mutant_tree(DELETIONS, m.index)
        compile(tree, "deletions.py", "exec")
        added = [line[1:].strip() for line in m.diff.splitlines() if line.startswith("+") and not line.startswith("++")]
        after[m.description, m.line] = added[0]
    assert after == {
        ("a Mod b -> a", 3): "pad = a * b - 1",
        ("a Mod b -> b", 3): "pad = 4",
        ("a Sub b -> a", 3): "pad = a * b % 4",
        ("a Sub b -> b", 3): "pad = 1 % 4",
        ("a Mult b -> a", 3): "pad = (a - 1) % 4",
        ("a Mult b -> b", 3): "pad = (b - 1) % 4",
        ("Not x -> x", 4): "if flag:",
        ("USub x -> x", 6): "out = (pad, ~b)",
        ("Invert x -> x", 6): "out = (-pad, b)",
    }  # nothing in the raise's message, nothing in `int | None`
    assert [m.index for m in mutants(DELETIONS, "deletions.py")] == [m.index for m in ms]  # listing restored all


@pytest.mark.lowering
def test_a_packed_trace_gives_each_case_its_packs_lines(tmp_path):
    """Three times faster on a large tier; each case's lines are then a superset of its own, so a line that
    no pack runs no case runs, and the outputs are the alone run's."""
    from harness.config import parse_descriptor
    from harness.mutation.run import trace

    cases = [parse_descriptor(d) for d in ("conv2d_ic8_oc8_i12x12_k3_p1_qfp32", "conv2d_ic4_oc4_g4_i10x10_k3_p1_qfp32")]
    alone, outputs_alone = trace(cases, 1, tmp_path / "alone.json")
    packed, outputs_packed = trace(cases, 1, tmp_path / "packed.json", pack=2)
    assert outputs_packed == outputs_alone and all(outputs_alone.values())
    union = alone[cases[0].descriptor]["rewrite_conv_pass"] | alone[cases[1].descriptor]["rewrite_conv_pass"]
    assert packed[cases[0].descriptor]["rewrite_conv_pass"] == packed[cases[1].descriptor]["rewrite_conv_pass"]
    assert packed[cases[0].descriptor]["rewrite_conv_pass"] >= union


@pytest.mark.lowering
def test_a_stopped_trace_resumes_with_the_cases_it_recorded(tmp_path, monkeypatch):
    """The nightly trace takes hours: a stop keeps every case that ended, and the next run traces only the rest,
    ending with the trace an unstopped run makes."""
    from harness.config import parse_descriptor
    from harness.mutation import reach as mutation_run

    cases = [
        parse_descriptor(d)
        for d in (
            "conv2d_ic8_oc8_i12x12_k3_p1_qfp32",
            "conv2d_ic4_oc4_g4_i10x10_k3_p1_qfp32",
            "conv1d_ic4_oc8_i20_k3_s2_p1_qfp32",
        )
    ]
    whole = mutation_run.trace(cases, 1, tmp_path / "whole.json")
    real = mutation_run.run_anywhere
    given = []

    def stopped_after_one(configs, settings, jobs, on_result, **kw):
        given.append([c.descriptor for c in configs])
        real(configs[:1], settings, jobs, on_result, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(mutation_run, "run_anywhere", stopped_after_one)
    with pytest.raises(KeyboardInterrupt):
        mutation_run.trace(cases, 1, tmp_path / "t.json")
    assert not (tmp_path / "t.json").exists() and (tmp_path / "t.partial.jsonl").exists()

    def recording(configs, settings, jobs, on_result, **kw):
        given.append([c.descriptor for c in configs])
        real(configs, settings, jobs, on_result, **kw)

    monkeypatch.setattr(mutation_run, "run_anywhere", recording)
    assert mutation_run.trace(cases, 1, tmp_path / "t.json") == whole
    assert given == [[c.descriptor for c in cases], [c.descriptor for c in cases[1:]]]
    assert not (tmp_path / "t.partial.jsonl").exists()
    assert len((tmp_path / "t.results.jsonl").read_text().splitlines()) == 3  # each case's verdict, once
    mutation_run.trace(cases, 1, tmp_path / "t.json")  # from the finished trace: nothing runs
    assert len(given) == 2


def test_a_stored_mutant_list_is_the_listing_and_a_broken_one_is_listed_again(tmp_path, monkeypatch):
    from harness.faults import catalog

    monkeypatch.setattr(catalog, "STORE", tmp_path)
    module = "decompose_grouped_conv_pass"
    fresh = tuple(mutants(source_file(module).read_text(), catalog.MODULES[module]))
    catalog.mutants_of.cache_clear()
    assert catalog.mutants_of(module) == fresh  # listed, then stored
    (stored,) = tmp_path.glob(f"{module}-*.json")
    catalog.mutants_of.cache_clear()
    assert catalog.mutants_of(module) == fresh  # read back: the same mutants, tuples and all
    stored.write_text('[{"file": "x"}]')  # a list from a broken write
    catalog.mutants_of.cache_clear()
    assert catalog.mutants_of(module) == fresh
    catalog.mutants_of.cache_clear()
