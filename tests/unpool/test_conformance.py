"""ONNX's own node test cases for MaxUnpool, run through run_node on every backend."""
from __future__ import annotations

import pytest
from helpers import node_tests

OP = "MaxUnpool"


def test_every_node_test_of_the_operator_runs():
    """The cases run below are all of ONNX's node tests that use MaxUnpool: the conformance
    filter (single-node graphs of a supported operator) drops none of them."""
    node_tests.check_every_node_test_runs(OP)


@pytest.mark.parametrize("name", node_tests.names(OP))
def test_node_case(name, backend):
    node_tests.check_node_case(OP, name, backend)
