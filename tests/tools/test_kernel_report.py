"""The kernel report: ptxas figures and SASS counts of every registered instantiation, its
counting rules checked on purpose-written kernels, the CLI, the static targets of every
registered fast path (float16/bfloat16/float32 storage, 32-bit and 64-bit index, sm_90), and the
families none of whose instantiations uses local memory."""
from __future__ import annotations

import dataclasses
import json
import re
import sys

import pytest

from onnx_cupy.core import launcher, loader, records
from onnx_cupy.hardmax import kernel as hardmax_kernel
from onnx_cupy.pool import kernel as pool_kernel
from onnx_cupy.resize import kernel as resize_kernel
from onnx_cupy.tools import cli, kernel_report

pytestmark = pytest.mark.slow  # NVRTC compiles and disassembles every instantiation

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda.bindings (cuda-python) is not installed")
needs_nvdisasm = pytest.mark.skipif(kernel_report.nvdisasm() is None,
                                    reason=f"{kernel_report.NVDISASM_WHEEL} is not installed")

PROBES = r"""
__global__ void local_array(const float* x, const int* idx, float* y, int n) {
  float a[32];
  for (int i = 0; i < 32; ++i) a[i] = x[i * blockDim.x + threadIdx.x];
  for (int t = 0; t < n; ++t) a[idx[t] & 31] += 1.0f;
  float s = 0.0f;
  for (int i = 0; i < 32; ++i) s += a[i] * (float)i;
  y[threadIdx.x] = s;
}
__global__ void divide(const int* x, int* y, int n) { y[threadIdx.x] = x[threadIdx.x] / n; }
__global__ void scale64(const double* x, double* y, double s) {
  y[threadIdx.x] = x[threadIdx.x] * s;
}
__global__ void copy128(const float4* __restrict__ x, float4* __restrict__ y) {
  y[threadIdx.x] = x[threadIdx.x];
}
__global__ void fast(const float* __restrict__ x, float* __restrict__ y, int n) {
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = 2.0f * x[i];
}
__global__ void slow(const float* __restrict__ x, float* __restrict__ y, int n, int w, int k) {
#pragma unroll 1
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float a[16];
    for (int j = 0; j < 16; ++j) a[j] = x[i % w + j];
    for (int t = 0; t < k; ++t) a[(i + t) & 15] += x[t];
    float s = 0.0f;
    for (int j = 0; j < 16; ++j) s += a[j] * (float)j;
    y[i] = (float)((double)s * 0.1);
  }
}
__global__ void add_f32(float* y, const float* x) {
  atomicAdd(y + (threadIdx.x & 3), x[threadIdx.x]);
}
__global__ void add_f64(double* y, const double* x) {
  double old = atomicAdd(y + (threadIdx.x & 3), x[threadIdx.x]);
  if (old < 0.0) atomicAdd(y + 4, 1.0);
}
__global__ void add_shared(float* y, const float* x) {
  __shared__ float s[4];
  if (threadIdx.x < 4) s[threadIdx.x] = 0.0f;
  __syncthreads();
  atomicAdd(s + (threadIdx.x & 3), x[threadIdx.x]);
  __syncthreads();
  if (threadIdx.x < 4) y[threadIdx.x] = s[threadIdx.x];
}
__global__ void max_int(int* y, const int* x) {
  atomicMax(y + (threadIdx.x & 3), x[threadIdx.x]);
}
"""


@pytest.fixture(scope="module")
def probes() -> dict[str, kernel_report.Kernel]:
    names = ["local_array", "divide", "scale64", "copy128", "fast", "slow", "add_f32", "add_f64",
             "add_shared", "max_int"]
    kernels = kernel_report.compile_kernels(PROBES, names, "sm_90", filename="probes.cu",
                                            outputs={"fast": 1, "slow": 1})
    return {k.expression: k for k in kernels}


# kernels whose loop writes global memory by atomics (RED/ATOM), not STG: MaxUnpool's scatter
ATOMIC_WRITES = {"unpool_scatter"}


