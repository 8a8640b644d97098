"""ONNX nodes: run one NodeProto of a supported operator through its public function."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..core import calls, opsets
from ..core.attributes import is_int
from ..grid import api as grid_api
from ..hardmax import api as hardmax_api
from ..pool import api as pool_api
from ..resize import api as resize_api
from ..roi import api as roi_api
from ..unpool import api as unpool_api

if TYPE_CHECKING:
    from onnx import ModelProto

# runner(inputs, attributes, opset, output names of the node) -> the node's outputs
NodeRunner = Callable[[list[Any], dict[str, Any], int, Sequence[str]], list[Any]]
DEFAULT_DOMAINS = ("", "ai.onnx")


def _attributes(node: Any) -> dict[str, Any]:
    """The node's attributes by name, STRINGs decoded as UTF-8: a ValueError names an
    attribute given twice, one of undefined type and a string that is not UTF-8."""
    from onnx import AttributeProto, helper

    attrs: dict[str, Any] = {}
    for a in node.attribute:
        if a.name in attrs:
            raise ValueError(f"run_node: {node.op_type} node has the attribute '{a.name}' more "
                             f"than once")
        if a.type == AttributeProto.UNDEFINED:
            raise ValueError(f"run_node: {node.op_type} node's attribute '{a.name}' has an "
                             f"undefined type (AttributeProto.type UNDEFINED)")
        value = helper.get_attribute_value(a)
        if isinstance(value, bytes):
            try:
                value = value.decode()
            except UnicodeDecodeError as exc:
                raise ValueError(f"run_node: {node.op_type} node's STRING attribute "
                                 f"'{a.name}' is not UTF-8 text: {value!r}") from exc
        attrs[a.name] = value
    return attrs


def _check_schema(node: Any, op: str, opset: int) -> None:
    """As onnx.checker checks a node against the operator version in force at `opset`: each
    attribute of the type the version defines (where it defines it), the output count within
    its bounds; a ValueError names what differs. Opsets that no version of the
    operator covers are left to the operator's own check."""
    from onnx import AttributeProto, defs

    try:
        schema = defs.get_schema(op, opset, "")
    except defs.SchemaError:
        return
    at = f"{op}-{schema.since_version} (in force at opset {opset})"
    for a in node.attribute:
        spec = schema.attributes.get(a.name)
        given = AttributeProto.AttributeType.Name(a.type)
        if spec is not None and spec.type != getattr(defs.OpSchema.AttrType, given, None):
            raise ValueError(f"run_node: attribute '{a.name}' of {at} is of type "
                             f"{str(spec.type).rpartition('.')[2]}, got {given}")
    # (inputs: each runner counts them; MaxPool's runner its Indices output too)
    low, high = schema.min_output, 2 if op == "MaxPool" else schema.max_output
    if not low <= len(node.output) <= high:
        bounds = f"{low} output" if low == high == 1 else f"{low} to {high} outputs"
        raise ValueError(f"run_node: {at} has {bounds}, the node names {len(node.output)}: "
                         f"{list(node.output)}")


def default_opset(model: ModelProto) -> int:
    """The opset version that `model` imports for the default domain."""
    for o in model.opset_import:
        if o.domain in DEFAULT_DOMAINS:
            return o.version
    raise ValueError("model imports no opset of the default domain ('' or 'ai.onnx')")


def _align(op: str, names: Sequence[str], inputs: Sequence[Any]) -> list[Any]:
    """`inputs` by position in node.input: an empty name is an omitted input (None), trailing
    omitted inputs may be absent; trailing Nones are dropped."""
    if not isinstance(inputs, Sequence) or isinstance(inputs, (str, bytes)):  # an array is none
        raise TypeError(f"run_node: inputs must be a list or tuple of arrays, one per input of "
                        f"the {op} node, got {type(inputs).__name__}")
    args = list(inputs) + [None] * (len(names) - len(inputs))
    for i, name in enumerate(names):
        if not name and args[i] is not None:
            raise ValueError(f"run_node: {op} input {i} is omitted in the node (empty name) "
                             f"but an array was given at that position")
    while args and args[-1] is None:
        args.pop()
    return args


def _check_node(node: Any) -> None:
    if not all(hasattr(node, field) for field in ("op_type", "domain", "attribute", "input")):
        raise TypeError(f"run_node: node must be an onnx.NodeProto, got {type(node).__name__}")


