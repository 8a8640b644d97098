"""PyTorch's recorded results (tests/data/torch/: cases.json and cases.npz, see its README; the
second set in its more/ folder), read as data; the environment variable ONNX_CUPY_TORCH_CASES
names another folder holding them."""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

FOLDER = Path(os.environ.get("ONNX_CUPY_TORCH_CASES",
                             Path(__file__).parents[1] / "data" / "torch"))
MORE = "more"   # the second set's subfolder (PyTorch 2.14: area, adaptive pooling, ...)


def cases(where: Any = None, more: bool = False) -> list:
    """One pytest.param per recorded case (`where(case)` true), id "case<N>", of the first set
    (`more`: of the second set, more/); a single skipped param naming the folder when it is
    absent."""
    folder = FOLDER / MORE if more else FOLDER
    path = folder / "cases.json"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"PyTorch's recorded results "
                                                                f"are absent: {folder}"))]
    return [pytest.param({**c, "folder": str(folder)}, id=f"case{c['id']}")
            for c in json.loads(path.read_text())["cases"] if where is None or where(c)]


def _stored(case: dict, names: list[str]) -> list[np.ndarray]:
    with np.load(Path(case.get("folder", FOLDER)) / "cases.npz") as data:
        return [data[n] for n in names]


def arrays(case: dict) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a case: y is PyTorch's (first) result of case["call"] on x."""
    x, y = _stored(case, [case["x"], case["y"]])
    return x, y


def outputs(case: dict) -> list[np.ndarray]:
    """Every result of case["call"], in order (values, then int64 indices with
    return_indices=True)."""
    return _stored(case, case.get("outputs", [case["y"]]))


def inputs_and_outputs(case: dict) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every input of a case, in the call's order (x, then the second: grid_sample's grid,
    max_unpool's indices), and every output."""
    return (_stored(case, case.get("inputs", [case["x"]])),
            _stored(case, case.get("outputs", [case["y"]])))


def assert_matches(got: np.ndarray, y: np.ndarray) -> None:
    """`got` has PyTorch's result's shape and dtype and its values: float64 within 1e-9
    relative, float32 within 1e-5 relative plus 1e-6 of the largest magnitude (PyTorch sums
    float32 in float32)."""
    assert got.shape == y.shape and got.dtype == y.dtype, (got.shape, got.dtype)
    rtol, margin = (1e-5, 1e-6) if y.dtype == np.float32 else (1e-9, 0.0)
    atol = margin * float(np.max(np.abs(y), initial=1.0))
    np.testing.assert_allclose(got, y, rtol=rtol, atol=atol, equal_nan=True)


def keywords(case: dict) -> dict[str, Any]:
    """The keyword arguments of a `F.name(x, ...)` call, as Python values."""
    call = ast.parse(case["call"], mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}


def arguments(case: dict) -> list[Any]:
    """The positional arguments of a `F.name(x, ...)` call after x, as Python values."""
    call = ast.parse(case["call"], mode="eval").body
    return [ast.literal_eval(a) for a in call.args[1:]]
