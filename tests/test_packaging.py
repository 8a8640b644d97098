"""The sdist and the wheel ship the kernel sources as real files under onnx_cupy/kernels/, the
license and the typing marker; the build warns of nothing deprecated; the installed package
finds its kernels; the wheel holds the library and the commands users run, not the test suite's
doubles or configuration catalogues; no module of the package is over 800 lines."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from onnx_cupy.core import loader

ROOT = Path(__file__).resolve().parents[1]
KERNEL_FILES = sorted(p.name for p in (ROOT / "kernels").iterdir()
                      if p.suffix == ".cu"
                      or p.name in ("common.cuh", "host_shim.h", "host_check.h"))


MAX_LINES = 800


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, str]:
    """(sdist, wheel built from that sdist, the build's output): `python -m build`, isolated, on
    a copy of the project, so the working tree gets no build/ or egg-info."""
    project = tmp_path_factory.mktemp("project")
    shutil.copytree(ROOT, project, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "__pycache__", "*.egg-info", ".pytest_cache", ".venv"))
    assert (project / "src" / "onnx_cupy" / "kernels").is_symlink()
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(project)],
                         capture_output=True, text=True, timeout=600, check=False)
    log = res.stdout + res.stderr
    assert res.returncode == 0, f"build failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel, log


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[1]


@pytest.mark.slow   # builds a wheel
def test_build_warns_of_nothing_deprecated(built):
    log = built[2]
    assert not [line for line in log.splitlines() if "deprecat" in line.lower()], log[-4000:]


@pytest.mark.slow   # builds a wheel
def test_wheel_has_license_and_typing_marker(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "onnx_cupy/py.typed" in names
        (license_file,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert zf.read(license_file) == (ROOT / "LICENSE").read_bytes()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = zf.read(metadata).decode()
    assert "License-Expression: Apache-2.0" in text and "License-File: LICENSE" in text


@pytest.mark.slow   # builds a wheel
def test_sdist_has_license_and_typing_marker(built):
    with tarfile.open(built[0]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"LICENSE", "src/onnx_cupy/py.typed", "README.md", "pyproject.toml"} <= names


def test_license_is_the_apache_2_text():
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply" in text
    assert len(text.splitlines()) == 202


def test_kernel_dir_of_the_source_tree():
    assert "pool.cu" in KERNEL_FILES
    assert (loader.KERNEL_DIR / "pool.cu").is_file()
    assert {"common.cuh", "host_shim.h"} <= {p.name for p in loader.KERNEL_DIR.iterdir()}


@pytest.mark.slow   # builds a wheel
def test_wheel_has_kernel_sources(wheel):
    with zipfile.ZipFile(wheel) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        for name in KERNEL_FILES:
            info = infos.get(f"onnx_cupy/kernels/{name}")
            assert info is not None, f"onnx_cupy/kernels/{name} missing from {wheel.name}"
            assert not stat.S_ISLNK(info.external_attr >> 16), f"{name} is stored as a symlink"
            assert zf.read(info) == (ROOT / "kernels" / name).read_bytes()


@pytest.mark.slow   # builds a wheel
def test_installed_wheel_loads_its_kernels(wheel, tmp_path):
    """Unpacked as an install would lay it out, the package reads kernels from its own directory."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp_path)
    code = ("import onnx_cupy, onnx_cupy.core.loader as L; print(onnx_cupy.__file__); "
            "print(L.KERNEL_DIR); assert '#line 1 \"common.cuh\"' in L.source('pool')")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    package_file, kernel_dir = res.stdout.split()
    assert Path(package_file).resolve().is_relative_to(tmp_path.resolve())
    assert Path(kernel_dir) == (tmp_path / "onnx_cupy" / "kernels").resolve()


@pytest.mark.slow   # builds a wheel
def test_wheel_holds_no_test_double_or_catalogue(wheel):
    """The wheel's modules are the package's own (src/onnx_cupy); none of the test suite's
    configuration catalogues (tests/cases/) or doubles (tests/helpers/fake_*) is among them."""
    with zipfile.ZipFile(wheel) as zf:
        modules = {n for n in zf.namelist() if n.endswith(".py")}
    source = {p.relative_to(ROOT / "src").as_posix()
              for p in (ROOT / "src" / "onnx_cupy").rglob("*.py")}
    assert modules <= source, sorted(modules - source)
    catalogue = {p.read_bytes() for p in (ROOT / "tests" / "cases").glob("*.py")}
    with zipfile.ZipFile(wheel) as zf:
        assert not [n for n in modules if "/cases/" in n or zf.read(n) in catalogue
                    or Path(n).name.startswith(("fake", "test_", "conftest"))]


def test_no_module_is_over_800_lines():
    lengths = {p.relative_to(ROOT / "src" / "onnx_cupy").as_posix():
               len(p.read_text(encoding="utf-8").splitlines())
               for p in (ROOT / "src" / "onnx_cupy").rglob("*.py")}
    longer = {name for name, n in lengths.items() if n > MAX_LINES}
    assert not longer, {n: lengths[n] for n in sorted(longer)}
