"""ONNX's own node test cases for RoiAlign (MaxRoiPool has none), run through run_node on every
backend."""
from __future__ import annotations

import pytest
from helpers import node_tests


@pytest.mark.parametrize(("op", "some"), [("RoiAlign", True), ("MaxRoiPool", False)])
def test_every_node_test_of_the_operators_runs(op, some):
    """The cases run below are all of ONNX's node tests that use RoiAlign (three) or
    MaxRoiPool (none): the conformance filter drops none of them."""
    node_tests.check_every_node_test_runs(op, some=some)


def test_roi_align_has_its_three_node_tests():
    assert node_tests.names("RoiAlign") == ["test_roialign_aligned_false",
                                            "test_roialign_aligned_true",
                                            "test_roialign_mode_max"]


@pytest.mark.parametrize("name", node_tests.names("RoiAlign"))
def test_node_case(name, backend):
    node_tests.check_node_case("RoiAlign", name, backend)
