"""ONNX's own node test cases for the supported operators, run through run_node."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core import execution, extras
from ..interop.nodes import RUNNERS, run_node


@dataclass
class CaseResult:
    op: str
    name: str
    passed: bool
    detail: str = ""


def node_cases(ops: list[str] | None = None) -> list[Any]:
    """ONNX node test cases (onnx.backend.test) whose single node is one of `ops`; NumPy's
    global random state is left as it was."""
    try:
        from onnx.backend.test.loader import load_model_tests
    except ImportError as exc:
        raise extras.missing("onnx-cupy conformance", "onnx", exc) from exc

    wanted = set(ops or RUNNERS)
    state = np.random.get_state()   # the caller's, restored: the case generators reseed it
    np.random.seed(0)               # and draw random inputs from it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases = load_model_tests(kind="node")
    finally:
        np.random.set_state(state)
    return [c for c in cases if len(c.model.graph.node) == 1
            and c.model.graph.node[0].op_type in wanted]


def run_case(case: Any, backend: str) -> CaseResult:
    """Run one node test case on `backend`; compare as onnx's runner does (rtol, atol, shape,
    dtype)."""
    node = case.model.graph.node[0]
    names = [i.name for i in case.model.graph.input]
    result = CaseResult(node.op_type, case.name, True)
    try:
        for inputs, expected in case.data_sets:
            feed = dict(zip(names, inputs))
            args = [execution.to_path(feed[n], backend) if n else None for n in node.input]
            with execution.backend(backend):
                got = run_node(node, args, opset=case.model)
            for g, e in zip(got, expected):
                g = execution.to_host(g)
                if g.dtype != e.dtype or g.shape != e.shape:
                    raise AssertionError(f"got {g.dtype}{g.shape}, expected {e.dtype}{e.shape}")
                np.testing.assert_allclose(g.astype(np.float64) if g.dtype.kind == "f" else g,
                                           e.astype(np.float64) if e.dtype.kind == "f" else e,
                                           rtol=case.rtol, atol=case.atol)
    except Exception as exc:  # noqa: BLE001 (report, do not stop the table)
        result.passed = False
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        result.detail = f"{type(exc).__name__}: {first}"
    return result


def run(backend: str, ops: list[str] | None = None) -> list[CaseResult]:
    return [run_case(c, backend) for c in node_cases(ops)]
