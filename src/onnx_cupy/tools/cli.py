"""The `onnx-cupy` command line: `info`, `conformance`, `bench`, `kernels` and `warmup`."""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from .. import __version__
from ..core import execution, loader, warmup
from ..interop.nodes import RUNNERS
from . import bench, kernel_report
from .progress import Progress


def _info(_: argparse.Namespace) -> int:
    from ..core import emulator  # the emulated path's state (building nothing)

    print(f"onnx-cupy {__version__} (Python {platform.python_version()})")
    print(f"default backend: {execution.default_backend()}")
    print(f"kernels: {loader.KERNEL_DIR}")
    print(f"operators: {', '.join(sorted(RUNNERS))}")
    try:  # the emulated path: its compiler and precompiled shim header
        execution.check_emulated_platform()
        print(f"emulated path: {emulator.compiler_version()}; precompiled shim header: "
              f"{emulator.shim_status()}")
    except RuntimeError as exc:
        print(f"emulated path: unavailable ({exc})")
    cp = execution.cupy_module()
    if cp is None:
        print("cupy: not installed")
        return 0
    print(f"cupy: {cp.__version__}")
    if execution.gpu_available():
        rt = cp.cuda.runtime
        props = rt.getDeviceProperties(rt.getDevice())
        print(f"CUDA runtime {rt.runtimeGetVersion()}, driver {rt.driverGetVersion()}")
        print(f"device {rt.getDevice()}: {props['name'].decode()} "
              f"(compute capability {props['major']}.{props['minor']})")
    else:
        print("GPU: none visible")
    return 0


def _conformance(args: argparse.Namespace) -> int:
    from . import conformance  # onnx: only this command needs it

    backend = execution.default_backend() if args.backend == "auto" else args.backend
    if backend == "cupy" and not execution.gpu_available():
        print("conformance: backend 'cupy' needs a visible GPU", file=sys.stderr)
        return 2
    try:
        results = conformance.run(backend, args.op)
    except ModuleNotFoundError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    width = max((len(r.name) for r in results), default=10)
    print(f"ONNX node tests on backend '{backend}'")
    print(f"{'operator':<12} {'test':<{width}} result")
    for r in results:
        print(f"{r.op:<12} {r.name:<{width}} {'pass' if r.passed else 'FAIL  ' + r.detail}")
    print()
    print(f"{'operator':<12} passed/total")
    for op in sorted({r.op for r in results}):
        mine = [r for r in results if r.op == op]
        print(f"{op:<12} {sum(r.passed for r in mine)}/{len(mine)}")
    passed = sum(r.passed for r in results)
    print(f"{'all':<12} {passed}/{len(results)}")
    return 0 if results and passed == len(results) else 1


