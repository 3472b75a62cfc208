"""cuBLAS through nvmath-python: the cuda backend's matrix products, where nvmath is installed.

Where it sits: under ``CudaBackend`` (``blas()``, ``load_product()``). The planner plans a
product for the library where :func:`probe` found it and the product allows
(``compiler/product.py``); the evaluation's launch record then holds a :class:`CublasProduct`
where it would hold a kernel's ``Launcher``, and ``LaunchRecord.launch_with`` calls it through
``CudaBackend.launch`` like any kernel: one launch path. nvmath is imported by the first
question (:func:`probe`), never by ``import fusedarrays``.

What it does, and why:

- **fusedarrays' own buffers.** nvmath's ``Matmul`` takes NumPy, CuPy or PyTorch arrays (its
  own ``NDBuffer`` only inside, not as an operand), so each operand is a CuPy array over the
  buffer's address, with the plan's strides (``cupy.cuda.UnownedMemory``: nothing is
  allocated or copied; CuPy comes with the ``cublas`` extra). The product is in place
  (``MatmulOptions(inplace=True)``, ``C`` the result, ``beta = 0``, which cuBLAS never reads),
  so cuBLAS writes the result's own buffer: no temporary, no copy. nvmath draws its workspace
  from CuPy's pool.
- **Full precision.** The compute type is named: ``COMPUTE_32F`` for float16, float32 and
  complex64, ``COMPUTE_64F`` for float64 and complex128; never TF32 or another
  reduced-precision type, whatever the environment says. Split-K partial sums are reduced in
  the compute type (never in float16, which NumPy's single rounding would not match), and the
  Gaussian (3M) complex algorithms are excluded.
- **One stream.** Planning and execution run on the legacy default stream (nvmath is handed
  its handle), where every kernel of fusedarrays runs, so a product is ordered after what
  computed its operands and before what reads its result, and the pool frees its buffers in
  that order.
- **Planned once per signature.** A stateful ``Matmul`` per (device, dtype, sizes, strides,
  alignment) is created and planned once (~ms) and kept, up to ``MAX_PLANS`` (least recently
  used first out, its workspace of at most ``WORKSPACE`` bytes freed); an evaluation resets its
  three operands and executes. cuBLAS's heuristic chooses algorithms by the operands'
  addresses' alignment, so a ``Matmul`` is planned over placeholder addresses of exactly the
  alignment every evaluation of its signature guarantees (the key's alignment class and the
  view's offset), never the first call's luckier one.
- **Threads.** A ``Matmul`` holds its operands between ``reset_operands`` and ``execute``:
  one lock around both.

Measured (H100 80GB HBM3, nvmath-python 1.0.0, cuBLAS 13.1, 2026-11-24): a 4096² float32
product at 50.4 TFLOP/s, torch.matmul with TF32 off 51.4 (0.98 of it), the tiled kernel 11.0
(0.21); host time per call of a 64 × 64 float32 product 97 µs through nvmath, 28 µs on the tiled
kernel, 16 µs for torch.matmul: ``Matmul.execute`` is Python, so for small products the route
costs host time that the tiled kernel doesn't.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import numpy as np

from ..compiler import Blas, Plan

MAX_PLANS = 64              # Matmul objects kept (each with its workspace)
WORKSPACE = 32 << 20        # bytes of workspace an algorithm may ask for (cuBLAS's own advice)
_PLACEHOLDER = 1 << 40      # planning addresses: this plus an operand's guaranteed alignment
_log = logging.getLogger("fusedarrays.cublas")

_probed: list[Blas] = []
_plans: OrderedDict = OrderedDict()
_lock = threading.Lock()


def probe() -> Blas:
    """Whether cuBLAS through nvmath-python computes this process's products, once asked."""
    if not _probed:
        _probed.append(_probe())
    return _probed[0]


def _probe() -> Blas:
    try:
        import nvmath
    except ImportError:
        return Blas(why_not="nvmath-python is not installed "
                            "(pip install 'fusedarrays[cublas]' adds cuBLAS)")
    version = getattr(nvmath, "__version__", "?")
    try:
        import cupy  # noqa: F401
    except ImportError:
        return Blas(why_not=f"nvmath-python {version} is installed but CuPy is not (nvmath "
                            "reads device memory as CuPy arrays; pip install "
                            "'fusedarrays[cublas]')")
    try:
        from nvmath.linalg import ComputeType  # noqa: F401
        from nvmath.linalg.advanced import Matmul  # noqa: F401
    except ImportError as exc:
        return Blas(why_not=f"nvmath-python {version} lacks what fusedarrays calls ({exc}; "
                            "written for nvmath-python 1.x)")
    return Blas(name=f"cuBLAS via nvmath-python {version}")


