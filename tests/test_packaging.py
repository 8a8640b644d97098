"""The wheel ships the kernel sources as real files under onnx_cupy/kernels/, and the installed
package finds them."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from onnx_cupy.core import loader

pytestmark = pytest.mark.slow  # builds a wheel

ROOT = Path(__file__).resolve().parents[1]
KERNEL_FILES = sorted(p.name for p in (ROOT / "kernels").iterdir()
                      if p.suffix == ".cu" or p.name in ("common.cuh", "host_shim.h"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built (`python -m build --wheel`, isolated) from a copy of the project, so the
    working tree gets no build/ or egg-info."""
    project = tmp_path_factory.mktemp("project")
    shutil.copytree(ROOT, project, symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "__pycache__", "*.egg-info", ".pytest_cache"))
    assert (project / "src" / "onnx_cupy" / "kernels").is_symlink()
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out),
                          str(project)], capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, f"wheel build failed:\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    (built,) = out.glob("*.whl")
    return built


def test_kernel_dir_of_the_source_tree():
    assert "pool.cu" in KERNEL_FILES
    assert (loader.KERNEL_DIR / "pool.cu").is_file()
    assert {"common.cuh", "host_shim.h"} <= {p.name for p in loader.KERNEL_DIR.iterdir()}


def test_wheel_has_kernel_sources(wheel):
    with zipfile.ZipFile(wheel) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        for name in KERNEL_FILES:
            info = infos.get(f"onnx_cupy/kernels/{name}")
            assert info is not None, f"onnx_cupy/kernels/{name} missing from {wheel.name}"
            assert not stat.S_ISLNK(info.external_attr >> 16), f"{name} is stored as a symlink"
            assert zf.read(info) == (ROOT / "kernels" / name).read_bytes()


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
