"""Every registered kernel instantiation compiles under NVRTC (no GPU needed) as the CuPy path
compiles it (onnx_cupy.core.cuda_compile with the loader's options), for two architectures, to
IEEE arithmetic: no instruction that flushes subnormals, no multiply-add the source does not
write. The whole-family compiles are slow (the kernel report reads the same ones); one
instantiation per kernel template runs in the quick suite."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import fake_cupy

import onnx_cupy  # noqa: F401  (importing the package registers every kernel family)
from onnx_cupy.core import cuda_compile, loader
from onnx_cupy.tools import kernel_report

pytest.importorskip("cuda.bindings.nvrtc", reason="cuda.bindings (cuda-python) is not installed")


def _last(options: tuple[str, ...], name: str) -> str | None:
    """The value NVRTC takes for option `name` (its last occurrence wins): '--fmad=false' and
    '-fmad=false' both set fmad."""
    values = [o.split("=", 1)[1] for o in options if o.lstrip("-").split("=")[0] == name]
    return values[-1] if values else None


@pytest.mark.parametrize("family", loader.families())
def test_options_are_ieee(family):
    """What the loader hands NVRTC sets IEEE arithmetic and nothing after undoes it: so the
    compile equals one with --fmad=false --ftz=false appended."""
    options = loader.options(family)
    assert _last(options, "fmad") == "false" and _last(options, "ftz") == "false"
    assert _last(options, "prec-div") == "true" and _last(options, "prec-sqrt") == "true"
    assert not any("fast_math" in o or o.startswith(("--ftz=t", "-ftz=t")) for o in options)


def _representatives() -> dict[str, tuple[str, ...]]:
    """Family -> one name expression per kernel template, float32 storage where it has one (the
    arithmetic -ftz and contraction change), else its first."""
    chosen: dict[tuple[str, str], str] = {}
    for k in loader.instantiations():
        if k.dtypes == ("float32",):
            chosen.setdefault((k.family, k.template), k.expression)
    for k in loader.instantiations():
        chosen.setdefault((k.family, k.template), k.expression)
    out: dict[str, list[str]] = {}
    for (family, _), expression in chosen.items():
        out.setdefault(family, []).append(expression)
    return {f: tuple(es) for f, es in out.items()}


REPRESENTATIVES = _representatives()


@pytest.fixture(scope="module")
def nvrtc():
    return kernel_report._nvrtc()


@pytest.mark.parametrize("family", sorted(REPRESENTATIVES))
def test_one_instantiation_per_template_compiles_ieee(nvrtc, family):
    """One instantiation per kernel template, compiled as the loader compiles it (PTX for
    compute_90): no .ftz instruction, and as many fused multiply-adds as with --fmad=false
    appended (only those the source writes); CuPy's RawModule options would flush (the check
    sees a flush where there is one) and contract at least as many."""
    expressions = REPRESENTATIVES[family]
    source = loader.source(family)

    def ptx(options):
        image = cuda_compile.compile(nvrtc, source, expressions, "compute_90", options,
                                     f"{family}.cu")
        assert set(image.names) == set(expressions)
        assert all(image.names[e].encode() in image.ptx for e in expressions)
        return kernel_report.ptx_counts(image.ptx)

    ours = ptx(loader.options(family))
    assert ours[0] == 0, f"{family}: {ours[0]} flushing PTX instructions"
    assert ptx((*loader.options(family), "--fmad=false")) == ours
    cupy = ptx(kernel_report.cupy_options(family))
    assert cupy[1] >= ours[1]
    if family in ("elementwise", "grid", "pool", "resize", "roi"):   # float32 arithmetic
        assert cupy[0] > 0, f"{family}: CuPy's route shows no .ftz: the check would see none"


GRADIENT_TEMPLATES = {"pool": {"pool_grad", "pool_adaptive_grad"}, "unpool": {"unpool_grad"},
                      "resize": {"resize_grad"}}


def test_gradient_kernels_are_compiled():
    """The gradients' kernels are registered with their families, so the quick compile above
    takes one instantiation of each of their templates and the family compiles below take every
    one of them (every dtype, offset width, rank and index space)."""
    for family, templates in GRADIENT_TEMPLATES.items():
        chosen = {loader.instantiation(e).template for e in REPRESENTATIVES[family]}
        assert templates <= chosen, (family, chosen)
        registered = [k for k in loader.instantiations(family) if k.template in templates]
        assert {k.template for k in registered} == templates
        assert all(k.dtypes[0] in ("float16", "bfloat16", "float32", "float64")
                   for k in registered), registered


def test_contraction_is_what_the_options_stop(nvrtc):
    """The multiply-add of AffineGrid (acc + row * v) that NVRTC fuses by default is not fused
    under the loader's options: the check above could fail."""
    k = next(k for k in loader.instantiations("grid")
             if k.template == "affine_grid" and k.dtypes == ("float32",))
    counts = {}
    for route, options in (("ours", loader.options("grid")),
                           ("cupy", kernel_report.cupy_options("grid"))):
        image = cuda_compile.compile(nvrtc, loader.source("grid"), [k.expression],
                                     "compute_90", options, "grid.cu")
        counts[route] = kernel_report.ptx_counts(image.ptx)
    assert counts["ours"] == (0, 0)
    assert counts["cupy"][1] > 0 and counts["cupy"][0] > 0


