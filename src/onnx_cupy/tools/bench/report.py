"""The report: its header (machine, versions, load), rows merged over repeated runs with their
ranges, the targets, and the table, summary and Markdown the documentation includes."""
from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ... import __version__
from ...core import execution
from .. import host
from .cases import OPSET, UPSAMPLE_OPSET
from .timing import (
    MEMORY_JUDGED_BYTES,
    MEMORY_TARGET,
    MOST_CALLS,
    REPEATS,
    TIMED_SECONDS,
    WARM_SECONDS,
    Run,
)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_header() -> dict[str, Any]:
    cp = execution.cupy_module()
    rt = cp.cuda.runtime
    dev = rt.getDevice()
    props = rt.getDeviceProperties(dev)
    return {"device": props["name"].decode(),
            "compute_capability": f"{props['major']}.{props['minor']}", "cupy": cp.__version__,
            "cuda_runtime": rt.runtimeGetVersion(), "driver": rt.driverGetVersion(),
            "l2_bytes": rt.deviceGetAttribute(rt.cudaDevAttrL2CacheSize, dev)}


def load_average() -> float | None:
    """The 1-minute load average, where the OS reports one (other processes' share of the CPU)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def header(backend: str, quick: bool, load: tuple[float | None, float | None]) -> dict[str, Any]:
    versions: dict[str, str | None] = {"onnx-cupy": __version__,
                                       "python": platform.python_version()}
    for name in ("numpy", "onnx", "onnxruntime", "torch"):   # those this run imported
        module = sys.modules.get(name)
        versions[name] = getattr(module, "__version__", None) if module else None
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "cpu": cpu_name(), "cpu_count": os.cpu_count(),
            "backend": backend, "quick": quick, "opset": OPSET,
            "upsample_opset": UPSAMPLE_OPSET, "versions": versions,
            "load_average": {"start": load[0], "end": load[1]},
            "gpu": _gpu_header() if backend == "cupy" else None}



def _median_and_range(values: Sequence[float]) -> tuple[float, list[float]]:
    return statistics.median(values), [min(values), max(values)]


def merge(measured: Sequence[dict[str, Any]], run: Run) -> dict[str, Any]:
    """One row from the rows of repeated runs of a case: times, throughputs and ratios as their
    median with the range (`*_range`: [min, max]) over the runs, targets judged on the median;
    the largest difference and peak memory; a peer n/a in any run is n/a."""
    first = measured[0]
    row = {**first, "runs": len(measured)}
    for key in ("ms", "ms_alone", "melem_s", "gb_s", "share_of_copy"):
        if key in first:
            row[key], row[f"{key}_range"] = _median_and_range([r[key] for r in measured])
    if "ms_target" in row:
        row["ms_met"] = row["ms_alone"] <= row["ms_target"]
    row["peers"] = {}
    for name, result in first["peers"].items():
        results = [r["peers"][name] for r in measured]
        na = next((res for res in results if "ratio" not in res), None)
        if na is not None:
            row["peers"][name] = na
            continue
        merged = {**result}
        for key in ("ms", "melem_s", "ratio"):
            merged[key], merged[f"{key}_range"] = _median_and_range([r[key] for r in results])
        merged["max_abs_diff"] = max(r["max_abs_diff"] for r in results)
        if "target" in merged:
            merged["met"] = merged["ratio"] >= merged["target"]
        row["peers"][name] = merged
    ort = row["peers"].get("onnxruntime", {})
    row["max_abs_diff_vs_onnxruntime"] = ort.get("max_abs_diff")
    row["correct"] = None if "max_abs_diff" not in ort else "na" not in ort
    if "peak_memory_ratio" in first:
        row["peak_memory_ratio"] = max(r["peak_memory_ratio"] for r in measured)
        if "peak_memory_met" in first:
            row["peak_memory_met"] = row["peak_memory_ratio"] <= MEMORY_TARGET
    return row


def target_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many targets the rows met, and each one missed (peer ratios and peak memory)."""
    checked, missed = 0, []
    for r in rows:
        for name, res in r["peers"].items():
            if "target" in res:
                checked += 1
                if not res["met"]:
                    missed.append(f"{label(r)}: x {name} {_number(res['ratio'])} "
                                  f"< {_number(res['target'])}")
        if "peak_memory_met" in r:
            checked += 1
            if not r["peak_memory_met"]:
                missed.append(f"{label(r)}: peak memory "
                              f"{r['peak_memory_ratio']:.2f} > {MEMORY_TARGET:g}")
        if "ms_met" in r:
            checked += 1
            if not r["ms_met"]:
                missed.append(f"{label(r)}: {r['ms_alone'] * 1e3:.1f} us alone > "
                              f"{r['ms_target'] * 1e3:g} us")
    return {"checked": checked, "met": checked - len(missed), "missed": missed}


