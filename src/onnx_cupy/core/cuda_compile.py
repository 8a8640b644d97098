"""The kernels' NVRTC compiles, with the library's own options, and their cache.

CuPy's `RawModule(code=...)` appends `-ftz=true` after the caller's options (NVRTC's last
`-ftz` wins), and NVRTC contracts `a * b + c` into fused multiply-adds unless told not to. The
library therefore compiles with NVRTC itself, with OPTIONS (IEEE arithmetic: no flush-to-zero,
no contraction the source does not write, IEEE division and square root: what the NumPy path and
the host compiler of the emulated path compute), and has CuPy load the result
(`cupy.cuda.function.Module`). The same `compile` serves the loader (through CuPy's NVRTC
binding, `cupy.cuda.nvrtc`) and the kernel report (through cuda-bindings' `BindingsNVRTC`,
which needs no CuPy).

A compiled image is cached in memory and on disk (`cache_folder()`, under ONNX_CUPY_CACHE),
keyed by the source, the options, the name expression, NVRTC's version and the target
architecture, so that a later process (after `onnx-cupy warmup`, say) compiles nothing, on every
CuPy release: CuPy's own cache plays no part.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

# IEEE float arithmetic on the GPU, as on the CPU: subnormals kept, no multiply-add contracted
# but those the source writes (fma), correctly rounded division and square root. Explicit, so
# that no default (NVRTC's --fmad=true) decides.
IEEE = ("--ftz=false", "--prec-div=true", "--prec-sqrt=true", "--fmad=false")
LANGUAGE = ("-std=c++17",)   # the dialect the kernels are written in
OPTIONS: tuple[str, ...] = (*LANGUAGE, *IEEE)
# What CuPy's RawModule(code=) would add to the same options: the kernel report compiles with
# these too, to show what the library's options change.
CUPY_RAWMODULE = ("-ftz=true",)
CACHE_FORMAT = 1   # the disk cache's entry layout; a new layout misses every older entry


class NVRTC(Protocol):
    """The NVRTC functions `compile` calls, as CuPy's binding (`cupy.cuda.nvrtc`) names them."""

    def getVersion(self) -> tuple[int, int]: ...
    def getSupportedArchs(self) -> tuple[int, ...]: ...
    def createProgram(self, src: str, name: str, headers: Sequence[bytes],
                      include_names: Sequence[bytes]) -> Any: ...
    def addNameExpression(self, prog: Any, name: str) -> None: ...
    def compileProgram(self, prog: Any, options: Sequence[str]) -> None: ...
    def getLoweredName(self, prog: Any, name: str) -> str: ...
    def getPTX(self, prog: Any) -> bytes: ...
    def getCUBIN(self, prog: Any) -> bytes: ...
    def getProgramLog(self, prog: Any) -> str: ...
    def destroyProgram(self, prog: Any) -> None: ...


@dataclasses.dataclass(frozen=True)
class Image:
    """A compiled program: `data` (a CUBIN for an `sm_` architecture, PTX for a `compute_` one),
    the lowered (mangled) name of each name expression, NVRTC's log, and its PTX."""

    arch: str
    data: bytes
    names: dict[str, str]
    log: str = ""
    ptx: bytes = b""

    @property
    def kind(self) -> str:
        return "cubin" if self.arch.startswith("sm_") else "ptx"


class CompileError(RuntimeError):
    """NVRTC refused a program; the message holds its log."""


def compile(nvrtc: NVRTC, source: str, expressions: Sequence[str], arch: str,
            options: Sequence[str] = OPTIONS, filename: str = "kernels.cu") -> Image:
    """Compile `source` with NVRTC for `arch` (`sm_XY`: a CUBIN; `compute_XY`: PTX, which the
    driver compiles for its GPU), instantiating the name `expressions`, with `options` (the
    library's OPTIONS and defines; `--gpu-architecture` is added here)."""
    prog = nvrtc.createProgram(source, filename, [], [])
    try:
        for e in expressions:
            nvrtc.addNameExpression(prog, e)
        try:
            nvrtc.compileProgram(prog, [*options, f"--gpu-architecture={arch}"])
        except Exception as exc:   # NVRTCError: the log says why
            raise CompileError(f"NVRTC could not compile {filename} for {arch} ({exc}):\n"
                               f"{nvrtc.getProgramLog(prog)}") from exc
        names = {e: nvrtc.getLoweredName(prog, e) for e in expressions}
        ptx = nvrtc.getPTX(prog)
        data = nvrtc.getCUBIN(prog) if arch.startswith("sm_") else ptx
        return Image(arch, data, names, nvrtc.getProgramLog(prog), ptx)
    finally:
        nvrtc.destroyProgram(prog)


def target(capability: int, supported: Sequence[int]) -> str:
    """The architecture to compile for a GPU of compute `capability` (e.g. 90): its own CUBIN
    where NVRTC knows it, else PTX of the newest architecture NVRTC knows below it (the driver
    compiles that for the GPU). ValueError where NVRTC knows none at or below it."""
    if capability in supported:
        return f"sm_{capability}"
    older = [a for a in supported if a <= capability]
    if not older:
        raise ValueError(f"NVRTC supports no architecture at or below compute capability "
                         f"{capability} (it supports {', '.join(map(str, supported))})")
    return f"compute_{max(older)}"


