"""Matrix products as graph nodes: ``matmul`` (batched, broadcast), beside reductions and scans.

A product is a node of kind ``matmul`` over two *leaves* (``api/products.py`` computes pending
operands first: a product is not fused with what produces its operands) viewed as
``batch + (M, K)`` and ``batch + (K, N)``, the batch axes already broadcast (stride 0 where an
operand repeats). Its attrs say which of NumPy's 1-D promotions to undo: ``drop_rows`` (the
first operand was a vector, ``M == 1`` and the result has no ``M`` axis) and ``drop_cols`` (the
second was). Its dtype is NumPy's ``np.matmul`` result dtype. The planner cuts a graph there as
at a reduction (``compiler/planner.py``): the product is a kernel of its own
(``compiler/product.py``) writing a buffer that later elementwise work reads as a leaf.
"""

from __future__ import annotations

import numpy as np

from . import dtypes, graph


def accumulator_code(dtype: np.dtype) -> str:
    """The type a product of result ``dtype`` sums in: float16 and float32 in float32 (NumPy's
    own float16 loop sums in float, and the product of two float16 values is exact in float32),
    float64 in float64; integers in int64 (uint64 in uint64) and cast once at the end, which
    wraps as NumPy's own-type loop does (sums and products modulo 2**bits commute with the
    narrowing); bool as the count of ``a and b`` pairs, stored as ``count != 0`` (NumPy's bool
    matmul is the ``or`` of the ``and``s); complex in its own type; the training formats
    (bfloat16, float8) in float32, rounded once at the store (JAX's float32 accumulation)."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return "c128" if dtype.itemsize == 16 else "c64"
    if dtypes.kind(dtype) == "f":
        return "f64" if dtype.itemsize == 8 else "f32"
    return "u64" if dtype == np.uint64 else "i64"


def matmul_node(a: graph.Node, b: graph.Node, dtype: np.dtype, drop_rows: bool,
                drop_cols: bool) -> graph.Node:
    """The node of ``a @ b`` for leaves ``a`` (``batch + (M, K)``) and ``b``
    (``batch + (K, N)``) of one batch shape, giving ``dtype``; its shape is ``batch + (M, N)``
    less the axes ``drop_rows`` / ``drop_cols`` remove (each of extent 1)."""
    dtype = np.dtype(dtype)
    *batch, m, _ = a.shape
    n = b.shape[-1]
    shape = tuple(batch) + ((m,) if not drop_rows else ()) + ((n,) if not drop_cols else ())
    attrs = ("matmul", bool(drop_rows), bool(drop_cols))
    node = graph._new("matmul", dtype, shape, (a, b), attrs)
    graph._combine(node, node.inputs, (*attrs, dtype))
    return node
