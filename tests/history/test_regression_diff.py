"""Diff on real sweeps: two clean runs of a smoke slice agree to the number; a run with a canary
is reported as exactly the cases the canary broke."""

from __future__ import annotations

import pytest

from harness.cli.main import main
from harness.config import parse_descriptor
from harness.faults.canaries import CANARIES
from harness.history.db import History
from harness.history.diff import diff
from harness.schedule.sweep import SweepRequest, run_sweep

pytestmark = pytest.mark.lowering
# The smoke tier's strided conv1d cases of three schemes (integer, 16-bit integer, float) on two data sets (11),
# which the conv1d-stride canary breaks. The three sweeps are one test: a module fixture would be built once per
# xdist worker.
SLICE = "^conv1d_.*_s2_.*_q(a8w8|a16w8|fp16)_ds(normal|exact)_"


def test_two_clean_runs_agree_to_the_number_and_a_canary_run_lists_exactly_the_cases_it_broke(tmp_path, capsys):
    done = {}
    for name, canary in (("clean1", ""), ("clean2", ""), ("canary", "conv1d-stride")):
        done[name] = run_sweep(
            SweepRequest(
                "smoke",
                filter=SLICE,
                jobs=2,
                canary=canary,
                db=tmp_path / "h.sqlite",
                results=tmp_path / name / "results.jsonl",
            )
        )
    capsys.readouterr()

    d = diff(done["clean1"].results, done["clean2"].results)
    assert len(done["clean1"].results) >= 10
    assert d.same_inputs and not d.regression and d.counts() == dict.fromkeys(d.counts(), 0)
    args = ["diff", done["clean1"].run.run_id, done["clean2"].run.run_id, "--db", str(tmp_path / "h.sqlite")]
    assert main(args) == 0 and "no regression" in capsys.readouterr().out

    broken = {r.descriptor for r in done["canary"].results if not r.green}
    relevant = CANARIES["conv1d-stride"].relevant
    assert broken and all(relevant(parse_descriptor(d)) for d in broken)  # only cases that reach the fault
    assert main(["diff", "last-green", "last", "--db", str(tmp_path / "h.sqlite"), "--format", "json"]) == 1
    with History(tmp_path / "h.sqlite") as h:
        assert h.resolve("last-green") == done["clean2"].run.run_id
    d = diff(done["clean2"].results, done["canary"].results)
    assert {n.descriptor for _, n in d.new_failures} == broken
    assert not (d.fixed or d.changed or d.added or d.removed or d.flakes)
    assert '"regression": true' in capsys.readouterr().out
