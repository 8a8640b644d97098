"""The command line's first-hour answers: `info` says what each path can use (and what is
missing, for what, and how to install it), every command that takes `--backend cupy` says in one
line why the cupy backend cannot run here, `conformance` says when ONNX has no node test for an
operator and aligns its tables."""
from __future__ import annotations

import importlib.metadata
import re
import sys

import pytest
from helpers import fake_install

from onnx_cupy.core import emulator, execution
from onnx_cupy.tools import cli, kernel_report

pytest.importorskip("onnx")

# every command that takes --backend cupy, as run to be refused (bench writes nothing: no --out)
CUPY_COMMANDS = {
    "conformance": ["conformance", "--backend", "cupy"],
    "bench": ["bench", "--backend", "cupy", "--quick"],
    "warmup": ["warmup", "--backend", "cupy"],
}


def _summary(out: str) -> list[str]:
    """The per-operator rows of the conformance summary (after its header)."""
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if re.match(r"operator +passed/total", line)))
    return lines[start:]


def test_conformance_of_an_operator_without_node_tests(capsys):
    """ONNX has no node test for GlobalLpPool: the command says so and succeeds."""
    assert cli.main(["conformance", "--backend", "numpy", "--op", "GlobalLpPool"]) == 0
    rows = _summary(capsys.readouterr().out)
    assert re.fullmatch(r"GlobalLpPool +no node test in onnx \S+", rows[1]), rows
    assert re.fullmatch(r"all +0/0", rows[2]), rows


def test_conformance_tables_are_aligned(capsys):
    assert cli.main(["conformance", "--backend", "numpy", "--op", "GlobalAveragePool",
                     "--op", "Hardmax"]) == 0
    out = capsys.readouterr().out
    rows = _summary(out)
    assert [r.split()[0] for r in rows] == ["operator", "GlobalAveragePool", "Hardmax", "all"]
    second = {len(r) - len(r.split(maxsplit=1)[1]) for r in rows}
    assert len(second) == 1, rows   # the second column starts at one offset in every row
    cases = [line for line in out.splitlines() if line.startswith(("GlobalAveragePool ",
                                                                    "Hardmax "))][:-2]
    assert len(cases) == 9 and all(line.endswith(" pass") for line in cases), cases
    assert len({line.index(line.split()[1]) for line in cases}) == 1, cases