@pytest.mark.parametrize("arch", kernel_report.ARCHS)
@pytest.mark.parametrize("family", loader.families())
def test_report_of_every_instantiation(family, arch):
    kernels = kernel_report.family_report(family, arch)
    assert [k.instantiation for k in kernels] == list(loader.instantiations(family))
    assert [k.expression for k in kernels] == [r.expression for r in loader.instantiations(family)]
    assert len({k.name for k in kernels}) == len(kernels)
    for k in kernels:
        assert k.name.startswith("_Z") and k.arch == arch and k.family == family
        assert 0 < k.registers <= 255, k
        assert min(k.stack, k.spill_stores, k.spill_loads, k.shared) >= 0, k
        assert k.block == loader.block_size(k.instantiation) in (launcher.BLOCK, 512), k
        assert k.outputs == k.instantiation.outputs and k.fast == k.instantiation.fast, k
        assert 0 < k.occupancy <= 1, k
        if k.sass is not None:
            s = k.sass
            assert s.loop is not None and 0 < s.loop <= s.instructions, k  # grid-stride loop
            writes = s.loop_stores >= 1 or k.instantiation.template in ATOMIC_WRITES
            assert writes and s.loads and all(n > 0 for _, n in s.loads), k
            assert 0 <= s.loop_divisions <= s.divisions, k
            assert k.per_output == s.loop / k.outputs
    assert kernel_report.family_report(family, arch) is kernels  # compiled once per process


def test_block_size_and_registration():
    first = loader.instantiations()[0]
    assert first.threads is None and loader.block_size(first) == launcher.BLOCK
    assert {loader.block_size(k) for k in loader.instantiations("hardmax")} == {
        launcher.BLOCK, hardmax_kernel.MAX_ROW_GROUP}
    with pytest.raises(ValueError, match="registered twice"):
        loader.register(first.family, [dataclasses.replace(first)])   # another record
    with pytest.raises(ValueError, match="belongs to family"):
        loader.register("resize", [first])


def test_ptxas_figures_of_a_local_array(probes):
    k = probes["local_array"]
    assert k.stack >= 32 * 4 and k.registers > 0
    assert probes["divide"].stack == probes["copy128"].stack == 0


@needs_nvdisasm
def test_sass_counts_on_probes(probes):
    local, div, fp64, wide = (probes[n].sass for n in ("local_array", "divide", "scale64",
                                                          "copy128"))
    assert local.local >= 2 and div.local == fp64.local == wide.local == 0
    assert div.divisions >= 1 and local.divisions == fp64.divisions == wide.divisions == 0
    assert fp64.fp64 >= 1 and div.fp64 == local.fp64 == wide.fp64 == 0
    assert dict(wide.loads) == {128: 1} and dict(fp64.loads) == {64: 1}
    assert dict(div.loads) == {32: 1}
    for s in (div, fp64, wide):  # no loop: every instruction counts
        assert s.loop is None and s.loop_divisions == 0 and s.instructions > 0
    assert probes["divide"].per_output == div.instructions


@needs_nvdisasm
def test_loop_body_counts(probes):
    fast, slow = probes["fast"].sass, probes["slow"].sass
    assert fast.inner_loops == 0 and fast.loop_stores == 1
    assert 0 < fast.loop < fast.instructions and probes["fast"].per_output == fast.loop
    assert slow.loop_divisions >= 1 and slow.loop > fast.loop


@needs_nvdisasm
def test_target_checker(probes):
    assert kernel_report.check(probes["fast"], budget=30) == []
    misses = " | ".join(kernel_report.check(probes["slow"], budget=30))
    for what in ("stack frame", "local-memory ops", "integer divisions in the loop body",
                 "FP64", "instructions per output"):
        assert what in misses, misses
    crowded = dataclasses.replace(probes["fast"], registers=128)  # 4 KiB per warp: 25 %
    assert kernel_report.check(crowded, budget=30) == ["occupancy: 25% < 50%"]
    assert kernel_report.check(probes["fast"], budget=probes["fast"].per_output - 1)


