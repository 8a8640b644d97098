"""The `onnx-cupy` command line: `info`, `conformance`, `bench` and `kernels`."""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

from .. import __version__
from ..core import execution, loader
from ..interop.nodes import RUNNERS
from . import bench, kernel_report
from .progress import Progress


def _info(_: argparse.Namespace) -> int:
    print(f"onnx-cupy {__version__} (Python {platform.python_version()})")
    print(f"default backend: {execution.default_backend()}")
    print(f"kernels: {loader.KERNEL_DIR}")
    print(f"operators: {', '.join(sorted(RUNNERS))}")
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
    report = bench.run(backend, args.op, args.quick, args.repeat)
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
    ker = sub.add_parser("kernels", help="static cost of every kernel instantiation (NVRTC, "
                                         "ptxas and SASS counts; no GPU needed)")
    ker.add_argument("--family", action="append", choices=loader.families(),
                     help="limit to this kernel family (repeatable)")
    ker.add_argument("--arch", action="append", choices=kernel_report.ARCHS,
                     help="limit to this architecture (repeatable; default: sm_80 and sm_90)")
    ker.add_argument("--json", action="store_true", help="JSON instead of a table")
    ker.add_argument("--markdown", metavar="FILE",
                     help="also write the report as Markdown tables for the docs to include")
    args = parser.parse_args(argv)
    return {"info": _info, "conformance": _conformance, "bench": _bench,
            "kernels": _kernels}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
