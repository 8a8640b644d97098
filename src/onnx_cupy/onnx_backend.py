"""onnx_cupy.onnx_backend: the public name of onnx_cupy.interop.onnx_backend (the same module)."""
import importlib
import sys

sys.modules[__name__] = importlib.import_module(".interop.onnx_backend", __package__)