def test_float_atomics_of_probes(probes):
    """Floating-point atomics are counted from the PTX on every state space (a shared one is a
    compare-and-swap loop in SASS), each call site once; integer atomics are not counted."""
    counts = {name: k.float_atomics for name, k in probes.items()}
    assert counts == {"local_array": 0, "divide": 0, "scale64": 0, "copy128": 0, "fast": 0,
                      "slow": 0, "add_f32": 1, "add_f64": 2, "add_shared": 1, "max_int": 0}
    assert "floating-point atomics: 1" in kernel_report.check(probes["add_f32"], None)


def test_float_atomics_in_ptx_text():
    """atom and red on each float type, predicated or not, in the function that holds them or in
    a routine it calls; integer and bit-typed atomics (a compare-and-swap) are not counted."""
    ptx = b"""
.func  (.param .b32 r) helper(.param .b64 p)
{
\tred.global.add.f64 \t[%rd1], %fd1;
\tred.relaxed.gpu.global.add.noftz.bf16x2 \t[%rd1], %r1;
}
.visible .entry kernel_a(.param .u64 a)
{
\t@%p1 atom.global.add.f32 \t%f2, [%rd3], %f1;
\tatom.shared.add.noftz.f16 \t%rs2, [%rd3], %rs1;
\tatom.global.cas.b32 \t%r4, [%rd7], %r3, %r5;
\tcall.uni (retval0), helper, (param0);
}
.visible .entry kernel_b(.param .u64 a)
{
\tatom.global.max.s32 \t%r4, [%rd7], %r3;
\tred.global.add.u64 \t[%rd7], %rd3;
\tst.global.f32 \t[%rd1], %f1;
}
"""
    assert kernel_report.ptx_float_atomics(ptx) == {"helper": 2, "kernel_a": 4, "kernel_b": 0}


@pytest.mark.parametrize("registers,threads,shared,arch,expected", [
    (32, 256, 0, "sm_90", 1.0),
    (64, 256, 0, "sm_90", 0.5),
    (65, 256, 0, "sm_90", 0.375),      # 2304 registers a warp: 28 warps, 3 blocks of 8
    (128, 256, 0, "sm_80", 0.25),
    (16, 32, 0, "sm_90", 0.5),         # 32 blocks of one warp
    (32, 256, 100 * 1024, "sm_90", 0.25),
    (32, 256, 100 * 1024, "sm_80", 0.125),
    (255, 1024, 0, "sm_90", 0.0),      # does not fit
])
def test_occupancy(registers, threads, shared, arch, expected):
    assert kernel_report.occupancy(registers, threads, shared, arch) == expected


def test_held_and_budgets():
    mode = pool_kernel.FastMode.average
    assert pool_kernel.FAST["bfloat16", 32, mode, 2, None].held
    assert pool_kernel.FAST["float32", 64, mode, 2, None].held
    assert not pool_kernel.FAST["float64", 32, mode, 2, None].held
    assert not pool_kernel.GENERIC["float32", 32, 2].held   # generic: not a fast path
    assert pool_kernel.FAST["float32", 32, mode, 2, None].budget == 150
    assert pool_kernel.FAST["float32", 64, mode, 2, None].budget == 225
    assert kernel_report.budgets() == {"grid": 120, "hardmax": 30, "pool": 150, "resize": 43,
                                       "unpool": 30, "roi": 345, "elementwise": 140}


def test_unknown_arch():
    with pytest.raises(ValueError, match="arch 'sm_75'"):
        kernel_report.compile_kernels(PROBES, ["fast"], "sm_75")


FAST_PATHS = [k for k in loader.instantiations() if k.held]


