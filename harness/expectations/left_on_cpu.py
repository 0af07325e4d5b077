"""Which nodes a not-delegated case left on the CPU, and why, read from its reason.

The reason a result gives ('left on CPU: aten.convolution.default, ...; the partitioner: convolution: ...;
relu: ...', `harness.run.execute`) names the compute nodes the partitioner did not take and each one's own
words. Expectations match on them node by node, not on the joined text: a registered line still present
does not excuse another node left out. A node refused only because a neighbour was (its input came from a
node on the CPU, or it is the `cond` holding one) is a consequence, not a cause: its words name the other node.
"""

from __future__ import annotations

import re

BOOKKEEPING = ("quantize_per", "dequantize_per", "getitem")  # not compute: they follow the nodes they serve

# The partitioner's words for a node refused because of another node (measured on ExecuTorch 1.5.1: a relu after
# a conv left on the CPU, "Was first node in partition and input aten_convolution_default had fp dtype."; the
# cond around a refused conv, "Submodule was not fully partitioned."; on 1.4.1, a view before a conv and relu left
# on the CPU, alone in its partition: "Partition contained only ops which are removed in the TOSA lowering").
CONSEQUENCES = (
    re.compile(r"input \w+ had fp dtype"),
    re.compile(r"Submodule was not fully partitioned"),
    re.compile(r"Partition contained only ops which are removed in the TOSA lowering"),
)


def cpu_nodes(reason: str) -> dict[str, str] | None:
    """Every compute op a not-delegated case left on the CPU (listed, or named by the partitioner: a conv
    inside a `cond` is not listed, its `cond` is), each with the partitioner's reason ('' where it gave none);
    None for a reason of another shape (Vela's placement, nothing delegated)."""
    found = re.match(r"left on CPU: ([^;]*?)(?:; the partitioner: (.*))?$", reason)
    if found is None or found.group(1).startswith(("Vela placed", "nothing was delegated")):
        return None
    listed = [n.strip() for n in found.group(1).split(",") if not any(b in n for b in BOOKKEEPING)]
    ops = [n.split(".")[1] if n.count(".") >= 2 else n for n in listed]
    said = {
        op: words
        for ops, words in re.findall(r"(?:^|; )(\w+(?:, \w+)*): (.*?)(?=; \w+(?:, \w+)*: |$)", found.group(2) or "")
        for op in ops.split(", ")
    }
    return {op: said.get(op, "") for op in [*ops, *(op for op in said if op not in ops)]}


def causes(nodes: dict[str, str]) -> dict[str, str]:
    """The nodes refused for a reason of their own: those left out only because of a neighbour removed."""
    return {op: said for op, said in nodes.items() if not any(c.search(said) for c in CONSEQUENCES)}
