"""RoiAlign and MaxRoiPool: public functions (api), host plan (plan), kernel launch (kernel) and
NumPy path (numpy); kernels in kernels/roi.cu."""
