"""PyTorch's recorded results (tests/data/torch/: cases.json and cases.npz, see its README), read
as data; the environment variable ONNX_CUPY_TORCH_CASES names another folder holding them."""
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


def cases(where: Any = None) -> list:
    """One pytest.param per recorded case (`where(case)` true), id "case<N>"; a single skipped
    param naming the folder when it is absent."""
    path = FOLDER / "cases.json"
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"PyTorch's recorded results "
                                                                f"are absent: {FOLDER}"))]
    return [pytest.param(c, id=f"case{c['id']}") for c in json.loads(path.read_text())["cases"]
            if where is None or where(c)]


def arrays(case: dict) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of a case: y is PyTorch's result of case["call"] on x."""
    with np.load(FOLDER / "cases.npz") as data:
        return data[case["x"]], data[case["y"]]


def keywords(case: dict) -> dict[str, Any]:
    """The keyword arguments of a `F.name(x, ...)` call, as Python values."""
    call = ast.parse(case["call"], mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
