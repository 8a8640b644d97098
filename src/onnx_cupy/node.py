"""Run one ONNX NodeProto of a supported operator."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import opsets

# op_type -> adapter(inputs, attributes, opset) -> output
OPERATORS: dict[str, Callable[..., Any]] = {}


def register(op_type: str, fn: Callable[..., Any]) -> None:
    OPERATORS[op_type] = fn


def _attributes(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def run_node(node: Any, inputs: Sequence[Any], opset: int | None = None) -> list[Any]:
    """Run `node` (an onnx.NodeProto of AveragePool, LpPool, Hardmax or Resize) on `inputs`
    (NumPy or CuPy arrays; None for an omitted optional input). `opset` defaults to the newest
    version of the operator. Returns the list of outputs."""
    if node.op_type not in OPERATORS:
        raise ValueError(f"run_node: unsupported operator {node.op_type!r} "
                         f"(supported: {', '.join(sorted(OPERATORS))})")
    if node.domain not in ("", "ai.onnx"):
        raise ValueError(f"run_node: unsupported domain {node.domain!r}")
    attrs = _attributes(node)
    for k, v in list(attrs.items()):
        if isinstance(v, bytes):
            attrs[k] = v.decode()
    op = node.op_type
    if opset is None:
        opset = max(opsets.ATTRIBUTES[op])
    ver = opsets.version(op, opset)
    opsets.check_given(op, ver, {k: True for k in attrs})
    return [OPERATORS[op](list(inputs), attrs, opset)]


def _single_input(op: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """Adapter for operators with one input X and attributes only."""
    def call(inputs: list[Any], attrs: dict[str, Any], opset: int) -> Any:
        if len(inputs) != 1:
            raise ValueError(f"run_node: {op} takes 1 input, got {len(inputs)}")
        return fn(inputs[0], opset=opset, **attrs)
    return call


def _install() -> None:
    from .ops.hardmax import hardmax
    from .ops.pool import average_pool, lp_pool

    register("AveragePool", _single_input("AveragePool", average_pool))
    register("LpPool", _single_input("LpPool", lp_pool))
    register("Hardmax", _single_input("Hardmax", hardmax))


_install()
