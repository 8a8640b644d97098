"""`import onnx_cupy` loads the public functions and what they need, and nothing else: not the
emulator (g++ builds), not the tools (bench, kernel report, command line), not the optional
integrations, and none of their third-party modules."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ("onnx_cupy.core.", "onnx_cupy.pool.", "onnx_cupy.resize.", "onnx_cupy.hardmax.",
           "onnx_cupy.elementwise.",
           "onnx_cupy.unpool.", "onnx_cupy.grid.", "onnx_cupy.roi.", "onnx_cupy.interop.nodes",
           "onnx_cupy.interop.vjp")
NOT_LOADED = ("onnx_cupy.core.emulator", "onnx_cupy.tools", "onnx_cupy.interop.dask",
              "onnx_cupy.interop.onnx_backend", "onnx_cupy.dask", "onnx_cupy.onnx_backend")
THIRD_PARTY = ("onnx", "onnxruntime", "dask", "matplotlib", "torch", "cupy")


def _modules_after(code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    script = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", script],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_import_loads_only_the_operators():
    modules = _modules_after("import onnx_cupy")
    ours = [m for m in modules if m.split(".")[0] == "onnx_cupy"]
    assert {"onnx_cupy.pool.api", "onnx_cupy.resize.api", "onnx_cupy.hardmax.api",
            "onnx_cupy.grid.api", "onnx_cupy.core.execution"} <= set(ours)
    assert all(m == "onnx_cupy" or m.startswith(ALLOWED) or m.count(".") == 1 for m in ours), ours
    assert not [m for m in ours if m.startswith(NOT_LOADED)], ours
    assert not [m for m in modules if m.split(".")[0] in THIRD_PARTY]


def test_emulated_path_loads_the_emulator_when_used():
    modules = _modules_after(
        "import numpy as np, onnx_cupy as oc\n"
        "with oc.backend('emulated'):\n"
        "    oc.hardmax(np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32))")
    assert "onnx_cupy.core.emulator" in modules
    assert not [m for m in modules if m.startswith("onnx_cupy.tools")]


PUBLIC_MODULES = {"onnx_cupy.dask": "onnx_cupy.interop.dask",
                  "onnx_cupy.onnx_backend": "onnx_cupy.interop.onnx_backend",
                  "onnx_cupy.nn.functional": "onnx_cupy.interop.functional"}


_DESCRIBE = """
import importlib, inspect, json, sys
found = {}
for public, implementation in %r:
    module, source = importlib.import_module(public), importlib.import_module(implementation)
    defined = sorted(n for n, v in vars(source).items() if not n.startswith("_") and
                     (inspect.isfunction(v) or inspect.isclass(v))
                     and v.__module__ == source.__name__)
    found[public] = {"registered": sys.modules[public].__name__, "file": module.__file__,
                     "all": sorted(module.__all__), "doc": module.__doc__ == source.__doc__,
                     "same": sorted(n for n in module.__all__
                                    if getattr(module, n) is getattr(source, n)),
                     "defined": defined}
print(json.dumps(found))
"""


def test_public_modules_are_real_modules():
    """onnx_cupy.dask, .onnx_backend and .nn.functional are modules of their own that re-export
    every public function and class of their interop/ module (explicit imports, `__all__`, the
    same objects and docstring): no module replaces itself in sys.modules."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    res = subprocess.run([sys.executable, "-c", _DESCRIBE % sorted(PUBLIC_MODULES.items())],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    for public, found in json.loads(res.stdout).items():
        assert found["registered"] == public, found
        assert found["file"].endswith(public.replace(".", "/") + ".py"), found
        assert found["all"] == found["same"] and found["doc"], found
        assert set(found["defined"]) <= set(found["all"]), found
    sources = [p for p in (ROOT / "src").rglob("*.py") if "sys.modules[" in p.read_text()]
    assert not sources, sources
