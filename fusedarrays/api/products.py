"""Products: ``matmul`` (and ``@``), ``vecdot``, ``tensordot``, computed on the device.

Where it sits: over :mod:`.array`, re-exported by the namespace and ``fa.linalg``, behind
``ndarray.__matmul__`` and ``np.matmul``/``np.vecdot``/``np.tensordot``.

- ``matmul`` is **not fused**: its operands are computed first (one kernel each where they are
  pending; a view of memory is read in place, whatever its strides), and the product is a lazy
  node of its own (``ir/products.py``) that the planner gives a tiled kernel
  (``compiler/product.py``): on cuda and sim 64 × 64 output tiles staged through shared memory,
  on cpu the same plan as a numba loop over output rows on the cores (not BLAS: the generated
  kernel keeps one implementation, every layout and NumPy's integer and bool products; a float
  user who wants BLAS speed on the host can call NumPy on ``.get()``). What reads the product
  (``(a @ b) + c``) is a kernel after it, reading its result; ``fa.explain`` shows both.
- ``vecdot`` is a fused reduction, ``sum(conj(x1) * x2, axis)`` (``any(x1 & x2)`` for bools), its
  operands computed inside the reduction's kernel.
- ``tensordot`` moves the contracted axes together (views), reshapes to matrices (a copy where
  the strides don't allow a view, as NumPy's reshape) and multiplies.

Result dtypes and values are NumPy's (``np.matmul``'s and ``np.vecdot``'s loop for the two
dtypes; float16 summed in float32, integers wrapping, bool the ``or`` of ``and``s).

>>> import fusedarrays as fa, numpy as np
>>> a = fa.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> (a @ a.T).get()
array([[ 5., 14.],
       [14., 50.]], dtype=float32)
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import DTypeError
from ..ir import dtypes, graph, layout
from ..ir.products import matmul_node
from ..ir.reductions import reduction_node
from .array import _no_host_value_while_tracing, _wrap, asarray, ndarray

_MATMUL_SIGNATURE = "(n?,k),(k,m?)->(n?,m?)"


def _result_dtype(ufunc, a: ndarray, b: ndarray) -> np.dtype:
    if dtypes.is_minifloat(a.dtype) or dtypes.is_minifloat(b.dtype):
        # JAX's promotion (bfloat16 @ bfloat16 is bfloat16, summed in float32 and rounded
        # once); ml_dtypes' own matmul loop gives float32, its np.dot bfloat16
        return dtypes.jax_promote((a.dtype, b.dtype), ufunc.__name__)
    try:
        out = ufunc.resolve_dtypes((a.dtype, b.dtype, None))[-1]
    except TypeError as exc:
        raise DTypeError(f"{ufunc.__name__} is not defined for ({a.dtype}, {b.dtype}): "
                         f"{exc}") from None
    return dtypes.as_dtype(out, what=f"{ufunc.__name__} result of dtype")


def _remapped(shape: tuple, core: int) -> str:
    """NumPy's ``original->remapped`` of an operand: its loop dims, each core dim a newaxis."""
    loop = [str(e) for e in shape[:len(shape) - core]] + ["newaxis"] * core
    return f"({','.join(map(str, shape))})->({','.join(loop)})"


def _broadcast_error(a_shape: tuple, b_shape: tuple, core: int, requested: tuple) -> ValueError:
    """NumPy's words for loop dimensions of a gufunc's operands that don't broadcast."""
    return ValueError("operands could not be broadcast together with remapped shapes "
                      f"[original->remapped]: {_remapped(a_shape, core)} "
                      f"{_remapped(b_shape, core)}  and requested shape "
                      f"({','.join(map(str, requested))})")


def _core_error(name: str, signature: str, operand: int, got: int, want: int) -> ValueError:
    return ValueError(f"{name}: Input operand {operand} has a mismatch in its core dimension 0, "
                      f"with gufunc signature {signature} (size {got} is different from {want})")


def _computed_leaf(x: ndarray) -> graph.Node:
    """``x``'s values as a leaf: a pending expression is computed first (not fused)."""
    node = x._resolved()
    return node if node.is_leaf else x.compute()._resolved()


def matmul(x1, x2, /) -> ndarray:
    """``x1 @ x2`` as ``np.matmul``: a 1-D operand is a row (first) or a column (second)
    vector, the leading axes broadcast as a batch. Not fused: pending operands are computed
    first, and the product is a tiled kernel of its own, lazy until something reads it.

    >>> import fusedarrays as fa, numpy as np
    >>> m = fa.asarray(np.array([[1, 2], [3, 4]], dtype=np.int32))
    >>> (m @ fa.asarray(np.array([1, 1], dtype=np.int32))).get()
    array([3, 7], dtype=int32)
    """
    a, b = asarray(x1), asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: operands need at least one dimension, got shapes {a.shape} "
                         f"and {b.shape}")
    _no_host_value_while_tracing((a, b), "fa.matmul (a product kernel of its own, never fused)")
    dtype = _result_dtype(np.matmul, a, b)
    k = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if kb != k:
        raise _core_error("matmul", _MATMUL_SIGNATURE, 1, kb, k)
    try:
        batch = layout.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise _broadcast_error(a.shape, b.shape, 2, (a.shape[-2], b.shape[-1])) from None
    leaves = []
    for x, matrix in ((a, lambda s: (1,) + s if len(s) == 1 else s),
                      (b, lambda s: s + (1,) if len(s) == 1 else s)):
        buffer, shape, strides, offset = graph.leaf_view(_computed_leaf(x))
        view = (shape, strides, offset)
        if len(shape) == 1:     # NumPy's promotion of a vector: a new axis of one
            view = layout.expand_dims(view, 0 if x is a else 1)
        view = layout.broadcast_to(view, batch + matrix(shape)[-2:])
        leaves.append(graph.leaf(buffer, x.dtype, *view))
    return _wrap(matmul_node(leaves[0], leaves[1], dtype, a.ndim == 1, b.ndim == 1))


