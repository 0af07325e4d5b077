"""The crossing a tier covers, as an HTML page a reviewer can scan (`python -m harness list --classes --html`)."""

from __future__ import annotations

from pathlib import Path

from harness.cases import cross_axis
from harness.cases.crossed import LEFT_OUT, grid


def render(configs: list, title: str) -> str:
    """Per conv kind and position, a table of kernel x stride x dilation rows by group kind x bias columns; then
    the pairs of per-axis facts across two axes the configs hold (harness.cases.cross_axis)."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    tables = []
    for t in grid(configs):
        covered = sum(c for _, cells in t["rows"] for c, _ in cells)
        expected = sum(e for _, cells in t["rows"] for _, e in cells)
        tables.append({**t, "covered": covered, "expected": expected})
    env = Environment(
        loader=FileSystemLoader(Path(__file__).with_name("templates")), autoescape=select_autoescape(["html", "j2"])
    )
    return env.get_template("coverage.html.j2").render(
        title=title,
        cases=len(configs),
        tables=tables,
        left_out=list(LEFT_OUT.items()),
        cross_axis=cross_axis.coverage(configs),
    )


def write(configs: list, title: str, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(configs, title))
    return path
