"""The report as a chart (matplotlib, where installed): one panel per size class (canonical,
batch 1, tiny), each titled with its class and labelled with the cases and dtypes it holds."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .cases import SIZES
from .peers import optional

ROW_INCHES = 0.15   # per bar: 8-point labels one under the other


def _panel(ax: Any, rows: list[dict[str, Any]], names: list[str], gpu_axis: Any) -> None:
    """The peer ratios of `rows` (one size class) as horizontal bars, with the targets."""
    ypos = np.arange(len(rows))
    height = 0.8 / max(1, len(names))
    marks: dict[bool, list[tuple[float, float]]] = {True: [], False: []}   # met -> (target, y)
    for k, name in enumerate(names):
        shift = (k - (len(names) - 1) / 2) * height
        pts = [(i, r["peers"][name]["ratio"], r["peers"][name].get("ratio_range"))
               for i, r in enumerate(rows) if "ratio" in r["peers"].get(name, {})]
        if pts:
            at, v, spread = zip(*pts)
            low, high = zip(*(s or (m, m) for m, s in zip(v, spread)))
            ax.barh(np.array(at) + shift, v, height, label=name,
                    xerr=[np.subtract(v, low), np.subtract(high, v)], capsize=2)
        for i, r in enumerate(rows):
            if "target" in r["peers"].get(name, {}):
                marks[r["peers"][name]["met"]].append((r["peers"][name]["target"], i + shift))
    for met, style in ((True, "k|"), (False, "rx")):
        if marks[met]:
            t, y = zip(*marks[met])
            ax.plot(t, y, style, markersize=9, label="target " + ("met" if met else "MISSED"))
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_yticks(ypos, [f"{r['case']} {r['dtype']}  ({'x'.join(map(str, r['shape']))})"
                         for r in rows], fontsize=8)
    ax.invert_yaxis()
    if gpu_axis is not None:
        gpu_axis.barh(ypos, [r["share_of_copy"] for r in rows])
        gpu_axis.tick_params(labelleft=False)


def plot(report: dict[str, Any], path: Path) -> str:
    """Draw the peer ratios (and on a GPU the share of copy bandwidth) to `path`, a panel per
    size class; returns the file name, or why no plot was drawn."""
    figure = optional("matplotlib.figure")
    if figure is None:
        return "skipped (matplotlib is not installed)"
    names, h = report["peers"], report["header"]
    gpu = h["backend"] == "cupy"
    classes = [(size, [r for r in report["rows"] if r.get("size", "canonical") == size])
               for size in reversed(SIZES)]   # canonical first
    classes = [(size, rows) for size, rows in classes if rows]
    heights = [1.0 + ROW_INCHES * len(rows) * max(1, len(names)) for _, rows in classes]
    fig = figure.Figure(figsize=(11 if gpu else 8, sum(heights) + 0.4), layout="constrained")
    panels = fig.subplots(len(classes), 2 if gpu else 1, squeeze=False,
                          gridspec_kw={"height_ratios": heights})
    for (size, rows), (ax, *gpu_axis) in zip(classes, panels):
        _panel(ax, rows, names, gpu_axis[0] if gpu_axis else None)
        ax.set_title(f"{size} shapes" if size != "batch 1" else "batch 1", loc="left",
                     fontsize=10)
        ax.set_xlabel(f"{h['backend']} throughput / peer's (log; right of 1: ours is faster)",
                      fontsize=8)
        if gpu_axis:
            gpu_axis[0].set_xlabel("share of device-to-device copy bandwidth", fontsize=8)
    if panels[0][0].get_legend_handles_labels()[0]:   # a peer timed a row of this run
        panels[0][0].legend(fontsize=8, loc="lower right")
    fig.suptitle(f"onnx-cupy {h['backend']} - {h['date']}", fontsize=9)
    fig.savefig(path, dpi=100)
    return path.name
