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
TORCH_SCRIPT = ROOT / "tests" / "typing" / "user_torch.py"
TORCH_STUB = ROOT / "tests" / "typing" / "stubs"   # used where torch is absent


@pytest.fixture(scope="module")
def mypy(tmp_path_factory):
    """Run mypy from the project root (its pyproject.toml configuration), with one cache."""
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*args: str, path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "MYPYPATH": os.pathsep.join(map(str, (ROOT / "src", *path)))}
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


def test_tensor_in_gives_tensor_out(mypy):
    """A type checker sees torch.Tensor in, torch.Tensor out (a pair with return_indices), and
    NumPy arrays keep their type with int64 indices; the package checks clean against torch's
    Tensor type too (imports followed: the overloads' Tensor and array variants do not clash).
    Against the installed torch where there is one, else a stub of its few types."""
    try:
        import torch  # noqa: F401
        path: tuple[Path, ...] = ()
    except ImportError:
        path = (TORCH_STUB,)
    res = mypy("--strict", str(TORCH_SCRIPT), path=path)
    assert res.returncode == 0, res.stdout
    revealed = [kind for _, kind in re.findall(
        r'user_torch\.py:(\d+): note: Revealed type is "([^"]+)"', res.stdout)]
    int64 = r"numpy\.ndarray\[.*numpy\.signedinteger\[.*_64Bit\]\]\]"
    assert revealed[:4] == ["torch.Tensor"] * 4, revealed
    assert revealed[4:6] == ["tuple[torch.Tensor, torch.Tensor]"] * 2, revealed
    assert re.fullmatch(rf"tuple\[numpy\.ndarray\[.*_32Bit\]\]\], {int64}\]", revealed[6])
    assert re.fullmatch(rf"tuple\[numpy\.ndarray\[.*float64\]\], {int64}\]", revealed[7])
    assert len(revealed) == 8
