"""The CUDA backend: the only package that imports numba-cuda and the CUDA driver bindings.

Where it sits: ``runtime`` hands generated kernel source to :mod:`.backend` (``CudaBackend``), which
compiles it (:mod:`.compile`: numba-cuda → PTX → cubin, with the device intrinsics of
:mod:`.intrinsics`), loads the cubin (:mod:`.load`), launches it (:mod:`.launch`) and moves memory
(:mod:`.memory`). Importing this package imports nothing heavy; numba is imported only when a
kernel is compiled, so a process that finds its kernels in the disk cache never imports it.
"""
