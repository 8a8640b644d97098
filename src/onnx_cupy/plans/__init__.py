"""Host-side semantics shared by every execution path: attribute validation per opset version,
output shapes, pads and divisor bounds, Resize's per-axis (index, weight) tables. Both the NumPy
fallback (onnx_cupy.fallback) and the kernel launch code (onnx_cupy.ops) consume these plans and
never each other."""