def cache_root() -> Path:
    """The library's cache folder: ONNX_CUPY_CACHE, else onnx-cupy under XDG_CACHE_HOME (default
    ~/.cache). Compiled kernels go to its subfolders: nvrtc/ (`cache_folder`), emulator/ (the
    host compiler's libraries, onnx_cupy.core.emulator)."""
    root = os.environ.get("ONNX_CUPY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "onnx-cupy")
    return Path(root)


def cache_folder() -> Path:
    """Where compiled images are kept: cache_root()/nvrtc."""
    return cache_root() / "nvrtc"


_images: dict[str, Image] = {}   # this process's images by cache key
_lock = threading.Lock()


def cached(nvrtc: NVRTC, source: str, expression: str, arch: str,
           options: Sequence[str] = OPTIONS, filename: str = "kernels.cu") -> Image:
    """The image of one name expression, compiled on first need in any process: from memory,
    else from the disk cache, else compiled (`compile`) and written there (atomically: a
    concurrent process never reads a partial entry)."""
    version = tuple(nvrtc.getVersion())
    key = hashlib.sha256("\0".join([
        str(CACHE_FORMAT), source, *options, expression, f"nvrtc {version}", arch,
    ]).encode()).hexdigest()[:32]
    image = _images.get(key)
    if image is not None:
        return image
    path = cache_folder() / f"{key}.{'cubin' if arch.startswith('sm_') else 'ptx'}"
    image = _read(path, arch)
    if image is None or expression not in image.names:
        image = compile(nvrtc, source, [expression], arch, options, filename)
        _write(path, image)
    with _lock:
        return _images.setdefault(key, image)


def _read(path: Path, arch: str) -> Image | None:
    """The entry at `path` (a JSON line of the lowered names, then the image), or None where
    there is none or it cannot be read."""
    try:
        raw = path.read_bytes()
        head, data = raw.split(b"\n", 1)
        names = json.loads(head)
    except (OSError, ValueError):
        return None
    if not isinstance(names, dict) or not data:
        return None
    return Image(arch, data, {str(k): str(v) for k, v in names.items()})


def _write(path: Path, image: Image) -> None:
    """Write `image`'s entry to `path` (nothing where the folder cannot be written: the
    process keeps the image in memory)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(json.dumps(image.names).encode() + b"\n" + image.data)
        os.replace(tmp, path)   # atomic: readers see the whole entry or none
    except OSError:
        return


class BindingsNVRTC:
    """cuda-bindings' NVRTC (`cuda.bindings.nvrtc`, no CuPy needed) with the function names and
    conventions of CuPy's binding: values returned, errors raised (RuntimeError)."""

    def __init__(self) -> None:
        from cuda.bindings import nvrtc

        self._n = nvrtc
        self.getVersion()   # RuntimeError where the NVRTC library cannot be loaded

    def _ok(self, result: tuple[Any, ...], what: str) -> Any:
        if result[0] != self._n.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"{what}: {result[0]}")
        rest = result[1:]
        return rest[0] if len(rest) == 1 else rest

    def getVersion(self) -> tuple[int, int]:
        major, minor = self._ok(self._n.nvrtcVersion(), "nvrtcVersion")
        return int(major), int(minor)

    def getSupportedArchs(self) -> tuple[int, ...]:
        return tuple(int(a) for a in self._ok(self._n.nvrtcGetSupportedArchs(),
                                              "nvrtcGetSupportedArchs"))

    def createProgram(self, src: str, name: str, headers: Sequence[bytes],
                      include_names: Sequence[bytes]) -> Any:
        return self._ok(self._n.nvrtcCreateProgram(src.encode(), name.encode(), len(headers),
                                                   list(headers), list(include_names)),
                        "nvrtcCreateProgram")

    def addNameExpression(self, prog: Any, name: str) -> None:
        self._ok(self._n.nvrtcAddNameExpression(prog, name.encode()), name)

    def compileProgram(self, prog: Any, options: Sequence[str]) -> None:
        flags = [o.encode() for o in options]
        self._ok(self._n.nvrtcCompileProgram(prog, len(flags), flags), "nvrtcCompileProgram")

    def getLoweredName(self, prog: Any, name: str) -> str:
        return str(self._ok(self._n.nvrtcGetLoweredName(prog, name.encode()), name).decode())

    def _buffer(self, prog: Any, size_of: Any, get: Any, what: str, text: bool = True
                ) -> bytes:
        size = self._ok(size_of(prog), what)
        buffer = bytearray(size)   # written in place: never a bytes object, which may be shared
        self._ok(get(prog, buffer), what)   # (b" " * 1 is the interpreter's own b" ")
        return bytes(buffer.rstrip(b"\0") if text else buffer)   # text: no trailing NUL

    def getPTX(self, prog: Any) -> bytes:
        return self._buffer(prog, self._n.nvrtcGetPTXSize, self._n.nvrtcGetPTX, "PTX")

    def getCUBIN(self, prog: Any) -> bytes:
        return self._buffer(prog, self._n.nvrtcGetCUBINSize, self._n.nvrtcGetCUBIN, "CUBIN",
                            text=False)

    def getProgramLog(self, prog: Any) -> str:
        log = self._buffer(prog, self._n.nvrtcGetProgramLogSize, self._n.nvrtcGetProgramLog,
                           "log")
        return log.decode(errors="replace").rstrip("\x00 \n")

    def destroyProgram(self, prog: Any) -> None:
        self._n.nvrtcDestroyProgram(prog)
