"""Record PyTorch's gradients of the pooling functions and interpolate of torch.nn.functional, so
that the test suite can check onnx_cupy.nn.functional's backward (onnx_cupy.vjp) against them with
no torch installed (tests/interop/test_functional_gradients_recorded.py).

Run from a clone, with a Python that has torch (CPU) and NumPy:

    python tests/data/torch_gradients/record.py

It writes cases.json and cases.npz beside itself. Each case is one call on CPU of avg_pool, lp_pool,
max_pool (with and without return_indices), adaptive_avg_pool, adaptive_max_pool, max_unpool or
interpolate (1-D, 2-D, 3-D; interpolate in every mode, sizes and scale factors shrinking and
growing, align_corners both ways, antialias), drawn from a seeded generator: odd sizes, padding,
ceil_mode, dilation, divisor_override, count_include_pad False and True, unbatched inputs, ties in
max pooling (inputs of a few integer values), lp_pool with zero windows and zeros in windows for
several norm_types, adaptive outputs longer than their inputs, max_unpool after overlapping pooling
windows (indices that repeat); float64 and float32. The input x requires grad; the function's first
output y is given the gradient g (random normal) by y.backward(g); the case keeps x, g, x.grad and
(max_unpool) the indices i.

cases.json: {"torch": version, "cases": [...]}; each case has `id`, `call` (the Python call as
written, x the input, i max_unpool's indices, every other argument a keyword), `inputs` (names
in cases.npz: x, then i), `grad_output`, `grad_input`, `dtype`, `x_shape`, `y_shape`.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
SEED = 20261207
PER_FUNCTION = 8


def _shape(rng: np.random.Generator, k: int, low: int, high: int) -> list[int]:
    return [int(n) for n in rng.integers(low, high + 1, k)]


def _input(rng: np.random.Generator, shape: tuple[int, ...], ties: bool) -> np.ndarray:
    if ties:   # a few values: equal maxima in most windows
        return rng.integers(-1, 3, shape).astype(np.float64)
    return rng.standard_normal(shape)


def _batch(rng: np.random.Generator, spatial: list[int], unbatched: bool) -> tuple[int, ...]:
    return (2, *spatial) if unbatched else (2, 2, *spatial)


def avg_pool(rng: np.random.Generator, k: int, case: int) -> tuple[str, dict, tuple, bool]:
    kernel = _shape(rng, k, 1, 3 if k == 3 else 4)
    stride = _shape(rng, k, 1, 3)
    padding = [int(rng.integers(0, kk // 2 + 1)) for kk in kernel]
    spatial = [int(n) for n in rng.integers([kk for kk in kernel], [kk + 6 for kk in kernel])]
    kw = {"kernel_size": kernel, "stride": stride, "padding": padding,
          "ceil_mode": bool(case % 2), "count_include_pad": bool(case // 2 % 2)}
    if k > 1 and case % 3 == 2:
        kw["divisor_override"] = int(rng.integers(1, 7))
    return f"avg_pool{k}d", kw, _batch(rng, spatial, case == 5), False


def lp_pool(rng: np.random.Generator, k: int, case: int) -> tuple[str, dict, tuple, bool]:
    kernel = _shape(rng, k, 1, 3)
    stride = _shape(rng, k, 1, 3)
    spatial = [int(n) for n in rng.integers([kk for kk in kernel], [kk + 5 for kk in kernel])]
    norm = [1.0, 2.0, 3.0, 1.5, 2.0, 4.0, 0.75, 3.0][case]
    kw = {"norm_type": norm, "kernel_size": kernel[0] if k == 1 else kernel,   # an int: its
          "stride": stride, "ceil_mode": bool(case % 2)}                       # 1-D's product
    return f"lp_pool{k}d", kw, _batch(rng, spatial, case == 4), False


def max_pool(rng: np.random.Generator, k: int, case: int) -> tuple[str, dict, tuple, bool]:
    kernel = _shape(rng, k, 1, 3)
    stride = _shape(rng, k, 1, 3)
    dilation = _shape(rng, k, 1, 2) if case % 3 else [1] * k
    padding = [int(rng.integers(0, kk // 2 + 1)) for kk in kernel]
    spatial = [int(n) for n in rng.integers(
        [d * (kk - 1) + 1 for kk, d in zip(kernel, dilation)],
        [d * (kk - 1) + 7 for kk, d in zip(kernel, dilation)])]
    kw = {"kernel_size": kernel, "stride": stride, "padding": padding, "dilation": dilation,
          "ceil_mode": bool(case % 2), "return_indices": bool(case // 2 % 2)}
    return f"max_pool{k}d", kw, _batch(rng, spatial, case == 6), case < 5


def adaptive(kind: str):
    def draw(rng: np.random.Generator, k: int, case: int) -> tuple[str, dict, tuple, bool]:
        spatial = _shape(rng, k, 1, 7 if k < 3 else 5)
        sizes: list = [int(m) for m in rng.integers(1, [n + 3 for n in spatial])]
        if case % 3 == 0:   # longer than the input
            sizes = [n + int(rng.integers(1, 4)) for n in spatial]
        if k > 1 and case == 4:
            sizes[0] = None
        kw: dict = {"output_size": sizes[0] if k == 1 and case % 2 else sizes}
        if kind == "max":
            kw["return_indices"] = bool(case % 2)
        return (f"adaptive_{kind}_pool{k}d", kw, _batch(rng, spatial, case == 5),
                kind == "max" and case < 5)
    return draw


def max_unpool(rng: np.random.Generator, k: int, case: int) -> tuple[str, dict, tuple, bool]:
    kernel = _shape(rng, k, 2, 3)
    stride = [int(rng.integers(1, kk)) if case % 4 else kk for kk in kernel]   # overlapping
    padding = [int(rng.integers(0, kk // 2 + 1)) for kk in kernel] if case % 3 == 1 else [0] * k
    spatial = [int(n) for n in rng.integers([kk + 1 for kk in kernel], [kk + 6 for kk in kernel])]
    kw = {"kernel_size": kernel, "stride": stride, "padding": padding}
    return f"max_unpool{k}d", kw, _batch(rng, spatial, case == 6), case % 2 == 0


# interpolate's modes per spatial rank, one per case (antialias: the 2-D cases 3, 4 and 7)
MODES = {1: ("nearest", "linear", "nearest-exact", "linear", "area", "nearest", "linear", "area"),
         2: ("bilinear", "bicubic", "nearest", "bilinear", "bicubic", "nearest-exact", "area",
             "bicubic"),
         3: ("trilinear", "nearest", "trilinear", "area", "nearest-exact", "trilinear",
             "nearest", "area")}


def interpolate(rng: np.random.Generator, k: int, case: int) -> tuple[str, dict, tuple, bool]:
    mode = MODES[k][case]
    spatial = _shape(rng, k, 3, 9 if k < 3 else 5)
    kw: dict = {"mode": mode}
    if case % 2:   # sizes, shorter and longer than the input
        sizes = [int(m) for m in rng.integers(1, [2 * n + 3 for n in spatial])]
        kw["size"] = sizes[0] if k == 1 else sizes
    else:
        factors = [float(f) for f in rng.choice([0.37, 0.5, 0.8, 1.0, 1.7, 2.0, 3.0], k)]
        kw["scale_factor"] = factors[0] if k == 1 or case == 2 else factors
        if case == 6:
            kw["recompute_scale_factor"] = True
    if mode in ("linear", "bilinear", "bicubic", "trilinear"):
        kw["align_corners"] = bool(case // 2 % 2)
    if k == 2 and case in (3, 4, 7):
        kw["antialias"] = True
    return "interpolate", kw, (2, 2, *spatial), False


DRAWS = [avg_pool, lp_pool, max_pool, adaptive("avg"), adaptive("max"), max_unpool, interpolate]


def record() -> tuple[list[dict], dict[str, np.ndarray]]:
    rng = np.random.default_rng(SEED)
    cases: list[dict] = []
    arrays: dict[str, np.ndarray] = {}
    for draw in DRAWS:
        for k in (1, 2, 3):
            for case in range(PER_FUNCTION):
                name, kw, shape, ties = draw(rng, k, case)
                dtype = torch.float64 if case % 2 == 0 else torch.float32
                data = _input(rng, shape, ties)
                if name.startswith("lp_pool"):
                    if kw["norm_type"] % 1 or case % 3 == 0:   # fractional p: x >= 0
                        data = np.abs(data)
                    data[..., : max(1, data.shape[-1] // 3)] = 0.0   # zero windows
                    data[..., -1] = 0.0                               # zeros in windows
                x = torch.tensor(data, dtype=dtype)
                i = None
                if name.startswith("max_unpool"):
                    pool = getattr(F, f"max_pool{k}d")
                    x, i = pool(x, kw["kernel_size"], kw["stride"], kw["padding"],
                                return_indices=True)
                    default = [(n - 1) * s + kk - 2 * p for n, kk, s, p in zip(
                        x.shape[-k:], kw["kernel_size"], kw["stride"], kw["padding"])]
                    if case == 3 or list(shape[-k:]) != default:   # the pooled lengths
                        kw["output_size"] = list(shape[-k:])
                x = x.detach().clone().requires_grad_(True)
                fn = getattr(F, name)
                y = fn(x, i, **kw) if i is not None else fn(x, **kw)
                y = y[0] if isinstance(y, tuple) else y
                g = torch.tensor(rng.standard_normal(tuple(y.shape)), dtype=dtype)
                y.backward(g)
                n = len(cases)
                names = [f"x{n}"] + ([f"i{n}"] if i is not None else [])
                arrays[f"x{n}"] = x.detach().numpy()
                if i is not None:
                    arrays[f"i{n}"] = i.numpy()
                arrays[f"g{n}"] = g.numpy()
                arrays[f"dx{n}"] = x.grad.numpy()
                args = "x, i" if i is not None else "x"
                keywords = ", ".join(f"{a}={v!r}" for a, v in kw.items())
                cases.append({"id": n, "call": f"F.{name}({args}, {keywords})",
                              "inputs": names, "grad_output": f"g{n}",
                              "grad_input": f"dx{n}", "dtype": str(dtype).split(".")[-1],
                              "x_shape": list(x.shape), "y_shape": list(y.shape)})
    return cases, arrays


def main() -> None:
    torch.manual_seed(SEED)   # nothing here draws from torch; for any later case that does
    cases, arrays = record()
    (HERE / "cases.json").write_text(json.dumps({"torch": torch.__version__, "cases": cases},
                                                indent=1) + "\n")
    np.savez_compressed(HERE / "cases.npz", **arrays)
    print(f"{len(cases)} cases with torch {torch.__version__}: {HERE}")


if __name__ == "__main__":
    main()
