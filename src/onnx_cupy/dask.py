"""onnx_cupy.dask: the public name of onnx_cupy.interop.dask (the same module)."""
import importlib
import sys

sys.modules[__name__] = importlib.import_module(".interop.dask", __package__)
