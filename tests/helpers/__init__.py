"""Test helpers: arrays and tolerances, one-node ONNX models and the runtimes, oracles, ONNX's
node-test inventory, and the differential configurations (drawn, run and judged once each)."""