class CublasProduct:
    """A product planned for cuBLAS, called as a kernel's ``Launcher`` is:
    ``product(n, args, geometry)`` with ``args`` the packer's (the three operands' buffer
    addresses first; the sizes, strides and offsets are the plan's)."""

    __slots__ = ("device_id", "signature", "dtype", "layouts", "offsets", "aligns", "spans")

    def __init__(self, plan: Plan, device_id: int):
        dtype = plan.operands[2].dtype
        batch = plan.batch
        shapes = [batch + ((plan.m, plan.k), (plan.k, plan.n), (plan.m, plan.n))[k]
                  for k in range(3)]
        strides = [((bs,) if batch else ()) + (s, t) for bs, s, t, _ in plan.blas]
        self.device_id, self.dtype = device_id, dtype
        self.layouts = [(shape, tuple(s * dtype.itemsize for s in stride))
                        for shape, stride in zip(shapes, strides)]
        # bytes from the first element to past the last (every stride is >= 0)
        self.spans = [(1 + sum((e - 1) * s for e, s in zip(shape, stride))) * dtype.itemsize
                      for shape, stride in zip(shapes, strides)]
        self.offsets = [o.offset * o.dtype.itemsize for o in plan.operands]
        self.aligns = [align for *_, align in plan.blas]
        self.signature = (device_id, dtype.str, tuple(map(tuple, self.layouts)),
                          tuple(self.aligns))

    def __call__(self, n: int, args, geometry: tuple = ()) -> None:
        a, b, c = (self._view(k, args[k] + self.offsets[k]) for k in range(3))
        with _lock:
            matmul = _plans.get(self.signature)
            if matmul is None:
                matmul = self._plan()
            else:
                _plans.move_to_end(self.signature)
            matmul.reset_operands_unchecked(a=a, b=b, c=c)
            matmul.execute(stream=_stream())

    def _view(self, k: int, address: int):
        """Operand ``k`` at ``address``: a CuPy array over memory fusedarrays holds (alive
        until the work queued on the stream is done: the pool frees in stream order)."""
        import cupy

        shape, strides = self.layouts[k]
        memory = cupy.cuda.UnownedMemory(address, self.spans[k], self, self.device_id)
        return cupy.ndarray(shape, self.dtype, cupy.cuda.MemoryPointer(memory, 0), strides)

    def _plan(self):
        """A planned ``Matmul`` for the signature, kept (called under the lock)."""
        from nvmath.linalg import ComputeType
        from nvmath.linalg.advanced import (
            Matmul,
            MatmulNumericalImplFlags,
            MatmulOptions,
            MatmulPlanPreferences,
            MatmulReductionScheme,
        )

        wide = self.dtype in (np.float64, np.complex128)
        options = MatmulOptions(
            inplace=True, compute_type=ComputeType.COMPUTE_64F if wide else
            ComputeType.COMPUTE_32F, device_id=self.device_id, memory_limit=WORKSPACE,
            logger=_log)
        a, b, c = (self._view(k, _PLACEHOLDER + self.aligns[k]) for k in range(3))
        matmul = Matmul(a, b, c=c, beta=0, options=options, stream=_stream())
        try:
            matmul.plan(preferences=MatmulPlanPreferences(
                reduction_scheme_mask=MatmulReductionScheme.COMPUTE_TYPE,
                numerical_impl_mask=(MatmulNumericalImplFlags.ALL
                                     & ~MatmulNumericalImplFlags.GAUSSIAN)),
                stream=_stream())
        except BaseException:
            matmul.free()
            raise
        _plans[self.signature] = matmul
        while len(_plans) > MAX_PLANS:
            _plans.popitem(last=False)[1].free()
        return matmul


def _stream() -> int:
    """The legacy default stream's handle (``CU_STREAM_LEGACY``), as nvmath takes a stream."""
    from cuda.core import LEGACY_DEFAULT_STREAM

    return int(LEGACY_DEFAULT_STREAM.handle)


def free_plans() -> int:
    """Free every kept ``Matmul`` (their workspaces go back to the pool); how many."""
    with _lock:
        count = len(_plans)
        while _plans:
            _plans.popitem(last=False)[1].free()
    return count
