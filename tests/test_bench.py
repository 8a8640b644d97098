"""`onnx-cupy bench`: a quick run on the NumPy backend (table, JSON, Markdown, plot) and the
backend checks."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math

import pytest

from onnx_cupy import backends, bench, cli

OPS = ("AveragePool", "Hardmax")
DIFF = {"float32": 1e-5, "float16": 1e-2}   # max abs diff vs onnxruntime on N(0, 1) inputs
COLUMNS = ["case", "dtype", "shape", "ms", "Melem/s", "x onnxruntime", "x onnx.reference",
           "max abs diff vs onnxruntime", "peak mem / (X+Y)"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    argv = ["bench", "--quick", "--backend", "numpy", "--out", str(out)]
    for op in OPS:
        argv += ["--op", op]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        rc = cli.main(argv)
    return rc, stdout.getvalue(), out


def _table(text):
    lines = [line for line in text.splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return header, lines[2:]


def _expected_rows():
    return {(c.name, d) for c in bench.CASES if c.op in OPS for d in bench.DTYPES}


def test_terminal_table(quick):
    rc, stdout, _ = quick
    assert rc == 0
    header, body = _table(stdout)
    assert header[:len(COLUMNS) - 4] == COLUMNS[:len(COLUMNS) - 4]
    assert set(COLUMNS) <= set(header)
    assert "GB/s" not in header
    assert len(body) == len(_expected_rows())


def test_json_report(quick):
    _, _, out = quick
    report = json.loads((out / "numpy-quick.json").read_text())
    h = report["header"]
    assert h["backend"] == "numpy" and h["quick"] is True and h["gpu"] is None
    assert h["date"] and h["cpu"]
    assert all(h["versions"][k] for k in ("onnx-cupy", "numpy", "onnx", "onnxruntime"))
    assert {"onnxruntime", "onnx.reference"} <= set(report["peers"])
    assert {(r["case"], r["dtype"]) for r in report["rows"]} == _expected_rows()
    for r in report["rows"]:
        assert r["ms"] > 0 and math.isfinite(r["melem_s"]) and r["melem_s"] > 0
        for name in ("onnxruntime", "onnx.reference"):
            ratio = r["peers"][name]["ratio"]
            assert math.isfinite(ratio) and ratio > 0, (r["case"], name)
            assert "target" not in r["peers"][name]          # no targets under --quick
        for result in r["peers"].values():
            assert "ratio" in result or result["na"]
        assert r["correct"] is True
        assert 0 <= r["max_abs_diff_vs_onnxruntime"] <= DIFF[r["dtype"]], r
        assert math.isfinite(r["peak_memory_ratio"]) and r["peak_memory_ratio"] > 0


def test_markdown_and_plot(quick):
    _, stdout, out = quick
    md = (out / "numpy-quick.md").read_text()
    assert md.startswith("# onnx-cupy benchmark")
    assert _table(md) == _table(stdout)
    if importlib.util.find_spec("matplotlib"):
        assert (out / "numpy-quick.png").stat().st_size > 0
    else:
        assert "plot: skipped (matplotlib is not installed)" in md


@pytest.mark.parametrize("argv, message", [
    (["--backend", "cupy", "--quick"], "backend 'cupy' needs a visible GPU"),
    (["--backend", "emulated"], "use it with --quick"),
])
def test_backend_refused(argv, message, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(backends, "gpu_available", lambda: False)
    assert cli.main(["bench", *argv, "--out", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def _synthetic(backend):
    row = {"case": "Hardmax axis=-1", "dtype": "float32", "shape": [4096, 1000], "ms": 1.25,
           "melem_s": 6553.6, "correct": False, "max_abs_diff_vs_onnxruntime": 1.0,
           "peers": {"onnxruntime": {"ratio": 0.75, "target": 1.0, "met": False},
                     "torch": {"na": "no PyTorch equivalent"}},
           "peak_memory_ratio": 1.5, "peak_memory_met": True,
           "gb_s": 2000.0, "copy_gb_s": 2500.0, "share_of_copy": 0.8}
    return {"header": {"backend": backend}, "peers": ["onnxruntime", "torch"], "rows": [row]}


@pytest.mark.parametrize("backend, cells", [
    ("numpy", ["0.75 >=1 MISS", "n/a", "1.0e+00 WRONG", "1.50 <=2 ok"]),
    ("cupy", ["0.75 >=1 MISS", "n/a", "2000", "2500", "80%"]),
])
def test_table_cells(backend, cells):
    header, body = _table(bench.table(_synthetic(backend)))
    row = [c.strip() for c in body[0].strip("|").split("|")]
    assert len(row) == len(header)
    assert all(c in row for c in cells), row
    assert ("GB/s" in header) == (backend == "cupy")
    assert ("peak mem / (X+Y)" in header) == (backend == "numpy")