def _write(path: str, text: str) -> None:
    """Write a generated page fragment (its parent folders created) and say where."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")


def _bench(args: argparse.Namespace) -> int:
    backend = execution.default_backend() if args.backend == "auto" else args.backend
    if backend == "cupy" and not execution.gpu_available():
        print("bench: backend 'cupy' needs a visible GPU (none is visible; use --backend numpy)",
              file=sys.stderr)
        return 2
    if backend == "emulated" and not args.quick:
        print("bench: backend 'emulated' runs the CUDA kernels serially on the CPU; "
              "use it with --quick", file=sys.stderr)
        return 2
    report = bench.run(backend, args.op, args.quick, args.repeat, not args.no_host)
    if args.note:
        report["header"]["note"] = args.note
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="onnx-cupy-bench-"))
    text, paths = bench.write(report, out)
    print(text)
    where = "" if args.out else " (a new temporary folder; --out DIR writes elsewhere)"
    print(f"wrote {', '.join(map(str, paths))}{where}")
    if args.markdown:
        _write(args.markdown, bench.summary(report))
    wrong = [f"{r['case']} {r['dtype']}" for r in report["rows"] if r["correct"] is False]
    if wrong:
        print(f"bench: outputs differ from onnxruntime: {'; '.join(wrong)}", file=sys.stderr)
    return 1 if wrong else 0


def _kernels(args: argparse.Namespace) -> int:
    families = args.family or loader.families()
    archs = args.arch or kernel_report.ARCHS
    try:
        with Progress(len(archs) * len(families)) as bar:
            kernels = kernel_report.report(families, archs, bar.step)
        page = kernel_report.markdown(kernels) if args.markdown else None
    except ModuleNotFoundError as exc:
        print(f"kernels: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([k.as_dict() for k in kernels], indent=1))
    else:
        print(kernel_report.table(kernels))
    if page is not None:
        _write(args.markdown, page)
    if kernel_report.nvdisasm() is None:
        print(f"kernels: no SASS counts: they need the CUDA disassembler, pip install "
              f'{kernel_report.NVDISASM_WHEEL} (or pip install "onnx-cupy[kernels]")',
              file=sys.stderr)
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _warmup(args: argparse.Namespace) -> int:
    from . import first_call  # NVRTC and the tables: only this command needs them

    load_start = first_call.load()
    try:
        kernels = warmup.instantiations(args.op, args.dtype)
        measured = _time_nvrtc(args, kernels) if args.dry_run else _warm(args, kernels)
    except (ValueError, RuntimeError, ModuleNotFoundError) as exc:
        print(exc if str(exc).startswith("warmup:") else f"warmup: {exc}", file=sys.stderr)
        return 2
    command = "onnx-cupy warmup " + " ".join(args.argv)
    title, kernels, compiler, before, target, fresh = measured
    text = first_call.report(title, kernels, compiler, before, command=command,
                             load_start=load_start, listing=args.list, target=target, fresh=fresh)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        print(f"wrote {args.out}")
    return 0


# (title, kernels with their seconds, compiler, whole families' seconds, the target of a first
# call's slowest instantiation, fresh-process first calls)
Measured = tuple[str, list[warmup.Warmed], str, dict[str, list[float]] | None,
                 float | None, dict[str, list[tuple[float, float]]] | None]


def _time_nvrtc(args: argparse.Namespace, kernels: list[warmup.Warmed]) -> Measured:
    """--dry-run: NVRTC's seconds, judged against the NVRTC target."""
    from . import first_call

    kernels = first_call.measure(kernels, args.arch, args.repeat)
    before = (first_call.measure_families(sorted({k.family for k in kernels}), args.arch,
                                          args.repeat) if args.before else None)
    title = ("NVRTC seconds per instantiation, each compiled alone as a first call compiles it "
             f"(the fastest of {args.repeat})")
    return (title, kernels, f"{first_call.nvrtc_version()} for {args.arch}", before,
            first_call.NVRTC_TARGET, None)


