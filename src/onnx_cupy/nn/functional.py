"""onnx_cupy.nn.functional: the public name of onnx_cupy.interop.functional (the same module)."""
import importlib
import sys

sys.modules[__name__] = importlib.import_module("..interop.functional", __package__)
