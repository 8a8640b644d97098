"""ONNX's own node test cases for AveragePool and LpPool, run through run_node on every backend."""
from __future__ import annotations

import pytest
from helpers.node_tests import check_every_node_test_runs, check_node_case

from onnx_cupy.tools import conformance

CASES = {op: conformance.node_cases([op]) for op in ("AveragePool", "LpPool")}


@pytest.mark.parametrize("op", CASES)
def test_every_node_test_of_the_operator_runs(op):
    """The cases run below are all of ONNX's node tests that use the operator: the conformance
    filter (single-node graphs of a supported operator) drops none of them."""
    check_every_node_test_runs(op, CASES[op])


@pytest.mark.parametrize("case", CASES["AveragePool"] + CASES["LpPool"], ids=lambda c: c.name)
def test_node_case(case, backend):
    check_node_case(case, backend)
