"""A missing optional dependency names the extra that installs it; the command line gives its
version."""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import onnx_cupy
from onnx_cupy.core import cupy_path, extras
from onnx_cupy.tools import cli

try:
    import tomllib
except ModuleNotFoundError:   # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def _without(monkeypatch, *modules: str) -> None:
    """Make `modules` unimportable and forget every module that imported them."""
    for name in list(sys.modules):
        if name.split(".")[0] in modules or name.endswith((".dask", ".onnx_backend")):
            monkeypatch.delitem(sys.modules, name)
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("module,dependency,extra", [
    ("onnx_cupy.dask", "dask", "dask"),
    ("onnx_cupy.onnx_backend", "onnx", "onnx"),
])
def test_import_names_the_extra(monkeypatch, module, dependency, extra):
    _without(monkeypatch, dependency)
    with pytest.raises(ModuleNotFoundError, match=rf"{module} needs the optional dependency "
                       rf"'{dependency}.*extra '{extra}'.*pip install \"\.\[{extra}\]\"") as info:
        importlib.import_module(module)
    assert info.value.name.split(".")[0] == dependency
    assert "onnx-cupy[" not in str(info.value)   # not on a package index: no such install


def test_install_hint_names_the_extras_requirements():
    """The hint installs the extra's own requirements, as pyproject.toml lists them."""
    if not extras.requirements("dask"):
        pytest.skip("onnx-cupy is not installed: no metadata lists the extras' requirements")
    with open(ROOT / "pyproject.toml", "rb") as f:
        listed = tomllib.load(f)["project"]["optional-dependencies"]
    for extra in ("dask", "onnx", "kernels"):
        hint = extras.install_hint(extra)
        assert hint.startswith("pip install \"") and f'pip install ".[{extra}]"' in hint, hint
        names = [re.split(r"[<>=\[ ]", r)[0] for r in listed[extra]]
        assert all(f'"{n}' in hint for n in names), (names, hint)


def _optional_dependencies() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def test_cuda12_extra_asks_the_cupy_floor_and_what_its_bfloat16_needs():
    """The floor the library checks (`onnx-cupy info`, the default backend) is the one the
    extra installs; NumPy 2.1.2 and ml_dtypes turn CuPy's bfloat16 on."""
    cuda12 = _optional_dependencies()["cuda12"]
    floor = ".".join(map(str, cupy_path.FLOOR))
    assert cuda12[0] == f"{cupy_path.DISTRIBUTION}[ctk]>={floor}", cuda12
    assert "numpy>=2.1.2" in cuda12 and any(r.startswith("ml_dtypes>=") for r in cuda12)


def test_installation_page_lists_the_cuda12_extra_as_pyproject():
    """docs/installation.md's row of the cuda12 extra gives its requirements as pyproject.toml
    writes them, and the page says the floor in words."""
    page = (ROOT / "docs" / "installation.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if line.startswith("| `cuda12` |")]
    assert re.findall(r"`([^`]+)`", row.split("|")[2]) == _optional_dependencies()["cuda12"]
    floor = ".".join(map(str, cupy_path.FLOOR))
    assert f"It needs CuPy {floor} or later" in page


def test_conformance_without_onnx(monkeypatch, capsys):
    _without(monkeypatch, "onnx")
    assert cli.main(["conformance", "--backend", "numpy"]) == 2
    err = capsys.readouterr().err
    assert 'pip install ".[onnx]"' in err and "Traceback" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"onnx-cupy {onnx_cupy.__version__}"
