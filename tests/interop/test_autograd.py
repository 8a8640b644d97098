"""Autograd of onnx_cupy.nn.functional's pooling functions and interpolate against PyTorch's
own, live: where torch is importable (CI installs it in a step of its own; the rest of the suite
needs no torch, and tests/interop/test_functional_gradients_recorded.py checks the same
gradients against recorded ones).

- every function on seeded random inputs, batched and unbatched, float64, float32, float16 and
  bfloat16: the forward's values and indices, and x.grad after y.backward(g), within
  torch.testing.assert_close's default tolerance of the dtype (float64 and float32 against
  PyTorch's own, also bit for bit but for lp_pool; float16 and bfloat16 against PyTorch's
  float32 result rounded once, see _widened);
- torch.autograd.gradcheck in float64 wherever it passes for PyTorch's own function, and
  PyTorch's Jacobian where it does not;
- PyTorch's own samples of these functions (the OpInfo entries of op_db, the functional calls
  of the pooling modules' ModuleInfo entries of module_db, the JIT samples of
  jit_metaprogramming_utils), forward and backward, float64 and float32, counted;
- determinism, a second derivative's error, in-place changes of a saved input, no graph under
  torch.no_grad(), and a TypeError naming each function that has no gradient.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the live autograd tests "
                                            "run in CI's PyTorch step)")
TF = torch.nn.functional

from onnx_cupy import ops  # noqa: E402
from onnx_cupy.nn import functional as F  # noqa: E402

DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
          "bfloat16": torch.bfloat16}

# (function, shape (batched), positional arguments after the input, keywords, non-negative
# inputs): the configurations every check runs
CONFIGS = [
    ("avg_pool1d", (2, 3, 9), (3,), {"stride": 2, "padding": 1, "ceil_mode": True}, False),
    ("avg_pool1d", (2, 2, 8), (4, 1, 2), {"count_include_pad": False}, False),
    ("avg_pool2d", (2, 3, 7, 6), (3, 2, 1), {"ceil_mode": True, "count_include_pad": False},
     False),
    ("avg_pool2d", (2, 2, 7, 9), ((2, 3),), {"stride": (1, 2), "divisor_override": 5}, False),
    ("avg_pool3d", (1, 2, 5, 6, 7), (3, 2, 1), {"ceil_mode": True}, False),
    ("avg_pool3d", (2, 1, 4, 5, 5), ((2, 1, 3),), {"divisor_override": 4, "padding": (1, 0, 1)},
     False),
    ("lp_pool1d", (2, 3, 9), (2.0, 3), {"stride": 2, "ceil_mode": True}, False),
    ("lp_pool1d", (2, 2, 8), (1.0, 2), {}, False),
    ("lp_pool2d", (2, 2, 7, 6), (3.0, (2, 3)), {"stride": (2, 1)}, False),
    ("lp_pool2d", (2, 2, 7, 7), (1.5, 3), {"stride": 2, "ceil_mode": True}, True),
    ("lp_pool3d", (1, 2, 5, 5, 6), (2.0, 2), {"ceil_mode": True}, False),
    ("lp_pool3d", (2, 1, 4, 6, 5), (4.0, (2, 3, 2)), {"stride": 1}, False),
    ("max_pool1d", (2, 3, 11), (3,), {"stride": 2, "padding": 1, "dilation": 2,
                                      "ceil_mode": True}, False),
    ("max_pool1d", (2, 2, 8), (2,), {"return_indices": True}, False),
    ("max_pool2d", (2, 3, 9, 8), (3, 2, 1), {"ceil_mode": True, "return_indices": True},
     False),
    ("max_pool2d", (2, 2, 9, 9), ((2, 3),), {"stride": 1, "dilation": (2, 1)}, False),
    ("max_pool3d", (1, 2, 6, 7, 5), (3, 2, 1), {"ceil_mode": True}, False),
    ("max_pool3d", (2, 1, 5, 6, 6), (2,), {"dilation": 2, "return_indices": True}, False),
    ("adaptive_avg_pool1d", (2, 3, 7), (3,), {}, False),
    ("adaptive_avg_pool1d", (2, 2, 4), (9,), {}, False),
    ("adaptive_avg_pool2d", (2, 3, 7, 5), ((3, 8),), {}, False),
    ("adaptive_avg_pool3d", (1, 2, 5, 4, 6), ((2, None, 7),), {}, False),
    ("adaptive_max_pool1d", (2, 3, 7), (4,), {"return_indices": True}, False),
    ("adaptive_max_pool2d", (2, 2, 5, 7), ((7, 3),), {}, False),
    ("adaptive_max_pool3d", (1, 2, 4, 5, 6), ((3, 7, 2),), {"return_indices": True}, False),
    ("max_unpool1d", (2, 3, 10), (3,), {"stride": 1}, False),
    ("max_unpool2d", (2, 2, 8, 7), (3,), {"stride": 2, "padding": 1, "output_size": (8, 7)},
     False),
    ("max_unpool3d", (1, 2, 6, 6, 5), (2,), {"output_size": (6, 6, 5)}, False),
    ("interpolate", (2, 3, 7, 6), (), {"scale_factor": 2, "mode": "bilinear"}, False),
    ("interpolate", (2, 2, 9, 11), ((4, 5),), {"mode": "bilinear", "antialias": True}, False),
    ("interpolate", (2, 2, 9, 8), ((5, 13),), {"mode": "bicubic", "align_corners": True},
     False),
    ("interpolate", (2, 2, 11, 9), (), {"scale_factor": 0.4, "mode": "bicubic",
                                        "antialias": True}, False),
    ("interpolate", (2, 3, 7), (), {"scale_factor": 1.7, "mode": "nearest"}, False),
    ("interpolate", (2, 3, 9), (4,), {"mode": "linear"}, False),
    ("interpolate", (1, 2, 4, 5, 3), (), {"scale_factor": (2, 1.5, 0.7), "mode": "trilinear"},
     False),
    ("interpolate", (1, 2, 4, 5, 3), ((7, 3, 5),), {"mode": "nearest-exact"}, False),
    ("interpolate", (2, 2, 7, 9), ((3, 4),), {"mode": "area"}, False),
]
IDS = [f"{c[0]}-{i}" for i, c in enumerate(CONFIGS)]
# (configuration, unbatched): interpolate takes batched inputs only, as PyTorch's
BATCHINGS = [(c, u) for c in CONFIGS for u in (False, True) if not (u and c[0] == "interpolate")]
BATCHING_IDS = [f"{i}-{'unbatched' if u else 'batched'}" for i, c in zip(IDS, CONFIGS)
                for u in (False, True) if not (u and c[0] == "interpolate")]


def _seed(*parts: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def _first(y):
    return y[0] if isinstance(y, tuple) else y


def _inputs(config, dtype, unbatched: bool, rng: np.random.Generator):
    """(x, extra positional inputs) of a configuration: max_unpool's x and indices come from
    max pooling the configuration's shape with its kernel, stride and padding (overlapping
    windows where the stride is below the kernel, so indices repeat); its output_size is that
    shape where the default output size, (in - 1) * stride + kernel - 2 * padding, is not, or
    the indices would point outside the output (PyTorch's "Found an invalid max index")."""
    name, shape, args, kw, positive = config
    shape = shape[1:] if unbatched else shape
    data = rng.standard_normal(shape)
    data = np.abs(data) + 0.1 if positive else data
    x = torch.tensor(data, dtype=dtype)
    if not name.startswith("max_unpool"):
        return x, ()
    k = int(name[-2])
    pooling = {key: v for key, v in kw.items() if key != "output_size"}
    pooled, indices = getattr(TF, f"max_pool{k}d")(x, *args, **pooling, return_indices=True)
    return pooled, (indices,)


def _run(fn, x, extra, args, kw, g=None):
    """(outputs, x.grad) of fn on a fresh leaf copy of x, with y.backward(g) (g: random where
    None; the same g for both libraries)."""
    leaf = x.detach().clone().requires_grad_(True)
    out = fn(leaf, *extra, *args, **kw)
    y = _first(out)
    assert y.requires_grad
    y.backward(g)
    return out, leaf.grad


SIXTEEN_BIT = (torch.float16, torch.bfloat16)


def _widened(function):
    """torch.nn.functional's pooling `function` computed in float32 from the 16-bit values and
    rounded once to their dtype, forward and backward (the exact result, rounded). PyTorch
    CPU's backward kernels of the pools add each term to a 16-bit gradient, rounding at every
    addition (ATen's cpu_avg_pool2d_backward: `grad_input_ptr[...] += grad_delta` in the
    16-bit scalar_t; the max and adaptive pools alike), as its adaptive_avg_pool3d forward sums
    in the 16-bit type, and it has no 16-bit avg_pool3d; the library sums in float32 and rounds
    once (docs/semantics.md). Its avg_pool1d/2d and max pool forwards are these bits."""
    class Widened(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, rest, kw):
            ctx.save_for_backward(x)
            ctx.rest = rest, kw
            wide = function(x.float(), *rest, **kw)
            out = tuple(t.to(x.dtype) if t.is_floating_point() else t for t in wide) \
                if isinstance(wide, tuple) else wide.to(x.dtype)
            if isinstance(out, tuple):
                ctx.mark_non_differentiable(*out[1:])
            return out

        @staticmethod
        def backward(ctx, g, *_):
            (x,) = ctx.saved_tensors
            rest, kw = ctx.rest
            with torch.enable_grad():
                wide = x.detach().float().requires_grad_(True)
                (dx,) = torch.autograd.grad(_first(function(wide, *rest, **kw)), wide, g.float())
            return dx.to(x.dtype), None, None
    return lambda x, *rest, **kw: Widened.apply(x, rest, kw)


def _pytorchs(name, dtype):
    """PyTorch's `name` as the reference of a `dtype` input: its own function for float64 and
    float32; for 16-bit inputs with the pooling kernels _widened (lp_pool: its avg_pool, under
    its own elementwise ops, which round to the 16-bit dtype as the library's steps do)."""
    function = getattr(TF, name)
    if dtype not in SIXTEEN_BIT:
        return function
    if not name.startswith("lp_pool"):
        return _widened(function)

    def lp_pool(*args, **kw):
        avg = f"avg_pool{name[-2]}d"
        plain = getattr(TF, avg)
        setattr(TF, avg, _widened(plain))   # the global lp_pool{k}d calls
        try:
            return function(*args, **kw)
        finally:
            setattr(TF, avg, plain)
    return lp_pool


def _compare(name, x, extra, args, kw, rng):
    """Ours against PyTorch's: forward outputs and input gradients (16-bit: against
    _pytorchs' reference, at the dtype's default tolerance). A 16-bit lp_pool takes a
    positive output gradient: its steps round to the 16-bit dtype (x ** p, the root's
    derivative), where PyTorch's bfloat16 pow takes other roundings than NumPy's (x * x * x for
    p = 3, rsqrt for the exponent -0.5) and a window's share can differ by an ulp; with signed
    shares that cancel in the sum over windows, an ulp grows without bound (PyTorch's own 16-bit
    gradient is then not within the tolerance of its float32 one either)."""
    leaf = x.detach().clone().requires_grad_(True)
    theirs = _pytorchs(name, x.dtype)(leaf, *extra, *args, **kw)
    g = rng.standard_normal(tuple(_first(theirs).shape))
    if name.startswith("lp_pool") and x.dtype in SIXTEEN_BIT:
        g = np.abs(g) + 0.1
    g = torch.tensor(g, dtype=x.dtype)
    _first(theirs).backward(g)
    mine, grad = _run(getattr(F, name), x, extra, args, kw, g)
    for a, b in zip(mine if isinstance(mine, tuple) else (mine,),
                    theirs if isinstance(theirs, tuple) else (theirs,)):
        torch.testing.assert_close(a, b.detach(), equal_nan=True)
    torch.testing.assert_close(grad, leaf.grad, equal_nan=True)
    return grad


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("config, unbatched", BATCHINGS, ids=BATCHING_IDS)
def test_backward_is_pytorchs(config, dtype, unbatched):
    """Within assert_close's default tolerance, and in float64 and float32 PyTorch's bits but
    for lp_pool (whose chain of powers differs by ulps) and interpolate (one resized axis at a
    time, where PyTorch's kernels multiply the axes' weights per term): the same terms in the
    same order."""
    name, _, args, kw, _ = config
    if kw.get("mode") == "bicubic" and not kw.get("antialias") and DTYPES[dtype] in SIXTEEN_BIT:
        # the forward is PyTorch's 16-bit kernel's (weights rounded to the 16-bit type), and
        # the gradient its transpose; PyTorch's 16-bit backward rounds at each addition and its
        # float32 function has float32 weights: neither is within the 16-bit tolerance of it
        x = torch.rand(config[1], dtype=DTYPES[dtype])
        torch.testing.assert_close(F.interpolate(x, *args, **kw), TF.interpolate(x, *args, **kw))
        return
    rng = _seed(config[0], config[2], dtype, unbatched)
    x, extra = _inputs(config, DTYPES[dtype], unbatched, rng)
    grad = _compare(name, x, extra, args, kw, rng)
    assert grad.dtype == x.dtype and grad.shape == x.shape
    if x.dtype in SIXTEEN_BIT or name.startswith(("lp_pool", "interpolate")):
        return
    rng = _seed("bits", name, args, dtype, unbatched)
    y = _first(getattr(TF, name)(x, *extra, *args, **kw))
    g = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=x.dtype)
    _, theirs = _run(getattr(TF, name), x, extra, args, kw, g)
    _, mine = _run(getattr(F, name), x, extra, args, kw, g)
    assert torch.equal(mine, theirs)


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_gradcheck(config):
    """torch.autograd.gradcheck (finite differences in float64 against the backward) of ours
    wherever PyTorch's own function passes it on the same input; where PyTorch's does not (its
    gradient is not the finite differences' there: max_unpool's repeated indices, where a
    later element overwrites an earlier one; lp_pool of a window whose mean of x ** p is
    negative, NaN), ours fails it too and its whole Jacobian is PyTorch's (within
    assert_close's default tolerance, as every gradient here)."""
    name, _, args, kw, _ = config
    x, extra = _inputs(config, torch.float64, False, _seed("gradcheck", config[0], config[2]))
    x = x.detach().requires_grad_(True)
    kw = {k: v for k, v in kw.items() if k != "return_indices"}

    def of(fn):
        return lambda t: _first(fn(t, *extra, *args, **kw))
    if torch.autograd.gradcheck(of(getattr(TF, name)), (x,), raise_exception=False):
        assert torch.autograd.gradcheck(of(getattr(F, name)), (x,))
        return
    assert not torch.autograd.gradcheck(of(getattr(F, name)), (x,), raise_exception=False)
    theirs = torch.autograd.functional.jacobian(of(getattr(TF, name)), x)
    mine = torch.autograd.functional.jacobian(of(getattr(F, name)), x)
    torch.testing.assert_close(mine, theirs, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name,args", [("avg_pool2d", (3, 1, 1)), ("max_pool2d", (3, 1, 1)),
                                       ("adaptive_avg_pool2d", ((4, 3),)),
                                       ("adaptive_max_pool2d", ((8, 7),))])
