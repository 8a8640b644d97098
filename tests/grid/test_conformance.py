"""ONNX's own node tests of GridSample (18) and AffineGrid (4), run through run_node on every
backend."""
from __future__ import annotations

import pytest
from helpers import node_tests

COUNTS = {"GridSample": 18, "AffineGrid": 4}


@pytest.mark.parametrize("op", COUNTS)
def test_the_node_tests_of_each_operator(op):
    """All of ONNX's node tests that use the operator, as many as listed: the conformance
    filter drops none of them."""
    node_tests.check_every_node_test_runs(op)
    assert len(node_tests.names(op)) == COUNTS[op]


@pytest.mark.parametrize("op, name", [pytest.param(op, name, id=name) for op in COUNTS
                                      for name in node_tests.names(op)])
def test_node_case(op, name, backend):
    node_tests.check_node_case(op, name, backend)
