"""The command line and what it runs: ONNX's node tests (conformance), the benchmark (bench) and
the kernel report (kernel_report); imported on demand, never by `import onnx_cupy`."""
