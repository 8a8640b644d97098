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


def keywords(case: dict) -> dict[str, Any]:
    """The keyword arguments of a `F.name(x, ...)` call, as Python values."""
    call = ast.parse(case["call"], mode="eval").body
    return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