def test_16_bit_gradients_are_float32_gradients_rounded_once(name, args, dtype):
    """A 16-bit gradient is PyTorch's float32 gradient of the same values (the same terms in
    the same order), rounded once: bit for bit. PyTorch CPU's own 16-bit gradient is not: its
    kernels add each term to the 16-bit gradient, rounding at every addition, which is why the
    16-bit comparisons take the float32 gradient rounded (_widened); the last assertion fails
    where a PyTorch sums in float32, and the comparisons can then take its own."""
    rng = _seed("16-bit", name, dtype)
    x = torch.tensor(rng.standard_normal((2, 3, 9, 8)), dtype=DTYPES[dtype])
    y = getattr(TF, name)(x.float(), *args)
    g = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=DTYPES[dtype])
    _, mine = _run(getattr(F, name), x, (), args, {}, g)
    _, wide = _run(getattr(TF, name), x.float(), (), args, {}, g.float())
    _, own = _run(getattr(TF, name), x, (), args, {}, g)
    assert torch.equal(mine, wide.to(x.dtype))
    assert not torch.equal(own, wide.to(x.dtype))


@pytest.mark.filterwarnings("error")
def test_lp_pool_at_zeros_and_nan_is_pytorchs():
    """lp_pool's gradient where PyTorch's autograd meets zeros: a zero window passes nothing,
    a zero inside a window 0 (p > 1), the window's share (p = 1) or inf (p < 1), NaN through a
    NaN window (but 0 with p = 1, where d ** 0 = 1); with no warning (PyTorch gives none)."""
    x = torch.tensor([[[0.0, 0.0, 0.0, 2.0, -1.0, 3.0, 0.0, 1.0, np.nan, 1.0]]],
                     dtype=torch.float64)
    rng = _seed("zeros")
    for p in (1.0, 2.0, 3.0, 0.5, 1.5, 0.75):
        grad = _compare("lp_pool1d", x, (), (p, 2), {}, rng)
        assert grad[0, 0, 0] == 0 or np.isnan(grad[0, 0, 0].item())


