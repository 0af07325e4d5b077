"""A mutation campaign on a Ray cluster started on this machine: the verdicts of local workers, mutant by mutant.

Nightly's campaign is hundreds of CPU-hours (docs/guide/mutation.md): it is a cluster job, so `mutate --cluster`
must decide every mutant as the local run does, from a trace that is the local trace.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("ray", reason="the optional extra 'cluster' (ray) is not installed: pip install -e '.[cluster]'")


@pytest.mark.lowering
def test_a_cluster_campaign_reaches_the_local_verdicts(tmp_path):
    from harness.faults.catalog import mutant_name, mutants_of
    from harness.mutation.campaign import Campaign
    from harness.mutation.run import mutate

    module = "decompose_grouped_conv_pass"
    ours = [m for m in mutants_of(module) if m.function.endswith("_slice_inputs")]
    axis = next(m for m in ours if m.description == "1 -> 2")  # slices on H, not the channels: killed at once
    names = {mutant_name(module, m.index) for m in [axis, ours[0]]}  # the axis, killed at once, and the first
    args = dict(
        tier="smoke",
        modules=(module,),
        jobs=2,
        names=frozenset(names),
        filter="^conv2d_n1_ic(4|8)_oc(8|12)_g4_i1[02]x1[02]_k3x3_s[12]x[12]_p1x1_d1x1_b1_pmzeros_qfp32_dsnormal_cxnone$",
    )
    local = mutate(Campaign(**args, out=tmp_path / "local"))
    cluster = mutate(Campaign(**args, out=tmp_path / "cluster", cluster="local"))
    assert [(m.name, m.status) for m in cluster.mutants] == [(m.name, m.status) for m in local.mutants]
    assert len(local.mutants) == len(names) and "killed" in {m.status for m in local.mutants}
    killed = [m for m in cluster.mutants if m.status == "killed"]
    assert all("_g4_" in m.killed_by and m.outcome and m.cases_run >= 1 for m in killed)
    # why they died: the backend's failure, never the cluster's (a timeout or a lost worker kills a mutant too)
    assert not any(
        m.outcome == "runner_error" or m.reason.startswith(("timeout", "the cluster lost")) for m in cluster.mutants
    ), [(m.name, m.reason[:80]) for m in cluster.mutants]
    trace = [json.loads((tmp_path / run / "trace-smoke.json").read_text()) for run in ("local", "cluster")]
    assert trace[0]["trace"] == trace[1]["trace"] and trace[0]["outputs"] == trace[1]["outputs"]