def _warm(args: argparse.Namespace, kernels: list[warmup.Warmed]) -> Measured:
    """The warm-up of --backend; on the emulated path with --before, also the whole families'
    builds and the first call of each operator in a fresh process with an empty cache."""
    from . import first_call

    backend = args.backend or ("cupy" if execution.gpu_available() else None)
    if backend is None:
        raise RuntimeError("warmup: no GPU is visible: --backend emulated warms the emulated "
                           "path, --dry-run measures the CuPy path's compiles with NVRTC")
    if args.before and backend != "emulated":
        raise ValueError("warmup: --before needs --dry-run or --backend emulated")
    start, compiler, shim = time.perf_counter(), f"backend {backend}", ""
    if backend == "emulated":
        from ..core import emulator

        compiler = f"{emulator.compiler_version()}, {' '.join(emulator.CXX_FLAGS)}"
        emulator.shim_header(wait=True)
        shim = f", {time.perf_counter() - start:.1f} s of it precompiling the shim header"
    kernels = warmup.warmup(args.op, args.dtype, backend, jobs=args.jobs)
    title = (f"Warm-up of the {backend} path: seconds per instantiation (compile or cache load), "
             f"{len(kernels)} in {time.perf_counter() - start:.1f} s with "
             f"{args.jobs or os.cpu_count()} at a time{shim}")
    before = fresh = None
    if args.before:
        before = first_call.measure_libraries(sorted({k.family for k in kernels}), args.repeat)
        fresh = first_call.measure_fresh(args.repeat)
    return title, kernels, compiler, before, None, fresh


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="onnx-cupy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="version, default backend, CuPy/CUDA/device, kernel location")
    conf = sub.add_parser("conformance", help="run ONNX's node test cases for the supported operators")
    conf.add_argument("--backend", choices=["auto", *execution.BACKENDS], default="auto",
                      help="auto = cupy if a GPU is visible, numpy otherwise")
    conf.add_argument("--op", action="append", choices=sorted(RUNNERS),
                      help="limit to this operator (repeatable)")
    ben = sub.add_parser("bench", help="throughput against onnxruntime, PyTorch and "
                                       "onnx.reference: Markdown, JSON and PNG reports")
    ben.add_argument("--op", action="append", choices=bench.OPS,
                     help="limit to this operator (repeatable)")
    ben.add_argument("--backend", choices=["auto", *execution.BACKENDS], default="auto",
                     help="auto = cupy if a GPU is visible, numpy otherwise; "
                          "emulated needs --quick")
    ben.add_argument("--quick", action="store_true", help="small shapes and few repeats (seconds)")
    ben.add_argument("--out", metavar="DIR",
                     help="directory for the reports (default: a new temporary folder)")
    ben.add_argument("--repeat", type=_positive, default=1, metavar="N",
                     help="run every row N times over: medians with their range (default 1)")
    ben.add_argument("--markdown", metavar="FILE",
                     help="also write the summary and table as Markdown for the docs to include")
    ben.add_argument("--note", help="a line for the report's header (e.g. how the machine was "
                                    "shared)")
    ben.add_argument("--no-host", action="store_true",
                     help="leave out the host section (host time per call of the CuPy path, "
                          "measured on the stand-in for CuPy)")
    ker = sub.add_parser("kernels", help="static cost of every kernel instantiation (NVRTC, "
                                         "ptxas and SASS counts; no GPU needed)")
    ker.add_argument("--family", action="append", choices=loader.families(),
                     help="limit to this kernel family (repeatable)")
    ker.add_argument("--arch", action="append", choices=kernel_report.ARCHS,
                     help="limit to this architecture (repeatable; default: sm_80 and sm_90)")
    ker.add_argument("--json", action="store_true", help="JSON instead of a table")
    ker.add_argument("--markdown", metavar="FILE",
                     help="also write the report as Markdown tables for the docs to include")
    warm = sub.add_parser("warmup", help="compile ahead of time the kernels that first calls "
                                         "compile (--dry-run: time them with NVRTC, no GPU)")
    warm.add_argument("--op", action="append", choices=warmup.operators(),
                      help="limit to this operator (repeatable)")
    warm.add_argument("--dtype", action="append", choices=warmup.dtype_names(),
                      help="limit to this input dtype (repeatable)")
    warm.add_argument("--backend", choices=["cupy", "emulated"],
                      help="the path to warm: cupy (CuPy's cache, CUPY_CACHE_DIR) or emulated "
                           "(ONNX_CUPY_CACHE); default cupy where a GPU is visible")
    warm.add_argument("--dry-run", action="store_true",
                      help="compile nothing for a device: time each instantiation with NVRTC")
    warm.add_argument("--before", action="store_true",
                      help="with --dry-run or --backend emulated: also time each family "
                           "compiled whole, in one module or library (emulated: and each "
                           "operator's first call in a fresh process, empty cache)")
    warm.add_argument("--arch", choices=kernel_report.ARCHS, default=kernel_report.ARCHS[-1],
                      help="with --dry-run: the architecture NVRTC compiles for")
    warm.add_argument("--repeat", type=_positive, default=1,
                      help="with --dry-run or --before: compiles (and fresh-process first "
                           "calls) per measurement (the fastest is kept)")
    warm.add_argument("--jobs", type=_positive, help="instantiations compiled at a time "
                                               "(default: the CPU count)")
    warm.add_argument("--list", action="store_true", help="also list every instantiation")
    warm.add_argument("--out", metavar="FILE", help="also write the tables as Markdown")
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)[1:]
    return {"info": _info, "conformance": _conformance, "bench": _bench,
            "kernels": _kernels, "warmup": _warmup}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
