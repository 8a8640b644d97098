"""An onnx.backend.base.Backend for models made only of the operators onnx-cupy runs (AveragePool,
LpPool, MaxPool, the global pools, MaxUnpool, Hardmax, Resize, Upsample, GridSample, AffineGrid,
RoiAlign, MaxRoiPool) and Identity and Constant nodes, so ONNX's backend test runner (and any
onnx.backend user) can drive onnx-cupy.

The execution path is fixed at prepare: device "CPU" runs on NumPy arrays (the `numpy` path, or
`emulated` when forced with `onnx_cupy.backend`), "CUDA[:i]" on CuPy arrays on GPU i, and no
device means the forced backend or else the default one (the GPU when one is visible). Inputs
may be NumPy or CuPy arrays; outputs come back as NumPy arrays.

`run` checks its inputs as onnxruntime does: every name known, each input's dtype and static
dimensions as the graph declares them (symbolic and unknown dimensions are free). Constants that
only feed the inputs read on the host (Resize's roi, scales and sizes, Upsample's scales,
MaxUnpool's output_shape, AffineGrid's size) stay NumPy arrays there, so a run on the GPU does not
read them back from the device each time.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..core import execution, extras
from ..core.execution import NumPyArray

try:
    import onnx
    from onnx import helper, numpy_helper
    from onnx.backend.base import (
        Backend,
        BackendRep,
        Device,
        DeviceType,
        namedtupledict,
    )
except ImportError as exc:
    raise extras.missing("onnx_cupy.onnx_backend", "onnx", exc) from exc
from .nodes import DEFAULT_DOMAINS, RUNNERS, default_opset, prepare_node

__all__ = ["SUPPORTED", "OnnxCupyBackend", "OnnxCupyRep", "is_compatible", "prepare", "run_model",
           "run_node", "supports_device"]

SUPPORTED = (*sorted(RUNNERS), "Constant", "Identity")
_CONSTANT_DTYPES = {"value_float": np.float32, "value_floats": np.float32,
                    "value_int": np.int64, "value_ints": np.int64}
# (dtype or None: any, shape with None for free dimensions, or None: any rank)
Declared = tuple[np.dtype | None, tuple[int | None, ...] | None]


def _declared(value_info: onnx.ValueInfoProto) -> Declared:
    """A graph input's declared element type and shape."""
    t = value_info.type.tensor_type if value_info.type.HasField("tensor_type") else None
    if t is None:
        return None, None
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type)) if t.elem_type else None
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim) \
        if t.HasField("shape") else None
    return dtype, shape


def _check_input(name: str, value: Any, declared: Declared) -> None:
    """onnxruntime's checks of a fed input: dtype, rank and static dimensions."""
    dtype, shape = declared
    got_dtype, got_shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if got_dtype is None or got_shape is None:
        raise TypeError(f"input {name!r} must be an array, got {type(value).__name__}")
    if dtype is not None and np.dtype(got_dtype) != dtype and not (
            dtype.kind == "O" and np.dtype(got_dtype).kind in "OUS"):
        raise TypeError(f"input {name!r} has dtype {np.dtype(got_dtype)}, but the graph declares "
                        f"{dtype}")
    if shape is None:
        return
    if len(got_shape) != len(shape):
        raise ValueError(f"input {name!r} has rank {len(got_shape)} (shape {tuple(got_shape)}), "
                         f"but the graph declares rank {len(shape)} (shape "
                         f"{tuple('?' if d is None else d for d in shape)})")
    bad = [i for i, (g, d) in enumerate(zip(got_shape, shape)) if d is not None and g != d]
    if bad:
        raise ValueError(f"input {name!r} has shape {tuple(got_shape)}, but the graph declares "
                         f"{tuple('?' if d is None else d for d in shape)} (dimensions "
                         f"{', '.join(map(str, bad))} differ)")


# the inputs each operator reads on the host, by position: Resize's roi, scales and sizes,
# Upsample's scales, MaxUnpool's output_shape, AffineGrid's size
HOST_INPUTS = {"Resize": frozenset({1, 2, 3}), "Upsample": frozenset({1}),
               "MaxUnpool": frozenset({2}), "AffineGrid": frozenset({1})}


