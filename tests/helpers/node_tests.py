"""ONNX's own node tests, for the test modules: their names from a listing (node_tests.json, so
that collecting the suite builds no case), the cases loaded once per session on first use, and
ONNX's whole corpus listed independently of onnx_cupy.tools.conformance (which filters it to
the single-node cases it can run), so that tests can check that filter drops none.

`python tests/helpers/node_tests.py` rewrites the listing from the installed onnx (a test fails,
saying so, while it differs)."""
from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path
from typing import Any

LISTING = Path(__file__).with_name("node_tests.json")
OPS = ("AveragePool", "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "Hardmax", "LpPool",
       "MaxPool", "MaxUnpool", "Resize", "Upsample", "GridSample", "AffineGrid", "RoiAlign",
       "MaxRoiPool")


@functools.cache
def _listing() -> dict[str, Any]:
    return json.loads(LISTING.read_text(encoding="utf-8"))


def names(op: str) -> list[str]:
    """The names of the node tests of `op` that conformance runs, as listed (no case built)."""
    return list(_listing()["ops"][op])


@functools.cache
def _corpus() -> tuple[Any, ...]:
    """Every ONNX node test case (ONNX builds them in memory, once per process)."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(load_model_tests(kind="node"))


@functools.cache
def cases(op: str) -> dict[str, Any]:
    """The node test cases of `op` that conformance runs, by name (loaded on first use)."""
    from onnx_cupy.tools import conformance

    return {case.name: case for case in conformance.node_cases([op])}


def names_using(op: str) -> set[str]:
    """The names of every ONNX node test whose graph has a node of type `op`."""
    return {c.name for c in _corpus() if any(n.op_type == op for n in c.model.graph.node)}


def _stale() -> str:
    import onnx

    return (f"{LISTING.name} (written with onnx {_listing()['onnx']}) differs from the node "
            f"tests of the installed onnx {onnx.__version__}: run python "
            f"{Path(__file__).relative_to(Path(__file__).parents[2])}")


def check_every_node_test_runs(op: str, some: bool = True) -> None:
    """The node cases conformance runs for `op` are all of ONNX's node tests that use `op` (at
    least one where `some`): its filter (single-node graphs of a supported operator) drops none;
    and they are the listed ones, whose names the tests are collected by."""
    loaded, expected = set(cases(op)), names_using(op)
    assert loaded == expected and (loaded or not some), sorted(loaded ^ expected)
    assert set(names(op)) == loaded, _stale()


def check_node_case(op: str, name: str, backend: str) -> None:
    """The node test case `name` of `op` passes on `backend` (onnx's runner's tolerances)."""
    from onnx_cupy.tools import conformance

    case = cases(op).get(name)
    assert case is not None, f"{name}: no such node test of {op}; {_stale()}"
    result = conformance.run_case(case, backend)
    assert result.passed, f"{result.name} on {backend}: {result.detail}"


def write_listing() -> None:
    """Rewrite the listing from the installed onnx."""
    import onnx

    listing = {"onnx": onnx.__version__, "ops": {op: sorted(cases(op)) for op in OPS}}
    LISTING.write_text(json.dumps(listing, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_listing()
    print(f"wrote {LISTING}")