def test_max_unpool_configs_have_repeated_indices():
    """The max_unpool configurations whose pooling windows overlap give indices that repeat
    within a plane (several inputs written to one place: PyTorch's gradient reads it for each),
    and every index lies inside the output PyTorch makes."""
    repeated = []
    for name, shape, args, kw, positive in CONFIGS:
        if not name.startswith("max_unpool"):
            continue
        x, (indices,) = _inputs((name, shape, args, kw, positive), torch.float64, False,
                                _seed("repeats", name))
        y = getattr(TF, name)(x, indices, *args, **kw)
        assert int(indices.max()) < y[0, 0].numel(), name
        planes = indices.flatten(2)
        if any(len(set(p.tolist())) < len(p) for p in planes.flatten(0, 1)):
            repeated.append(name)
    assert repeated == ["max_unpool1d", "max_unpool2d"]


@pytest.mark.parametrize("name", ["max_pool2d", "adaptive_max_pool2d", "max_pool1d"])
def test_ties_route_where_pytorch_routes_them(name):
    """Equal maxima: the gradient goes to the element PyTorch's index names."""
    rng = _seed("ties", name)
    shape = (2, 3, 12) if name == "max_pool1d" else (2, 3, 7, 8)
    x = torch.tensor(rng.integers(0, 2, shape), dtype=torch.float32)
    args = ((3,) if name != "adaptive_max_pool2d" else ((4, 3),))
    kw = {} if name == "adaptive_max_pool2d" else {"stride": 1, "padding": 1}
    grad = _compare(name, x, (), args, kw, rng)
    assert torch.count_nonzero(grad) > 0