def label(r: dict[str, Any]) -> str:
    """A row's name in the list of missed targets: case, size (where not canonical), dtype."""
    size = r.get("size", "canonical")
    return f"{r['case']}{'' if size == 'canonical' else ' ' + size} {r['dtype']}"


def _number(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _with_range(value: float, spread: Sequence[float] | None) -> str:
    """`1.52 (1.48-1.7)`: a median with its range over repeated runs, where they differ."""
    if not spread or spread[0] == spread[1]:
        return _number(value)
    return f"{_number(value)} ({_number(spread[0])}-{_number(spread[1])})"


def _peer_cell(result: dict[str, Any]) -> str:
    if "ratio" not in result:
        return "n/a"
    cell = _with_range(result["ratio"], result.get("ratio_range"))
    if "target" in result:
        cell += f" >={_number(result['target'])} {'ok' if result['met'] else 'MISS'}"
    return cell


def _peer_column(name: str) -> Callable[[dict[str, Any]], str]:
    return lambda r: _peer_cell(r["peers"][name]) if name in r["peers"] else "-"


def _ms_cell(r: dict[str, Any]) -> str:
    """The time in turns; for a tiny row also alone, which its target judges."""
    cell = _with_range(r["ms"], r.get("ms_range"))
    if "ms_target" in r:
        cell += (f", alone {_with_range(r['ms_alone'], r.get('ms_alone_range'))}"
                 f" <={_number(r['ms_target'])} {'ok' if r['ms_met'] else 'MISS'}")
    return cell


def _columns(report: dict[str, Any]) -> list[tuple[str, Callable[[dict[str, Any]], str]]]:
    backend = report["header"]["backend"]
    cols: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("case", lambda r: r["case"]), ("dtype", lambda r: r["dtype"]),
        ("size", lambda r: r.get("size", "canonical")),
        ("shape", lambda r: "x".join(map(str, r["shape"]))),
        ("ms", _ms_cell),
        ("Melem/s", lambda r: _number(r["melem_s"]))]
    cols += [(f"x {name}", _peer_column(name)) for name in report["peers"]]
    cols.append(("max abs diff vs onnxruntime", lambda r: "-" if r["correct"] is None else
                 f"{r['max_abs_diff_vs_onnxruntime']:.1e}{'' if r['correct'] else ' WRONG'}"))
    if backend == "numpy":
        cols.append(("peak mem / (X+Y)", lambda r: f"{r['peak_memory_ratio']:.2f}" + (
            f" <={MEMORY_TARGET:g} {'ok' if r['peak_memory_met'] else 'MISS'}"
            if "peak_memory_met" in r else "")))
    if backend == "cupy":
        cols += [("GB/s", lambda r: _number(r["gb_s"])),
                 ("copy GB/s", lambda r: _number(r["copy_gb_s"])),
                 ("share of copy", lambda r: f"{r['share_of_copy']:.0%}")]
    return cols


# the columns of each of the two tables a page shows (the terminal's one table has them all)
SPEED = ("case", "dtype", "size", "ms", "Melem/s")   # and the peers' ratios
CHECKS = ("case", "dtype", "size", "shape")          # and what is not speed


