"""The emulated device's NVRTC (`cuda.nvrtc`, as CuPy's binding `cupy.cuda.nvrtc`): a program
"compiles" into an image naming its kernels, which the device's `cuda.function.Module` loads and
whose functions run the registered instantiations on the emulator. CuPy's binding's rules hold:
str sources, names and options, name expressions added before the compile and lowered after it,
a CUBIN only for an `sm_` architecture; a name expression that names no template of the source
fails the compile."""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import loader

if TYPE_CHECKING:
    from .emulated_device import EmulatedDevice

# its version (part of an image's cache key: its images never meet a real NVRTC's, nor those
# of an older image format), and the architectures it "supports"
VERSION = (0, 1)
ARCHITECTURES = (80, 90)
MAGIC = b"onnx-cupy emulated image\n"


class NVRTCError(RuntimeError):
    """What CuPy's binding raises for a failing NVRTC call."""


@dataclass
class Program:
    """A program: its source and name, the name expressions added, the architecture it was
    compiled for (once compiled)."""

    source: str
    name: str
    expressions: list[str]
    arch: str = ""
    compiled: bool = False


def lowered(expression: str) -> str:
    """The emulated NVRTC's mangled name of a name expression (NVRTC's is the C++ ABI's)."""
    return "_Zemulated_" + hashlib.sha1(expression.encode()).hexdigest()[:20]


def image_names(data: bytes) -> dict[str, str]:
    """lowered name -> name expression of an emulated image; ValueError for any other bytes."""
    if not data.startswith(MAGIC):
        raise ValueError("CUDA_ERROR_INVALID_IMAGE: device kernel image is invalid")
    names = json.loads(data[len(MAGIC):])
    return {str(k): str(v) for k, v in names.items()}


class NVRTC:
    """NVRTC of one device object (`owner`), which notes each compile (`note("compile")`)."""

    _handles = itertools.count(1)

    def __init__(self, owner: EmulatedDevice) -> None:
        self.owner = owner
        self._programs: dict[int, Program] = {}

    def getVersion(self) -> tuple[int, int]:
        return VERSION

    def getSupportedArchs(self) -> tuple[int, ...]:
        return ARCHITECTURES

    def createProgram(self, src: str, name: str, headers: Any, include_names: Any) -> int:
        if type(src) is not str or type(name) is not str:
            raise TypeError("emulated nvrtc: createProgram takes str source and name")
        if len(headers) != len(include_names):
            raise AssertionError("emulated nvrtc: as many headers as include names")
        handle = next(self._handles)
        self._programs[handle] = Program(src, name, [])
        return handle

    def program(self, prog: int) -> Program:
        """The program of handle `prog` (NVRTCError for a handle it does not hold)."""
        try:
            return self._programs[prog]
        except KeyError:
            raise NVRTCError("NVRTC_ERROR_INVALID_PROGRAM (5)") from None

    def addNameExpression(self, prog: int, name: str) -> None:
        program = self.program(prog)
        if type(name) is not str:
            raise TypeError("emulated nvrtc: a name expression is a str")
        if program.compiled:
            raise NVRTCError("NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION (10)")
        program.expressions.append(name)

    def compileProgram(self, prog: int, options: Any) -> None:
        program = self.program(prog)
        options = list(options)
        if any(type(o) is not str for o in options):   # CuPy's binding encodes each
            raise TypeError(f"emulated nvrtc: options are str, got {options!r}")
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
        self.owner.note("compile", what=", ".join(program.expressions))
        program.arch, program.compiled = arch, True

    def getLoweredName(self, prog: int, name: str) -> str:
        program = self.program(prog)
        if not program.compiled or name not in program.expressions:
            raise NVRTCError("NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID (9)")
        return lowered(name)

    def getPTX(self, prog: int) -> bytes:
        program = self.program(prog)
        if not program.compiled:
            raise NVRTCError("NVRTC_ERROR_INVALID_INPUT (3)")
        return MAGIC + json.dumps({lowered(e): e for e in program.expressions}).encode()

    def getCUBIN(self, prog: int) -> bytes:
        if not self.program(prog).arch.startswith("sm_"):
            raise RuntimeError("cubin is requested, but the real arch (sm_XX) is not provided")
        return self.getPTX(prog)

    def getProgramLog(self, prog: int) -> str:
        self.program(prog)
        return ""

    def destroyProgram(self, prog: int) -> None:
        self.program(prog)
        del self._programs[prog]