# ----------------------------------------------------------------------- PyTorch's own samples

def _opinfo_names() -> list[str]:
    return [f"nn.functional.{f}{k}d" for f in ("avg_pool", "max_pool", "adaptive_avg_pool",
                                                "adaptive_max_pool", "max_unpool")
            for k in (1, 2, 3)] + ["nn.functional.interpolate"]


def _ops():
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as exc:   # expecttest, which torch's test helpers import
        pytest.skip(f"torch's OpInfo database does not import: {exc}")
    return op_db


SAMPLES_RAN: dict[str, int] = {}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("opinfo", _opinfo_names())
def test_opinfo_samples(opinfo, dtype):
    """Every sample of PyTorch's OpInfo entries named `opinfo` (its grad variants too) with
    requires_grad: forward and backward against PyTorch's."""
    entries = [op for op in _ops() if op.name == opinfo]
    assert entries, opinfo
    name = opinfo.rsplit(".", 1)[1]
    rng = _seed(opinfo, dtype)
    ran = 0
    for op in entries:
        for sample in op.sample_inputs("cpu", DTYPES[dtype], requires_grad=True):
            x = sample.input
            extra = tuple(a for a in sample.args[:1] if name.startswith("max_unpool"))
            args = sample.args[len(extra):]
            _compare(name, x, extra, args, sample.kwargs, rng)
            ran += 1
    SAMPLES_RAN[f"{opinfo}-{dtype}"] = ran
    assert ran > 0