class VersionOnly:
    """An NVRTC that tells its version (part of an image's cache key) and compiles nothing."""

    def __init__(self, nvrtc):
        self.getVersion = nvrtc.getVersion

    def __getattr__(self, name):
        raise AssertionError(f"NVRTC asked for {name}: a compile where the cache had the image")


def test_the_loader_compiles_with_the_options_it_checks(nvrtc, monkeypatch):
    """The CuPy path's compile is cuda_compile.cached with the loader's options: its image, for
    a device's architecture, holds the instantiation under its lowered name, and a second
    compile of the same key (in a later process) is read back from the disk cache."""
    nvrtc_cache = Path(fake_cupy.fresh_kernel_cache(monkeypatch)) / "nvrtc"
    k = loader.instantiations("unpool")[0]
    image = cuda_compile.cached(nvrtc, loader.source("unpool"), k.expression, "sm_90",
                                loader.options("unpool"), "unpool.cu")
    assert image.kind == "cubin" and image.data[:4] == b"\x7fELF"
    assert image.names[k.expression].encode() in image.data
    (entry,) = nvrtc_cache.iterdir()
    fake_cupy.forget_images(monkeypatch)
    again = cuda_compile.cached(VersionOnly(nvrtc), loader.source("unpool"), k.expression,
                                "sm_90", loader.options("unpool"), "unpool.cu")
    assert (again.data, again.names) == (image.data, image.names)
    assert list(nvrtc_cache.iterdir()) == [entry]


@pytest.mark.parametrize("capability, expected", [(90, "sm_90"), (89, "sm_89"),
                                                  (95, "compute_90"), (121, "sm_121")])
def test_target_architecture(nvrtc, capability, expected):
    """A GPU NVRTC knows gets its own CUBIN; a newer one PTX of the newest it knows below."""
    supported = nvrtc.getSupportedArchs()
    if int(expected.split("_")[1]) not in supported:
        pytest.skip(f"this NVRTC does not know {expected}")
    assert cuda_compile.target(capability, supported) == expected


@pytest.mark.slow
def test_every_kernel_file_is_a_registered_family():
    """Each kernels/<family>.cu registers its instantiations, and each family has its file."""
    files = {p.stem for p in loader.KERNEL_DIR.glob("*.cu")}
    assert set(loader.families()) == files
    assert all(loader.instantiations(f) for f in loader.families())


@pytest.mark.slow
@pytest.mark.parametrize("arch", kernel_report.ARCHS)
@pytest.mark.parametrize("family", loader.families())
def test_family_compiles_ieee(family, arch):
    """Every instantiation to a CUBIN with the loader's options (the kernel report reads the same
    compilation, compiled once per process), and its PTX holds no instruction that flushes
    subnormals (with the options above, no multiply-add but those the source writes)."""
    image = kernel_report.compile_family(family, arch)
    lowered = image.names
    assert list(lowered) == [k.expression for k in loader.instantiations(family)]
    assert all(name.startswith("_Z") for name in lowered.values()), lowered
    assert len(set(lowered.values())) == len(lowered)
    assert image.data[:4] == b"\x7fELF"
    assert all(name.encode() in image.data for name in lowered.values())
    flushing, _ = kernel_report.ptx_counts(image.ptx)
    approximations = set(re.findall(r"\b[\w.]*\.ftz[\w.]*", image.ptx.decode()))
    # the reciprocal seeds inside CUDA's own sequences (pow's logarithm takes the reciprocal of
    # a mantissa near 1, never subnormal)
    assert flushing == 0 and approximations <= {"rcp.approx.ftz.f32", "rcp.approx.ftz.f64"}, \
        approximations
