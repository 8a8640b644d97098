"""Type checking: the package passes `mypy --strict` (configured in pyproject.toml), and a type
checker follows the array type through the public functions: NumPy in, numpy.ndarray out."""
from __future__ import annotations

import importlib
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


# What mypy writes for NumPy scalar types, as the scripts' `# reveals:` comments name them
_SCALARS = {"floating": "float", "signedinteger": "int", "unsignedinteger": "uint"}


def _short(revealed: str) -> str:
    """A revealed type as the scripts' comments write it: `ndarray[float32]` for a NumPy array
    of any shape and that dtype, a NamedTuple by its class, torch's Tensor by its public name
    (the installed torch defines it in torch._tensor)."""
    text = re.sub(r"numpy\._typing\.(_nbit_base\.)?", "", revealed)   # older numpy: no _nbit_base
    text = text.replace("torch._tensor.Tensor", "torch.Tensor")
    text = re.sub(r"numpy\.(floating|signedinteger|unsignedinteger)\[_(\d+)Bit\]",
                  lambda m: f"{_SCALARS[m[1]]}{m[2]}", text)
    text = re.sub(r"numpy\.dtype\[numpy\.(\w+)\]", r"numpy.dtype[\1]", text)
    text = re.sub(r"numpy\.ndarray\[(tuple\[[^\[\]]*\]|Any), numpy\.dtype\[(\w+)\]\]",
                  r"ndarray[\2]", text)
    return re.sub(r"tuple\[[^=]*, fallback=[\w.]*?(\w+)\]", r"\1", text)


def _check_reveals(res: subprocess.CompletedProcess[str], script: Path) -> list[str]:
    """Each `reveal_type(...)  # reveals: T` line of `script` revealed as T (after `_short`);
    the revealed calls' source, in order."""
    assert res.returncode == 0, res.stdout
    lines = script.read_text().splitlines()
    revealed = {int(n): kind for n, kind in re.findall(
        rf'{script.name}:(\d+): note: Revealed type is "([^"]+)"', res.stdout)}
    wanted = {i: line.partition("# reveals: ")[2].strip() for i, line in enumerate(lines, 1)
              if line.startswith(("reveal_type(", "    reveal_type("))}
    assert sorted(revealed) == sorted(wanted), (sorted(revealed), sorted(wanted))
    for n, kind in revealed.items():
        assert wanted[n] and _short(kind) == wanted[n], (lines[n - 1], kind)
    return [lines[n - 1].strip() for n in sorted(wanted)]


def _revealed_names(calls: list[str], alias: str) -> set[str]:
    """The names of module `alias` that the revealed expressions use (`oc.max_pool(...)`)."""
    return {name for call in calls for name in re.findall(rf"\b{alias}\.(\w+)", call)}


# The public modules and what user_numpy.py imports them as
PUBLIC = {"oc": "onnx_cupy", "F": "onnx_cupy.nn.functional", "ocd": "onnx_cupy.dask",
          "ob": "onnx_cupy.onnx_backend", "oco": "onnx_cupy.ops"}


def test_short_names_of_revealed_types():
    assert _short("numpy.ndarray[tuple[Any, ...], numpy.dtype[numpy.floating["
                  "numpy._typing._nbit_base._16Bit]]]") == "ndarray[float16]"
    assert _short("tuple[numpy.ndarray[tuple[int, int], numpy.dtype[numpy.float64]], "
                  "numpy.ndarray[tuple[Any, ...], numpy.dtype[numpy.signedinteger["
                  "numpy._typing._nbit_base._64Bit]]]]") == \
        "tuple[ndarray[float64], ndarray[int64]]"
    assert _short("list[tuple[a.B, tuple[str, ...], float | None, fallback=x.y.Warmed]]") == \
        "list[Warmed]"
    assert _short("numpy.ndarray[tuple[Any, ...], numpy.dtype[Any]]") == "ndarray[Any]"
    assert _short("numpy.ndarray[Any, numpy.dtype[numpy.floating[numpy._typing._32Bit]]]") == \
        "ndarray[float32]"   # numpy before 2.2 writes shapes as Any


def test_numpy_in_gives_numpy_ndarray(mypy):
    """Every public function on NumPy arrays: the input's array type and dtype out, int64
    Indices beside Y, dask arrays for dask arrays, NumPy outputs from the ONNX backend."""
    res = mypy("--strict", "--follow-imports=silent", str(USER_SCRIPT))
    calls = _check_reveals(res, USER_SCRIPT)
    assert len(calls) >= 60, len(calls)
    text = USER_SCRIPT.read_text()
    assert "m, idx = oc.max_pool(x, kernel_shape=[2, 2], return_indices=True)" in text
    assert "reveal_type(idx)  # reveals: ndarray[int64]" in text


@pytest.mark.parametrize("alias", PUBLIC)
def test_every_export_is_revealed(alias):
    """A new export fails here until user_numpy.py calls it and reveals the result's type."""
    calls = [line for line in USER_SCRIPT.read_text().splitlines()
             if line.lstrip().startswith("reveal_type(")]
    module = importlib.import_module(PUBLIC[alias])
    assert f"import {PUBLIC[alias]} as {alias}" in USER_SCRIPT.read_text() or \
        f"import {PUBLIC[alias].rpartition('.')[2]} as {alias}" in USER_SCRIPT.read_text()
    missing = sorted(set(module.__all__) - _revealed_names(calls, alias))
    assert not missing, f"{PUBLIC[alias]}: no reveal_type in {USER_SCRIPT.name} for {missing}"


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
    """A type checker sees torch.Tensor in, torch.Tensor out for every function of
    onnx_cupy.nn.functional (a pair with return_indices), and NumPy arrays keep their type with
    int64 indices; the package checks clean against torch's Tensor type too (imports followed:
    the overloads' Tensor and array variants do not clash). Against the installed torch where
    there is one, else a stub of its few types."""
    try:
        import torch  # noqa: F401
        path: tuple[Path, ...] = ()
    except ImportError:
        path = (TORCH_STUB,)
    res = mypy("--strict", str(TORCH_SCRIPT), path=path)
    calls = _check_reveals(res, TORCH_SCRIPT)
    functional = importlib.import_module("onnx_cupy.nn.functional")
    on_tensors = [c for c in calls if "# reveals: " in c and "ndarray" not in c]
    assert set(functional.__all__) <= _revealed_names(on_tensors, "F"), \
        sorted(set(functional.__all__) - _revealed_names(on_tensors, "F"))
    assert sum("tuple[torch.Tensor, torch.Tensor]" in c for c in calls) >= 4