def test_fast_paths_are_held_to_targets():
    """Every family has fast paths under the targets; Resize's budget holds nearest and linear
    on 1-2 axes."""
    held = {f: [k for k in FAST_PATHS if k.family == f] for f in loader.families()}
    assert all(held.values()), {f: len(e) for f, e in held.items()}
    fast = resize_kernel.FAST
    for walk in (resize_kernel.RESIZED, resize_kernel.KEPT):
        assert fast["float32", 2, 2, walk, 32].budget == 43
        assert fast["float32", 3, 2, walk, 32].budget is None
        assert fast["float32", 1, 4, walk, 32].budget is None
        assert fast[4, 3, 1, walk, 32].budget == 43


@needs_nvdisasm
@pytest.mark.parametrize("kernel", FAST_PATHS, ids=lambda k: k.expression)
def test_fast_path_targets(kernel):
    (k,) = [k for k in kernel_report.family_report(kernel.family, "sm_90")
            if k.instantiation is kernel]
    assert kernel_report.check(k, kernel.budget) == [], k


# Families none of whose instantiations (every dtype, index width, rank and window) may use local
# memory: no stack frame, no spills, no LDL/STL.
LOCAL_MEMORY_FREE = ["grid", "hardmax", "pool", "unpool", "roi", "elementwise"]


@pytest.mark.parametrize("arch", kernel_report.ARCHS)
@pytest.mark.parametrize("family", LOCAL_MEMORY_FREE)
def test_no_local_memory(family, arch):
    kernels = kernel_report.family_report(family, arch)
    assert kernels
    using = [k.expression for k in kernels if kernel_report.uses_local_memory(k)]
    assert using == [], using
    if kernel_report.nvdisasm() is not None:
        assert all(k.sass is not None and k.sass.local == 0 for k in kernels)


@pytest.mark.parametrize("arch", kernel_report.ARCHS)
@pytest.mark.parametrize("family", loader.families())
def test_no_floating_point_atomics(family, arch):
    """No instantiation of any family (the gradients' gathers included) adds floating-point
    values by atomics: where contributions meet, a fixed order sums them (docs/design.md)."""
    kernels = kernel_report.family_report(family, arch)
    assert kernels
    using = {k.expression: k.float_atomics for k in kernels if k.float_atomics}
    assert using == {}, using


def test_gradient_kernels_are_reported():
    """The gradients' kernels are registered records of their families, so the report (and the
    checks above) covers every one of their instantiations."""
    templates = {k.template for k in loader.instantiations()}
    assert {"pool_grad", "pool_adaptive_grad", "unpool_grad"} <= templates


@needs_nvdisasm
@pytest.mark.parametrize("family", ["pool"])
def test_wide_fast_paths(family):
    """Every fast path held to the targets with 32-bit offsets has a 64-bit twin, held to
    WIDE_INDEX_BUDGET times the family's budget."""
    held = {key: k for key, k in pool_kernel.FAST.items() if k.held}
    narrow = {key: k for key, k in held.items() if k.index_bits == 32}
    assert narrow
    report = {k.instantiation: k for k in kernel_report.family_report(family, "sm_90")}
    for (dtype, _, *shape), k in narrow.items():
        wide = held[(dtype, 64, *shape)]
        assert [a.name for a in wide.arguments] == [a.name for a in k.arguments]
        assert [a.value for a in wide.arguments if a.name != "index"] == [
            a.value for a in k.arguments if a.name != "index"]
        assert wide.budget == records.WIDE_INDEX_BUDGET * pool_kernel.BUDGET
        assert kernel_report.check(report[wide], wide.budget) == [], report[wide]


def test_cli_table(capsys):
    assert cli.main(["kernels", "--family", "hardmax", "--arch", "sm_90"]) == 0
    out = capsys.readouterr().out
    assert "hardmax (sm_90, block 256, 512)" in out and "pool" not in out
    for k in loader.instantiations("hardmax"):
        assert k.expression in out


def test_cli_json(capsys):
    assert cli.main(["kernels", "--family", "pool", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["arch"], r["expression"]) for r in rows} == {
        (a, k.expression) for a in kernel_report.ARCHS for k in loader.instantiations("pool")}
    assert all(r["registers"] > 0 and 0 < r["occupancy"] <= 1 for r in rows)


