"""`onnx-cupy bench --op GridSample`: rows at [1, 3, 224, 224] with a [1, 224, 224, 2] grid and at
batch 8 (quick shapes here), the grid made once per shape and dtype of X's dtype, onnxruntime
running the node with the grid as an initializer, and the JSON naming the grid, not listing it."""
from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest

from onnx_cupy.tools import bench, cli


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert cli.main(["bench", "--quick", "--backend", "numpy", "--op", "GridSample",
                         "--out", str(out)]) == 0
    return json.loads((out / "numpy-quick.json").read_text())


def test_cases():
    cases = {c.name: c for c in bench.CASES if c.op == "GridSample"}
    assert set(cases) == {"GridSample linear", "GridSample nearest"}
    for c in cases.values():
        assert c.shapes(quick=False)["canonical"] == (8, 3, 224, 224)
        assert c.shapes(quick=False)["batch 1"] == (1, 3, 224, 224)
        for shape in c.shapes(quick=False).values():
            grid = c.inputs_for(shape, "float16")["grid"]
            assert grid.shape == (shape[0], *shape[2:], 2) and grid.dtype == np.float16
            assert c.inputs_for(shape, "float16")["grid"] is grid   # made once
        assert c.torch is not None
        assert c.targets("float32", "canonical")["onnxruntime"] == 0.5


def test_rows(report):
    rows = {(r["case"], r["dtype"]): r for r in report["rows"]}
    assert set(rows) == {(c.name, d) for c in bench.CASES if c.op == "GridSample"
                         for d in bench.DTYPES}
    for r in rows.values():
        assert r["correct"] is True and r["max_abs_diff_vs_onnxruntime"] <= 1e-2
        assert r["inputs"] == {"grid": f"{r['dtype']}[{r['shape'][0]}, 16, 16, 2]"}
        assert "GridSample" in r["peers"]["onnxruntime"]["graph"]
        assert r["peers"]["onnx.reference"]["ratio"] > 1
