"""A missing optional dependency names the extra that installs it; the command line gives its
version."""
from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import onnx_cupy
from onnx_cupy.core import extras
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
