"""Static cost of every kernel instantiation, without a GPU: NVRTC (with the loader's own
options, onnx_cupy.core.cuda_compile) compiles each family once per architecture to CUBIN with
ptxas' verbose report (registers, stack frame, spills, shared memory), and the CUDA
disassembler, where its wheel `nvidia-cuda-nvdisasm` is installed, gives the SASS counts; each
family is also compiled with the options CuPy's RawModule would use, to show what the library's
IEEE options change (`option_change`).

Counting rules (the fast paths are held to them, see `check`):
- per-output instructions = SASS instructions of the grid-stride loop body (from the target of the
  kernel's longest backward branch to that branch, inclusive) / outputs one thread writes per
  iteration; without a backward branch, all the kernel's instructions / outputs. Loops left inside
  that body (`inner_loops`) count once, at their static size.
- an integer division by a runtime value is counted at its quotient estimate, IMAD.HI.U32 q, rcp,
  x, RZ (the reciprocal setup I2F.RP + MUFU.RCP may be hoisted out of the loop, the estimate and
  its corrections stay), or at a call to a routine holding one (a 64-bit division compiles to
  both: a 32-bit fast path and the call); a division by a constant multiplies by an immediate;
  local-memory ops are LDL/STL; FP64 is any D* arithmetic or a conversion to/from F64; global
  loads are LDG, counted per width in bits. Calls count what the called routine holds.
- floating-point atomics are counted in the PTX (NVRTC's, so without the disassembler;
  onnx_cupy.tools.ptx): each atom or red instruction on a floating-point type (f16, f16x2,
  bf16, bf16x2, f32, f64), on any state space, in the kernel's entry and the functions it calls.
  PTX, not SASS, because a float atomic on shared memory compiles to a compare-and-swap loop
  (ATOMS.CAST) with no float type left to see. A float update built by hand from an integer
  compare-and-swap is not counted.
- theoretical occupancy at the launch block size: 65536 registers, 64 warps and 32 blocks per SM,
  registers allocated per warp in units of 256, 1 KiB of shared memory reserved per block.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import glob
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core import cuda_compile, dtypes, extras, loader, numerics
from ..core.cupy_path import Check
from ..core.records import WIDE_INDEX_BUDGET, Instantiation
from .ptx import ptx_counts, ptx_float_atomics

ARCHS = ("sm_80", "sm_90")
MIN_OCCUPANCY = 0.5
SM_LIMITS = {  # registers, warps, blocks, shared memory bytes per SM
    "sm_80": (65536, 64, 32, 164 * 1024),
    "sm_90": (65536, 64, 32, 228 * 1024),
}
NVDISASM_WHEEL = "nvidia-cuda-nvdisasm"
NVRTC_WHEEL = "nvidia-cuda-nvrtc-cu12"


@dataclasses.dataclass(frozen=True)
class Sass:
    """SASS counts of one kernel (its own code; calls count what the called routine holds)."""
    instructions: int          # kernel body, without the routines it calls and the padding
    loop: int | None           # instructions in the grid-stride loop body; None: no loop
    inner_loops: int           # backward branches inside that body (loops not unrolled)
    loop_stores: int           # global stores (STG) in that body
    local: int                 # LDL/STL
    divisions: int             # integer-division sequences
    loop_divisions: int        # ... of them inside the grid-stride loop body
    fp64: int
    loads: tuple[tuple[int, int], ...]  # (LDG width in bits, count), widths ascending


@dataclasses.dataclass(frozen=True)
class Kernel:
    """ptxas' report and the SASS counts of one instantiation on one architecture."""
    family: str
    expression: str
    arch: str
    name: str                  # lowered (mangled) name
    registers: int
    stack: int                 # stack frame bytes
    spill_stores: int
    spill_loads: int
    shared: int                # static shared memory bytes
    block: int                 # threads per block of its launch
    outputs: int               # outputs one thread writes per loop iteration
    fast: bool
    sass: Sass | None          # None where the disassembler is not installed
    instantiation: Instantiation | None = None  # its registered record (None: a probe kernel)
    float_atomics: int = 0     # floating-point atom/red instructions in its PTX

    @property
    def occupancy(self) -> float:
        return occupancy(self.registers, self.block, self.shared, self.arch)

    @property
    def per_output(self) -> float | None:
        if self.sass is None:
            return None
        body = self.sass.instructions if self.sass.loop is None else self.sass.loop
        return body / self.outputs

    def as_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name not in ("sass", "instantiation")}
        d["sass"] = None if self.sass is None else dataclasses.asdict(self.sass)
        if self.sass is not None:
            d["sass"]["loads"] = {str(w): n for w, n in self.sass.loads}
        return {**d, "occupancy": self.occupancy, "per_output": self.per_output}


