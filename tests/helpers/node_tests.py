"""ONNX's own node tests, listed independently of onnx_cupy.tools.conformance (which filters
them to the single-node cases it can run), so that tests can check that filter drops none."""
from __future__ import annotations

import warnings


def names_using(op: str) -> set[str]:
    """The names of every ONNX node test whose graph has a node of type `op`."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    return {c.name for c in cases if any(n.op_type == op for n in c.model.graph.node)}


def check_every_node_test_runs(op: str, cases: list, some: bool = True) -> None:
    """The node cases `cases` are all of ONNX's node tests that use `op` (at least one where
    `some`): the conformance filter (single-node graphs of a supported operator) drops none."""
    names = {case.name for case in cases}
    expected = names_using(op)
    assert names == expected and (names or not some), sorted(names ^ expected)


def check_node_case(case: object, backend: str) -> None:
    """One ONNX node test case passes on `backend` (onnx's runner's tolerances)."""
    from onnx_cupy.tools import conformance

    result = conformance.run_case(case, backend)
    assert result.passed, f"{result.name} on {backend}: {result.detail}"
