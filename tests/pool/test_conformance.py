"""ONNX's own node test cases for AveragePool and LpPool, run through run_node on every backend."""
from __future__ import annotations

import pytest
from helpers import node_tests

OPS = ("AveragePool", "LpPool")


@pytest.mark.parametrize("op", OPS)
def test_every_node_test_of_the_operator_runs(op):
    """The cases run below are all of ONNX's node tests that use the operator: the conformance
    filter (single-node graphs of a supported operator) drops none of them."""
    node_tests.check_every_node_test_runs(op)


@pytest.mark.parametrize("op, name", [pytest.param(op, name, id=name) for op in OPS
                                      for name in node_tests.names(op)])
def test_node_case(op, name, backend):
    node_tests.check_node_case(op, name, backend)
