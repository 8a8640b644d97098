"""The `onnx-cupy` command line: `info`, `conformance`, `bench`, `kernels`, `warmup` and
`gallery`, `check-kernels`."""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import TYPE_CHECKING

from .. import __version__
from ..core import cupy_path, execution, extras, loader, warmup
from ..interop.nodes import RUNNERS
from . import bench, gallery, kernel_report
from .progress import Progress

if TYPE_CHECKING:
    from . import conformance


def _info(_: argparse.Namespace) -> int:
    print(f"onnx-cupy {__version__} (Python {platform.python_version()})")
    print(f"default backend: {execution.default_backend()}")
    print(f"kernels: {loader.KERNEL_DIR}")
    print(f"operators: {', '.join(sorted(RUNNERS))}")
    print(f"emulated path: {_host_compiler()}")
    print("\n".join(_cupy_path()))
    print("\n".join(_kernel_report()))
    return 0


def _cupy_path() -> list[str]:
    """Whether the cupy path can run (and why not), then what it needs, each as found: CuPy,
    the GPU (with its device and CUDA versions where one is usable), NVRTC as CuPy loads it,
    the CUDA headers."""
    reason = execution.cupy_unusable()
    lines = [f"cupy path: {'usable' if reason is None else 'NOT usable: ' + reason}"]
    cp = execution.cupy_module()
    if cp is None:   # the reason says how to install CuPy
        return lines
    checks = cupy_path.checks(cp)
    lines += [f"  {c.what}: {c.found}" for c in checks]
    gpu = next(c for c in checks if c.what == "GPU")
    if gpu.problem is None and isinstance(cp, types.ModuleType):   # not the emulated device
        rt = cp.cuda.runtime
        props = rt.getDeviceProperties(rt.getDevice())
        lines += [f"  device {rt.getDevice()}: {props['name'].decode()} (compute capability "
                  f"{props['major']}.{props['minor']}), CUDA runtime {rt.runtimeGetVersion()}, "
                  f"driver {rt.driverGetVersion()}"]
    return lines


def _host_compiler() -> str:
    """Whether the emulated path can build its kernels: the platform, the host C++ compiler it
    would use, and the state of its precompiled shim header."""
    from ..core import emulator

    try:
        execution.check_emulated_platform()
        return (f"available ({emulator.compiler_version()}; precompiled shim header: "
                f"{emulator.shim_status()})")
    except RuntimeError as exc:
        return f"unavailable: {exc}"


def _kernel_report() -> list[str]:
    """Whether `onnx-cupy kernels` can compile, and with SASS counts, then what it needs, each
    as found: cuda-bindings, NVRTC, the disassembler (a missing one with its install)."""
    checks = kernel_report.toolchain()
    found = {c.what: c for c in checks}
    sass = found["nvdisasm"].problem   # without it the report runs, without SASS counts
    if any(c.problem is not None for c in checks if c.what != "nvdisasm"):
        verdict = f"unavailable: {'; '.join(c.problem for c in checks if c.problem)}"
    else:
        verdict = (f"available (NVRTC {found['NVRTC'].found}, "
                   f"{'with SASS counts' if sass is None else 'without SASS counts: ' + sass})")
    return [f"kernel report: {verdict}", *(f"  {c.what}: {c.found}" for c in checks)]


def _cupy_refused(command: str, backend: str) -> bool:
    """Whether `backend` is cupy and cannot run here; if so, says why on one line of stderr."""
    reason = execution.cupy_unusable() if backend == "cupy" else None
    if reason is not None:
        print(f"{command}: backend 'cupy' cannot run here: {reason}", file=sys.stderr)
    return reason is not None


def _conformance(args: argparse.Namespace) -> int:
    backend = execution.default_backend() if args.backend == "auto" else args.backend
    if _cupy_refused("conformance", backend):
        return 2
    try:
        from . import conformance  # onnx: only this command needs it

        results = conformance.run(backend, args.op)
    except ModuleNotFoundError as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    print(_conformance_table(results, backend, args.op or sorted(RUNNERS)))
    return 0 if all(r.passed for r in results) else 1


