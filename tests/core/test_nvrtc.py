"""Every registered kernel instantiation compiles under NVRTC, the compiler CuPy uses at run time
(no GPU needed), with CuPy's options, for two architectures."""
from __future__ import annotations

import pytest

import onnx_cupy  # noqa: F401  (importing the package registers every kernel family)
from onnx_cupy.core import loader
from onnx_cupy.tools import kernel_report

pytestmark = pytest.mark.slow  # NVRTC compiles of every kernel instantiation

nvrtc = pytest.importorskip("cuda.bindings.nvrtc",
                            reason="cuda.bindings (cuda-python) is not installed")

OK = nvrtc.nvrtcResult.NVRTC_SUCCESS


def log_of(prog) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(prog)
    assert err == OK, err
    log = b" " * size
    (err,) = nvrtc.nvrtcGetProgramLog(prog, log)
    assert err == OK, err
    return log.decode(errors="replace").rstrip("\x00 \n")


def test_every_kernel_file_is_a_registered_family():
    """Each kernels/<family>.cu registers its instantiations, and each family has its file."""
    files = {p.stem for p in loader.KERNEL_DIR.glob("*.cu")}
    assert set(loader.families()) == files
    assert all(loader.instantiations(f) for f in loader.families())


@pytest.mark.parametrize("arch", kernel_report.ARCHS)
@pytest.mark.parametrize("family", loader.families())
def test_family_compiles(family, arch):
    """To a CUBIN, with CuPy's options (the loader's and -ftz=true); the kernel report reads the
    same compilation (compiled once per process)."""
    lowered, _, cubin = kernel_report.compile_family(family, arch)
    assert list(lowered) == [k.expression for k in loader.instantiations(family)]
    assert all(name.startswith("_Z") for name in lowered.values()), lowered
    assert len(set(lowered.values())) == len(lowered)
    assert cubin[:4] == b"\x7fELF" and all(name.encode() in cubin for name in lowered.values())


def test_hardmax_ranks_without_flush_to_zero():
    """CuPy compiles every kernel with -ftz=true, which flushes float32 subnormals in float
    arithmetic and comparisons (a subnormal would tie with zero). Hardmax must rank floats
    exactly: its PTX has no flushed instruction even under that option."""
    import re

    family = "hardmax"
    err, prog = nvrtc.nvrtcCreateProgram(loader.source(family).encode(), b"hardmax.cu", 0, [], [])
    assert err == OK, err
    try:
        for k in loader.instantiations(family):
            (err,) = nvrtc.nvrtcAddNameExpression(prog, k.expression.encode())
            assert err == OK, (k.expression, err)
        options = [o.encode() for o in (*loader.options(family), "-ftz=true",
                                         "--gpu-architecture=compute_90")]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        assert err == OK, log_of(prog)
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        assert err == OK
        ptx = b" " * size
        (err,) = nvrtc.nvrtcGetPTX(prog, ptx)
        assert err == OK
        flushed = sorted(set(re.findall(r"\b[\w.]*\.ftz[\w.]*", ptx.decode())))
        assert not flushed, flushed
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _one_per_kernel() -> list[tuple[str, str]]:
    """(family, expression): the first registered instantiation of each kernel template."""
    first: dict[tuple[str, str], str] = {}
    for k in loader.instantiations():
        first.setdefault((k.family, k.template), k.expression)
    return [(family, e) for (family, _), e in first.items()]


@pytest.mark.parametrize("family,expression", _one_per_kernel(), ids=lambda v: str(v))
def test_instantiation_compiles_alone(family, expression):
    """As the loader compiles it on a first call: the family's source and options, this one
    name expression."""
    lowered, _, cubin = kernel_report._compile(loader.source(family), (expression,), "sm_90",
                                               f"{family}.cu", loader.options(family))
    assert list(lowered) == [expression] and lowered[expression].startswith("_Z")
    assert cubin[:4] == b"\x7fELF" and lowered[expression].encode() in cubin
