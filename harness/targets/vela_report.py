"""What Vela says about a compile: its printed network summary and its summary CSV.

Vela prints, per compiled graph, the memory it uses, how many operators it
placed on the NPU and how many it left to the CPU, and the MACs; its summary
CSV (one per output directory) adds the cycle and inference-time estimate.
A lowering with several Ethos-U delegates compiles several graphs into one
directory, whose CSV then holds only the last: the cycle estimate is kept
only where there was one graph. Parsing only: nothing here imports Vela.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

_PRINTED = {  # summary line -> key, for lines "<label>   <number> <unit>"
    "Total SRAM used": "sram_kib",
    "Total DRAM used": "dram_kib",
    "Total On-chip Flash used": "on_chip_flash_kib",
    "Total Off-chip Flash used": "off_chip_flash_kib",
    "Neural network macs": "macs",
}
_OPS = re.compile(r"^(CPU|NPU) operators = (\d+)")
_NUMBER = re.compile(r"(-?\d+(?:\.\d+)?)")


def parse_printed(log: str) -> list[dict]:
    """One dict per 'Network summary' block Vela printed, in order."""
    blocks: list[dict] = []
    for line in log.splitlines():
        line = line.strip()
        if line.startswith("Network summary for"):
            blocks.append({"npu_ops": 0, "cpu_ops": 0})
            continue
        if not blocks:
            continue
        ops = _OPS.match(line)
        if ops:
            blocks[-1][f"{ops.group(1).lower()}_ops"] = int(ops.group(2))
            continue
        for label, key in _PRINTED.items():
            if line.startswith(label):
                number = _NUMBER.search(line[len(label) :])
                if number:
                    value = float(number.group(1))
                    blocks[-1][key] = int(value) if key == "macs" else value
    return blocks


def parse_csv(path: Path) -> dict:
    """The cycle and time estimate of Vela's summary CSV (its first data row)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return {}
    row = rows[0]
    out = {}
    for key, column in (
        ("cycles", "cycles_total"),
        ("npu_cycles", "cycles_npu"),
        ("inference_s", "inference_time"),
        ("passes", "passes_after_fusing"),
    ):
        if row.get(column) not in (None, ""):
            value = float(row[column])
            out[key] = int(value) if key in ("cycles", "npu_cycles", "passes") else value
    return out


def summarize(log: str, csv_files: list[Path], stream_bytes: int) -> dict:
    """The facts of a lowering's Vela compiles, for the result's `vela` metric."""
    blocks = parse_printed(log)
    facts: dict = {"graphs": len(blocks), "command_stream_bytes": stream_bytes}
    for key in ("npu_ops", "cpu_ops", "macs", "sram_kib", "dram_kib", "on_chip_flash_kib", "off_chip_flash_kib"):
        values = [b[key] for b in blocks if key in b]
        if values:
            facts[key] = sum(values)
    if len(blocks) == 1 and len(csv_files) == 1:
        facts.update(parse_csv(csv_files[0]))
        if facts.get("macs") and facts.get("cycles"):
            facts["cycles_per_mac"] = round(facts["cycles"] / facts["macs"], 6)
    return facts
