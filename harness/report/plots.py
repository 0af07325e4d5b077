"""The report's plots, drawn with matplotlib and embedded as PNG data URIs so the page works offline."""

from __future__ import annotations

import base64
import io
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from harness.history.db import RunSummary  # noqa: E402
from harness.report.figures import Grid  # noqa: E402
from harness.results.case_result import CaseResult  # noqa: E402
from harness.results.stages import LEGACY, STAGES, stage_seconds


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def heatmap(g: Grid, what: str) -> str:
    """Per cell: the green share (green is good), the largest error no finding explains over its own limit
    (dark is good; over 1 is a failure), the known issues' share, or Vela's cycles per MAC."""
    values = {"pass_rate": g.pass_rate, "ratio": g.max_ratio, "cycles": g.cycles_per_mac, "known": g.known_share}[what]
    data = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.55 * len(g.xs) + 2.5), max(2.5, 0.4 * len(g.ys) + 1.5)))
    if what == "pass_rate":
        image = ax.imshow(data, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        title = "green (cases that ran; a known issue is explained)"
    elif what == "known":
        image = ax.imshow(data, cmap="Purples", vmin=0, vmax=1, aspect="auto")
        title = "known issues (share of the cases that ran)"
    elif what == "cycles":
        image = ax.imshow(data, cmap="viridis", aspect="auto")
        title = "Vela cycles per MAC (median)"
    else:
        image = ax.imshow(np.minimum(data, 2.0), cmap="magma_r", vmin=0, vmax=2, aspect="auto")
        title = "max unexplained error / own limit (capped at 2)"
    for (i, j), v in np.ndenumerate(data):
        if not np.isnan(v):
            light = (
                v < 0.5
                if what == "pass_rate"
                else v > 0.5
                if what == "known"
                else v > 1.2
                if what == "ratio"
                else v < np.nanmean(data)
            )
            text = f"{v:.0%}" if what in ("pass_rate", "known") else f"{v:.3g}" if what == "cycles" else f"{v:.2f}"
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if light else "black")
    ax.set_xticks(
        range(len(g.xs)),
        [str(x) for x in g.xs],
        rotation=45 if len(g.xs) > 6 else 0,
        ha="right" if len(g.xs) > 6 else "center",
        fontsize=8,
    )
    ax.set_yticks(range(len(g.ys)), [str(y) for y in g.ys], fontsize=8)
    ax.set_xlabel(g.x)
    ax.set_ylabel(g.y)
    ax.set_title(f"{title}: {g.y} x {g.x}", fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.04)
    return _png(fig)


def trend(summaries: list[RunSummary]) -> str:
    """The last runs of the same kind, oldest first: cases, cases not green, wall time, cost per case."""
    runs = list(reversed(summaries))
    labels = [time.strftime("%m-%d %H:%M", time.localtime(s.run.started)) for s in runs]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3))
    x = range(len(runs))
    axes[0].plot(x, [s.cases for s in runs], marker="o", label="cases")
    axes[0].plot(x, [s.cases - s.green for s in runs], marker="o", color="crimson", label="not green")
    axes[0].legend(fontsize=8)
    axes[0].set_title("cases", fontsize=10)
    axes[1].plot(x, [(s.run.wall_s or 0) / 60 for s in runs], marker="o")
    axes[1].set_title("wall time (min)", fontsize=10)
    axes[2].plot(x, [s.case_seconds / s.cases if s.cases else 0 for s in runs], marker="o")
    axes[2].set_title("time per case (s, summed over workers)", fontsize=10)
    step = max(1, len(runs) // 10)  # at most ten dates on an axis
    for ax in axes:
        ax.set_xticks(list(x)[::step], labels[::step], rotation=30, ha="right", fontsize=7)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def stage_times(results: list[CaseResult]) -> str:
    """Distribution of each stage's time per case."""
    data = [
        [
            stage_seconds(r.timings_s, s)
            for r in results
            if s in r.timings_s or any(LEGACY.get(k) == s for k in r.timings_s)
        ]
        for s in STAGES
    ]
    shown = [(s, d) for s, d in zip(STAGES, data) if d]
    fig, ax = plt.subplots(figsize=(7, 3))
    if shown:
        ax.boxplot([d for _, d in shown], vert=False, showfliers=True, flierprops={"markersize": 2})
        ax.set_yticks(range(1, len(shown) + 1), [f"{s} (median {np.median(d):.3f} s)" for s, d in shown], fontsize=8)
    ax.set_xscale("log")
    ax.set_xlabel("seconds per case (log)")
    ax.grid(alpha=0.3, axis="x")
    ax.set_title("time per stage", fontsize=10)
    return _png(fig)