def table(report: dict[str, Any], part: str | None = None) -> str:
    """The rows as a Markdown table, padded to line up in a terminal: every column, or `part`
    of them, "speed" (times, throughput, the peers' ratios) or "checks" (shapes, agreement with
    onnxruntime, memory, bandwidth), so that each of the two fits a page's width."""
    cols = _columns(report)
    peers = {f"x {name}" for name in report["peers"]}
    if part == "speed":
        cols = [c for c in cols if c[0] in SPEED or c[0] in peers]
    elif part == "checks":
        cols = [c for c in cols if c[0] in CHECKS or c[0] not in (*SPEED, *peers)]
    elif part is not None:
        raise ValueError(f"table: part must be 'speed' or 'checks', got {part!r}")
    cells = [[name for name, _ in cols]] + [[fmt(r) for _, fmt in cols] for r in report["rows"]]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cols))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(line, widths)) + " |" for line in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def summary(report: dict[str, Any]) -> str:
    """The Markdown a page includes: when, where and with what the run measured, the table, the
    targets and how the figures were taken (the full report adds the peers' settings)."""
    h = report["header"]
    versions = ", ".join(f"{k} {v}" for k, v in h["versions"].items() if v)
    quick = " (--quick: reduced shapes and repeats)" if h["quick"] else ""
    repeat = h.get("repeat", 1)
    lines = [f"- date: {h['date']}",
             f"- host: {h['host']}, CPU: {h['cpu']} ({h['cpu_count']} logical cores)",
             (f"- backend: {h['backend']}{quick}, ONNX opset {h['opset']} (Upsample: "
              f"{h.get('upsample_opset', UPSAMPLE_OPSET)})"),
             (f"- 1-minute load average at start / end: {_loads(h['load_average'])} on "
              f"{h['cpu_count']} logical cores (this run counts about 1; more means other "
              "processes shared the CPU)"),
             f"- versions: {versions}"]
    if h.get("note"):
        lines.append(f"- note: {h['note']}")
    busy = [v for v in h["load_average"].values() if v is not None and v > 0.75 * h["cpu_count"]]
    if busy:
        lines.append(f"- the load was high: other processes held about {max(busy) - 1:.1f} of "
                     f"the {h['cpu_count']} cores during the run, so every time (ours and the "
                     "peers', taken in turns) is longer than on an idle machine; see the ranges")
    if h["gpu"]:
        g = h["gpu"]
        lines.append(f"- GPU: {g['device']} (compute capability {g['compute_capability']}, "
                     f"L2 {g['l2_bytes'] // 2**20} MiB), CuPy {g['cupy']}, CUDA runtime "
                     f"{g['cuda_runtime']}, driver {g['driver']}")
    if repeat > 1:
        lines.append(f"- {repeat} runs of every row in one invocation: each time, throughput and "
                     "ratio is the median over the runs, with the range (lowest-highest) in "
                     "parentheses where they differ; targets are judged on the median")
    warmup, repeats = REPEATS["cpu", h["quick"]]
    more = "" if h["quick"] else (
        f" (more where calls are short: as many as fill {WARM_SECONDS * 1e3:g} ms and "
        f"{TIMED_SECONDS * 1e3:g} ms of ours, at most {MOST_CALLS:,} each)")
    lines += ["", table(report, "speed"), "", "Shapes, agreement and memory of the same rows:", "",
              table(report, "checks"), "", _target_line(report["targets"]), "",
              ("Throughput: elements of X and Y per second (a backward row: of dY and dX). "
               "Ours and the peers are called in turns "
               f"(ours, peer, ..., ours, peer, ...), {warmup} warm-up and {repeats} timed calls "
               f"each on the CPU{more}, and each one's median time is taken (on the GPU: CUDA "
               "events, "
               f"{' and '.join(map(str, REPEATS['gpu', h['quick']]))} calls, inputs rotated "
               "through more than the L2 cache). `x PEER`: our throughput over the peer's. "
               "onnx.reference is timed once on the reduced shapes (see JSON), for the canonical "
               "size only. Sizes: canonical (batch 8 for the pools and Resize), batch 1 (Resize: "
               "224x224) and tiny, the last two in float32 only. Targets (float32) are checked "
               "for the NumPy backend (not under --quick): onnxruntime's at every size, "
               "PyTorch's (CPU, 1 thread) at batch 1 and canonical where PyTorch is installed, "
               "onnx.reference's at canonical, a tiny call's time (ours called alone, as many "
               "times: in turns, the peers' calls evict the caches a call of a few "
               "microseconds runs from, and every contender's tiny call takes longer; the cell "
               "shows both times), and the peak memory "
               f"(tracemalloc, the output included) of every row whose X and Y hold at least "
               f"{MEMORY_JUDGED_BYTES // 1024} KiB: tracemalloc also counts a call's Python "
               "objects (its key, views: a few KiB), which the tiny rows' data cannot hold twice "
               "over. A backward row (`<case> backward`, float32, no targets) times the "
               "gradient given the forward's saved output (MaxPool's Indices, LpPool's Y; the "
               "call onnx_cupy.vjp makes after its forward) against PyTorch's backward of the "
               "same call, `torch.autograd.grad` through the graph of its forward, built once "
               "and kept (the PyTorch cell is n/a where the two gradients differ).")]
    if "host" in report:
        hs = report["host"]
        lines += ["", ("Host time per call of the CuPy path, on the emulated device standing "
                       "in for CuPy (onnx_cupy.core.emulated_device, not executing: the "
                       "library's work per call in full; CuPy's allocation and argument packing "
                       "as a Python model of them; no driver launch): median and range over "
                       f"{hs['samples']} samples of "
                       f"{hs['calls_per_sample']} repeated calls each, the rows in turns."), "",
                  host.table(hs)]
    return "\n".join(lines) + "\n"