_NODES = calls.Cache("run_node")


def prepared_node(node: Any, opset: int | ModelProto | None = None
                  ) -> Callable[[Sequence[Any]], list[Any]]:
    """`prepare_node(node, opset)`, kept per node (its serialized bytes) and opset: a repeated
    `run_node` of an equal node reads its attributes once."""
    _check_node(node)
    try:
        key = (node.SerializeToString(), calls.frozen(opset))
    except calls.Unkeyed:   # an opset given as a model
        return prepare_node(node, opset)
    return _NODES.get(key) or _NODES.put(key, prepare_node(node, opset))


def prepare_node(node: Any, opset: int | ModelProto | None = None
                 ) -> Callable[[Sequence[Any]], list[Any]]:
    """Validate `node` (operator, domain, opset, attributes) once and return a function that runs
    it on a list of inputs, as `run_node` does."""
    _check_node(node)
    if node.op_type not in RUNNERS:
        raise ValueError(f"run_node: unsupported operator {node.op_type!r} "
                         f"(supported: {', '.join(sorted(RUNNERS))})")
    if node.domain not in DEFAULT_DOMAINS:
        raise ValueError(f"run_node: unsupported domain {node.domain!r}")
    attrs = _attributes(node)
    op = node.op_type
    if opset is None:
        opset = max(opsets.ATTRIBUTES[op])
    elif not is_int(opset):
        from onnx import ModelProto

        if isinstance(opset, ModelProto):
            opset = default_opset(opset)
    opsets.check_given(op, opset, {k: True for k in attrs})
    if is_int(opset):
        _check_schema(node, op, int(opset))
    fn, names, outputs = RUNNERS[op], list(node.input), list(node.output)
    return lambda inputs: fn(_align(op, names, inputs), attrs, opset, outputs)


def run_node(node: Any, inputs: Sequence[Any], opset: int | ModelProto | None = None
             ) -> list[Any]:
    """Run one ONNX node of AveragePool, LpPool, MaxPool, the global pools, MaxUnpool, Hardmax,
    Resize, Upsample, GridSample, AffineGrid, RoiAlign or MaxRoiPool on NumPy or CuPy arrays.

    Parameters
    ----------
    node : onnx.NodeProto
        The node; its attributes are passed as the operator function's keywords.
    inputs : sequence of arrays
        By position in node.input: None, or an empty name in node.input, is an omitted optional
        input; trailing omitted inputs may be left out.
    opset : int or onnx.ModelProto, optional
        The opset (a model: its default-domain opset import); None: the operator's newest version.

    Returns
    -------
    list of arrays
        The node's outputs, on the inputs' path (CuPy in, CuPy out): MaxPool's Indices where
        the node names a second output.

    Raises
    ------
    ValueError
        An unsupported operator or domain, an attribute the version in force does not define, a
        wrong number of inputs, or any error of the operator function.
    TypeError
        A node that is no NodeProto, inputs that are no list or tuple (a single array is not
        one), an opset that is no int or model, or any error of the operator function.

    Examples
    --------
    >>> import numpy as np, onnx, onnx_cupy as oc
    >>> node = onnx.helper.make_node("Hardmax", ["X"], ["Y"], axis=0)
    >>> oc.run_node(node, [np.array([1.0, 5.0, 2.0], dtype=np.float32)], opset=13)[0]
    array([0., 1., 0.], dtype=float32)
    """
    return prepared_node(node, opset)(inputs)


def _single_input(op: str, fn: Callable[..., Any]) -> NodeRunner:
    """Runner of an operator with one input X and attributes only."""
    def call(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
             ) -> list[Any]:
        if len(inputs) != 1:
            raise ValueError(f"run_node: {op} takes 1 input, got {len(inputs)}")
        return [fn(inputs[0], opset=opset, **attrs)]
    return call


def _max_pool(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
              ) -> list[Any]:
    """MaxPool: Y, and Indices where the node names a second output."""
    if len(inputs) != 1:
        raise ValueError(f"run_node: MaxPool takes 1 input, got {len(inputs)}")
    if len(outputs) > 2:
        raise ValueError(f"run_node: MaxPool has at most 2 outputs (Y, Indices), got "
                         f"{len(outputs)}")
    if len(outputs) == 2 and outputs[1]:
        return list(pool_api.max_pool(inputs[0], opset=opset, return_indices=True, **attrs))
    return [pool_api.max_pool(inputs[0], opset=opset, **attrs)]