def vecdot(x1, x2, /, *, axis: int = -1) -> ndarray:
    """The dot product of vectors along ``axis`` of each operand, broadcast over the other
    axes, as ``np.vecdot``: a fused reduction ``sum(conj(x1) * x2, axis)`` (bools:
    ``any(x1 & x2)``), its operands computed inside the reduction's kernel; NumPy's result
    dtype (no widening of small integers, which wrap; float16 products summed in float32).

    >>> import fusedarrays as fa, numpy as np
    >>> v = fa.asarray(np.array([[1., 2.], [3., 4.]]))
    >>> fa.vecdot(v, v).get()
    array([ 5., 25.])
    """
    a, b = asarray(x1), asarray(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: operands need at least one dimension")
    dtype = _result_dtype(np.vecdot, a, b)
    axis = operator.index(axis)
    for x in (a, b):
        if not -x.ndim <= axis < x.ndim:
            raise np.exceptions.AxisError(axis, x.ndim)
    a, b = (x if axis % x.ndim == x.ndim - 1 else x.transpose(
        tuple(d for d in range(x.ndim) if d != axis % x.ndim) + (axis % x.ndim,))
        for x in (a, b))
    if a.shape[-1] != b.shape[-1]:
        raise _core_error("vecdot", "(n),(n)->()", 1, b.shape[-1], a.shape[-1])
    try:
        layout.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except ValueError:
        raise _broadcast_error(a.shape, b.shape, 1, ()) from None
    if dtype.kind == "b":
        return _last_axis("any", a.astype(np.bool_) & b.astype(np.bool_))
    if a.dtype.kind == "c":     # the standard's and np.vecdot's: x1 conjugated
        a = a.conj()
    # float16 (and bfloat16, float8): the exact float32 products summed in float32, rounded once
    wide = np.dtype(np.float32) if dtypes.code(dtype) in dtypes.ROUNDED else dtype
    total = _last_axis("sum", a.astype(wide) * b.astype(wide))
    return total if wide == dtype else total.astype(dtype)


def _last_axis(name: str, x: ndarray) -> ndarray:
    """Reduction ``name`` of ``x`` over its last axis, in ``x``'s dtype (``api/reductions``'
    ``reduce`` with ``dtype=`` the input's, which imports the elementwise module that imports
    this one). A draw or gather is computed first, as ``reduce`` computes it: it indexes by the
    element order of the kernel that reads it."""
    node = x._resolved()
    if any(n.kind in ("random", "gather") for n in graph.walk([node])):
        node = x.compute()._resolved()
    return _wrap(reduction_node(name, node, (node.ndim - 1,), False, node.dtype))


def _axes_pair(axes, a_ndim: int, b_ndim: int) -> tuple[list, list]:
    """NumPy's ``tensordot`` axes: ``N`` (the last ``N`` of ``a`` with the first ``N`` of
    ``b``) or a pair of axis lists."""
    try:
        a_axes, b_axes = axes
    except TypeError:
        n = operator.index(axes)
        return list(range(a_ndim - n, a_ndim)), list(range(n))
    a_axes = [a_axes] if isinstance(a_axes, (int, np.integer)) else list(a_axes)
    b_axes = [b_axes] if isinstance(b_axes, (int, np.integer)) else list(b_axes)
    return a_axes, b_axes


def tensordot(x1, x2, /, *, axes=2) -> ndarray:
    """``np.tensordot``: the contracted axes moved last in ``x1`` and first in ``x2`` (views),
    each reshaped to a matrix (a copy where its strides allow no view), and one ``matmul``
    kernel; NumPy's result dtype.

    >>> import fusedarrays as fa, numpy as np
    >>> t = fa.asarray(np.arange(24.).reshape(2, 3, 4))
    >>> fa.tensordot(t, fa.ones((3, 4)), axes=2).get()
    array([ 66., 210.])
    """
    a, b = asarray(x1), asarray(x2)
    a_axes, b_axes = _axes_pair(axes, a.ndim, b.ndim)
    if len(a_axes) != len(b_axes):
        raise ValueError("shape-mismatch for sum")
    a_axes = [operator.index(x) % max(a.ndim, 1) for x in a_axes]
    b_axes = [operator.index(x) % max(b.ndim, 1) for x in b_axes]
    if any(a.shape[i] != b.shape[j] for i, j in zip(a_axes, b_axes)):
        raise ValueError("shape-mismatch for sum")
    free_a = [d for d in range(a.ndim) if d not in a_axes]
    free_b = [d for d in range(b.ndim) if d not in b_axes]
    k = layout.size_of(tuple(a.shape[i] for i in a_axes))
    out_shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    am = a.transpose(tuple(free_a + a_axes)).reshape(
        (layout.size_of(tuple(a.shape[d] for d in free_a)), k))
    bm = b.transpose(tuple(b_axes + free_b)).reshape(
        (k, layout.size_of(tuple(b.shape[d] for d in free_b))))
    return matmul(am, bm).reshape(out_shape)
