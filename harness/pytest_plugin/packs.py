"""Which cases share a pack under pytest, and an xdist scheduler that keeps a pack on one worker.

The packs are formed from the selection (`harness.schedule.packing.form_packs`,
the sweep's own rule) the same way in the controller and in every worker. The
scheduler is xdist's `--dist load` but for the cases of one pack, which travel
to a worker as one unit; a worker then lowers each pack once
(`harness.schedule.on_demand`). What pytest deselects after the packs are
formed (-k, --lf, --sw) only leaves a pack smaller: a case selected alone runs
alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from harness.config import ConvConfig
from harness.schedule.packing import form_packs

_PARAM = re.compile(r"\[(?P<id>[^\[\]]*)\]$")


def packs_of(configs: list[ConvConfig], target: str, size: int) -> list[tuple[ConvConfig, ...]]:
    """The packs of more than one case (every other case runs alone)."""
    return [p for p in form_packs(configs, target, size) if len(p) > 1] if size > 1 else []


def scope_by_id(packs: list[tuple[ConvConfig, ...]]) -> dict[str, str]:
    """A test id (the descriptor) -> the scheduling unit of its pack."""
    return {c.descriptor: f"harness-pack-{i}" for i, p in enumerate(packs) for c in p}


def surviving(packs: list[tuple[ConvConfig, ...]], selected: list[str]) -> list[tuple[ConvConfig, ...]]:
    """The packs restricted to the cases still selected when collection ends, in pack order."""
    left = set(selected)
    return [kept for p in packs if len(kept := tuple(c for c in p if c.descriptor in left)) > 1]


def test_id(nodeid: str) -> str:
    """The parameter id of a test's node id ('' for a test that is not parametrized)."""
    m = _PARAM.search(nodeid)
    return m["id"] if m else ""


def pack_scheduler(config, log, scopes: dict[str, str], order: Callable[[list], list] | None = None):
    """xdist's load scheduling with each pack one unit of work (other tests one unit each, as with `load`);
    `order` puts the units [(scope, node ids)] in the order they go out (harness.pytest_plugin.durations:
    longest first)."""
    from xdist.scheduler.loadscope import LoadScopeScheduling

    class PackScheduling(LoadScopeScheduling):
        ordered = order is None

        def _split_scope(self, nodeid: str) -> str:
            return scopes.get(test_id(nodeid), nodeid)

        def _assign_work_unit(self, node) -> None:
            # The first assignment follows the building of the whole queue (LoadScopeScheduling.schedule).
            if not self.ordered:
                self.ordered = True
                units = order([(s, list(ids)) for s, ids in self.workqueue.items()])
                queue = {scope: self.workqueue[scope] for scope, _ in units}
                self.workqueue.clear()
                self.workqueue.update(queue)
            super()._assign_work_unit(node)

    return PackScheduling(config, log)
