# GPU image: onnx-cupy with CuPy for CUDA 12; runs ONNX's node tests on the GPU by default.
#   docker build -t onnx-cupy . && docker run --gpus all --rm onnx-cupy
FROM nvidia/cuda:12.9.1-base-ubuntu24.04
RUN apt-get update && apt-get install -y --no-install-recommends python3 python3-venv g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/onnx-cupy
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
COPY kernels ./kernels
RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install --no-cache-dir ".[cuda12,onnx]"
ENV PATH=/opt/venv/bin:$PATH
ENTRYPOINT ["onnx-cupy"]
CMD ["conformance"]