MODULES = [f"nn.{kind}{k}d" for kind in ("AvgPool", "MaxPool", "LPPool", "AdaptiveAvgPool",
                                          "AdaptiveMaxPool") for k in (1, 2, 3)]


def _recorded_call(module, x):
    """(function name, positional arguments after the input, keywords) of the
    torch.nn.functional call `module(x)` makes, recorded by wrapping that function."""
    calls = []
    kind = type(module).__name__
    name = {"LPPool": "lp_pool", "AvgPool": "avg_pool", "MaxPool": "max_pool",
            "AdaptiveAvgPool": "adaptive_avg_pool",
            "AdaptiveMaxPool": "adaptive_max_pool"}[kind[:-2]] + kind[-2:].lower()
    plain = getattr(TF, name)

    def recorder(input, *args, **kw):
        calls.append((args, kw))
        return plain(input, *args, **kw)
    setattr(TF, name, recorder)
    try:
        module(x)
    finally:
        setattr(TF, name, plain)
    assert len(calls) == 1, (module, calls)
    return name, *calls[0]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("module", MODULES)
def test_moduleinfo_samples(module, dtype):
    """Every sample of PyTorch's ModuleInfo of the pooling module `module`: the
    torch.nn.functional call the module makes (recorded), through ours with requires_grad,
    forward and backward against PyTorch's (lp_pool at |x| + 0.1, where every power is
    smooth)."""
    try:
        from torch.testing._internal.common_modules import module_db
    except ImportError as exc:
        pytest.skip(f"torch's ModuleInfo database does not import: {exc}")
    info = next(m for m in module_db if m.name == module)
    rng = _seed(module, dtype)
    ran = 0
    for sample in info.module_inputs_func(info, device="cpu", dtype=DTYPES[dtype],
                                          requires_grad=True, training=True):
        x = sample.forward_input.args[0]
        built = info.module_cls(*sample.constructor_input.args,
                                **sample.constructor_input.kwargs)
        name, args, kw = _recorded_call(built, x.detach())
        x = x.detach().abs() + 0.1 if name.startswith("lp_pool") else x
        _compare(name, x, (), args, kw, rng)
        ran += 1
    SAMPLES_RAN[f"{module}-{dtype}"] = ran
    assert ran > 0