def occupancy(registers: int, threads: int, shared: int, arch: str) -> float:
    """Theoretical occupancy: resident warps / most warps per SM, for `threads` per block."""
    regs_sm, warps_sm, blocks_sm, shared_sm = SM_LIMITS[arch]
    warps = numerics.cdiv(threads, loader.WARP)
    per_warp = numerics.cdiv(max(registers, 1) * loader.WARP, 256) * 256
    blocks = min(blocks_sm, warps_sm // warps, (regs_sm // per_warp) // warps,
                 shared_sm // (shared + 1024))
    return blocks * warps / warps_sm


# ---------------------------------------------------------------------------------- compiling

@functools.cache
def _nvrtc() -> cuda_compile.BindingsNVRTC:
    """NVRTC through cuda-bindings (no CuPy or GPU needed)."""
    try:
        return cuda_compile.BindingsNVRTC()
    except ImportError as exc:
        raise extras.missing("onnx-cupy kernels", "kernels", exc) from exc
    except RuntimeError as exc:  # cuda.bindings without the NVRTC library
        raise ModuleNotFoundError(
            f"onnx-cupy kernels needs NVRTC ({exc}); install it with: "
            f"{extras.install_hint('kernels', 'nvidia-cuda-nvrtc')}",
            name="nvidia-cuda-nvrtc-cu12") from exc


def nvrtc_version() -> str:
    """NVRTC's version, as "major.minor"."""
    major, minor = _nvrtc().getVersion()
    return f"{major}.{minor}"


def nvdisasm() -> str | None:
    """Path of the CUDA disassembler: the pip wheel's, else one on PATH or under CUDA_PATH."""
    roots = [Path(p) / "nvidia" for p in sys.path if p]
    for root in roots:
        wheels = sorted(glob.glob(str(root / "*" / "bin" / "nvdisasm")))
        if wheels:
            return wheels[-1]
    found = shutil.which("nvdisasm")
    if found is None and os.environ.get("CUDA_PATH"):
        found = shutil.which("nvdisasm", path=str(Path(os.environ["CUDA_PATH"]) / "bin"))
    return found


def toolchain() -> list[Check]:
    """What the report needs, each as found (`onnx-cupy info`): cuda-bindings (NVRTC's Python
    API), NVRTC itself and the disassembler; a missing one is named with what it is for and the
    install of extra `kernels` that brings it. Without the disassembler the report runs, without
    its SASS counts."""
    def hint(only: str) -> str:
        return extras.install_hint("kernels", only)

    found = []
    try:
        from cuda.bindings import nvrtc
    except ImportError:
        found.append(Check("cuda-bindings", "not installed",
                           f"cuda-bindings is not installed (the report calls NVRTC through "
                           f"it): {hint('cuda-bindings')}"))
        try:   # the wheel cuda-bindings would load NVRTC from
            found.append(Check("NVRTC", f"{NVRTC_WHEEL} "
                                        f"{importlib.metadata.version(NVRTC_WHEEL)}"))
        except importlib.metadata.PackageNotFoundError:
            found.append(Check("NVRTC", "not installed", f"NVRTC ({NVRTC_WHEEL}) is not "
                               f"installed (the report compiles with it): {hint(NVRTC_WHEEL)}"))
    else:
        found.append(Check("cuda-bindings", _distribution_version("cuda-bindings")))
        try:
            major, minor = nvrtc.nvrtcVersion()[1:]
            found.append(Check("NVRTC", f"{major}.{minor}"))
        except RuntimeError as exc:   # cuda.bindings without the NVRTC library
            found.append(Check("NVRTC", "not found", f"NVRTC ({NVRTC_WHEEL}) not found (the "
                               f"report compiles with it, and cuda-bindings says: {exc}): "
                               f"{hint(NVRTC_WHEEL)}"))
    path = nvdisasm()
    found.append(Check("nvdisasm", path) if path else Check(
        "nvdisasm", "not installed", f"nvdisasm ({NVDISASM_WHEEL}) is not installed (the SASS "
                                     f"counts need it): {hint(NVDISASM_WHEEL)}"))
    return found


def _distribution_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "version unknown"


@functools.cache
def _compile(source: str, expressions: tuple[str, ...], arch: str, filename: str,
             options: tuple[str, ...]) -> cuda_compile.Image:
    """One NVRTC program compiled for `arch` with `options` (the loader's compile,
    onnx_cupy.core.cuda_compile.compile) and ptxas' verbose report in its log; once per process."""
    return cuda_compile.compile(_nvrtc(), source, expressions, arch,
                            (*options, "--ptxas-options=-v"), filename)


def family_expressions(family: str) -> tuple[str, ...]:
    """The name expressions of every registered instantiation of `family`, in order."""
    return tuple(k.expression for k in loader.instantiations(family))


def compile_family(family: str, arch: str) -> cuda_compile.Image:
    """Every registered instantiation of `family` compiled in one program for `arch` with the
    loader's options (once per process): lowered names, ptxas' log, CUBIN and PTX."""
    return _compile(loader.source(family), family_expressions(family), arch, f"{family}.cu",
                    loader.options(family))


_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def _ptxas(log: str) -> dict[str, dict[str, int]]:
    """Per entry function: registers, stack, spill stores and loads, shared memory."""
    out: dict[str, dict[str, int]] = {}
    entry = subject = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            entry = m.group(1)
            out[entry] = {"registers": 0, "stack": 0, "spill_stores": 0, "spill_loads": 0,
                          "shared": 0}
        elif m := _PROPERTIES.search(line):
            subject = m.group(1)
        elif (m := _FRAME.search(line)) and entry is not None and subject == entry:
            out[entry].update(stack=int(m[1]), spill_stores=int(m[2]), spill_loads=int(m[3]))
        elif (m := _USED.search(line)) and entry is not None:
            out[entry]["registers"] = int(m[1])
            if s := _SMEM.search(line):
                out[entry]["shared"] = int(s[1])
    return out


# ------------------------------------------------------------------------------- SASS counting

_SYMBOL = re.compile(r"^([^\s.][^\s]*):\s*$")
_LABEL = re.compile(r"^(\.L\w+):\s*$")
_INSTRUCTION = re.compile(r"/\*([0-9a-f]+)\*/\s+(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_TARGET = re.compile(r"`\(([^)]+)\)")
_REGISTER = re.compile(r"^R\d+(\.reuse)?$")
_D_OPS = {"DADD", "DMUL", "DFMA", "DSETP", "DSET", "DMNMX", "DMMA"}
_CONVERSIONS = {"F2F", "I2F", "F2I", "FRND"}


@dataclasses.dataclass
class _Instruction:
    address: int
    opcode: str                # with modifiers, e.g. LDG.E.128.CONSTANT
    target: str | None         # branch or call target
    operands: list[str]

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


def _symbols(sass: str) -> tuple[dict[str, list[_Instruction]], dict[str, int]]:
    """Instructions under each symbol (entry functions and the routines they call), and the
    address of each branch label."""
    code: dict[str, list[_Instruction]] = {}
    labels: dict[str, int] = {}
    pending: list[str] = []
    current: list[_Instruction] | None = None
    for line in sass.splitlines():
        if m := _SYMBOL.match(line.strip()):
            current = code.setdefault(m.group(1), [])
        elif m := _LABEL.match(line.strip()):
            pending.append(m.group(1))
        elif (m := _INSTRUCTION.search(line)) and current is not None:
            t = _TARGET.search(m.group(3))
            ins = _Instruction(int(m.group(1), 16), m.group(2), t.group(1) if t else None,
                               [o.strip() for o in m.group(3).split(",")])
            current.append(ins)
            for label in pending:
                labels[label] = ins.address
            pending.clear()
    return code, labels


def _strip_padding(body: list[_Instruction], labels: dict[str, int]) -> list[_Instruction]:
    """Without the trailing NOPs and the branch-to-self that closes the code."""
    body = list(body)
    while body and (body[-1].base == "NOP" or
                    (body[-1].base == "BRA"
                     and labels.get(body[-1].target or "") == body[-1].address)):
        body.pop()
    return body


def _is_division(i: _Instruction) -> bool:
    """The quotient estimate of a division by a runtime divisor: hi(reciprocal * x), no addend."""
    return (i.base == "IMAD" and "HI" in i.opcode.split(".")[1:] and len(i.operands) == 4
            and i.operands[3] == "RZ" and all(map(_REGISTER.match, i.operands[1:3])))


def _is_fp64(i: _Instruction) -> bool:
    mods = i.opcode.split(".")[1:]
    return (i.base in _D_OPS or (i.base in _CONVERSIONS and "F64" in mods)
            or (i.base == "MUFU" and any(m.endswith("64H") for m in mods)))


def _load_width(i: _Instruction) -> int | None:
    if i.base != "LDG":
        return None
    mods = set(i.opcode.split(".")[1:])
    for width, names in ((8, {"U8", "S8"}), (16, {"U16", "S16"}), (64, {"64"}), (128, {"128"})):
        if mods & names:
            return width
    return 32


def _tally(body: list[_Instruction], code: dict[str, list[_Instruction]],
           seen: frozenset[str] = frozenset()) -> collections.Counter[str | tuple[str, int]]:
    """Local ops, divisions, FP64 and load widths of `body`, calls counting their callees."""
    c: collections.Counter[str | tuple[str, int]] = collections.Counter()
    for i in body:
        c["local"] += i.base in ("LDL", "STL")
        c["divisions"] += _is_division(i)
        c["fp64"] += _is_fp64(i)
        if (w := _load_width(i)) is not None:
            c[("load", w)] += 1
        if i.base == "CALL" and i.target in code and i.target not in seen:
            callee = _tally(code[i.target], code, seen | {i.target})
            callee["divisions"] = min(callee["divisions"], 1)
            c.update(callee)
    return c


def _sass_counts(body: list[_Instruction], labels: dict[str, int],
                 code: dict[str, list[_Instruction]]) -> Sass:
    body = _strip_padding(body, labels)
    where = {i.address: n for n, i in enumerate(body)}
    backward = [(n, where[labels[i.target]]) for n, i in enumerate(body)
                if i.base == "BRA" and i.target is not None
                and labels.get(i.target, i.address) < i.address and labels[i.target] in where]
    loop = None
    inner = 0
    loop_body: list[_Instruction] = []
    if backward:
        end, start = max(backward, key=lambda b: b[0] - b[1])
        loop_body = body[start:end + 1]
        loop = len(loop_body)
        inner = sum(1 for n, t in backward if start <= t and n <= end) - 1
    whole, in_loop = _tally(body, code), _tally(loop_body, code)
    return Sass(instructions=len(body), loop=loop, inner_loops=inner,
                loop_stores=sum(i.base == "STG" for i in loop_body), local=whole["local"],
                divisions=whole["divisions"], loop_divisions=in_loop["divisions"],
                fp64=whole["fp64"],
                loads=tuple(sorted((k[1], n) for k, n in whole.items() if isinstance(k, tuple))))


@functools.cache
def _disassemble(cubin: bytes, tool: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "kernels.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([tool, "-c", str(path)], capture_output=True, text=True,
                              check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{tool} failed: {done.stderr.strip()}")
    return done.stdout


# ------------------------------------------------------------------------------------ reports

def compile_kernels(source: str, expressions: Sequence[str], arch: str = "sm_90", *,
                    family: str = "", filename: str = "kernels.cu",
                    blocks: Mapping[str, int] | None = None,
                    outputs: Mapping[str, int] | None = None,
                    options: Sequence[str] | None = None,
                    records: Mapping[str, Instantiation] | None = None) -> list[Kernel]:
    """Compile `source` once for `arch` with every name expression and `options` (default: the
    loader's, with the common defines) and report each kernel: launched with `blocks[e]` threads
    per block (default loader.BLOCK), writing `outputs[e]` outputs per thread and loop
    iteration (default 1; listed ones are fast paths), registered as `records[e]` if given."""
    if arch not in SM_LIMITS:
        raise ValueError(f"kernel report: arch {arch!r} is not one of {', '.join(SM_LIMITS)}")
    options = loader.options() if options is None else options
    image = _compile(source, tuple(expressions), arch, filename, tuple(options))
    names, log, cubin = image.names, image.log, image.data
    ptxas = _ptxas(log)
    tool = nvdisasm()
    code, labels = _symbols(_disassemble(cubin, tool)) if tool else ({}, {})
    outputs = outputs or {}
    atomics = ptx_float_atomics(image.ptx)
    return [Kernel(family=family, expression=e, arch=arch, name=names[e], **ptxas[names[e]],
                   block=(blocks or {}).get(e, loader.BLOCK), outputs=outputs.get(e, 1),
                   fast=e in outputs,
                   sass=_sass_counts(code[names[e]], labels, code) if tool else None,
                   instantiation=(records or {}).get(e), float_atomics=atomics[names[e]])
            for e in expressions]


def cupy_options(family: str) -> tuple[str, ...]:
    """The options `cupy.RawModule(code=...)` would compile `family` with: the loader's defines,
    NVRTC's defaults where the library's IEEE options set them (multiply-adds contracted), and
    the -ftz=true CuPy appends."""
    return (*cuda_compile.LANGUAGE, *loader.define_options(loader.defines(family)),
            *cuda_compile.CUPY_RAWMODULE)


@functools.cache
def family_report(family: str, arch: str = "sm_90", cupy_route: bool = False
                  ) -> tuple[Kernel, ...]:
    """Every registered instantiation of `family` on `arch` (compiled once per process) with the
    loader's options, or (`cupy_route`) with those CuPy's RawModule would use (`cupy_options`)."""
    ks = loader.instantiations(family)
    return tuple(compile_kernels(
        loader.source(family), [k.expression for k in ks], arch, family=family,
        filename=f"{family}.cu", blocks={k.expression: loader.block_size(k) for k in ks},
        outputs={k.expression: k.outputs for k in ks if k.fast},
        options=cupy_options(family) if cupy_route else loader.options(family),
        records={k.expression: k for k in ks}))


@dataclasses.dataclass(frozen=True)
class OptionChange:
    """What the library's IEEE options change in one family on one architecture, against the
    options CuPy's RawModule would use: totals over its instantiations (`ieee`, `cupy`: SASS
    instructions, PTX instructions that flush subnormals, PTX fused multiply-adds, instantiations
    with local memory) and the worst instructions per output of its held fast paths."""

    family: str
    arch: str
    instantiations: int
    ieee: tuple[int, int, int, int]
    cupy: tuple[int, int, int, int]
    per_output: tuple[float | None, float | None]   # (ieee, cupy)


def option_change(family: str, arch: str = "sm_90") -> OptionChange:
    """The family's two compiles compared (`family_report` both ways; needs the disassembler)."""
    def totals(cupy_route: bool) -> tuple[tuple[int, int, int, int], float | None]:
        ks = family_report(family, arch, cupy_route)
        if any(k.sass is None for k in ks):
            raise RuntimeError("kernel report: the option comparison needs the disassembler "
                               f"({extras.install_hint('kernels', NVDISASM_WHEEL)})")
        image = _compile(loader.source(family), family_expressions(family), arch,
                         f"{family}.cu", cupy_options(family) if cupy_route
                         else loader.options(family))
        held = [k.per_output for k in ks if k.instantiation is not None and k.instantiation.held
                and k.per_output is not None]
        return ((sum(k.sass.instructions for k in ks if k.sass), *ptx_counts(image.ptx),
                 sum(map(uses_local_memory, ks))), max(held) if held else None)

    (ieee, worst_ieee), (cupy, worst_cupy) = totals(False), totals(True)
    return OptionChange(family, arch, len(loader.instantiations(family)), ieee, cupy,
                        (worst_ieee, worst_cupy))


def gains_local_memory(family: str, arch: str = "sm_90") -> list[str]:
    """The instantiations of `family` that use local memory with the library's options but not
    with CuPy's (`cupy_options`): none may."""
    cupy = {k.expression: uses_local_memory(k) for k in family_report(family, arch, True)}
    return [k.expression for k in family_report(family, arch)
            if uses_local_memory(k) and not cupy[k.expression]]


def option_table(changes: Sequence[OptionChange]) -> list[str]:
    """The option comparison as Markdown: one row per family, CuPy's route -> the library's."""
    def pair(cupy: float | None, ieee: float | None, digits: int = 0) -> str:
        if cupy is None or ieee is None:
            return "-"
        return f"{cupy:,.{digits}f} -> {ieee:,.{digits}f}"

    rows: list[tuple[str, ...]] = [
        ("family", "instantiations", "SASS instructions", "PTX .ftz", "PTX fma",
         "with local memory", "fast paths' worst per output")]
    for c in changes:
        rows.append((c.family, str(c.instantiations),
                     *(pair(c.cupy[i], c.ieee[i]) for i in range(4)),
                     pair(c.per_output[1], c.per_output[0], 1)))
    return _markdown_table(rows)


def report(families: Sequence[str] | None = None, archs: Sequence[str] | None = None,
           step: Callable[[str], None] | None = None) -> list[Kernel]:
    """Every registered instantiation of `families` (default: all) on `archs` (default: ARCHS),
    architecture by architecture; `step` hears which family compiles next."""
    kernels: list[Kernel] = []
    for arch in archs or ARCHS:
        for family in families or loader.families():
            if step is not None:
                step(f"compiling {family}.cu for {arch} (NVRTC)")
            kernels += family_report(family, arch)
    return kernels


def budgets() -> dict[str, float]:
    """Family -> the instructions per output its fast paths with 32-bit offsets are held to (from
    the records' `budget`s; WIDE_INDEX_BUDGET times it with 64-bit offsets)."""
    found: dict[str, float] = {}
    for k in loader.instantiations():
        if k.held and k.budget is not None and k.index_bits == 32:
            found[k.family] = max(found.get(k.family, 0.0), k.budget)
    return found


def uses_local_memory(kernel: Kernel) -> bool:
    """A stack frame, spills or local-memory instructions (LDL/STL)."""
    return bool(kernel.stack or kernel.spill_stores or kernel.spill_loads
                or (kernel.sass is not None and kernel.sass.local))


def check(kernel: Kernel, budget: float | None) -> list[str]:
    """The static targets a fast path misses (empty: all met): no stack frame, no spills, no
    floating-point atomics, no local-memory ops, no integer division in the loop body, no FP64,
    occupancy >= 50 %, at most `budget` instructions per output (None: not counted)."""
    k, s = kernel, kernel.sass
    misses = [f"{what}: {value}" for what, value, bad in [
        ("stack frame bytes", k.stack, k.stack > 0),
        ("floating-point atomics", k.float_atomics, k.float_atomics > 0),
        ("spill bytes", k.spill_stores + k.spill_loads, k.spill_stores + k.spill_loads > 0),
        ("occupancy", f"{k.occupancy:.0%} < {MIN_OCCUPANCY:.0%}", k.occupancy < MIN_OCCUPANCY),
    ] if bad]
    if s is None:
        return [*misses, f"no SASS counts: install {NVDISASM_WHEEL}"]
    per_output = k.per_output
    misses += [f"{what}: {value}" for what, value, bad in [
        ("local-memory ops (LDL/STL)", s.local, s.local > 0),
        ("integer divisions in the loop body", s.loop_divisions, s.loop_divisions > 0),
        ("FP64 instructions", s.fp64, s.fp64 > 0),
        ("instructions per output", f"{per_output:g} > {budget}",
         budget is not None and per_output is not None and per_output > budget),
    ] if bad]
    return misses


# ------------------------------------------------------------------------------------- output

COLUMNS = ("kernel", "regs", "stack", "spill", "occ", "f-atom", "LDL/STL", "div", "loop div",
           "FP64", "loads", "instr", "loop STG", "per out")


def _row(k: Kernel) -> tuple[str, ...]:
    s = k.sass
    head = (k.expression + (f" [fast x{k.outputs}]" if k.fast else ""), str(k.registers),
            str(k.stack), f"{k.spill_stores}/{k.spill_loads}", f"{k.occupancy:.0%}",
            str(k.float_atomics))
    if s is None:
        return (*head, *["-"] * (len(COLUMNS) - len(head)))
    loads = " ".join(f"{n}x{w}" for w, n in s.loads) or "-"
    per_output = f"{k.per_output:.4g}" + ("*" if s.inner_loops else "")
    return (*head, str(s.local), str(s.divisions), str(s.loop_divisions), str(s.fp64), loads,
            str(s.instructions), str(s.loop_stores), per_output)


def table(kernels: Sequence[Kernel]) -> str:
    """One row per kernel, grouped by family and architecture."""
    lines = []
    groups: dict[tuple[str, str], list[Kernel]] = {}
    for k in kernels:
        groups.setdefault((k.family, k.arch), []).append(k)
    for (family, arch), ks in groups.items():
        rows = [COLUMNS, *map(_row, ks)]
        widths = [max(len(r[c]) for r in rows) for c in range(len(COLUMNS))]
        lines.append(f"{family} ({arch}, block {', '.join(sorted({str(k.block) for k in ks}))})")
        lines += ["  ".join(v.ljust(w) if c == 0 else v.rjust(w)
                            for c, (v, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
        lines.append("")
    local = sum(map(uses_local_memory, kernels))
    lines.append(f"{local} of {len(kernels)} instantiations use local memory (stack frame, spills "
                 f"or LDL/STL)")
    lines.append(f"{sum(k.float_atomics > 0 for k in kernels)} of {len(kernels)} instantiations "
                 f"use floating-point atomics (f-atom: atom/red on a float type in the PTX)")
    if any(k.sass and k.sass.inner_loops for k in kernels):
        lines.append("* the loop body holds loops that are not unrolled: counted once")
    lines.append("loads: count x width in bits; loop STG: global stores in the grid-stride loop "
                 "body; per out: its instructions / registered outputs per iteration")
    return "\n".join(lines)


def _markdown_table(rows: Sequence[Sequence[str]]) -> list[str]:
    head, *body = rows
    return ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|",
            *("| " + " | ".join(r) + " |" for r in body)]


def _versions() -> str:
    """Versions of what the report depends on: NVRTC, the disassembler, onnx-cupy, Python."""
    from .. import __version__

    found = [f"onnx-cupy {__version__}", f"Python {sys.version.split()[0]}"]
    found.append(f"NVRTC {nvrtc_version()}")
    tool = nvdisasm()
    if tool:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False)
        release = re.search(r"release ([\d.]+)|V([\d.]+)", out.stdout)
        found.append(f"nvdisasm {next(g for g in release.groups() if g) if release else '?'}")
    return ", ".join(found)


def markdown(kernels: Sequence[Kernel]) -> str:
    """The report as Markdown for the documentation: when, where and with what it was made
    (lines starting with "- "), the `summary` between SUMMARY_START and SUMMARY_END (for a page
    to include alone), then one table per family and architecture, and what the suite holds the
    fast paths to. Everything but the "- " lines is a function of the kernel sources
    and the compiler alone."""
    import datetime
    import platform

    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    lines = [f"- date: {date}", f"- host: {platform.node()} ({platform.machine()})",
             f"- versions: {_versions()}",
             f"- NVRTC options (each family adds its defines): {' '.join(loader.options())}", ""]
    if brief := summary(kernels):
        lines += [SUMMARY_START, "", brief, SUMMARY_END, ""]
    families = list(dict.fromkeys(k.family for k in kernels if k.arch == SUMMARY_ARCH
                                  and k.sass is not None))
    if families:
        cupy = " ".join(o for o in cupy_options(families[0]) if not o.startswith("-D"))
        lines += [OPTIONS_START, "", f"What the library's options change ({SUMMARY_ARCH}), "
                  f"against those `cupy.RawModule(code=...)` would compile with ({cupy}): "
                  "CuPy's -> the library's, over each family's instantiations. PTX .ftz counts "
                  "the instructions that flush subnormals, PTX fma the multiply-adds NVRTC "
                  "fused (the library's are those the source writes).", "",
                  *option_table([option_change(f, SUMMARY_ARCH) for f in families]), "",
                  OPTIONS_END, ""]
    lines += ["The full report:", ""]
    groups: dict[tuple[str, str], list[Kernel]] = {}
    for k in kernels:
        groups.setdefault((k.family, k.arch), []).append(k)
    for (family, arch), ks in groups.items():
        blocks = ", ".join(sorted({str(k.block) for k in ks}))
        rows = [COLUMNS, *(((f"`{r[0]}`"), *r[1:]) for r in map(_row, ks))]
        lines += [f"**{family}** ({arch}, block {blocks})", "", *_markdown_table(rows), ""]
    local = sum(map(uses_local_memory, kernels))
    lines.append(f"{local} of {len(kernels)} instantiations use local memory (stack frame, spills "
                 "or LDL/STL).")
    lines.append(f"{sum(k.float_atomics > 0 for k in kernels)} of {len(kernels)} instantiations "
                 "use floating-point atomics (f-atom: atom/red on a float type in the PTX).")
    if any(k.sass and k.sass.inner_loops for k in kernels):
        lines.append("`*`: the loop body holds loops that are not unrolled, counted once.")
    held = ", ".join(f"{family} {n:g}" for family, n in budgets().items())
    lines += ["", ("f-atom: floating-point atomics (atom/red on f16, bf16, f32 or f64 in the "
                   "PTX: a sum whose order the hardware picks); "
                   "loads: count x width in bits; loop STG: global stores in the grid-stride loop "
                   "body; per out: its instructions / registered outputs per iteration. Fast "
                   "paths (`[fast xN]`: N outputs per thread and iteration) with float16, "
                   "bfloat16 or float32 storage are held, on sm_90, to: no stack frame, spills or "
                   "LDL/STL, no integer division in the loop body, no FP64, occupancy >= "
                   f"{MIN_OCCUPANCY:.0%}, and instructions per output within the family's budget "
                   f"({held}; {WIDE_INDEX_BUDGET:g}x with 64-bit offsets; Resize: nearest, "
                   "and linear on 1-2 axes). Every instantiation is held to no floating-point "
                   "atomics.")]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------ summary

SUMMARY_ARCH = "sm_90"   # the architecture the fast paths are held to their targets on
SUMMARY_START = "<!-- summary: start -->"
SUMMARY_END = "<!-- summary: end -->"
OPTIONS_START = "<!-- options: start -->"
OPTIONS_END = "<!-- options: end -->"
INTEGERS = "integers"


def _storage(k: Instantiation) -> str:
    """A summary column: the dtype of a float storage type, the size of a moved element
    (Resize nearest), or "integers"."""
    value = k["storage"]
    if isinstance(value, int):
        return f"{value} B"
    return str(value) if value in dtypes.FLOAT_TYPES else INTEGERS


def _storage_order(column: str) -> tuple[int, int]:
    """Summary columns in order: float16, bfloat16, float32, float64, integers, then element
    sizes ascending."""
    names = [*dtypes.FLOAT_TYPES, INTEGERS]
    return (0, names.index(column)) if column in names else (1, int(column.split()[0]))


def _span(values: Sequence[int]) -> str:
    """Sorted integers with runs of 3 or more shortened: "1-5, 16"."""
    runs: list[list[int]] = []
    for n in sorted(set(values)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a + 1 else (f"{a}, {b}" if b > a else str(a))
                     for a, b in runs)


def _range(values: Sequence[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.4g}" if lo == hi else f"{lo:.4g}-{hi:.4g}"


def summary(kernels: Sequence[Kernel], arch: str = SUMMARY_ARCH) -> str:
    """The report on `arch` in a few rows, as Markdown: one table per kernel template, a row per
    kind (a generic kernel's ranks, a fast path's shape) and offset width, with instructions per
    output (min-max) per storage type, the most registers, the least occupancy, the largest
    stack frame, how many instantiations use local memory and how many floating-point atomics,
    the most integer divisions in a loop body, and the budget a float16/bfloat16/float32 fast
    path is held to (`budget`). Empty without SASS counts or kernels on `arch`."""
    chosen = [k for k in kernels if k.arch == arch and k.sass is not None
              and k.instantiation is not None]
    if not chosen:
        return ""
    tables: dict[tuple[str, str], dict[tuple[str, str], list[Kernel]]] = {}
    for k in chosen:
        r = _record(k)
        index = f"{r.index_bits}-bit"
        tables.setdefault((k.family, r.template), {}).setdefault(
            (r.variant, index), []).append(k)
    lines = [(f"Kernel report summary, {arch}: instructions per output (min-max over the "
             "instantiations of a row) by storage type; regs: most registers; occ: least "
             "occupancy; stack: largest stack frame (bytes); local: instantiations with a stack "
             "frame, spills or LDL/STL; f-atom: instantiations with floating-point atomics; "
             "loop div: most integer divisions in a loop body; budget: "
             "instructions per output the float16/bfloat16/float32 fast paths are held to "
             "(each instantiation's registered budget, `WIDE_INDEX_BUDGET` times the family's "
             "with 64-bit offsets). "
             "`*`: the loop body holds loops with runtime bounds, counted once."), ""]
    for (family, name), rows in tables.items():
        storages = sorted({_storage(_record(k)) for ks in rows.values() for k in ks},
                          key=_storage_order)
        spans = [r.rank for ks in rows.values() for k in ks if (r := _record(k)).rank is not None]
        head = ["kernel", "offsets", *storages, "regs", "occ", "stack", "local", "f-atom",
                "loop div", "budget"]
        body = []
        for (kind, index), ks in rows.items():
            cells = []
            for storage in storages:
                of = [k for k in ks if _storage(_record(k)) == storage]
                per = [k.per_output for k in of if k.per_output is not None]
                star = "*" if any(k.sass and k.sass.inner_loops for k in of) else ""
                cells.append(_range(per) + star if per else "-")
            held = {_record(k).budget for k in ks if _record(k).held}
            body.append((
                kind or name, index, *cells, str(max(k.registers for k in ks)),
                f"{min(k.occupancy for k in ks):.0%}", str(max(k.stack for k in ks)),
                str(sum(map(uses_local_memory, ks))), str(sum(k.float_atomics > 0 for k in ks)),
                str(max(k.sass.loop_divisions for k in ks if k.sass)),
                ", ".join(f"{b:g}" for b in sorted(b for b in held if b is not None)) or "-"))
        count = sum(len(ks) for ks in rows.values())
        what = f", ranks {_span(spans)}" if spans else ""
        lines += [f"**`{name}`** ({family}: {count} instantiations{what})", "",
                  *_markdown_table([head, *body]), ""]
    local = sum(map(uses_local_memory, chosen))
    lines.append(f"{local} of {len(chosen)} instantiations on {arch} use local memory (stack "
                 "frame, spills or LDL/STL).")
    lines.append(f"{sum(k.float_atomics > 0 for k in chosen)} of {len(chosen)} instantiations "
                 f"on {arch} use floating-point atomics.")
    return "\n".join(lines) + "\n"


def _record(k: Kernel) -> Instantiation:
    """The registered record of a family's kernel (the summary reads only those)."""
    if k.instantiation is None:
        raise ValueError(f"{k.expression}: not a registered instantiation")
    return k.instantiation