def _host_parameters(nodes: Sequence[onnx.NodeProto]) -> set[str]:
    """Names whose every reader takes them as an input read on the host (HOST_INPUTS)."""
    readers: dict[str, set[bool]] = {}
    for node in nodes:
        host = HOST_INPUTS.get(node.op_type, frozenset()) if node.domain in DEFAULT_DOMAINS \
            else frozenset()
        for i, name in enumerate(node.input):
            if name:
                readers.setdefault(name, set()).add(i in host)
    return {name for name, kinds in readers.items() if kinds == {True}}


def _constant(node: onnx.NodeProto) -> np.ndarray:
    """The value of a Constant node."""
    (attr,) = node.attribute
    value = helper.get_attribute_value(attr)
    if attr.name == "value":
        return numpy_helper.to_array(value)
    if attr.name in _CONSTANT_DTYPES:
        return np.array(value, _CONSTANT_DTYPES[attr.name])
    if attr.name == "value_string":
        return np.array(value.decode(), dtype=object)
    if attr.name == "value_strings":
        return np.array([v.decode() for v in value], dtype=object)
    raise ValueError(f"Constant: attribute {attr.name!r} is not supported")


def _model_proto(model: Any) -> onnx.ModelProto:
    """`model` as a ModelProto: as given, loaded from its path, or parsed from its bytes."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        return onnx.load(model)
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    raise TypeError("prepare: model must be an onnx.ModelProto, the path of a .onnx file or its "
                    f"serialized bytes, got {type(model).__name__}")


def _path(device: str | None) -> tuple[str, int]:
    """(execution path, GPU index) for `device` under the forced backend, if any."""
    forced = execution.forced()
    if device is None:
        return forced or execution.default_backend(), 0
    if not OnnxCupyBackend.supports_device(device):
        raise ValueError(f"unsupported device {device!r} (CPU, or CUDA[:i] with that GPU visible)")
    dev = Device(device)
    on_gpu = dev.type == DeviceType.CUDA
    if forced and (forced == "cupy") != on_gpu:
        raise ValueError(f"device {device!r} conflicts with the forced backend {forced!r}")
    return forced or ("cupy" if on_gpu else "numpy"), dev.device_id


class OnnxCupyRep(BackendRep):
    """A graph prepared for one execution path: nodes validated, constants on the device."""

    def __init__(self, nodes: Sequence[onnx.NodeProto], inputs: Sequence[str],
                 outputs: Sequence[str], constants: Mapping[str, np.ndarray],
                 opset: int | None, device: str | None,
                 declared: Mapping[str, Declared] | None = None) -> None:
        self._path, self._gpu = _path(device)
        self.input_names, self.output_names = list(inputs), list(outputs)
        self._declared = dict(declared or {})
        self._host = _host_parameters(nodes)
        defined = {*self.input_names, *constants}
        self._steps: list[tuple[Callable[[list[Any]], list[Any]], list[str], list[str]]] = []
        with self._context():
            self._values = {name: self._constant(name, v) for name, v in constants.items()}
            for node in nodes:
                undefined = [n for n in node.input if n and n not in defined]
                if undefined:
                    raise ValueError(f"node {node.name!r} ({node.op_type}) reads {undefined}, "
                                     f"which no graph input, initializer or earlier node defines")
                self._steps.append((self._step(node, opset), list(node.input), list(node.output)))
                defined.update(node.output)

    @contextlib.contextmanager
    def _context(self) -> Iterator[None]:
        """This rep's execution path forced, and on the CuPy path its GPU current."""
        with execution.backend(self._path), (
                execution.cupy_module().cuda.Device(self._gpu) if self._path == "cupy"
                else contextlib.nullcontext()):
            yield

    def _load(self, a: Any) -> Any:
        """`a` as an array of this path (strings stay on the host)."""
        return execution.to_path(a, self._path)

    def _constant(self, name: str, a: np.ndarray) -> Any:
        """A constant: on the host where only inputs read on the host read it, else loaded."""
        return a if name in self._host else self._load(a)

    def _step(self, node: onnx.NodeProto, opset: int | None) -> Callable[[list[Any]], list[Any]]:
        """Runner of one node on the list of its inputs (None where omitted)."""
        default_domain = node.domain in DEFAULT_DOMAINS
        if default_domain and node.op_type == "Identity":
            return lambda args: args[:1]
        if default_domain and node.op_type == "Constant":
            value = self._constant(node.output[0], _constant(node))
            return lambda args: [value]
        if not default_domain or node.op_type not in RUNNERS:
            raise ValueError(f"onnx_cupy: unsupported operator {node.op_type!r} of domain "
                             f"{node.domain or 'ai.onnx'!r} (node {node.name!r}); supported: "
                             f"{', '.join(SUPPORTED)} of the default domain")
        return prepare_node(node, opset)

    def _outputs(self, arrays: Sequence[Any]) -> tuple[NumPyArray[Any], ...]:
        """`arrays` as NumPy arrays, also addressable by output name."""
        return namedtupledict("Outputs", self.output_names)(
            *(execution.to_host(a) for a in arrays))

    def run(self, inputs: Any, **kwargs: Any) -> tuple[NumPyArray[Any], ...]:
        """Run on `inputs` (a sequence in graph-input order, a name -> array mapping, or one
        array); returns the outputs as NumPy arrays, also addressable by output name."""
        if isinstance(inputs, Mapping):
            feeds = dict(inputs)
            unknown = [n for n in feeds if n not in self.input_names and n not in self._declared]
            if unknown:
                raise ValueError(f"unknown input name(s) {', '.join(map(repr, unknown))}; the "
                                 f"graph's inputs are {', '.join(self.input_names)}")
        else:
            inputs = [inputs] if hasattr(inputs, "shape") else list(inputs)
            if len(inputs) != len(self.input_names):
                raise ValueError(f"expected {len(self.input_names)} inputs "
                                 f"({', '.join(self.input_names)}), got {len(inputs)}")
            feeds = dict(zip(self.input_names, inputs))
        missing = [n for n in self.input_names if n not in feeds]
        if missing:
            raise ValueError(f"missing inputs: {', '.join(missing)}")
        for name, value in feeds.items():
            if name in self._declared:
                _check_input(name, value, self._declared[name])
        with self._context():
            values = {**self._values, **{k: self._load(v) for k, v in feeds.items()}}
            for step, names, outputs in self._steps:
                values.update(zip(outputs, step([values[n] if n else None for n in names])))
            return self._outputs([values[n] for n in self.output_names])

    def run_single(self, inputs: Sequence[Any]) -> tuple[NumPyArray[Any], ...]:
        """Run a one-node rep on `inputs` by position in node.input (None: omitted)."""
        ((step, _, _),) = self._steps
        with self._context():
            return self._outputs(step([None if a is None else self._load(a) for a in inputs]))


