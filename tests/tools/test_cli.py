"""The command line's first-hour answers: `info` says what each path can use, `conformance` says
when ONNX has no node test for an operator and aligns its tables."""
from __future__ import annotations

import re

import pytest

from onnx_cupy.core import emulator
from onnx_cupy.tools import cli, kernel_report

pytest.importorskip("onnx")


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
                        r"|unavailable: NVRTC is not installed .*)", nvrtc), nvrtc
    if kernel_report.nvdisasm() is not None and "unavailable" not in nvrtc:
        assert "with SASS counts" in nvrtc


def test_info_without_a_host_compiler(capsys, monkeypatch):
    monkeypatch.setenv("CXX", "")
    monkeypatch.setattr(emulator.shutil, "which", lambda name: None)
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert "emulated path: unavailable: the emulated backend needs a host C++ compiler" in out
