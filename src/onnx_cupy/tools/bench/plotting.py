"""The report as a chart (matplotlib, where installed)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .peers import optional
from .report import label


def plot(report: dict[str, Any], path: Path) -> str:
    """Draw the peer ratios (and on a GPU the share of copy bandwidth) to `path`; returns the file
    name, or why no plot was drawn."""
    figure = optional("matplotlib.figure")
    if figure is None:
        return "skipped (matplotlib is not installed)"
    rows, names, h = report["rows"], report["peers"], report["header"]
    gpu = h["backend"] == "cupy"
    fig = figure.Figure(figsize=(11 if gpu else 8, 1.5 + 0.2 * len(rows) * max(1, len(names))))
    ax = fig.add_subplot(1, 2 if gpu else 1, 1)
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
    ax.set_yticks(ypos, [label(r) for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{h['backend']} throughput / peer's (log)")
    if names:
        ax.legend(fontsize=8)
    if gpu:
        ax2 = fig.add_subplot(1, 2, 2, sharey=ax)
        ax2.barh(ypos, [r["share_of_copy"] for r in rows])
        ax2.set_xlabel("share of device-to-device copy bandwidth")
        ax2.tick_params(labelleft=False)
    fig.suptitle(f"onnx-cupy {h['backend']} - {h['date']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path.name
