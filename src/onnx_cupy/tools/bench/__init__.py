"""`onnx-cupy bench`: throughput of one backend on canonical cases against the peers installed
in the same run (onnxruntime CPU with 1 thread, its CUDA provider, PyTorch, onnx.reference), with
each row's correctness against onnxruntime, the NumPy fallback's peak additional memory and, on a
GPU, the bandwidth achieved against a device-to-device copy.

Peers run as their users run them: onnxruntime gets the model an exporter writes (input and output
shapes declared, Resize scales as initializers) with every graph optimization on, so that it picks
its shape-specialized kernels (NCHWc pooling). Ours and the peers are timed in turns (ours, peer,
..., ours, peer, ...) after warm-ups, and each one's median is taken, so that a change in machine
load affects all alike. Throughput counts the elements of X and Y per second. A peer's ratio is
our throughput over the peer's; a peer counts for a case only when its output matches ours within
the dtype's tolerance in the same run ("n/a" otherwise, with the reason in the JSON report).

The rooms: cases.py (what runs), peers.py (what it is compared with), timing.py (how it is
measured), report.py (the tables and Markdown), plotting.py (the chart); this module runs
them.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import host
from ..progress import Progress
from .cases import CASES, DIRECTIONS, DTYPES, OPS, SIZES, TINY_TARGET_US, Case, direction
from .peers import available
from .plotting import plot
from .report import header, load_average, markdown, merge, summary, table, target_summary
from .timing import Run, measure

__all__ = ["CASES", "DIRECTIONS", "DTYPES", "OPS", "SIZES", "TINY_TARGET_US", "Case", "host",
           "markdown", "measure", "merge", "plot", "run", "selected", "summary", "table",
           "write"]


def selected(ops: Sequence[str] | None = None,
             directions: Sequence[str] | None = None) -> list[Case]:
    """The cases of `ops` in `directions` (each: all when empty)."""
    return [c for c in CASES if (not ops or c.op in ops)
            and (not directions or direction(c) in directions)]


def run(backend: str, ops: Sequence[str] | None = None, quick: bool = False,
        repeat: int = 1, host_section: bool = True,
        directions: Sequence[str] | None = None) -> dict[str, Any]:
    """Measure every case of `ops` (all when empty) and `directions` ('forward' rows, the
    operators' gradients in 'backward' rows; both when empty) at each size and dtype on
    `backend` ('numpy', 'emulated' or 'cupy'), `repeat` times over (all rows, then all rows
    again, ...);
    returns the report (header, peers, notes, rows, and with `host_section` the host time per
    call on the emulated device: onnx_cupy.tools.host), each row giving the median and range
    over the runs."""
    if repeat < 1:
        raise ValueError(f"bench: repeat must be >= 1, got {repeat}")
    found, notes = available(backend)
    state = Run(backend, quick, found)
    tasks = [(c, d, size) for c in selected(ops, directions) for size in c.shapes(quick)
             for d in c.dtypes(size)]
    runs: list[list[dict[str, Any]]] = [[] for _ in tasks]
    start = load_average()
    with Progress(repeat * len(tasks)) as bar:
        for n in range(repeat):
            for (case, dtype, size), measured in zip(tasks, runs):
                bar.step(f"run {n + 1}/{repeat}: {case.name} {size} {dtype}")
                measured.append(measure(case, dtype, state, size))
    rows = [merge(measured, state) for measured in runs]
    report: dict[str, Any] = {}
    if host_section:
        report["host"] = host.measure(*((3, 20) if quick else (max(15, 5 * repeat),)))
    described = {**header(backend, quick, (start, load_average())), "repeat": repeat}
    return {"header": described, "peers": [p.name for p in found],
            "peer_settings": {p.name: p.settings for p in found}, "notes": notes,
            "targets": target_summary(rows), "rows": rows, **report}




def write(report: dict[str, Any], out: Path) -> tuple[str, list[Path]]:
    """Write <backend>[-quick].json, .md and .png to `out`; returns the Markdown and the paths."""
    out.mkdir(parents=True, exist_ok=True)
    stem = report["header"]["backend"] + ("-quick" if report["header"]["quick"] else "")
    png = out / f"{stem}.png"
    drawn = plot(report, png)
    text = markdown(report, drawn)
    paths = [out / f"{stem}.json", out / f"{stem}.md"]
    paths[0].write_text(json.dumps(report, indent=1) + "\n")
    paths[1].write_text(text, encoding="utf-8")
    return text, paths + ([png] if drawn == png.name else [])
