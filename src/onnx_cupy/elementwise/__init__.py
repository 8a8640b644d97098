"""Elementwise steps of the PyTorch-style functions (no public function of their own): host plan
(plan), kernel launch (kernel), NumPy path (numpy) and the entry point the functions call (api);
kernels in kernels/elementwise.cu."""