def _jit_samples() -> list[tuple]:
    try:
        from torch.testing._internal.jit_metaprogramming_utils import get_nn_functional_tests
    except ImportError:
        return []
    return [t for t in get_nn_functional_tests()
            if ("pool" in t[0] and not t[0].startswith("fractional")) or t[0] == "interpolate"]


JIT = _jit_samples()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("sample", JIT, ids=[f"{t[0]}-{i}" for i, t in enumerate(JIT)])
def test_jit_samples(sample, dtype):
    """PyTorch's JIT samples of the pooling functions and interpolate (jit_metaprogramming_utils'
    nn_functional_tests: a shape or a tensor, the arguments after it): forward and backward
    against PyTorch's, max_unpool's indices as given."""
    name, given, args = sample[:3]
    rng = _seed("jit", name, repr(args), dtype)
    x = (torch.tensor(rng.standard_normal(given), dtype=DTYPES[dtype])
         if isinstance(given, tuple) else given.to(DTYPES[dtype]))
    x = x.abs() + 0.1 if name.startswith("lp_pool") else x
    extra = tuple(a for a in args if isinstance(a, torch.Tensor))
    rest = tuple(a for a in args if not isinstance(a, torch.Tensor))
    _compare(name, x, extra, rest, {}, rng)


def test_jit_samples_are_found():
    """The JIT sample list is read from PyTorch, not empty: every pooling function's."""
    assert {t[0] for t in JIT} >= {f"{f}{k}d" for f in ("avg_pool", "max_pool", "lp_pool",
                                                        "adaptive_avg_pool",
                                                        "adaptive_max_pool", "max_unpool")
                                    for k in (1, 2, 3)} | {"interpolate"}


# ------------------------------------------------------------------------------- the bridge

def test_two_backward_runs_give_equal_bits():
    rng = _seed("determinism")
    for name, shape, args, kw, positive in CONFIGS:
        x, extra = _inputs((name, shape, args, kw, positive), torch.float32, False, rng)
        g = None
        grads = []
        for _ in range(2):
            leaf = x.detach().clone().requires_grad_(True)
            y = _first(getattr(F, name)(leaf, *extra, *args, **kw))
            if g is None:
                g = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=torch.float32)
            y.backward(g)
            grads.append(leaf.grad.numpy().tobytes())
        assert grads[0] == grads[1], name


@pytest.mark.parametrize("name,args", [("max_pool2d", (2,)), ("lp_pool2d", (2.0, 2)),
                                       ("adaptive_avg_pool2d", (3,))])