def test_cli_without_nvdisasm(no_nvdisasm, capsys):
    assert cli.main(["kernels", "--family", "pool", "--arch", "sm_80"]) == 0
    captured = capsys.readouterr()
    assert f"pip install {kernel_report.NVDISASM_WHEEL}" in captured.err
    assert "pool<float, float, int, 2>" in captured.out


def test_cli_without_nvrtc(monkeypatch, fresh_family_reports, capsys):
    for name in [n for n in sys.modules if n == "cuda" or n.startswith("cuda.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cuda", None)
    # the compiles and the NVRTC binding of this process, kept, would serve it (the binding holds
    # the cuda modules imported before): both are asked for as in a new process
    monkeypatch.setattr(kernel_report, "_compile", kernel_report._compile.__wrapped__)
    monkeypatch.setattr(kernel_report, "_nvrtc", kernel_report._nvrtc.__wrapped__)
    assert cli.main(["kernels", "--family", "pool"]) == 2
    err = capsys.readouterr().err
    assert 'pip install ".[kernels]"' in err and "Traceback" not in err


def _made_up(k, per_output: float, *, arch: str = "sm_90", registers: int = 32,
             stack: int = 0, loop_divisions: int = 0, float_atomics: int = 0
             ) -> kernel_report.Kernel:
    """The registered instantiation `k` as the report would give it, without compiling: one
    output per iteration."""
    sass = kernel_report.Sass(instructions=int(per_output) + 10, loop=int(per_output),
                              inner_loops=0, loop_stores=1, local=0, divisions=loop_divisions,
                              loop_divisions=loop_divisions, fp64=0, loads=((32, 1),))
    return kernel_report.Kernel(k.family, k.expression, arch, "_Z1k", registers, stack, 0, 0, 0,
                                256, 1, k.fast, sass, k, float_atomics)


def _rows(markdown: str) -> dict[tuple[str, ...], dict[str, str]]:
    """Summary table rows by (kernel, offsets) under each table's column names."""
    rows: dict[tuple[str, ...], dict[str, str]] = {}
    head: list[str] = []
    for line in markdown.splitlines():
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == "kernel":
            head = cells
        else:
            rows[tuple(cells[:2])] = dict(zip(head, cells))
    return rows


def test_summary_rows():
    """A row per kernel kind and offset width: instructions per output as min-max per storage
    type over the ranks, the most registers, the least occupancy, local-memory users counted,
    budgets from the records; other architectures left out."""
    generic, fast = pool_kernel.GENERIC, pool_kernel.FAST
    mode = pool_kernel.FastMode
    kernels = [_made_up(generic["float32", 32, 1], 300),
               _made_up(generic["float32", 32, 3], 445, registers=70),
               _made_up(generic["float16", 32, 2], 350),
               _made_up(generic["float32", 64, 2], 869, stack=16, loop_divisions=22,
                        float_atomics=2),
               _made_up(generic["float32", 32, 2], 1, arch="sm_80"),
               _made_up(fast["float32", 32, mode.average, 2, (3, 2)], 51.5),
               _made_up(fast["float64", 64, mode.l2, 2, (3, 2)], 70)]
    text = kernel_report.summary(kernels)
    assert "sm_80" not in text and "(pool: 4 instantiations, ranks 1-3)" in text
    rows = _rows(text)
    assert set(rows) == {("per spatial rank", "32-bit"), ("per spatial rank", "64-bit"),
                         ("2-D, 3x3 s2", "32-bit"), ("2-D, 3x3 s2", "64-bit")}
    narrow, wide = rows["per spatial rank", "32-bit"], rows["per spatial rank", "64-bit"]
    assert (narrow["float32"], narrow["float16"], wide["float32"]) == ("300-445", "350", "869")
    assert "float64" not in narrow and narrow["budget"] == "-"
    assert (narrow["regs"], narrow["occ"], narrow["local"], narrow["loop div"]) == (
        "70", "38%", "0", "0")
    assert (wide["stack"], wide["local"], wide["loop div"]) == ("16", "1", "22")
    fixed, wide_fixed = rows["2-D, 3x3 s2", "32-bit"], rows["2-D, 3x3 s2", "64-bit"]
    assert fixed["budget"] == str(pool_kernel.BUDGET) and fixed["float64"] == "-"
    assert wide_fixed["budget"] == "-" and wide_fixed["float64"] == "70"  # float64: no budget
    assert text.rstrip().endswith("1 of 6 instantiations on sm_90 use local memory (stack "
                                  "frame, spills or LDL/STL).\n1 of 6 instantiations on sm_90 "
                                  "use floating-point atomics.")
    assert (narrow["f-atom"], wide["f-atom"]) == ("0", "1")
    assert kernel_report.summary(kernels, "sm_75") == ""


@needs_nvdisasm
@pytest.mark.parametrize("family", loader.families())
def test_summary_of_every_instantiation(family):
    """The summary of a family's compiled report counts each of its sm_90 instantiations once,
    and sits between its markers in the Markdown report."""
    kernels = kernel_report.family_report(family, "sm_90")
    text = kernel_report.summary(kernels)
    counts = re.findall(rf"\({family}: (\d+) instantiations", text)
    assert sum(map(int, counts)) == len(kernels) > 0
    assert f"of {len(kernels)} instantiations on sm_90" in text
    page = kernel_report.markdown(kernels)
    start, end = (page.index(m) for m in (kernel_report.SUMMARY_START, kernel_report.SUMMARY_END))
    assert text in page[start:end]


@needs_nvdisasm
def test_design_claims():
    """What docs/design.md argues from the summary: a Resize fast path walking the kept axes costs
    no more per output than its twin walking a resized axis (the same outputs per thread), but
    for uint8 linear on 3 axes with 64-bit offsets, and the generic pool with 32-bit offsets
    divides by multiply-shifts only (no division in its loop body)."""
    resize = {k.instantiation: k for k in kernel_report.family_report("resize", "sm_90")}
    fast = resize_kernel.FAST
    twins = [(resize[k], resize[fast[(*shape, resize_kernel.RESIZED, bits)]])
             for (*shape, walk, bits), k in fast.items()
             if walk == resize_kernel.KEPT and (*shape, resize_kernel.RESIZED, bits) in fast]
    assert len(twins) > 50
    assert all(kept.outputs == walked.outputs for kept, walked in twins)
    dearer = [kept.instantiation for kept, walked in twins if kept.per_output > walked.per_output]
    assert dearer == [fast["uint8", 3, 2, resize_kernel.KEPT, 64]], [k.expression for k in dearer]
    generic = [k for k in kernel_report.family_report("pool", "sm_90")
               if k.instantiation.template == "pool" and k.instantiation.index_bits == 32]
    assert generic and all(k.sass.loop_divisions == 0 for k in generic)


@needs_nvdisasm
@pytest.mark.parametrize("family", loader.families())
def test_ieee_options_cost_no_local_memory_and_are_shown(family):
    """The library's IEEE options against those CuPy's RawModule would use: no instantiation
    gains local memory, the PTX holds no flushing instruction where CuPy's route has them, and
    the Markdown report shows the comparison of the family."""
    assert kernel_report.gains_local_memory(family, "sm_90") == []
    change = kernel_report.option_change(family, "sm_90")
    assert change.instantiations == len(loader.instantiations(family))
    assert change.ieee[1] == 0   # PTX .ftz
    assert change.ieee[2] <= change.cupy[2]   # fused multiply-adds: only the source's own
    page = kernel_report.markdown(kernel_report.family_report(family, "sm_90"))
    start, end = (page.index(m) for m in (kernel_report.OPTIONS_START, kernel_report.OPTIONS_END))
    (row,) = [line for line in page[start:end].splitlines() if line.startswith(f"| {family} |")]
    assert f"{change.cupy[1]:,} -> 0" in row
