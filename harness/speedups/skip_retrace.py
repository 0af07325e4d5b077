"""During the lowering, a `run_decompositions` with nothing to decompose returns its program.

`to_edge_transform_and_lower` (the Arm partitioner's EDGE_DO_NOT_DECOMP path)
calls `ExportedProgram.run_decompositions` three times: `{}` to functionalize
the exported program, then the default table less the partitioner's ops, then,
once those ops are moved to a namespace no table names, the full default table.
That third call retraces a program that is already functional (inference IR)
and holds none of the table's operators: the same nodes come back, at 0.07 s
for an fp32 conv and 0.22 s for an a8w8 one (measured), about a quarter of
the lowering. ExecuTorch already skips its other decomposition call on exactly
this test (`contains_any_call_fn_target_op`, in
`_gen_edge_manager_for_partitioners`: "safe to skip when none of those targets
occur in the graph"); here it also covers the third. The first call is never
skipped: it is what turns the exported (training IR) program into inference IR.

Probe: ExecuTorch has that test (1.4.x does not: off there), and
`run_decompositions` takes the arguments the wrapper passes on. The
flatbuffers are byte-identical either way (tests/speedups/test_state.py, and the
end-to-end proof every environment runs once: `harness.speedups.state`).
"""

from __future__ import annotations

import inspect

from harness.speedups.base import Undo, need, patch

SKIPPED = [0]  # how many calls were skipped in this process (for tests and benchmarks)
_WRAPPER_ARGS = ("self", "decomp_table", "decompose_custom_triton_ops")


def probe() -> str:
    need("executorch.exir.graph_module", "contains_any_call_fn_target_op")
    run_decompositions = need("torch.export", "ExportedProgram.run_decompositions")
    params = tuple(inspect.signature(run_decompositions).parameters)
    if params != _WRAPPER_ARGS:
        return f"ExportedProgram.run_decompositions takes {params}, the wrapper passes on {_WRAPPER_ARGS}"
    return ""


def nothing_to_decompose(program, decomp_table) -> bool:
    """True when `program` is inference IR already and no node (control-flow branches included) is in the table."""
    from executorch.exir.graph_module import contains_any_call_fn_target_op

    if decomp_table is None or not decomp_table or program.dialect != "ATEN":
        return False
    return not contains_any_call_fn_target_op(program.graph_module, decomp_table)


def install() -> Undo:
    """Wrap `ExportedProgram.run_decompositions`; it skips only inside `lazy_compile.during_lowering`."""
    from torch.export import ExportedProgram

    from harness.speedups import lazy_compile

    original = ExportedProgram.run_decompositions

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        if lazy_compile.lowering() and not decompose_custom_triton_ops and nothing_to_decompose(self, decomp_table):
            SKIPPED[0] += 1
            return self
        return original(self, decomp_table, decompose_custom_triton_ops)

    run_decompositions.__wrapped__ = original
    return patch(ExportedProgram, "run_decompositions", run_decompositions)
