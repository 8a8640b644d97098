"""The peers the benchmark compares against, configured as their users run them: onnxruntime
(CPU with 1 thread, its CUDA provider) on the model an exporter writes, PyTorch, onnx.reference."""
from __future__ import annotations

import importlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .cases import Case, NotApplicable, cotangent

Runner = Callable[[Any], Any]
# (case, dtype, input shape, output shape) -> (run(X) -> Y, details for the report row)
Setup = Callable[[Case, str, tuple[int, ...], tuple[int, ...]], tuple[Runner, dict[str, Any]]]


@dataclass(frozen=True)
class Peer:
    """A library to compare against, and how it is configured (for the report)."""

    name: str
    setup: Setup
    settings: dict[str, Any]
    device_arrays: bool = False   # takes the backend's (CuPy) arrays; else host NumPy arrays
    slow: bool = False        # timed once on the reduced shape, compared by throughput
    gradients: bool = False   # also runs the backward rows (its backward of the forward call)



MODEL = ("one node at opset 22 (Upsample: 9), X and Y declared with their shapes as exporters "
         "write them, the inputs after X (Resize's and Upsample's scales, MaxUnpool's indices, "
         "GridSample's grid) as initializers, NCHW in and out")


def optional(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _model(case: Case, dtype: str, shape: tuple[int, ...], out_shape: tuple[int, ...]) -> Any:
    """A one-node model as an exporter writes it: graph input X and output Y with their shapes,
    the case's other inputs as initializers (optional inputs not given are left empty, "", up to
    the last given one)."""
    from onnx import defs, helper, numpy_helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    inputs = case.inputs_for(shape, dtype)
    formal = [i.name for i in defs.get_schema(case.op, case.opset).inputs]   # the first is X
    used = max((formal.index(n) for n in inputs), default=0) + 1
    names = ["X"] + [n if n in inputs else "" for n in formal[1:used]]
    node = helper.make_node(case.op, names, ["Y"], **case.attrs)
    graph = helper.make_graph(
        [node], "bench", [helper.make_tensor_value_info("X", elem, list(shape))],
        [helper.make_tensor_value_info("Y", elem, list(out_shape))],
        initializer=[numpy_helper.from_array(v, n) for n, v in inputs.items()])
    return helper.make_model_gen_version(graph,
                                         opset_imports=[helper.make_opsetid("", case.opset)])


def _ort_options() -> Any:
    """onnxruntime configured for a 1-thread comparison, every graph optimization on."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3   # the optimized-model dump warns: NCHWc nodes are host-specific
    return opts


def _ort_settings(provider: str) -> dict[str, Any]:
    import onnxruntime as ort

    opts = _ort_options()
    found = {k: getattr(opts, k) for k in ("intra_op_num_threads", "inter_op_num_threads",
                                             "execution_mode", "graph_optimization_level")}
    return {"version": ort.__version__, "provider": provider,
            **{k: getattr(v, "name", v) for k, v in found.items()}, "model": MODEL}


def _session(case: Case, dtype: str, shape: tuple[int, ...], out_shape: tuple[int, ...],
             provider: str, **config: str) -> tuple[Any, dict[str, Any]]:
    """The session, and the nodes of the graph it runs after optimization (domain:op)."""
    import onnx
    import onnxruntime as ort

    opts = _ort_options()
    for key, value in config.items():
        opts.add_session_config_entry(key, value)
    with tempfile.TemporaryDirectory() as tmp:
        opts.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        sess = ort.InferenceSession(_model(case, dtype, shape, out_shape).SerializeToString(),
                                    opts, providers=[provider])
        nodes = onnx.load(opts.optimized_model_filepath).graph.node
    return sess, {"graph": [f"{n.domain}:{n.op_type}" if n.domain else n.op_type for n in nodes]}


def _onnxruntime(case: Case, dtype: str, shape: tuple[int, ...],
                 out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
    sess, details = _session(case, dtype, shape, out_shape, "CPUExecutionProvider")
    return lambda x: sess.run(None, {"X": x})[0], details


def _onnxruntime_cuda(case: Case, dtype: str, shape: tuple[int, ...],
                      out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
    # no CPU fallback: an operator without a CUDA kernel makes the session fail (n/a)
    sess, details = _session(case, dtype, shape, out_shape, "CUDAExecutionProvider",
                             **{"session.disable_cpu_ep_fallback": "1"})

    def run(x: Any) -> Any:
        binding = sess.io_binding()
        binding.bind_input("X", "cuda", x.device.id, x.dtype.type, x.shape, x.data.ptr)
        binding.bind_output("Y", "cuda", x.device.id)
        sess.run_with_iobinding(binding)
        return binding.get_outputs()[0]
    return run, details


def _torch(device: str) -> Setup:
    import torch

    # looked up by name: torch's stubs do not export from_dlpack
    wrap: Any = getattr(torch, "from_dlpack" if device == "cuda" else "from_numpy")

    def setup(case: Case, dtype: str, shape: tuple[int, ...],
              out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
        if case.torch is None:
            raise NotApplicable("no PyTorch equivalent")
        call = case.torch
        if case.backward:
            return _torch_backward(torch, wrap, call), {}
        return lambda x: call(torch, wrap(x)), {}
    return setup


def _torch_backward(torch: Any, wrap: Any, call: Callable[[Any, Any], Any]) -> Runner:
    """PyTorch's backward of a case's call (`call(torch, X)`), as a training step runs it: the
    graph of the forward built once per input array (its saved tensors kept, not timed), then
    each call `torch.autograd.grad(Y, X, dY, retain_graph=True)` with the benchmark's
    cotangent."""
    graphs: dict[int, tuple[Any, Any, Any, Any]] = {}   # id(x) -> (x, X, Y, dY)

    def run(x: Any) -> Any:
        found = graphs.get(id(x))
        if found is None:
            leaf = wrap(x).detach().requires_grad_(True)
            y = call(torch, leaf)
            dy = wrap(cotangent(tuple(y.shape), str(x.dtype))).to(y.device)
            found = graphs[id(x)] = (x, leaf, y, dy)
        _, leaf, y, dy = found
        return torch.autograd.grad(y, leaf, dy, retain_graph=True)[0]
    return run


def _reference(case: Case, dtype: str, shape: tuple[int, ...],
               out_shape: tuple[int, ...]) -> tuple[Runner, dict[str, Any]]:
    from onnx.reference import ReferenceEvaluator

    ev = ReferenceEvaluator(_model(case, dtype, shape, out_shape))
    return lambda x: next(iter(ev.run(None, {"X": x}))), {}


def available(backend: str) -> tuple[list[Peer], list[str]]:
    """The peers installed for `backend`, and a note for each one left out (PyTorch on the CPU
    is set to 1 thread)."""
    found: list[Peer] = []
    notes: list[str] = []
    ort, onnx, torch = optional("onnxruntime"), optional("onnx"), optional("torch")
    if ort is None or onnx is None:
        notes.append("onnxruntime: not installed (needs onnx and onnxruntime)")
    else:
        found.append(Peer("onnxruntime", _onnxruntime, _ort_settings("CPUExecutionProvider")))
        if backend == "cupy":
            if "CUDAExecutionProvider" in ort.get_available_providers():
                found.append(Peer("onnxruntime-cuda", _onnxruntime_cuda,
                                  _ort_settings("CUDAExecutionProvider"), device_arrays=True))
            else:
                notes.append("onnxruntime-cuda: the CUDA execution provider is not available")
    if torch is None:
        notes.append("torch: not installed")
    elif backend == "cupy":
        if torch.cuda.is_available():
            found.append(Peer("torch-cuda", _torch("cuda"),
                              {"version": torch.__version__, "device": "cuda"}, device_arrays=True,
                              gradients=True))
        else:
            notes.append("torch-cuda: this PyTorch build sees no GPU")
    else:
        torch.set_num_threads(1)
        found.append(Peer("torch", _torch("cpu"), {"version": torch.__version__, "device": "cpu",
                                                   "num_threads": torch.get_num_threads()},
                          gradients=True))
    if onnx is None:
        notes.append("onnx.reference: onnx is not installed")
    else:
        found.append(Peer("onnx.reference", _reference,
                          {"version": onnx.__version__, "model": MODEL,
                           "timing": "one call on the reduced shape"}, slow=True))
    return found, notes