def _resize(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
            ) -> list[Any]:
    """Resize-10 takes (X, scales); later versions (X, roi, scales, sizes), trailing optional."""
    names = (("X", "scales") if opsets.version("Resize", opset) == 10
             else ("X", "roi", "scales", "sizes"))
    if not 1 <= len(inputs) <= len(names):
        raise ValueError(f"run_node: Resize at opset {opset} takes 1 to {len(names)} inputs "
                         f"({', '.join(names)}), got {len(inputs)}")
    return [resize_api.resize(**dict(zip(names, inputs)), opset=opset, **attrs)]


def _upsample(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
              ) -> list[Any]:
    """Upsample-7 takes X and the attribute scales; Upsample-9 and -10 take (X, scales)."""
    if opsets.version("Upsample", opset) < opsets.BECAME_INPUTS["Upsample", "scales"]:
        if len(inputs) != 1:
            raise ValueError(f"run_node: Upsample at opset {opset} takes 1 input (X; scales is "
                             f"an attribute), got {len(inputs)}")
        if "scales" not in attrs:
            raise ValueError(f"run_node: Upsample at opset {opset} requires the attribute "
                             f"'scales'")
        return [resize_api.upsample(inputs[0], opset=opset, **attrs)]
    if len(inputs) != 2:
        raise ValueError(f"run_node: Upsample at opset {opset} takes 2 inputs (X, scales), got "
                         f"{len(inputs)}")
    return [resize_api.upsample(inputs[0], inputs[1], opset=opset, **attrs)]


def _max_unpool(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
                ) -> list[Any]:
    """MaxUnpool takes (X, I, output_shape), the last optional."""
    if not 2 <= len(inputs) <= 3:
        raise ValueError(f"run_node: MaxUnpool takes 2 or 3 inputs (X, I, output_shape), got "
                         f"{len(inputs)}")
    return [unpool_api.max_unpool(*inputs, opset=opset, **attrs)]
def _two_inputs(op: str, names: tuple[str, str], fn: Callable[..., Any]) -> NodeRunner:
    """Runner of an operator with two inputs, both required, and attributes."""
    def call(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
             ) -> list[Any]:
        if len(inputs) != 2 or any(a is None for a in inputs):
            raise ValueError(f"run_node: {op} takes 2 inputs ({', '.join(names)}), got "
                             f"{sum(a is not None for a in inputs)}")
        return [fn(*inputs, opset=opset, **attrs)]
    return call


def _roi_align(inputs: list[Any], attrs: dict[str, Any], opset: int, outputs: Sequence[str]
               ) -> list[Any]:
    """RoiAlign takes (X, rois, batch_indices), all required."""
    if len(inputs) != 3 or any(a is None for a in inputs):
        raise ValueError(f"run_node: RoiAlign takes 3 inputs (X, rois, batch_indices), got "
                         f"{sum(a is not None for a in inputs)}")
    return [roi_api.roi_align(*inputs, opset=opset, **attrs)]


# op_type -> runner(inputs, attributes, opset) -> output
RUNNERS: dict[str, NodeRunner] = {
    "AveragePool": _single_input("AveragePool", pool_api.average_pool),
    "LpPool": _single_input("LpPool", pool_api.lp_pool),
    "MaxPool": _max_pool,
    "GlobalAveragePool": _single_input("GlobalAveragePool", pool_api.global_average_pool),
    "GlobalLpPool": _single_input("GlobalLpPool", pool_api.global_lp_pool),
    "GlobalMaxPool": _single_input("GlobalMaxPool", pool_api.global_max_pool),
    "Hardmax": _single_input("Hardmax", hardmax_api.hardmax),
    "Resize": _resize,
    "Upsample": _upsample,
    "MaxUnpool": _max_unpool,
    "GridSample": _two_inputs("GridSample", ("X", "grid"), grid_api.grid_sample),
    "AffineGrid": _two_inputs("AffineGrid", ("theta", "size"), grid_api.affine_grid),
    "RoiAlign": _roi_align,
    "MaxRoiPool": _two_inputs("MaxRoiPool", ("X", "rois"), roi_api.max_roi_pool),
}
