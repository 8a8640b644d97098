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
