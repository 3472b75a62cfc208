"""Differences along an axis: ``diff`` (the standard's 2024.12 ``fa.diff`` and ``np.diff``) and
``np.ediff1d``.

Where it sits: over :mod:`.array` and :mod:`.manipulation`, re-exported by the namespace and
behind ``np.diff``/``np.ediff1d`` (``api/npfunctions.py``). scikit-learn's
``average_precision_score`` calls ``xp.diff``.

Route: **fused**. The ``n``-th difference is one elementwise kernel over ``n + 1`` slices of the
input (views): level ``k`` at shift ``s`` is level ``k - 1`` at ``s + 1`` minus level ``k - 1``
at ``s``, so the graph holds ``n (n + 1) / 2`` subtractions, each computed once, in NumPy's
order (the same roundings as its ``n`` passes, one pass over memory instead of ``n``). Past
:data:`LEVELS_PER_KERNEL` levels the result so far is computed first, keeping kernels small.
Bools take ``not_equal`` for the subtraction, as NumPy. ``prepend``/``append`` join the input
through :func:`~.manipulation.concat` first (one copy kernel, as NumPy's ``concatenate``);
``ediff1d``'s ``to_begin``/``to_end`` likewise join its result.

>>> import fusedarrays as fa, numpy as np
>>> x = fa.asarray(np.array([1, 4, 9, 16]))
>>> fa.diff(x).get()
array([3, 5, 7])
>>> fa.diff(x, n=2).get()
array([2, 2])
"""

from __future__ import annotations

import operator

import numpy as np

from ..errors import DTypeError, ShapeError
from .array import asarray, ndarray
from .elementwise import FUNCTIONS
from .manipulation import broadcast_to, concat

LEVELS_PER_KERNEL = 16      # n(n+1)/2 subtractions per kernel: 136 at 16 levels


def diff(x, /, *, axis: int = -1, n: int = 1, prepend=None, append=None) -> ndarray:
    """The ``n``-th discrete difference of ``x`` along ``axis`` (``out[i] = x[i+1] - x[i]``,
    applied ``n`` times), ``prepend``/``append`` joined to ``x`` along ``axis`` first (a
    scalar is broadcast to one slice); one fused kernel. NumPy's values and dtypes.

    >>> import fusedarrays as fa, numpy as np
    >>> fa.diff(fa.asarray(np.array([[1., 2., 4.], [0., 5., 5.]])), axis=1).get()
    array([[1., 2.],
           [5., 0.]])
    """
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"diff: the order n must be ≥ 0, got n={n}")
    x = asarray(x)
    if x.ndim == 0:
        raise ShapeError("diff: x is 0-dimensional; it needs at least one dimension to "
                         "difference along")
    axis = operator.index(axis)
    if not -x.ndim <= axis < x.ndim:
        raise np.exceptions.AxisError(axis, x.ndim)
    axis %= x.ndim
    if n == 0:
        return x
    if prepend is not None or append is not None:
        x = concat([_edge(v, x.shape, axis) for v in (prepend, x, append) if v is not None],
                   axis=axis)
    while n > LEVELS_PER_KERNEL:
        x = _differences(x, axis, LEVELS_PER_KERNEL).compute()
        n -= LEVELS_PER_KERNEL
    return _differences(x, axis, n)


def _edge(value, shape: tuple, axis: int) -> ndarray:
    """``prepend``/``append`` as an array to join: a 0-d value broadcast to one slice."""
    value = asarray(value)
    if value.ndim == 0:
        value = broadcast_to(value, shape[:axis] + (1,) + shape[axis + 1:])
    return value


def _differences(x: ndarray, axis: int, n: int) -> ndarray:
    """``n`` levels of differences along ``axis``, one pending expression over ``n + 1``
    slices of ``x``: level ``k`` at shift ``s`` is ``level[k-1][s+1] - level[k-1][s]``."""
    m = max(x.shape[axis] - n, 0)
    head = (slice(None),) * axis
    if m == 0:
        return x[head + (slice(0, 0),)]
    op = FUNCTIONS["not_equal"] if x.dtype == np.bool_ else FUNCTIONS["subtract"]
    level = [x[head + (slice(s, s + m),)] for s in range(n + 1)]
    for _ in range(n):
        level = [op(later, earlier) for earlier, later in zip(level, level[1:])]
    return level[0]


def ediff1d(ary, to_end=None, to_begin=None) -> ndarray:
    """NumPy's ``ediff1d``: the differences of consecutive elements of ``ary`` flattened, with
    ``to_begin`` and ``to_end`` (flattened, cast to ``ary``'s dtype under ``same_kind``) joined
    before and after. One fused kernel, and a copy kernel where something is joined."""
    ary = asarray(ary).reshape(-1)
    if ary.dtype == np.bool_:
        raise DTypeError("ediff1d: ary is bool, and NumPy's ediff1d subtracts, which bools "
                         "don't; pass ary.astype(int), or use fa.diff (not_equal for bools)")
    body = ary[1:] - ary[:-1]
    if to_begin is None and to_end is None:
        return body
    parts = []
    for name, value in (("to_begin", to_begin), (None, body), ("to_end", to_end)):
        if name is None:
            parts.append(body)
            continue
        if value is None:
            continue
        value = asarray(value)
        if not np.can_cast(value.dtype, ary.dtype, casting="same_kind"):
            raise DTypeError(f"ediff1d: {name} of dtype {value.dtype} can't be cast to ary's "
                             f"dtype {ary.dtype} under the 'same_kind' rule; cast it first")
        parts.append(value.reshape(-1).astype(ary.dtype))
    return concat(parts)
