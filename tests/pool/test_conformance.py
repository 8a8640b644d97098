"""ONNX's own node test cases for AveragePool and LpPool, run through run_node on every backend."""
from __future__ import annotations

import pytest

from onnx_cupy.tools import conformance

CASES = {op: conformance.node_cases([op]) for op in ("AveragePool", "LpPool")}


def test_case_counts():
    assert len(CASES["AveragePool"]) == 20
    assert len(CASES["LpPool"]) == 8


@pytest.mark.parametrize("case", CASES["AveragePool"] + CASES["LpPool"], ids=lambda c: c.name)
def test_node_case(case, backend):
    result = conformance.run_case(case, backend)
    assert result.passed, f"{result.name} on {backend}: {result.detail}"