def test_info_names_the_compilers(capsys):
    assert cli.main(["info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (host,) = [line for line in lines if line.startswith("emulated path: ")]
    assert host == (f"emulated path: available ({emulator.compiler_version()}; precompiled shim "
                    f"header: {emulator.shim_status()})")
    (nvrtc,) = [line for line in lines if line.startswith("kernel report: ")]
    assert re.fullmatch(r"kernel report: (available \(NVRTC \d+\.\d+, with(out)? SASS counts.*\)"
                        r"|unavailable: .* is not installed .*)", nvrtc), nvrtc
    if kernel_report.nvdisasm() is not None and "unavailable" not in nvrtc:
        assert "with SASS counts" in nvrtc
    at = lines.index(nvrtc)
    assert [line.split(":")[0] for line in lines[at + 1:at + 4]] == [
        "  cuda-bindings", "  NVRTC", "  nvdisasm"]


def _parser_commands_with_cupy() -> set[str]:
    """The commands whose --backend option offers cupy, read from the parser."""
    parser = cli.parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return {name for name, command in sub.choices.items()
            for action in command._actions if action.dest == "backend"
            and "cupy" in (action.choices or ())}


def test_every_command_with_a_cupy_backend_is_tested():
    assert _parser_commands_with_cupy() == set(CUPY_COMMANDS)


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("command", sorted(CUPY_COMMANDS))
def test_cupy_backend_without_a_gpu_says_the_drivers_error(command, no_gpu, capsys, tmp_path,
                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(CUPY_COMMANDS[command]) == 2
    out, err = capsys.readouterr()
    line = _one_line(err)
    assert line.startswith(f"{command}: backend 'cupy' cannot run here: no usable GPU: "
                           f"{no_gpu}"), line
    assert out == "" and not any(tmp_path.iterdir())


def test_warmup_by_default_without_a_gpu_says_why_and_the_ways_out(no_gpu, capsys):
    assert cli.main(["warmup", "--op", "Resize"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line == (f"warmup: backend 'cupy' cannot run here: no usable GPU: {no_gpu} "
                    f"(--backend emulated warms the emulated path, --dry-run measures the CuPy "
                    f"path's compiles with NVRTC)")


@pytest.mark.parametrize("command", sorted(CUPY_COMMANDS))
def test_cupy_backend_without_cupy_says_what_to_install(command, capsys):
    with execution.cupy_substitute(None):
        assert cli.main(CUPY_COMMANDS[command]) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"{command}: backend 'cupy' cannot run here: CuPy is not "
                           f"installed: pip install "), line
    assert '".[cuda12]"' in line, line


def _info(capsys) -> list[str]:
    assert cli.main(["info"]) == 0
    return capsys.readouterr().out.splitlines()


def _cupy_lines(lines: list[str]) -> list[str]:
    """The cupy path's verdict and the lines under it."""
    at = next(i for i, line in enumerate(lines) if line.startswith("cupy path: "))
    end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("  "))
    return lines[at:end]


def test_info_says_the_drivers_error(no_gpu, capsys):
    lines = _info(capsys)
    assert "default backend: numpy" in lines
    assert _cupy_lines(lines) == [
        f"cupy path: NOT usable: no usable GPU: {no_gpu}",
        "  CuPy: 14.2.0 (14.2 or later needed)",
        f"  GPU: none usable ({no_gpu})",
        "  NVRTC (as CuPy loads it): 12.9",
        f"  CUDA headers (CuPy's compiles include them): {fake_install.HEADERS}",
    ]


def test_info_with_everything_the_cupy_path_needs(monkeypatch, capsys):
    fake_install.headers(monkeypatch)
    with execution.cupy_substitute(fake_install.cupy(devices=1)):
        lines = _info(capsys)
    assert "default backend: cupy" in lines
    cupy = _cupy_lines(lines)
    assert cupy[0] == "cupy path: usable" and "  GPU: 1 visible" in cupy
    assert cupy[-1] == ("  device 0: Fake GPU (compute capability 9.0), CUDA runtime 12090, "
                        "driver 12080")


def test_info_without_nvrtc_says_the_cupy_path_cannot_run(monkeypatch, capsys):
    """A GPU, and CuPy without its [ctk] extra: CuPy finds no NVRTC, so the cupy path is not
    usable, and the default backend is numpy."""
    fake_install.headers(monkeypatch)
    with execution.cupy_substitute(fake_install.cupy(devices=1, nvrtc=False)):
        lines = _info(capsys)
        assert not execution.gpu_available()
    assert "default backend: numpy" in lines
    cupy = _cupy_lines(lines)
    assert cupy[0].startswith("cupy path: NOT usable: NVRTC not found (CuPy compiles every "
                              "kernel with it, and cupy-cuda12x[ctk] brings it): pip "
                              "install "), cupy
    assert '".[cuda12]"' in cupy[0] and ";" not in cupy[0]   # the one problem
    assert "  NVRTC (as CuPy loads it): not found" in cupy


def test_info_without_the_cuda_headers(monkeypatch, capsys):
    fake_install.headers(monkeypatch, None)
    with execution.cupy_substitute(fake_install.cupy(devices=1)):
        cupy = _cupy_lines(_info(capsys))
    assert cupy[0].startswith("cupy path: NOT usable: CUDA headers not found (CuPy includes "
                              "them in every kernel of its own it compiles: the copies, casts "
                              "and fills onnx-cupy's calls use, and cupy-cuda12x[ctk] brings "
                              "them): pip install "), cupy
    assert cupy[0].endswith(", or set CUDA_PATH to a CUDA toolkit")
    assert "  CUDA headers (CuPy's compiles include them): not found" in cupy


@pytest.mark.parametrize("version", ["13.6.0", "14.0.1", "14.1.1"])
def test_info_with_a_cupy_below_the_floor(version, monkeypatch, capsys):
    fake_install.headers(monkeypatch)
    with execution.cupy_substitute(fake_install.cupy(version, devices=1)):
        cupy = _cupy_lines(_info(capsys))
    assert cupy[0].startswith(f"cupy path: NOT usable: CuPy {version} is older than 14.2, the "
                              f"oldest the cupy backend runs on: pip install "), cupy
    assert cupy[1:] == [f"  CuPy: {version}, older than 14.2", "  GPU: 1 visible",
                        f"  NVRTC (as CuPy loads it): not looked for (CuPy {version} is older "
                        f"than 14.2)",
                        f"  CUDA headers (CuPy's compiles include them): not looked for (CuPy "
                        f"{version} is older than 14.2)",
                        "  device 0: Fake GPU (compute capability 9.0), CUDA runtime 12090, "
                        "driver 12080"]


def _report_lines(lines: list[str]) -> list[str]:
    at = next(i for i, line in enumerate(lines) if line.startswith("kernel report: "))
    return lines[at:at + 4]


def test_info_without_cuda_bindings_names_it_and_its_extra(monkeypatch, capsys):
    """NVRTC may be there (CuPy's [ctk] brings the wheel): what the report lacks is
    cuda-bindings, and the line says so, with what it is for and its install."""
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvrtc", None)
    report = _report_lines(_info(capsys))
    assert report[0].startswith("kernel report: unavailable: cuda-bindings is not installed "
                                "(the report calls NVRTC through it): pip install "
                                '"cuda-bindings'), report
    assert '".[kernels]"' in report[0] and "NVRTC is not installed" not in report[0]
    assert report[1] == "  cuda-bindings: not installed"
    try:
        wheel = f"nvidia-cuda-nvrtc-cu12 {importlib.metadata.version('nvidia-cuda-nvrtc-cu12')}"
    except importlib.metadata.PackageNotFoundError:
        wheel = "not installed"
    assert report[2] == f"  NVRTC: {wheel}"


def test_info_without_nvrtc_for_the_report(monkeypatch, capsys):
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")

    def missing():
        raise RuntimeError("Failure finding libnvrtc.so.12")

    monkeypatch.setattr(nvrtc, "nvrtcVersion", missing)
    report = _report_lines(_info(capsys))
    assert report[0].startswith("kernel report: unavailable: NVRTC (nvidia-cuda-nvrtc-cu12) not "
                                "found (the report compiles with it, and cuda-bindings says: "
                                "Failure finding libnvrtc.so.12): pip install "), report
    assert report[2] == "  NVRTC: not found"


def test_info_without_the_disassembler(no_nvdisasm, capsys):
    pytest.importorskip("cuda.bindings.nvrtc")
    report = _report_lines(_info(capsys))
    assert re.fullmatch(r"kernel report: available \(NVRTC \d+\.\d+, without SASS counts: "
                        r"nvdisasm \(nvidia-cuda-nvdisasm\) is not installed \(the SASS counts "
                        r"need it\): pip install .*\)", report[0]), report
    assert report[3] == "  nvdisasm: not installed"


def test_info_without_a_host_compiler(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "")
    monkeypatch.setenv("PATH", str(tmp_path))   # no g++ or c++ to be found
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "emulated path: unavailable: the emulated backend needs a host C++ compiler" in out
