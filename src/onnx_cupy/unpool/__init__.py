"""MaxUnpool: public function (api), host plan (plan), kernel launch (kernel) and NumPy path
(numpy); kernels in kernels/unpool.cu."""