def _conformance_table(results: list[conformance.CaseResult], backend: str,
                       ops: list[str]) -> str:
    """Each case's result, then passed/total per operator (an operator without a node test in
    the installed onnx says so) and over all, in aligned columns."""
    import onnx

    op_width = max(len("operator"), *map(len, ops))
    width = max((len(r.name) for r in results), default=len("test"))
    lines = [f"ONNX node tests on backend '{backend}'",
             f"{'operator':<{op_width}} {'test':<{width}} result"]
    lines += [f"{r.op:<{op_width}} {r.name:<{width}} "
              f"{'pass' if r.passed else 'FAIL  ' + r.detail}" for r in results]
    lines += ["", f"{'operator':<{op_width}} passed/total"]
    for op in sorted(set(ops)):
        mine = [r for r in results if r.op == op]
        lines.append(f"{op:<{op_width}} {sum(r.passed for r in mine)}/{len(mine)}" if mine else
                     f"{op:<{op_width}} no node test in onnx {onnx.__version__}")
    lines.append(f"{'all':<{op_width}} {sum(r.passed for r in results)}/{len(results)}")
    return "\n".join(lines)


def _write(path: str, text: str) -> None:
    """Write a generated page fragment (its parent folders created) and say where."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")


def _bench(args: argparse.Namespace) -> int:
    backend = execution.default_backend() if args.backend == "auto" else args.backend
    if not args.from_json and _cupy_refused("bench", backend):
        return 2
    if backend == "emulated" and not args.quick and not args.from_json:
        print("bench: backend 'emulated' runs the CUDA kernels serially on the CPU; "
              "use it with --quick", file=sys.stderr)
        return 2
    if not args.from_json and not bench.selected(args.op, args.direction):
        print(f"bench: no case of {', '.join(args.op)} has a {' or '.join(args.direction)} "
              f"row (backward rows: {', '.join(bench.cases.GRADIENT_OPS)})", file=sys.stderr)
        return 2
    if args.from_json:   # the figures of an earlier run, written again
        report = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
    else:
        report = bench.run(backend, args.op, args.quick, args.repeat, not args.no_host,
                           args.direction)
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
              f"{kernel_report.NVDISASM_WHEEL} (or {extras.install_hint('kernels')})",
              file=sys.stderr)
    return 0


def _gallery(args: argparse.Namespace) -> int:
    try:
        paths = gallery.render(args.out, args.picture)
    except ModuleNotFoundError as exc:
        print(f"gallery: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {len(paths) - 1} pictures and their page, {paths[-1]}, to {args.out}")
    return 0


def _check_kernels(args: argparse.Namespace) -> int:
    from . import check_kernels

    try:   # the test suite's configurations (they draw bfloat16: ml_dtypes too)
        cases = check_kernels.catalogue()
    except ModuleNotFoundError as exc:
        print(f"check-kernels: {exc}", file=sys.stderr)
        return 2
    command = "onnx-cupy check-kernels " + " ".join(args.argv)
    with Progress(len(cases.cases(args.op, args.quick))) as bar:
        result = check_kernels.run(args.op, args.quick, bar.step,
                                   lambda line: print(line, flush=True), args.jobs)
    print(f"{sum(t.configurations for t in result.tallies.values())} configurations, "
          f"{result.instantiations} kernel instantiations, {result.seconds:.0f} s")
    print(check_kernels.table(result))
    if args.markdown:
        _write(args.markdown, check_kernels.markdown(result, command))
    print(result.last_line())
    return 1 if result.total().errors else 0


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

    backend = args.backend or "cupy"
    reason = execution.cupy_unusable() if backend == "cupy" else None
    if reason is not None:
        raise RuntimeError(f"warmup: backend 'cupy' cannot run here: {reason} (--backend "
                           f"emulated warms the emulated path, --dry-run measures the CuPy "
                           f"path's compiles with NVRTC)")
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


def parser() -> argparse.ArgumentParser:
    """The command line's parser: every command and option."""
    parser = argparse.ArgumentParser(prog="onnx-cupy", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="version, default backend, kernel location, and what each "
                                "path and the kernel report can use here (or why not)")
    conf = sub.add_parser("conformance",
                          help="run ONNX's node test cases for the supported operators")
    conf.add_argument("--backend", choices=["auto", *execution.BACKENDS], default="auto",
                      help="auto = cupy where it can run (onnx-cupy info says), numpy "
                           "otherwise")
    conf.add_argument("--op", action="append", choices=sorted(RUNNERS),
                      help="limit to this operator (repeatable)")
    ben = sub.add_parser("bench", help="throughput against onnxruntime, PyTorch and "
                                       "onnx.reference: Markdown, JSON and PNG reports")
    ben.add_argument("--op", action="append", choices=bench.OPS,
                     help="limit to this operator (repeatable)")
    ben.add_argument("--direction", action="append", choices=bench.DIRECTIONS,
                     help="limit to the operators' rows (forward) or their gradients' "
                          "(backward; pools and MaxUnpool) (repeatable; default both)")
    ben.add_argument("--backend", choices=["auto", *execution.BACKENDS], default="auto",
                     help="auto = cupy where it can run (onnx-cupy info says), numpy "
                          "otherwise; emulated needs --quick")
    ben.add_argument("--quick", action="store_true", help="small shapes and few repeats (seconds)")
    ben.add_argument("--out", metavar="DIR",
                     help="directory for the reports (default: a new temporary folder)")
    ben.add_argument("--repeat", type=_positive, default=1, metavar="N",
                     help="run every row N times over: medians with their range (default 1)")
    ben.add_argument("--markdown", metavar="FILE",
                     help="also write the summary and table as Markdown for the docs to include")
    ben.add_argument("--note", help="a line for the report's header (e.g. how the machine was "
                                    "shared)")
    ben.add_argument("--from-json", metavar="FILE",
                     help="measure nothing: write the reports (and --markdown) again from the "
                          "JSON report of an earlier run, e.g. after a change to their layout")
    ben.add_argument("--no-host", action="store_true",
                     help="leave out the host section (host time per call of the CuPy path, "
                          "measured on the emulated device, without a GPU)")
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
                      help="the path to warm: cupy (NVRTC's images, ONNX_CUPY_CACHE/nvrtc) or "
                           "emulated (ONNX_CUPY_CACHE/emulator); default cupy")
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
    gal = sub.add_parser("gallery", help="draw the documentation's pictures of what the "
                                         "operators do (PNG, with matplotlib)")
    gal.add_argument("--out", metavar="DIR", required=True,
                     help="directory for the pictures and gallery.md, the page showing them")
    gal.add_argument("--picture", action="append", choices=[p.name for p in gallery.PICTURES],
                     help="draw only this picture (repeatable)")
    check = sub.add_parser(
        "check-kernels", help="run every family's randomized configurations on the emulated "
                              "path under the kernel checker (no GPU needed)",
        description="Run the randomized differential configurations of every operator family "
                    "on the emulated path in checking mode (the kernels the package loads, "
                    "compiled with every access and barrier checked, as compute-sanitizer's "
                    "memcheck, racecheck, initcheck and synccheck would on a GPU), each on the "
                    "host's grid and again with its grid-stride axes narrowed to one block. "
                    "Prints each error, a table per operator and, last, 'checked: L launches, "
                    "A accesses, E errors'; exits with 1 if E > 0. Without this command, "
                    "ONNX_CUPY_CHECK=1 checks every emulated launch of a process.")
    check.add_argument("--quick", action="store_true",
                       help="a representative subset (every few configurations of each family)")
    check.add_argument("--op", action="append", choices=_case_operators(),
                       help="limit to this operator (repeatable): its ONNX name, or "
                            "AdaptiveAveragePool (adaptive_avg_pool1d/2d/3d and "
                            "interpolate(mode='area')) and AdaptiveMaxPool "
                            "(adaptive_max_pool1d/2d/3d) for PyTorch's adaptive pooling; "
                            "Resize includes the nearest-rounding configurations, Upsample "
                            "runs on the Resize kernels")
    check.add_argument("--jobs", type=_positive, help="checked libraries compiled at a time "
                                                      "(default: the CPU count)")
    check.add_argument("--markdown", metavar="FILE",
                       help="also write the figures as Markdown for the docs to include")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)[1:]
    return {"info": _info, "conformance": _conformance, "bench": _bench,
            "kernels": _kernels, "warmup": _warmup, "gallery": _gallery,
            "check-kernels": _check_kernels}[args.command](args)


def _case_operators() -> list[str] | None:
    """The operators check-kernels has configurations of, where the test suite's catalogue is
    found (None: any name; the command then says where the catalogue lives)."""
    from .check_kernels import catalogue

    try:
        operators: list[str] = catalogue().operators()
    except ModuleNotFoundError:
        return None
    return operators


if __name__ == "__main__":
    sys.exit(main())
