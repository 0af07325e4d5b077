"""Node provenance that shares its history instead of deep-copying it.

Every node created by a pass records its provenance: `NodeSource.__init__`
deep-copies the whole `from_node` history of the node it comes from, so the
cost grows with the square of the number of passes (10% of a case). Those
histories are only ever read after creation (ExecuTorch's and torchao's
debug-handle walkers), so sharing them instead of copying is equivalent.

Probe: `NodeSource` has the nested `NodeInfo` and the `NodeSourceAction` enum
the replacement builds, its `__init__` takes (node, pass_name, action), and
for a node with a history, one without and no node at all, the replacement
sets the same attributes to equal values (`to_dict`, `==`) as torch's.
"""

from __future__ import annotations

import inspect

from harness.speedups.base import Undo, need, patch

_ORIGINAL: list = []  # torch's __init__, once replaced


def shared_history_init(NodeSource, Action):
    """The replacement `__init__`: torch's, but for a new list sharing the (never mutated) history."""

    def __init__(self, node, pass_name: str = "", action=None) -> None:
        self.pass_name = pass_name
        if action is None:
            action = []
        elif not isinstance(action, list):
            action = [action]
        for a in action:
            if not isinstance(a, Action):
                raise AssertionError(f"Expected NodeSourceAction, got {type(a)}")
        self.action = action
        if node:
            self.node_info = self.NodeInfo(name=node.name, target=str(node.target), graph_id=id(node.graph))
            self.from_node = list(node.meta["from_node"]) if "from_node" in node.meta else []
        else:
            self.node_info = None
            self.from_node = []
        self._action_string = None
        self._dict = None

    return __init__


def _torchs_init(NodeSource):
    return _ORIGINAL[0] if _ORIGINAL else NodeSource.__init__


def probe() -> str:
    NodeSource = need("torch.fx.traceback", "NodeSource")
    need("torch.fx.traceback", "NodeSource.NodeInfo")
    Action = need("torch.fx.traceback", "NodeSourceAction")
    import torch

    torchs = _torchs_init(NodeSource)
    params = tuple(inspect.signature(torchs).parameters)
    if params != ("self", "node", "pass_name", "action"):
        return f"NodeSource.__init__ takes {params}"
    ours = shared_history_init(NodeSource, Action)
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(torch.relu, (x,))
    first = NodeSource.__new__(NodeSource)
    torchs(first, x, "first", list(Action)[0])
    y.meta["from_node"] = [first]
    actions = list(Action)
    for node, name, action in ((y, "p", actions[:1]), (x, "q", None), (None, "", actions[0]), (y, "r", actions)):
        a, b = NodeSource.__new__(NodeSource), NodeSource.__new__(NodeSource)
        torchs(a, node, name, action)
        ours(b, node, name, action)
        if set(vars(a)) != set(vars(b)):
            return f"NodeSource.__init__ sets {sorted(vars(a))}, the replacement {sorted(vars(b))}"
        if a.to_dict() != b.to_dict() or not a == b:
            return "the replacement's provenance differs from torch's"
    return ""


def install() -> Undo:
    from torch.fx import traceback as fx_traceback

    NodeSource = fx_traceback.NodeSource
    if not _ORIGINAL:
        _ORIGINAL.append(NodeSource.__init__)
    return patch(NodeSource, "__init__", shared_history_init(NodeSource, fx_traceback.NodeSourceAction))
