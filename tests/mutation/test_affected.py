"""`sweep --affected-by`: a change's lines, carried onto the installed traced files, select the cases that reach them.

The unit part reads real git changes of a small tree laid out as ExecuTorch's (`src/executorch` links to the
top-level folders); the end-to-end part runs a seeded fault's commit on a tree of the whole installed package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.config import ConfigError, parse_descriptor
from harness.faults.catalog import mutants_of, source_file
from harness.mutation.affected import Change, carry, old_lines, read_change, select, statements
from harness.policy.mutation import DEFAULT_MODULES, MODULES
from tests import executorch_tree as et

PASS = MODULES["rewrite_conv_pass"]
INSTALLED = {m: source_file(m) for m in MODULES}
# RewriteConvPass._adjust_pad_if_needed's last line
CORRECT = "            )\n\n        return pad - mod_remainder\n"
FAULTY = "            )\n\n        return pad - mod_remainder - (1 if mod_remainder else 0)\n"


def _mini_tree(repo: Path) -> str:
    """A tree with ExecuTorch's layout holding the installed pass, one exir file, a test and a doc."""
    repo.mkdir()
    et.git(repo, "init", "--quiet")
    (repo / PASS).parent.mkdir(parents=True)
    (repo / PASS).write_text(INSTALLED["rewrite_conv_pass"].read_text())
    (repo / "exir").mkdir()
    (repo / "exir" / "core.py").write_text("X = 1\n")
    (repo / "backends" / "arm" / "test").mkdir()
    (repo / "backends" / "arm" / "test" / "test_conv.py").write_text("def test(): pass\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "conv.md").write_text("# conv\n")
    (repo / "src" / "executorch").mkdir(parents=True)
    for top in ("backends", "exir"):
        (repo / "src" / "executorch" / top).symlink_to(Path("..") / ".." / top)
    return et.commit(repo, "base")


def _line_of(text: str, needle: str) -> int:
    return text.splitlines().index(needle) + 1


def test_the_old_side_of_a_diff_its_rewrites_deletions_and_the_lines_around_an_insertion():
    diff = (
        "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -3 +3 @@\n-a\n+b\n@@ -7,2 +6,0 @@\n-c\n-d\n"
        "@@ -10,0 +9 @@\n+e\n"
    )
    assert old_lines(diff) == {"x.py": {3, 7, 8, 10, 11}}


def test_lines_are_carried_across_a_shift_and_a_stretch_that_differs_is_taken_whole():
    base = ["a", "b", "c", "d", "e"]
    installed = ["new", "a", "b", "C", "d", "e"]  # one line inserted above, 'c' rewritten
    assert carry({1, 2, 5}, base, installed) == {2, 3, 6}
    assert carry({3}, base, installed) == {3, 4, 5}  # the differing stretch (installed 4) and the lines around it


def test_a_line_grows_to_its_statement_and_a_change_outside_a_function_reaches_the_whole_module():
    text = "X = 1\n\n\ndef f(a, b=2):\n    y = (a +\n         b)\n    if y:\n        return y\n    return 0\n"
    assert statements({6}, text) == ({5, 6}, False)  # the operand's line: the whole assignment
    assert statements({7}, text) == ({7}, False)  # an if's header, not its body
    assert statements({4}, text)[1] and statements({1}, text)[1]  # a def's own line, a module constant
    assert statements({1}, "def (:\n")[1]  # a file that does not parse


def test_every_mutant_of_the_three_passes_is_selected_with_every_case_the_mutation_tool_runs_for_it():
    """A change realizing a mutant touches at least its node's line; grown to its statement that holds every line
    that runs the change (the lines the mutation tool selects its cases by), so the selection holds those cases."""
    for module in DEFAULT_MODULES:
        text = INSTALLED[module].read_text()
        for m in mutants_of(module):
            first, last = m.lines if m.lines != (0, 0) else (m.line, m.line)
            grown, outside = statements({m.line}, text)
            assert outside or set(range(first, last + 1)) <= grown, (module, m.index, m.line, m.lines)


def test_a_commit_a_range_and_a_working_tree_are_read_and_each_file_is_classed(tmp_path):
    repo = tmp_path / "et"
    base = _mini_tree(repo)
    text = (repo / PASS).read_text()
    et.edit(repo / PASS, CORRECT, FAULTY)
    (repo / "docs" / "conv.md").write_text("# conv, again\n")
    (repo / "backends" / "arm" / "test" / "test_conv.py").write_text("def test(): assert 1\n")
    fault = et.commit(repo, "seeded fault, its test and doc")
    line = _line_of(text, "        return pad - mod_remainder")
    installed_line = _line_of(INSTALLED["rewrite_conv_pass"].read_text(), "        return pad - mod_remainder")

    change = read_change(f"{repo}@{fault}", INSTALLED)
    assert (change.base, change.head, change.run_on) == (base, fault, f"{repo}@{fault}")
    assert change.touched == {"rewrite_conv_pass": {installed_line}} and line == installed_line
    assert change.outside == ["backends/arm/test/test_conv.py", "docs/conv.md"] and not change.unseen
    assert read_change(f"{repo}@{base}..{fault}", INSTALLED).touched == change.touched

    (repo / "exir" / "core.py").write_text("X = 2\n")  # uncommitted: the working tree's change
    (repo / "exir" / "new.py").write_text("Y = 1\n")  # untracked
    tree = read_change(str(repo), INSTALLED)
    assert tree.head == "" and tree.run_on == str(repo) and tree.unseen == ["exir/core.py", "exir/new.py"]

    with pytest.raises(ConfigError, match=r"invalid --affected-by .*nope is not a commit of"):
        read_change(f"{repo}@nope", INSTALLED)
    with pytest.raises(ConfigError, match=r"invalid --affected-by .*has no parent"):
        read_change(f"{repo}@{base}", INSTALLED)
    with pytest.raises(ConfigError, match=r"invalid --affected-by .* is not a git checkout"):
        read_change(str(tmp_path / "none"), INSTALLED)


def test_a_change_below_the_base_files_shift_is_carried_to_the_installed_line(tmp_path):
    """The tree's pass differs from the installed one above the change (a line added at the top): the touched line
    is the installed one, not the tree's number."""
    repo = tmp_path / "et"
    _mini_tree(repo)
    (repo / PASS).write_text("# a line the installed file lacks\n" + (repo / PASS).read_text())
    et.commit(repo, "shifted")
    et.edit(repo / PASS, CORRECT, FAULTY)
    fault = et.commit(repo, "fault")
    installed_line = _line_of(INSTALLED["rewrite_conv_pass"].read_text(), "        return pad - mod_remainder")
    assert read_change(f"{repo}@{fault}", INSTALLED).touched == {"rewrite_conv_pass": {installed_line}}


def _cases(*descriptors: str) -> list:
    return [parse_descriptor(d) for d in descriptors]


def test_the_selection_is_the_reaching_cases_the_smoke_ones_and_the_untraced_in_tier_order():
    a, b, c, d = _cases(
        "conv1d_ic4_oc8_i20_k3_s2_p1_qfp32",
        "conv1d_ic4_oc8_i21_k3_s1_p1_qfp32",
        "conv1d_ic4_oc8_i22_k3_s1_p1_qfp32",
        "conv1d_ic4_oc8_i23_k3_s1_p1_qfp32",
    )
    trace = {
        a.descriptor: {"rewrite_conv_pass": {10, 20}},
        b.descriptor: {"rewrite_conv_pass": {10}},
        c.descriptor: {"size_adjust_input_pass": {5}},
    }  # d: not in the trace
    change = Change("x", Path("."), "b", "h", touched={"rewrite_conv_pass": {20}})
    chosen = select([a, b, c, d], {c.descriptor}, trace, change)
    assert [x.descriptor for x in chosen.cases] == [a.descriptor, c.descriptor, d.descriptor]
    assert (chosen.reaching, chosen.smoke, chosen.untraced) == (1, 1, 1)
    assert chosen.why.startswith("3 of 4 cases: 1 reach a touched line (rewrite_conv_pass 1 line(s)), 1 smoke")

    change.whole.add("rewrite_conv_pass")  # changed outside a function: every case that runs the module
    whole = select([a, b, c, d], set(), trace, change)
    assert [x.descriptor for x in whole.cases] == [a.descriptor, b.descriptor, d.descriptor]

    unseen = Change("x", Path("."), "b", "h", unseen=["exir/core.py"])
    every = select([a, b, c, d], set(), trace, unseen)
    assert len(every.cases) == 4 and "no trace covers (exir/core.py)" in every.why


GROUPED = MODULES["decompose_grouped_conv_pass"]
SLICES = "            slice_args = (input_node, 1, start_index, stop_index)\n"
FIRST_GROUP_ONLY = "            slice_args = (input_node, 1, 0, input_slice_size)  # each group: the first\n"


@pytest.mark.lowering
@pytest.mark.processes
def test_a_seeded_fault_runs_the_cases_that_reach_it_on_its_commit_and_skips_the_rest(tmp_path):
    """A tree of the whole installed package, one commit seeding a fault in the grouped conv's input slices: of a
    two-case tier (neither in smoke), the grouped conv is selected and fails on the commit; the plain conv never
    runs that line and is not run."""
    from harness.cases.tiers import cases_of

    repo = tmp_path / "executorch"
    repo.mkdir()
    et.make(repo)
    et.edit(repo / GROUPED, SLICES, FIRST_GROUP_ONLY)
    fault = et.commit(repo, "seeded fault")
    grouped = "conv1d_n1_ic4_oc8_g2_i23_k3_s1_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone"
    plain = "conv1d_n1_ic4_oc8_g1_i23_k3_s1_p1_d1_b1_pmzeros_qfp32_dsnormal_cxnone"
    assert not {grouped, plain} & {c.descriptor for c in cases_of("smoke")}
    batch = tmp_path / "batch.txt"
    batch.write_text(f"{plain}\n{grouped}\n")
    env = dict(os.environ, HARNESS_CACHE=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "harness", "sweep", "--tier", f"@{batch}", "-j", "1", "--no-progress", "--no-history"]
    out = tmp_path / "r.jsonl"
    done = subprocess.run(
        [*cmd, "--affected-by", f"{repo}@{fault}", "--results", str(out)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    said = f"affected by {repo}@{fault}: 1 of 2 cases: 1 reach a touched line (decompose_grouped_conv_pass 1 line(s))"
    assert "harness: tracing @" in done.stderr and said in done.stderr, done.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["descriptor"], r["outcome"]) for r in rows] == [(grouped, "mismatch")], rows
    assert rows[0]["versions"]["executorch-tree"].endswith(f"@{fault[:12]}")
    assert list((tmp_path / "cache" / "traces").glob("*.json")), "the trace is kept for the next change"

    again = subprocess.run(
        [*cmd, "--affected-by", f"{repo}@{fault}", "--executorch", "installed"], capture_output=True, text=True, env=env
    )
    assert again.returncode == 2 and "invalid --executorch installed with --affected-by" in again.stderr
