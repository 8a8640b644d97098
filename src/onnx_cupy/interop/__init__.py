"""onnx-cupy for other libraries: ONNX nodes (nodes), the onnx.backend adapter (onnx_backend) and
Dask arrays (dask)."""