def test_a_second_derivative_is_an_error_naming_the_function(name, args):
    x = torch.rand(1, 2, 6, 6, dtype=torch.float64, requires_grad=True)
    y = getattr(F, name)(x, *args)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)   # the first: fine
    torch.testing.assert_close(g, torch.autograd.grad(getattr(TF, name)(x, *args).sum(), x)[0])
    message = rf"{name}: onnx_cupy.nn.functional gives first derivatives only"
    with pytest.raises(RuntimeError, match=message):   # with respect to x: no silent zeros
        torch.autograd.grad(g.sum(), x)
    with pytest.raises(RuntimeError, match=message):
        g.sum().backward()
    assert x.grad is None
    with pytest.raises(RuntimeError, match=rf"{name}: .* not implemented"):
        torch.autograd.gradgradcheck(lambda t: getattr(F, name)(t, *args), (x,))


def test_the_graph_node_and_non_differentiable_indices():
    x = torch.rand(1, 2, 6, 6, requires_grad=True)
    y, i = F.max_pool2d(x, 2, return_indices=True)
    assert type(y.grad_fn).__name__ == "OnnxCupyFunctionBackward"
    assert y.requires_grad and not i.requires_grad and i.dtype == torch.int64


def test_an_input_changed_in_place_before_backward_is_pytorchs_error():
    x = torch.rand(1, 2, 6, 6, requires_grad=True)
    t = x * 1
    y = F.lp_pool2d(t, 2.0, 2)
    t.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_under_no_grad_no_graph_is_recorded():
    x = torch.rand(1, 2, 6, 6, requires_grad=True)
    with torch.no_grad():
        y = F.avg_pool2d(x, 2)
        z = F.interpolate(x, scale_factor=2)   # no gradient, and none needed
    assert not y.requires_grad and not z.requires_grad and y.grad_fn is None


def test_inputs_are_not_modified_and_results_are_pytorchs_bits():
    """A tensor that requires grad gives the same forward bits as its detached copy, and
    neither the forward nor the backward changes an input (the base tensor of the views each
    configuration pools, or the leaf that requires grad)."""
    x = torch.rand(2, 3, 9, 9)
    before = x.clone()
    for name, shape, args, kw, _ in CONFIGS:
        if name.startswith("max_unpool"):
            continue
        k = len(shape) - 2
        # batched inputs of k spatial axes, views of x: (2, 3, 9), (2, 3, 9, 9), (2, 3, 3, 3, 9)
        t = x[:, :, 0] if k == 1 else x if k == 2 else x.view(2, 3, 3, 3, 9)
        plain = _first(getattr(F, name)(t, *args, **kw))
        leaf = t.clone().requires_grad_(True)
        graphed = _first(getattr(F, name)(leaf, *args, **kw))
        assert plain.numpy().tobytes() == graphed.detach().numpy().tobytes(), name
        graphed.backward(torch.ones_like(graphed))
        assert torch.equal(leaf.detach(), t) and leaf.grad.shape == t.shape, name
    assert torch.equal(x, before)


@pytest.mark.parametrize("call", ["grid_sample", "grid_sample-grid", "affine_grid",
                                  "one_hot_argmax", "roi_align"])
def test_functions_without_a_gradient_are_a_type_error_naming_them(call):
    x = torch.rand(1, 2, 6, 6)
    grid = torch.rand(1, 3, 3, 2) * 2 - 1
    runs = {
        "grid_sample": lambda: F.grid_sample(x.requires_grad_(), grid, align_corners=False),
        "grid_sample-grid": lambda: F.grid_sample(x, grid.requires_grad_(), align_corners=False),
        "affine_grid": lambda: F.affine_grid(torch.rand(1, 2, 3, requires_grad=True),
                                             [1, 2, 4, 4], align_corners=False),
        "one_hot_argmax": lambda: F.one_hot_argmax(x.requires_grad_(), 1),
        "roi_align": lambda: ops.roi_align(x.requires_grad_(), torch.tensor(
            [[0.0, 0.0, 0.0, 3.0, 3.0]]), 2),
    }
    name = call.split("-")[0]
    with pytest.raises(TypeError, match=rf"{name}: a tensor that requires grad was given, and "
                                        rf"{name} has no gradient"):
        runs[call]()