class OnnxCupyBackend(Backend):
    """onnx.backend interface to onnx-cupy."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto | str | os.PathLike[str] | bytes,
                device: str | None = None, **kwargs: Any) -> OnnxCupyRep:
        """Validate `model` and prepare it to run on one execution path.

        Parameters
        ----------
        model : onnx.ModelProto, str, os.PathLike or bytes
            The model, the path of its .onnx file or its serialized bytes (as onnxruntime's
            InferenceSession takes them): a graph of the supported operators (`SUPPORTED`:
            AveragePool, LpPool, MaxPool, the global pools, MaxUnpool, Hardmax, Resize,
            Upsample, GridSample, AffineGrid, RoiAlign, MaxRoiPool, Identity, Constant) in
            topological order; initializers become constants on the device.
        device : {"CPU", "CUDA", "CUDA:i"}, optional
            "CPU" runs on NumPy (or the emulated kernels when forced with
            `onnx_cupy.backend`), "CUDA[:i]" on GPU i; None: the forced or default backend.

        Returns
        -------
        OnnxCupyRep
            `rep.run(inputs)` takes a sequence (graph-input order), a name -> array mapping or one
            array, NumPy or CuPy, and returns the outputs as NumPy arrays.

        Raises
        ------
        TypeError
            `model` is none of the types above.
        ValueError
            An unsupported operator, domain, attribute or opset, named in the message.
            `rep.run` raises ValueError for an unknown or missing input name or a shape that
            differs from a static dimension the graph declares, TypeError for a dtype that
            differs from the declared one (as onnxruntime).

        Examples
        --------
        >>> import numpy as np, onnx
        >>> from onnx import helper, TensorProto
        >>> import onnx_cupy.onnx_backend as backend
        >>> node = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2])
        >>> graph = helper.make_graph([node], "g",
        ...     [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 1, 3])],
        ...     [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 1, 2])])
        >>> model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        >>> backend.prepare(model, "CPU").run([np.array([[[1, 2, 4]]], np.float32)])[0]
        array([[[1.5, 3. ]]], dtype=float32)
        """
        model = _model_proto(model)
        graph = model.graph
        constants = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in constants]
        # graph inputs with an initializer are optional feeds that override it (as onnxruntime)
        return OnnxCupyRep(graph.node, [i.name for i in inputs], [o.name for o in graph.output],
                           constants, default_opset(model), device,
                           {i.name: _declared(i) for i in graph.input})

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto | str | os.PathLike[str] | bytes,
                      device: str = "CPU", **kwargs: Any) -> bool:
        """Whether `prepare(model, device)` accepts `model` (operators, domains, attributes,
        opset, the device)."""
        try:
            cls.prepare(model, device, **kwargs)
        except (ValueError, TypeError, NotImplementedError):
            return False
        return True

    @classmethod
    def run_model(cls, model: onnx.ModelProto | str | os.PathLike[str] | bytes, inputs: Any,
                  device: str | None = None, **kwargs: Any) -> tuple[NumPyArray[Any], ...]:
        """Run `model` once: `prepare(model, device).run(inputs)`; see `prepare`."""
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Sequence[Any], device: str | None = None,
                 outputs_info: Any = None, **kwargs: Any) -> tuple[NumPyArray[Any], ...]:
        """Run one node on `inputs` and return its outputs as NumPy arrays.

        Parameters
        ----------
        node : onnx.NodeProto
            A node of an operator onnx-cupy runs (`SUPPORTED` but Identity and Constant).
        inputs : sequence of arrays
            By position in node.input; None or an empty input name is an omitted input.
        device : {"CPU", "CUDA", "CUDA:i"}, optional
            As in `prepare`.
        **kwargs
            opset_version : int (default: the operator's newest version).

        Returns
        -------
        tuple of numpy.ndarray
            The node's outputs, also addressable by output name.

        Raises
        ------
        ValueError, TypeError
            As the operator functions (`onnx_cupy.average_pool`, ...) raise them.

        Examples
        --------
        >>> import numpy as np, onnx
        >>> import onnx_cupy.onnx_backend as backend
        >>> node = onnx.helper.make_node("LpPool", ["X"], ["Y"], kernel_shape=[2], p=1)
        >>> backend.run_node(node, [np.array([[[1, -2, 4]]], np.float32)], opset_version=22)[0]
        array([[[3., 6.]]], dtype=float32)
        """
        return OnnxCupyRep([node], [n for n in node.input if n], node.output, {},
                           kwargs.get("opset_version"), device).run_single(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        """True for "CPU"; for "CUDA[:i]" when that GPU is visible."""
        try:
            dev = Device(device)
        except (AttributeError, ValueError):
            return False
        if dev.type == DeviceType.CPU:
            return True
        return execution.gpu_available() and \
            dev.device_id < execution.cupy_module().cuda.runtime.getDeviceCount()


is_compatible = OnnxCupyBackend.is_compatible
prepare = OnnxCupyBackend.prepare
run_model = OnnxCupyBackend.run_model
run_node = OnnxCupyBackend.run_node
supports_device = OnnxCupyBackend.supports_device
