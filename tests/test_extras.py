"""A missing optional dependency names the extra that installs it; the command line gives its
version."""
from __future__ import annotations

import importlib
import sys

import pytest

import onnx_cupy
from onnx_cupy.tools import cli


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
                       rf"'{dependency}.*pip install \"onnx-cupy\[{extra}\]\"") as info:
        importlib.import_module(module)
    assert info.value.name.split(".")[0] == dependency


def test_conformance_without_onnx(monkeypatch, capsys):
    _without(monkeypatch, "onnx")
    assert cli.main(["conformance", "--backend", "numpy"]) == 2
    err = capsys.readouterr().err
    assert 'pip install "onnx-cupy[onnx]"' in err and "Traceback" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"onnx-cupy {onnx_cupy.__version__}"
