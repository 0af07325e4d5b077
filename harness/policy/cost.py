"""What the NPU pays for a case, and how far it may move between two runs before a diff calls it a change.

Vela's estimates (`metrics.vela`, harness.targets.vela_report) are a pure function of the compiled graph, Vela's
version and the accelerator and system configuration: the same case compiled twice gives the same numbers to
the cycle (tests/targets/test_ethos_u.py holds it). So a threshold here filters no noise; it filters changes too
small to be a change of the lowering. Measured on ethos-u55-128, conv2d_ic8_oc8_i12x12_k3_p1_qa8w8 (5,312 cycles
with its context `none`):

* The smallest change of the graph that is not one: the same conv with a `relu` after it (fused into the conv's
  output clamp, no operator added) is 16 cycles and 0.01 KiB of SRAM apart from the bare conv (a different
  command stream, the same work).
* The smallest change that is one, an elementwise operator more (an `add` after the conv, as a stray RESCALE
  or a layout op would be): +1,744 cycles (+33%), +1.14 KiB of SRAM, one NPU operator more.

A change is reported when it passes both the absolute and the relative threshold: the absolute one sits
above the command-stream difference (4x its 16 cycles) and far below an operator's cost; the relative one
keeps a large graph's detail out (an operator added to a network-sized conv costs at least its output's size
in cycles, a far larger share than 1%). Counts (operators on the NPU, on the CPU) are reported on any change.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CostThreshold:
    absolute: float  # in the metric's unit
    relative: float  # a share of the earlier value


COST_THRESHOLDS: dict[str, CostThreshold] = {
    "cycles": CostThreshold(absolute=64, relative=0.01),
    "npu_cycles": CostThreshold(absolute=64, relative=0.01),
    "sram_kib": CostThreshold(absolute=0.25, relative=0.01),  # above the 0.01 KiB of a different command stream
    "off_chip_flash_kib": CostThreshold(absolute=0.25, relative=0.01),  # weights, biases and the command stream
}
COUNTS = ("npu_ops", "cpu_ops")  # any change is one


def moved(metric: str, before: float, after: float) -> bool:
    """Whether `metric` moved from `before` to `after` past its thresholds (a count: at all)."""
    if metric in COUNTS:
        return before != after
    t = COST_THRESHOLDS[metric]
    delta = abs(after - before)
    return delta >= t.absolute and delta >= t.relative * abs(before)
