"""Test helpers: arrays and tolerances, one-node ONNX models and the runtimes, oracles."""