def markdown(report: dict[str, Any], drawn: str | None = None) -> str:
    """The report as Markdown: title, summary, peers' settings, notes, and the plot: `drawn` is
    its file name or why it was skipped."""
    lines = ["# onnx-cupy benchmark", "", summary(report), "Peers:", *_peer_lines(report)]
    na = [f"{label(r)}, {name}: {res['na']}" for r in report["rows"]
          for name, res in r["peers"].items() if "na" in res]
    notes = report["notes"] + [f"n/a: {line}" for line in na]
    if drawn:
        notes.append(f"plot: {drawn}")
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    if drawn and not drawn.startswith("skipped"):
        lines += ["", f"![ratios]({drawn})"]
    return "\n".join(lines) + "\n"


def _loads(load: dict[str, float | None]) -> str:
    return " / ".join("n/a" if v is None else f"{v:.2f}" for v in (load["start"], load["end"]))


def _target_line(targets: dict[str, Any]) -> str:
    if not targets["checked"]:
        return "Targets: none checked in this run."
    missed = "".join(f"\n- MISSED: {m}" for m in targets["missed"])
    return f"Targets: {targets['met']} of {targets['checked']} met.{missed}"


def _peer_lines(report: dict[str, Any]) -> list[str]:
    """Each peer's settings, and the graphs onnxruntime ran after optimization with their rows."""
    lines = [f"- {name}: " + "; ".join(f"{k}: {v}" for k, v in settings.items())
             for name, settings in report["peer_settings"].items()]
    for name in report["peers"]:
        graphs: dict[str, list[str]] = {}
        for r in report["rows"]:
            if "graph" in r["peers"].get(name, {}):
                graph = " > ".join(r["peers"][name]["graph"])
                graphs.setdefault(graph, []).append(label(r))
        lines += [f"- {name} ran `{g}` for: {', '.join(rows)}" for g, rows in graphs.items()]
    return lines
