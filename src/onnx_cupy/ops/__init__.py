"""Kernel launch per kernels/<family>.cu: parameter blocks and instantiations from the plans of
onnx_cupy.plans, run on the GPU (CuPy) or the CPU emulator."""
