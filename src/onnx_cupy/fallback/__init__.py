"""Vectorized NumPy implementations that consume the plans of onnx_cupy.plans."""
