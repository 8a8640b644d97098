"""The parameter structs that launches pass by value have exactly the layout of their NumPy
dtypes, checked by static_asserts compiled under NVRTC (the GPU layout: size, field types and
declaration order, with the offsets those imply) and under the host compiler (the emulator's
layout: the same, and every field's offset). CuPy passes a NumPy array of size one by value (its
bytes); launches pass exactly such arrays. No GPU needed."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import onnx_cupy
from onnx_cupy.core import emulator, loader
from onnx_cupy.nn import functional as F

pytestmark = pytest.mark.slow  # NVRTC and host compiles of every parameter struct

# NumPy scalar type -> the C type a field of that dtype must have
C_TYPES = {
    ("i", 1): "signed char", ("u", 1): "unsigned char", ("i", 2): "short",
    ("u", 2): "unsigned short", ("i", 4): "int", ("u", 4): "unsigned int",
    ("i", 8): "long long", ("u", 8): "unsigned long long", ("f", 4): "float", ("f", 8): "double",
}

BLOCKS = [(family, struct, dtype) for family in loader.families()
          for struct, dtype in loader.family(family).structs.items()]


def natural_layout(dtype: np.dtype) -> tuple[dict[str, int], int]:
    """Field offsets and size of a C struct with `dtype`'s fields in order (natural alignment,
    as NVRTC and the host compiler lay out these scalar types)."""
    offsets, offset, align = {}, 0, 1
    for name in dtype.names:
        field = dtype.fields[name][0]
        a = field.base.itemsize
        offset = -(-offset // a) * a
        offsets[name] = offset
        offset += field.itemsize
        align = max(align, a)
    return offsets, -(-offset // align) * align


def layout_asserts(struct: str, dtype: np.dtype, offsets: bool) -> str:
    """C++ static_asserts that `struct` has the layout of the structured `dtype`: its size, each
    field's type, the declaration order (aggregate initialization follows it) and, where the
    compiler has a constant offsetof (`offsets`), each field's offset."""
    probe = f"oc_layout_{struct}"
    lines = [
        "namespace oc_layout {",
        "template <class A, class B> struct same { static constexpr bool value = false; };",
        "template <class A> struct same<A, A> { static constexpr bool value = true; };",
        "}",
        f'static_assert(sizeof({struct}) == {dtype.itemsize}, "{struct}: size");',
    ]
    inits, order = [], []
    for i, name in enumerate(dtype.names, start=1):
        field, offset = dtype.fields[name][:2]
        base, shape = field.base, field.shape
        assert base.byteorder in "<|=", f"{struct}.{name}: not little-endian"
        ctype = C_TYPES[(base.kind, base.itemsize)] + "".join(f"[{n}]" for n in shape)
        lines.append(f'static_assert(oc_layout::same<decltype({struct}::{name}), {ctype}>::value, '
                     f'"{struct}.{name}: type {ctype}");')
        if offsets:
            lines.append(f'static_assert(__builtin_offsetof({struct}, {name}) == {offset}, '
                         f'"{struct}.{name}: offset");')
        inits.append(f"{{{i}}}" if shape else str(i))
        order.append(f'static_assert({probe}.{name}{"[0]" * len(shape)} == {i}, '
                     f'"{struct}.{name}: declaration order");')
    lines.append(f"constexpr {struct} {probe}{{{', '.join(inits)}}};")
    return "\n".join(lines + order) + "\n"


def test_dtypes_have_c_layout():
    """NumPy offsets and itemsize are those of the C struct with the same fields in order."""
    for _, struct, dtype in BLOCKS:
        offsets, size = natural_layout(dtype)
        assert {n: dtype.fields[n][1] for n in dtype.names} == offsets, struct
        assert dtype.itemsize == size, struct


def test_every_family_declares_its_blocks():
    assert {f for f, _, _ in BLOCKS} == set(loader.families())
    for _, _, dtype in BLOCKS:
        assert dtype.names and not dtype.hasobject


def _host_compile(family: str, extra: str) -> str | None:
    """None if kernels/<family>.cu plus `extra` compiles under the host compiler, else the log."""
    try:
        cxx = emulator.compiler()
    except RuntimeError as exc:
        pytest.skip(str(exc))
    shim = str(loader.KERNEL_DIR / "host_shim.h")
    # the emulator's flags and the family's defines (NVRTC's options are not the host compiler's)
    flags = [*emulator.CXX_FLAGS, *loader.define_options(loader.defines(family))]
    res = subprocess.run([cxx, *flags, "-fsyntax-only", "-include", shim, "-x", "c++", "-"],
                         input=loader.source(family) + extra, capture_output=True, text=True,
                         check=False)
    return None if res.returncode == 0 else res.stderr


