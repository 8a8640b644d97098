"""The stand-in cupy's NVRTC (`cuda.nvrtc`, as CuPy's binding `cupy.cuda.nvrtc`): a program
"compiles" into an image naming its kernels, which the stand-in's `cuda.function.Module` loads
and whose functions run the registered instantiations on the emulator. Each compile is recorded
(`CompileRecord`); CuPy's binding's rules hold: str sources, names and options, name expressions
added before the compile and lowered after it, a CUBIN only for an `sm_` architecture."""
from __future__ import annotations

import hashlib
import itertools
import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .standin import StandIn

VERSION = (0, 0)            # the stand-in's NVRTC version (apart from any real one in a cache key)
ARCHITECTURES = (80, 90)    # the architectures it "supports"
MAGIC = b"onnx-cupy stand-in image\n"


class NVRTCError(RuntimeError):
    """What CuPy's binding raises for a failing NVRTC call."""


@dataclass
class CompileRecord:
    """One program compiled by the stand-in's NVRTC: its source, options and name expressions."""

    code: str
    options: tuple[str, ...]
    name_expressions: tuple[str, ...]


@dataclass
class _Program:
    source: str
    name: str
    expressions: list[str]
    arch: str = ""
    compiled: bool = False


def lowered(expression: str) -> str:
    """The stand-in's mangled name of a name expression (NVRTC's is the C++ ABI's)."""
    return "_Zstandin_" + hashlib.sha1(expression.encode()).hexdigest()[:20]


def image_names(data: bytes) -> dict[str, str]:
    """lowered name -> name expression of a stand-in image; ValueError for any other bytes."""
    if not data.startswith(MAGIC):
        raise ValueError("CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid")
    names = json.loads(data[len(MAGIC):])
    return {str(k): str(v) for k, v in names.items()}


class StandInNVRTC:
    """NVRTC for one stand-in: records every compile in `owner.compiles` and sleeps
    `owner.compile_seconds` per compile (NVRTC's cost, where a test wants one)."""

    _handles = itertools.count(1)

    def __init__(self, owner: StandIn) -> None:
        self._owner = owner
        self._programs: dict[int, _Program] = {}

    def getVersion(self) -> tuple[int, int]:
        return VERSION

    def getSupportedArchs(self) -> tuple[int, ...]:
        return ARCHITECTURES

    def createProgram(self, src: str, name: str, headers: Any, include_names: Any) -> int:
        if type(src) is not str or type(name) is not str:
            raise TypeError("stand-in nvrtc: createProgram takes str source and name")
        if len(headers) != len(include_names):
            raise AssertionError("stand-in nvrtc: as many headers as include names")
        handle = next(self._handles)
        self._programs[handle] = _Program(src, name, [])
        return handle

    def _program(self, prog: int) -> _Program:
        try:
            return self._programs[prog]
        except KeyError:
            raise NVRTCError("NVRTC_ERROR_INVALID_PROGRAM (5)") from None

    def addNameExpression(self, prog: int, name: str) -> None:
        program = self._program(prog)
        if type(name) is not str:
            raise TypeError("stand-in nvrtc: a name expression is a str")
        if program.compiled:
            raise NVRTCError("NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION (10)")
        program.expressions.append(name)

    def compileProgram(self, prog: int, options: Any) -> None:
        from . import loader

        program = self._program(prog)
        options = list(options)
        if any(type(o) is not str for o in options):   # CuPy's binding encodes each
            raise TypeError(f"stand-in nvrtc: options are str, got {options!r}")
        archs = [o.split("=", 1)[1] for o in options
                 if o.startswith(("--gpu-architecture=", "-arch="))]
        arch = archs[-1] if archs else "compute_52"
        if int(arch.split("_")[1]) not in ARCHITECTURES:
            raise NVRTCError(f"NVRTC_ERROR_INVALID_OPTION (7): {arch}")
        for e in program.expressions:
            try:
                k = loader.instantiation(e)
            except KeyError:
                raise NVRTCError(f"NVRTC_ERROR_COMPILATION (6): {e} names no template of the "
                                 f"source") from None
            try:
                loader.kernel_parameters(program.source, k.template)
            except ValueError:
                raise NVRTCError(f"NVRTC_ERROR_COMPILATION (6): no __global__ {k.template} in "
                                 f"{program.name}") from None
        owner = self._owner
        owner.note("compile", what=", ".join(program.expressions))
        with owner._record:
            owner.compiles.append(CompileRecord(program.source, tuple(options),
                                                tuple(program.expressions)))
        time.sleep(owner.compile_seconds)
        program.arch, program.compiled = arch, True

    def getLoweredName(self, prog: int, name: str) -> str:
        program = self._program(prog)
        if not program.compiled or name not in program.expressions:
            raise NVRTCError("NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID (9)")
        return lowered(name)

    def getPTX(self, prog: int) -> bytes:
        program = self._program(prog)
        if not program.compiled:
            raise NVRTCError("NVRTC_ERROR_INVALID_INPUT (3)")
        return MAGIC + json.dumps({lowered(e): e for e in program.expressions}).encode()

    def getCUBIN(self, prog: int) -> bytes:
        if not self._program(prog).arch.startswith("sm_"):
            raise RuntimeError("cubin is requested, but the real arch (sm_XX) is not provided")
        return self.getPTX(prog)

    def getProgramLog(self, prog: int) -> str:
        self._program(prog)
        return ""

    def destroyProgram(self, prog: int) -> None:
        self._program(prog)
        del self._programs[prog]
