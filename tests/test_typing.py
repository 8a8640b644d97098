"""Type checking: the package passes `mypy --strict` (configured in pyproject.toml), and a type
checker follows the array type through the public functions: NumPy in, numpy.ndarray out."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy is not installed")

ROOT = Path(__file__).resolve().parents[1]
USER_SCRIPT = ROOT / "tests" / "typing" / "user_numpy.py"


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """Run mypy from the project root (its pyproject.toml configuration), with one cache."""
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
        return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args],
                              capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
                              check=False)
    return run


def test_package_is_strictly_typed(mypy):
    res = mypy()   # strict = true, packages = ["onnx_cupy"]
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "Success: no issues found" in res.stdout


def test_numpy_in_gives_numpy_ndarray(mypy):
    res = mypy("--strict", "--follow-imports=silent", str(USER_SCRIPT))
    assert res.returncode == 0, res.stdout
    revealed = re.findall(r'user_numpy\.py:(\d+): note: Revealed type is "([^"]+)"', res.stdout)
    calls = [line.strip() for line in USER_SCRIPT.read_text().splitlines()
             if line.strip().startswith("reveal_type(oc.")]
    assert [c.split("(")[1] for c in calls] == [
        "oc.average_pool", "oc.lp_pool", "oc.max_pool", "oc.max_pool", "oc.global_average_pool",
        "oc.hardmax", "oc.resize", "oc.average_pool", "oc.default_backend"]
    assert len(revealed) == len(calls), res.stdout
    for (_, kind), call in zip(revealed[:-1], calls):
        assert re.fullmatch(r"numpy\.ndarray\[.*numpy\.floating\[.*_32Bit\]\]\]", kind), (call, kind)
    assert revealed[-1][1] == "str"   # default_backend()
    assert "from onnx_cupy.nn.functional import avg_pool2d" in USER_SCRIPT.read_text()


def test_public_modules_are_followed(mypy, tmp_path):
    """A type checker finds the functions of the public modules that re-export interop/."""
    script = tmp_path / "user_modules.py"
    script.write_text("from onnx_cupy.dask import average_pool, resize\n"
                      "from onnx_cupy.nn.functional import avg_pool2d, interpolate\n"
                      "from onnx_cupy.onnx_backend import OnnxCupyBackend, prepare\n"
                      "import onnx_cupy.nn.functional as F\n\n"
                      "reveal_type(F.max_pool2d)\n"
                      "reveal_type(OnnxCupyBackend.run_model)\n")
    res = mypy("--strict", "--follow-imports=silent", str(script))
    assert res.returncode == 0, res.stdout
    assert res.stdout.count("Revealed type is") == 2, res.stdout
    assert "has no attribute" not in res.stdout, res.stdout


def test_non_arrays_are_type_errors(mypy, tmp_path):
    script = tmp_path / "user_list.py"
    script.write_text("import onnx_cupy as oc\n\noc.hardmax([[1.0, 2.0]])\n"
                      "oc.resize('not an array', scales=[2.0])\n")
    res = mypy("--strict", "--follow-imports=silent", str(script))
    assert res.returncode == 1
    assert res.stdout.count('[type-var]') + res.stdout.count('[arg-type]') == 2, res.stdout
