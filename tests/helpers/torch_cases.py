"""PyTorch's recorded results (../shared/torch/ beside the repository: cases.json and
cases.npz, see its README), read as data; the environment variable ONNX_CUPY_TORCH_CASES names
another folder holding them (e.g. from a git worktree elsewhere)."""
from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

FOLDER = Path(os.environ.get("ONNX_CUPY_TORCH_CASES",
                             Path(__file__).parents[2] / ".." / "shared" / "torch"))


def cases(where: Any = None, subset: str = "") -> list:
    """One pytest.param per recorded case of the set in FOLDER/`subset` (`where(case)` true), id
    "case<N>"; a single skipped param naming the folder when it is absent."""
    folder = FOLDER / subset
    path = folder / "cases.json"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"PyTorch's recorded results "
                                                                f"are absent: {folder}"))]
    return [pytest.param({**c, "folder": str(folder)}, id=f"case{c['id']}")
            for c in json.loads(path.read_text())["cases"] if where is None or where(c)]


def arrays(case: dict) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a case: y is PyTorch's result of case["call"] on x."""
    with np.load(Path(case.get("folder", FOLDER)) / "cases.npz") as data:
        return data[case["x"]], data[case["y"]]


def every_array(case: dict) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(inputs, outputs) of a case, in the order its `inputs` and `outputs` name them."""
    with np.load(Path(case.get("folder", FOLDER)) / "cases.npz") as data:
        return ([data[n] for n in case.get("inputs", [case["x"]])],
                [data[n] for n in case.get("outputs", [case["y"]])])


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