def _nvrtc_compile(family: str, extra: str) -> str | None:
    """None if kernels/<family>.cu plus `extra` compiles under NVRTC, else the log."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc",
                                reason="cuda.bindings (cuda-python) is not installed")
    err, prog = nvrtc.nvrtcCreateProgram((loader.source(family) + extra).encode(),
                                         f"{family}.cu".encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        options = [o.encode() for o in (*loader.options(family), "--gpu-architecture=compute_80")]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(options), options)
        if err == nvrtc.nvrtcResult.NVRTC_SUCCESS:
            return None
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        return f"{err}\n{log.decode(errors='replace')}"
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


COMPILERS = {"host": (_host_compile, True), "nvrtc": (_nvrtc_compile, False)}


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("family,struct,dtype", BLOCKS, ids=[s for _, s, _ in BLOCKS])
def test_layout(family, struct, dtype, compiler):
    compile_, offsets = COMPILERS[compiler]
    log = compile_(family, layout_asserts(struct, dtype, offsets))
    assert log is None, f"{struct} ({compiler}):\n{log}"


@pytest.mark.parametrize("compiler", COMPILERS)
def test_layout_catches_a_mismatch(compiler):
    """Two fields swapped, or one field of another width, fail to compile."""
    compile_, offsets = COMPILERS[compiler]
    family, struct, dtype = next(b for b in BLOCKS if b[1] == "PoolGeom")
    names = list(dtype.names)
    swapped = np.dtype([(n, dtype.fields[n][0]) for n in [*names[:-3], names[-2], names[-3],
                                                            names[-1]]])
    narrow = np.dtype([(n, "<f4" if n == "p" else dtype.fields[n][0]) for n in names])
    for wrong in (swapped, narrow):
        assert compile_(family, layout_asserts(struct, wrong, offsets)) is not None


def test_launches_pass_single_structs(monkeypatch):
    """Every by-value kernel argument is a read-only NumPy array of size one whose dtype is a
    registered parameter struct of the family (what CuPy passes by value); the rest are arrays,
    or None for a pointer the kernel does not use (the generic pool kernel's indices without
    return_indices: CuPy passes a null pointer)."""
    seen, kernels = [], []
    real = emulator.launch

    def record(kernel, grid, block, args):   # the arguments as the driver read them
        seen.append((kernel.family, args))
        kernels.append((kernel.family, kernel))
        real(kernel, grid, block, args)

    monkeypatch.setattr(emulator, "launch", record)
    x = np.arange(2 * 3 * 5 * 4, dtype=np.float32).reshape(2, 3, 5, 4)
    with onnx_cupy.backend("emulated"):
        onnx_cupy.average_pool(x, kernel_shape=[2, 2])
        onnx_cupy.lp_pool(x[:, :, ::-1], kernel_shape=[3, 1], p=3)
        onnx_cupy.hardmax(x, axis=2)
        onnx_cupy.hardmax(np.ones((2, 4096), np.float32))
        onnx_cupy.resize(x, scales=[1, 1, 2, 0.5], mode="nearest")
        onnx_cupy.resize(x, scales=[1, 1, 2, 0.5], mode="cubic")
        onnx_cupy.max_unpool(x, np.arange(x.size).reshape(x.shape) * 4, kernel_shape=[2, 2],
                             strides=[2, 2])
        onnx_cupy.grid_sample(x, np.zeros((2, 3, 4, 2), np.float32))
        onnx_cupy.grid_sample(x, np.zeros((2, 3, 4, 2), np.float64), mode="cubic")
        onnx_cupy.affine_grid(np.ones((2, 3, 4), np.float32), [2, 1, 3, 4, 5])
        onnx_cupy.roi_align(x, np.array([[0, 0, 2, 3]], np.float32), np.array([1]),
                            output_height=2, output_width=2)
        # the elementwise steps of the PyTorch-style pools: powers, and widen and narrow
        F.lp_pool2d(x, 3, 2)
        F.avg_pool2d(x.astype(np.float16), 2, divisor_override=3)
        onnx_cupy.vjp(onnx_cupy.max_pool, x, cotangent=np.ones((2, 3, 4, 3), np.float32),
                      kernel_shape=[2, 2])
        onnx_cupy.vjp(onnx_cupy.max_unpool, x, np.arange(x.size).reshape(x.shape) * 4,
                      cotangent=np.ones((2, 3, 10, 8), np.float32), kernel_shape=[2, 2],
                      strides=[2, 2])
    assert {f for f, _ in seen} == set(loader.families())
    templates = {k.template for _, k in kernels}   # the gradients' structs too
    assert {"pool_grad", "unpool_grad"} <= templates, templates
    for family, args in seen:
        blocks = [a for a in args if isinstance(a, np.ndarray) and a.dtype.names]
        assert len(blocks) == 1, (family, args)
        (g,) = blocks
        assert g.shape == (1,) and g.flags.c_contiguous and not g.flags.writeable
        assert g.dtype in loader.family(family).structs.values()
        assert all(a is None or isinstance(a, np.ndarray) for a in args)
