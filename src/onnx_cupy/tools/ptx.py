"""Counts read from a PTX text (NVRTC's output, so without the disassembler), for the kernel
report (onnx_cupy.tools.kernel_report) and the suite's NVRTC tests: the float arithmetic NVRTC's
-ftz and --fmad options decide, and floating-point atomics per kernel."""
from __future__ import annotations

import re

# an instruction that flushes subnormals: a .ftz modifier on anything but an approximation
# (libdevice's powf and logf take rcp.approx.ftz of range-reduced operands, never subnormal,
# whatever the options; a flushing approximation of the source's own is -ftz=true's or
# fast-math's, which also flush its arithmetic)
PTX_FTZ = re.compile(r"^\s*(?![\w.]*\.approx)[a-z][\w.]*\.ftz\b", re.MULTILINE)
PTX_FMA = re.compile(r"^\s*fma\.rn[\w.]*\s", re.MULTILINE)          # a fused multiply-add


def ptx_counts(ptx: bytes) -> tuple[int, int]:
    """(flushing instructions, fused multiply-adds) of a PTX text: the float arithmetic NVRTC's
    -ftz and --fmad options decide (ptxas may still use flushing or fused instructions inside
    exact sequences of its own, as a division's; those are not counted)."""
    text = ptx.decode(errors="replace")
    return len(PTX_FTZ.findall(text)), len(PTX_FMA.findall(text))


# a PTX function's header: .entry (a kernel) or .func (a routine it calls), and its name
_PTX_FUNCTION = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\s+"
                           r"(?:\([^)]*\)\s*)?([\w$]+)", re.MULTILINE)
# an atomic (atom) or reduction (red) on a floating-point type, any state space or order
PTX_FLOAT_ATOMIC = re.compile(
    r"^\s*(?:@!?%\w+\s+)?(?:atom|red)(?:\.[\w:]+)*?\.(?:f16x2|f16|bf16x2|bf16|f32|f64)\b",
    re.MULTILINE)
_PTX_CALL = re.compile(r"^\s*(?:@!?%\w+\s+)?call(?:\.uni)?\s+(?:\([^)]*\),\s*)?([\w$]+)",
                       re.MULTILINE)


def ptx_float_atomics(ptx: bytes) -> dict[str, int]:
    """Per PTX function (lowered name): its floating-point atomics (atom/red on f16, f16x2,
    bf16, bf16x2, f32 or f64, any state space), the functions it calls counted too."""
    text = ptx.decode(errors="replace")
    heads = list(_PTX_FUNCTION.finditer(text))
    own: dict[str, int] = {}
    calls: dict[str, set[str]] = {}
    for n, head in enumerate(heads):
        body = text[head.end():heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        name = head.group(1)
        own[name] = own.get(name, 0) + len(PTX_FLOAT_ATOMIC.findall(body))
        calls.setdefault(name, set()).update(_PTX_CALL.findall(body))

    def total(name: str, seen: frozenset[str]) -> int:
        return own.get(name, 0) + sum(total(c, seen | {c}) for c in calls.get(name, ())
                                      if c not in seen)

    return {name: total(name, frozenset({name})) for name in own}
