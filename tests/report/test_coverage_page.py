"""The crossing a tier covers, as an HTML page of tables a reviewer can scan."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from harness.cases.crossed import universe
from harness.config import parse_descriptor
from harness.report.coverage_page import render


def _cells(html: str) -> list[tuple[str, int, int]]:
    return [(cls, int(c), int(e)) for cls, c, e in re.findall(r'<td class="(full|part|none)">(\d+)/(\d+)</td>', html)]


def test_each_cell_counts_the_pads_and_remainders_covered_of_those_asked_for():
    configs = [
        parse_descriptor("conv1d_ic4_oc4_i8_k2_p0_b0_qfp32"),
        parse_descriptor("conv1d_ic4_oc4_i8_k2_p1_b0_qa8w8"),
    ]
    html = render(configs, "two conv1d cases")
    cells = _cells(html)
    assert sum(e for _, _, e in cells) == sum(len(t) for t in universe().values()), "every triple has its cell"
    assert sum(c for _, c, _ in cells) == 2 and all(cls == ("part" if c else "none") for cls, c, e in cells)
    assert "two conv1d cases" in html and "Left out on purpose" in html
    row = re.search(r'<td class="row">k2 s1 d1</td>\s*((?:<td[^>]*>[^<]*</td>)+)', html).group(1)
    assert _cells(row)[1] == ("part", 2, 3), "dense, no bias: pads 0 and 1 of 0-2"


@pytest.mark.processes
def test_the_cli_writes_the_page_with_classes_and_refuses_it_without(tmp_path):
    out = tmp_path / "crossing.html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "list",
            "--tier",
            "smoke",
            "--filter",
            "^conv3d",
            "--classes",
            "--html",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and f"crossing: {out}" in proc.stdout and '<h2 id="conv3d-all">' in out.read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "list", "--tier", "smoke", "--html", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and proc.stderr.strip().endswith("it writes the crossing, so it needs --classes")
